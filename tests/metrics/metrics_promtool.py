#!/usr/bin/env python3
"""Starts the real seqd, makes requests of each kind, fetches /metrics and
checks it with `promtool check metrics`. Fails (never skips) without promtool."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
import harness  # noqa: E402


def main():
    promtool = shutil.which("promtool")
    if not promtool:
        print("FAIL: promtool not found (Debian package 'prometheus'; scripts/deps.sh --test)")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        with harness.Seqd(harness.store_spec("sqlite", tmp)) as s:
            s.wait_healthy()
            s.create_key("order", 100)
            for _ in range(5):
                s.ids("order")
            s.ids("si_alice_bob", 3)
            s.request("GET", "/seq/no_such_key")
            s.request("GET", "/nope")
            s.request("POST", "/conversations/si_a_b/messages",
                      body={"sender_id": "a", "client_msg_id": "m1", "payload": "hi"})
            s.request("GET", "/conversations/si_a_b/messages")
            s.request("GET", "/readyz")
            status, body, _ = s.request("GET", "/metrics")
            text = body.decode()
            if status != 200:
                print("FAIL: GET /metrics answered %d" % status)
                return 1
    print(text)
    for want in ['seqd_requests_total{interface="http",op="seq",status="ok"}',
                 'seqd_ids_issued_total{key="order"}', 'seqd_ids_issued_total{key="auto:si_"}',
                 'seqd_build_info{', 'seqd_store_up 1']:
        if want not in text:
            print("FAIL: missing " + want)
            return 1
    r = subprocess.run([promtool, "check", "metrics"], input=text.encode(), capture_output=True)
    print(r.stdout.decode(), r.stderr.decode())
    if r.returncode != 0:
        print("FAIL: promtool check metrics exited %d" % r.returncode)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
