"""Resource probes: huge announced lengths, idle connection floods and a
storm of new keys, on a seqd with tokens. Goals: bounded RSS (from /proc),
clear errors, other clients served (a client from another address).

usage: probe_limits.py --pid PID --http P --tcp P --resp P --token SECRET
                       [--idle N] [--key-seconds S]
"""
import argparse
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "e2e"))
from common import Client, connect, log, read_response, result, rss_kib  # noqa: E402
from lib.sockets import read_all  # noqa: E402
from lib.wire import frame, header, read_frame, resp_command, resp_read_line  # noqa: E402

PING, NEXT_IDS, AUTH = 0x01, 0x02, 0x03


def served(a):
    """One request on each listener from another address (127.0.0.3)."""
    c = Client(a.http, "127.0.0.3", a.token)
    try:
        status, _, _ = c.request("GET", "/seq/probe_other")
        if status != 200:
            log("  other client: %d" % status)
    except OSError:
        status = 0
    c.close()
    ok = status == 200
    try:
        s = connect(a.tcp, "127.0.0.3", timeout=5)
        s.sendall(frame(AUTH, 1, a.token.encode()) + frame(PING, 2, b"x"))
        read_frame(s)
        read_frame(s)  # both answered, whatever they say
        s.close()
        s = connect(a.resp, "127.0.0.3", timeout=5)
        s.sendall(resp_command(["AUTH", a.token]) + resp_command(["PING"]))
        replies = [resp_read_line(s), resp_read_line(s)]
        s.close()
        ok = ok and replies == [b"+OK", b"+PONG"]
    except (OSError, EOFError):
        ok = False
    return ok


def announced(a, name, port, hello, attack, conns=50, feed=1 << 20):
    """`conns` connections each announce a huge length and send `feed`
    bytes of it. Goal: RSS grows by less than 64 MiB, each gets an error
    (or a close) and the others are served."""
    before = rss_kib(a.pid)
    socks, answers = [], []
    for _ in range(conns):
        s = connect(port, "127.0.0.1", timeout=10)
        s.sendall(hello + attack)
        socks.append(s)
    chunk = b"x" * 65536
    for s in socks:
        try:
            for _ in range(feed // len(chunk)):
                s.sendall(chunk)
        except OSError:
            pass  # closed by seqd: what we want
    peak = rss_kib(a.pid)
    ok_served = served(a)
    closed = 0
    for s in socks:
        out, was_closed = read_all(s, timeout=3)
        answers.append(out)
        closed += was_closed
        s.close()
    grown = max(peak, rss_kib(a.pid)) - before
    sample = next((x for x in answers if x), b"")
    log("  %s: first answer %r" % (name, sample[:160]))
    ok = grown < 64 * 1024 and closed == conns and ok_served
    result(name, "RSS +<64 MiB, closed with an error, others served",
           "RSS +%d KiB for %d conns, %d/%d closed, answer %r, others served: %s" % (
               grown, conns, closed, conns, sample[-60:].decode("latin-1").strip(), ok_served), ok)
    return sample


def idle_flood(a, count):
    """`count` idle connections on each of HTTP, binary and RESP, from
    several source addresses (127.0.1.x, at most 900 each: the per-address
    cap stays at its default of 1000)."""
    before = rss_kib(a.pid)
    held = []
    per_src = 900
    refused = 0
    for port in (a.http, a.tcp, a.resp):
        for i in range(count):
            src = "127.0.1.%d" % (1 + i // per_src)
            try:
                held.append(connect(port, src, timeout=10))
            except OSError:
                refused += 1
    time.sleep(1.0)
    # Refused ones are closed by seqd at once: count the held ones still open.
    open_now = 0
    for s in held:
        s.setblocking(False)
        try:
            open_now += s.recv(1) != b""
        except BlockingIOError:
            open_now += 1
        except OSError:
            pass
    grown = rss_kib(a.pid) - before
    t0 = time.time()
    ok_served = served(a)
    took = time.time() - t0
    for s in held:
        s.close()
    n = 3 * count
    per = grown / max(1, open_now)
    ok = open_now == n and ok_served and per < 64
    result("idle connections (%d x 3 listeners)" % count,
           "all held, RSS < 64 KiB each, others served",
           "%d/%d open, RSS +%d KiB (%.1f KiB each), others served in %.2f s: %s" % (
               open_now, n, grown, per, took, ok_served), ok)


def storm_worker(a, tag, first, stride, per_s, seconds, out):
    """One connection's share of the storm: batches of 10 pipelined GETs
    of new keys, paced to `per_s` a second. Adds status counts to `out`."""
    s = connect(a.http, "127.0.0.1", timeout=30)
    start = time.time()
    n, i = 0, first
    buf = b""
    while time.time() - start < seconds:
        due = start + n / per_s
        if due > time.time():
            time.sleep(due - time.time())
        reqs = b""
        for _ in range(10):
            reqs += (b"GET /seq/sg_probe_%s_%d HTTP/1.1\r\nHost: p\r\nAuthorization: Bearer "
                     b"%s\r\n\r\n" % (tag.encode(), i, a.token.encode()))
            i += stride
        s.sendall(reqs)
        for _ in range(10):
            r = read_response(s, buf)
            if r is None:
                out["closed"] = out.get("closed", 0) + 1
                return
            code, headers, _, buf = r
            out[code] = out.get(code, 0) + 1
            if code == 429 and "retry-after" in headers:
                out["retry_after"] = out.get("retry_after", 0) + 1
        n += 10
    s.close()


def key_storm(a, seconds, rate=1000, conns=4):
    """`rate` new auto-created keys a second from one token for `seconds`,
    on `conns` keep-alive connections. Goal: only 200 or 429 (with
    Retry-After) answers, admitted keys at most burst + rate * time, RSS
    bounded, another client served."""
    before = rss_kib(a.pid)
    tag = "%x" % int(time.time() * 1000)
    outs = [dict() for _ in range(conns)]
    threads = [threading.Thread(target=storm_worker,
                                args=(a, tag, i, conns, rate / conns, seconds, outs[i]))
               for i in range(conns)]
    start = time.time()
    for t in threads:
        t.start()
    time.sleep(min(1.5, seconds / 2))  # past the burst: the limiter is refusing
    mid_served = served(a)
    for t in threads:
        t.join()
    took = time.time() - start
    statuses = {}
    for o in outs:
        for k, v in o.items():
            statuses[k] = statuses.get(k, 0) + v
    grown = rss_kib(a.pid) - before
    admitted = statuses.get(200, 0)
    sent = sum(v for k, v in statuses.items() if isinstance(k, int))
    only = all(k in (200, 429, "retry_after") for k in statuses)
    bound = int(a.burst + a.rate * took) + 10
    ok = only and admitted <= bound and statuses.get(429, 0) > 0 and statuses.get(429, 0) == statuses.get("retry_after", 0) \
        and mid_served and grown < 64 * 1024
    result("new keys, one token (%d/s for %.0f s)" % (sent / took, took),
           "200 or 429+Retry-After only, admitted <= burst + rate*t, others served",
           "%s, admitted %d (bound %d), RSS +%d KiB, others served: %s" % (
               json.dumps({str(k): v for k, v in statuses.items()}, sort_keys=True), admitted,
               bound, grown, mid_served), ok)


def main():
    ap = argparse.ArgumentParser()
    for k in ("pid", "http", "tcp", "resp"):
        ap.add_argument("--" + k, type=int, required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--idle", type=int, default=5000)
    ap.add_argument("--key-seconds", type=float, default=10)
    ap.add_argument("--burst", type=int, default=1000, help="seqd's auto_create_burst")
    ap.add_argument("--rate", type=int, default=100, help="seqd's auto_create_rate")
    ap.add_argument("--only", default="resp,binary,idle,keys")
    a = ap.parse_args()
    only = a.only.split(",")
    resp_auth = resp_command(["AUTH", a.token])
    if "resp" in only:
        announced(a, "RESP bulk announcing 512 MB", a.resp, resp_auth,
                  b"*2\r\n$4\r\nINCR\r\n$536870912\r\n")
    if "binary" in only:
        announced(a, "binary frame announcing 4 GB", a.tcp, frame(AUTH, 1, a.token.encode()),
                  header(0xFFFFFFFF, NEXT_IDS, 2))
    if "idle" in only:
        idle_flood(a, a.idle)
    if "keys" in only:
        key_storm(a, a.key_seconds)
    return 0


if __name__ == "__main__":
    socket.setdefaulttimeout(30)
    sys.exit(main())
