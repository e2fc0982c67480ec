#!/usr/bin/env python3
"""SSE fan-out load tool: N Server-Sent Event streams on one conversation.

Opens N streams `GET /conversations/CONV/events` (raw sockets, one epoll loop,
so 1,000 streams fit one Python thread), then runs SENDER (a seqbench command
that sends M messages to CONV, each payload stamped with its send time on the
steady clock, CLOCK_MONOTONIC, the clock Python's time.monotonic_ns reads) and
records, per event, the time from the send being written to the event being
read. Prints one line of JSON: streams, pushes received and expected (N x M),
latency p50/p99/p999/max in microseconds, dropped streams and errors.

Usage: sse_fanout.py --http HOST:PORT --conv CONV --streams N --messages M
                     [--token SECRET] -- SEQBENCH ARGS...
(SEQD_TOKEN is used when --token is absent; sent as a bearer header.)
"""
import argparse
import json
import os
import re
import select
import socket
import subprocess
import sys
import time

STAMP = re.compile(rb'"payload":\s*"([0-9a-f]{16})')


class Stream:
    """One SSE connection: the response head, then events (chunked or not)."""

    def __init__(self, host, port, path, token):
        self.sock = socket.create_connection((host, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        auth = "Authorization: Bearer %s\r\n" % token if token else ""
        self.sock.sendall(("GET %s HTTP/1.1\r\nHost: %s:%d\r\nAccept: text/event-stream\r\n%s\r\n"
                           % (path, host, port, auth)).encode())
        self.sock.setblocking(False)
        self.head = b""
        self.open = False      # the 200 head arrived
        self.chunked = False
        self.raw = b""         # undecoded chunked bytes
        self.buf = b""         # event text not yet ended by a blank line
        self.closed = False
        self.dropped = False
        self.error = None

    def feed(self, data, now, latencies):
        """Consumes bytes read at `now`; appends latencies (ns). Returns pushes."""
        if not self.open:
            self.head += data
            end = self.head.find(b"\r\n\r\n")
            if end < 0:
                return 0
            head, data = self.head[:end], self.head[end + 4:]
            status = head.split(b"\r\n", 1)[0]
            if b" 200 " not in status + b" ":
                self.error = status.decode(errors="replace")
                self.closed = True
                return 0
            self.chunked = b"transfer-encoding: chunked" in head.lower()
            self.open = True
        if self.chunked:
            data = self.unchunk(data)
        self.buf += data
        end = self.buf.rfind(b"\n\n")
        if end < 0:
            return 0
        events, self.buf = self.buf[:end + 2], self.buf[end + 2:]
        if b"event: dropped" in events:
            self.dropped = True
        n = 0
        for m in STAMP.finditer(events):
            latencies.append(now - int(m.group(1), 16))
            n += 1
        return n

    def unchunk(self, data):
        self.raw += data
        out = []
        while True:
            eol = self.raw.find(b"\r\n")
            if eol < 0:
                break
            size = int(self.raw[:eol].split(b";")[0] or b"0", 16)
            if len(self.raw) < eol + 2 + size + 2:
                break
            out.append(self.raw[eol + 2:eol + 2 + size])
            self.raw = self.raw[eol + 2 + size + 2:]
        return b"".join(out)


def percentile(sorted_ns, q):
    if not sorted_ns:
        return None
    i = min(len(sorted_ns) - 1, int(q * len(sorted_ns)))
    return round(sorted_ns[i] / 1000.0, 1)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--http", required=True)
    p.add_argument("--conv", required=True)
    p.add_argument("--streams", type=int, required=True)
    p.add_argument("--messages", type=int, required=True)
    p.add_argument("--token", default=os.environ.get("SEQD_TOKEN", ""))
    p.add_argument("--settle", type=float, default=10.0,
                   help="seconds to wait for the last pushes after the sender ends")
    p.add_argument("sender", nargs=argparse.REMAINDER)
    a = p.parse_args()
    sender = a.sender[1:] if a.sender[:1] == ["--"] else a.sender
    host, port = a.http.rsplit(":", 1)
    port = int(port)

    ep = select.epoll()
    streams = {}
    for _ in range(a.streams):
        s = Stream(host, port, "/conversations/%s/events" % a.conv, a.token)
        streams[s.sock.fileno()] = s
        ep.register(s.sock.fileno(), select.EPOLLIN)
    latencies, pushes = [], 0

    def poll(timeout):
        nonlocal pushes
        for fd, _ in ep.poll(timeout):
            s = streams[fd]
            try:
                data = s.sock.recv(262144)
            except BlockingIOError:
                continue
            except OSError as e:
                data, s.error = b"", str(e)
            now = time.monotonic_ns()
            if not data:
                s.closed = True
                ep.unregister(fd)
                continue
            pushes += s.feed(data, now, latencies)

    deadline = time.time() + 15
    while not all(s.open or s.closed for s in streams.values()):
        if time.time() > deadline:
            sys.exit("sse_fanout: streams did not open within 15 s")
        poll(0.1)
    refused = [s.error for s in streams.values() if s.closed]
    if refused:
        sys.exit("sse_fanout: %d streams refused: %s" % (len(refused), refused[0]))
    settle = time.time() + 0.5  # the server registers each stream around its head
    while time.time() < settle:
        poll(0.05)

    proc = subprocess.Popen(sender, stdout=subprocess.DEVNULL)
    expected = a.streams * a.messages
    while proc.poll() is None:
        poll(0.05)
    end = time.time() + a.settle
    while pushes < expected and time.time() < end and any(
            not s.closed for s in streams.values()):
        poll(0.05)
    for s in streams.values():
        s.sock.close()
    latencies.sort()
    print(json.dumps({
        "streams": a.streams, "messages": a.messages, "pushes": pushes, "expected": expected,
        "latency_us": {"p50": percentile(latencies, 0.50), "p99": percentile(latencies, 0.99),
                       "p999": percentile(latencies, 0.999),
                       "max": round(latencies[-1] / 1000.0, 1) if latencies else None},
        "dropped": sum(s.dropped for s in streams.values()),
        "closed": sum(s.closed for s in streams.values()),
        "sender_exit": proc.returncode}))
    return 0 if pushes == expected and proc.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
