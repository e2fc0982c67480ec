"""Shared helpers of scripts/probe: result rows, seqd's RSS, a raw HTTP
client with a chosen source address, and latency percentiles.

Every probe prints its verdicts as result rows on stdout, one per line:
    RESULT<TAB>probe<TAB>goal<TAB>measured<TAB>PASS|FAIL
scripts/probe collects them into the summary table. Anything else a probe
prints is a log line. Standard library only.
"""
import json
import re
import socket
import time


def result(probe, goal, measured, ok):
    print("RESULT\t%s\t%s\t%s\t%s" % (probe, goal, measured, "PASS" if ok else "FAIL"), flush=True)
    return ok


def log(*args):
    print(*args, flush=True)


def rss_kib(pid):
    """Resident set size of process `pid` in KiB (from /proc)."""
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def connect(port, src="127.0.0.1", timeout=10, host="127.0.0.1"):
    """A TCP connection to host:port from source address `src` (any
    127.0.0.0/8 address works on Linux: each counts as its own peer)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((src, 0))
    s.connect((host, port))
    return s


def read_response(sock, buf=b""):
    """Reads one HTTP/1.1 response (Content-Length bodies only, as seqd
    sends for all but SSE). Returns (status, headers dict, body, rest) or
    None when the connection closed before a whole response."""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    n = int(headers.get("content-length", "0"))
    while len(rest) < n:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        rest += chunk
    return status, headers, rest[:n], rest[n:]


class Client:
    """A keep-alive HTTP client on raw sockets from a chosen source address,
    reconnecting every `reconnect_every` requests (so accepts are measured
    too). Not thread-safe: one per thread."""

    def __init__(self, port, src="127.0.0.2", token=None, reconnect_every=20):
        self.port, self.src, self.token = port, src, token
        self.reconnect_every = reconnect_every
        self.sock, self.used, self.buf = None, 0, b""

    def request(self, method, path, body=None):
        if self.sock is None or self.used >= self.reconnect_every:
            self.close()
            self.sock = connect(self.port, self.src, timeout=10)
            self.used, self.buf = 0, b""
        data = json.dumps(body).encode() if body is not None else b""
        head = "%s %s HTTP/1.1\r\nHost: probe\r\n" % (method, path)
        if self.token:
            head += "Authorization: Bearer %s\r\n" % self.token
        if body is not None:
            head += "Content-Type: application/json\r\nContent-Length: %d\r\n" % len(data)
        self.sock.sendall(head.encode() + b"\r\n" + data)
        self.used += 1
        r = read_response(self.sock, self.buf)
        if r is None:
            self.close()
            raise ConnectionError("closed by the server")
        status, headers, payload, self.buf = r
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status, headers, payload

    def close(self):
        if self.sock:
            self.sock.close()
        self.sock = None


def latency_run(port, path, seconds, rate, src="127.0.0.2", token=None, stop=None):
    """Paced requests (`rate` per second) for `seconds`; returns (latencies
    in ms, errors). An error is an exception or a status other than 200."""
    c = Client(port, src, token)
    lat, errors = [], []
    start = time.time()
    n = 0
    while time.time() - start < seconds and not (stop and stop()):
        due = start + n / rate
        now = time.time()
        if due > now:
            time.sleep(due - now)
        n += 1
        t0 = time.perf_counter()
        try:
            status, _, payload = c.request("GET", path)
            if status != 200:
                errors.append("%d %s" % (status, payload[:80]))
        except OSError as e:
            errors.append(repr(e))
            c.close()
            continue
        lat.append((time.perf_counter() - t0) * 1000)
    c.close()
    return lat, errors


def percentile(values, p):
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]
