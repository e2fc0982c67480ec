"""Request smuggling and parser probes on raw sockets (HTTP listener).

usage: probe_parser.py --port P

Each hostile request is sent with a good request pipelined behind it
(GET /seq/probe_smuggle, which takes an ID). Goal: the hostile request is
answered 400 and the connection closed, and the request behind it is never
answered as a request of its own: exactly one status line comes back, and
probe_smuggle's next ID shows that nothing took an ID. The cases already in
tests/e2e/test_limits.py (Transfer-Encoding other than chunked, two Host
headers, obs-fold) are run there; scripts/probe runs those tests too.
"""
import argparse
import json
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "e2e"))
from common import Client, connect, result  # noqa: E402
from lib.sockets import read_all  # noqa: E402

KEY = "probe_smuggle"
BEHIND = b"GET /seq/" + KEY.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n"
SEND = b"POST /conversations/sg_probe_parser/messages HTTP/1.1\r\nHost: x\r\n" \
       b"Content-Type: application/json\r\n"
BODY = b'{"sender_id":"p","client_msg_id":"c1","payload":"x"}'

# (name, bytes): each must be answered 400 and closed, nothing behind it served.
CASES = [
    ("CL and TE: chunked (CL first)",
     SEND + b"Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + BEHIND),
    ("TE: chunked and CL (TE first)",
     SEND + b"Transfer-Encoding: chunked\r\nContent-Length: 60\r\n\r\n0\r\n\r\n" + BEHIND),
    ("two Content-Length, different",
     SEND + b"Content-Length: %d\r\nContent-Length: 0\r\n\r\n" % len(BODY) + BODY + BEHIND),
    ("two Content-Length, same value",
     SEND + b"Content-Length: %d\r\nContent-Length: %d\r\n\r\n" % (len(BODY), len(BODY)) + BODY),
    ("Content-Length list 'n, n'",
     SEND + b"Content-Length: %d, %d\r\n\r\n" % (len(BODY), len(BODY)) + BODY),
    ("Content-Length '+n'", SEND + b"Content-Length: +%d\r\n\r\n" % len(BODY) + BODY),
    ("Content-Length '-1'", SEND + b"Content-Length: -1\r\n\r\n" + BEHIND),
    ("Content-Length hex", SEND + b"Content-Length: 0x10\r\n\r\n" + BODY),
    ("Content-Length overflow",
     SEND + b"Content-Length: 99999999999999999999999\r\n\r\n" + BODY),
    ("space before colon (TE)",
     SEND + b"Transfer-Encoding : chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n" + BEHIND),
    ("TE: chunked twice", SEND + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked"
     b"\r\n\r\n5\r\n{\"a\":\r\n0\r\n\r\n" + BEHIND),
    ("TE: 'chunked ' with tab value", SEND + b"Transfer-Encoding:\tchunked, identity\r\n\r\n"
     b"0\r\n\r\n" + BEHIND),
    ("TE obs-fold", SEND + b"Transfer-Encoding: identity\r\n chunked\r\n\r\n0\r\n\r\n" + BEHIND),
    ("chunk size not hex", SEND + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"
     + BEHIND),
    ("chunk size negative", SEND + b"Transfer-Encoding: chunked\r\n\r\n-2\r\n{}\r\n0\r\n\r\n"
     + BEHIND),
    ("chunk size overflow", SEND + b"Transfer-Encoding: chunked\r\n\r\n"
     b"10000000000000002\r\n{}\r\n0\r\n\r\n" + BEHIND),
    ("chunk size '0x2'", SEND + b"Transfer-Encoding: chunked\r\n\r\n0x2\r\n{}\r\n0\r\n\r\n"
     + BEHIND),
    ("chunk longer than its size", SEND + b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}XX\r\n"
     b"0\r\n\r\n" + BEHIND),
    ("chunk size with LF only", SEND + b"Transfer-Encoding: chunked\r\n\r\n2\n{}\r\n0\r\n\r\n"
     + BEHIND),
    ("NUL in header value", b"GET /seq/" + KEY.encode() + b" HTTP/1.1\r\nHost: x\r\n"
     b"X-A: a\x00b\r\n\r\n" + BEHIND),
    ("request line with two spaces", b"GET  /seq/" + KEY.encode() + b" HTTP/1.1\r\nHost: x"
     b"\r\n\r\n" + BEHIND),
    ("HTTP/1.1 header with no colon", b"GET /seq/" + KEY.encode() + b" HTTP/1.1\r\nHost: x"
     b"\r\nNoColonHere\r\n\r\n" + BEHIND),
]


def next_id(port):
    c = Client(port, "127.0.0.1")
    status, _, payload = c.request("GET", "/seq/" + KEY)
    c.close()
    assert status == 200, (status, payload)
    return json.loads(payload)["id"]


def send(port, data):
    s = connect(port)
    s.sendall(data)
    out, closed = read_all(s, timeout=5)
    s.close()
    return out, closed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    a = ap.parse_args()
    failed = []
    for name, data in CASES:
        before = next_id(a.port)
        out, closed = send(a.port, data)
        after = next_id(a.port)
        answers = out.count(b"HTTP/1.1 ")
        ok = out.startswith(b"HTTP/1.1 400") and answers == 1 and closed and after == before + 1
        print("  %-34s %s answers=%d closed=%s served_behind=%s" % (
            name, out[:12].decode("latin-1") or "(nothing)", answers, closed,
            after != before + 1), flush=True)
        if not ok:
            failed.append(name)
    # A malformed request pipelined behind a good one: the good one is
    # answered, then 400 and close; nothing after the bad one is served.
    before = next_id(a.port)
    bad = b"GET /seq/" + KEY.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n"
    out, closed = send(a.port, BEHIND + bad + BEHIND)
    after = next_id(a.port)
    statuses = re.findall(rb"HTTP/1\.1 (\d{3}) ", out)
    ok = statuses == [b"200", b"400"] and closed and after == before + 2
    print("  %-34s statuses=%s closed=%s ids_taken=%d" % (
        "good, then malformed, then good", statuses, closed, after - before - 1), flush=True)
    if not ok:
        failed.append("malformed pipelined after a good one")
    total = len(CASES) + 1
    result("smuggling/parser (raw sockets)", "400 + close, nothing behind served",
           "%d/%d cases held%s" % (total - len(failed), total,
                                   (": failed " + "; ".join(failed)) if failed else ""),
           not failed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
