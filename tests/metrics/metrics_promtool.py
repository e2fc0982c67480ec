#!/usr/bin/env python3
"""Starts the real seqd, makes requests of each kind, fetches /metrics and
checks it with `promtool check metrics`; the process_* series have
Prometheus's usual names, types and plausible values, and process_open_fds
follows the connections seqd holds. Fails (never skips) without promtool."""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
import harness  # noqa: E402


PROCESS_SERIES = {
    "process_cpu_seconds_total": "counter",
    "process_resident_memory_bytes": "gauge",
    "process_virtual_memory_bytes": "gauge",
    "process_open_fds": "gauge",
    "process_max_fds": "gauge",
    "process_start_time_seconds": "gauge",
}


def process_values(text):
    """{name: value} of the process_* samples; fails on a missing series or a
    wrong TYPE."""
    values = {}
    for name, kind in PROCESS_SERIES.items():
        if ("# TYPE %s %s\n" % (name, kind)) not in text:
            raise SystemExit("FAIL: no '# TYPE %s %s' line" % (name, kind))
        m = re.search(r"^%s ([0-9.e+]+)$" % name, text, re.M)
        if not m:
            raise SystemExit("FAIL: no sample of " + name)
        values[name] = float(m.group(1))
    return values


def check_process_series(s, text):
    v = process_values(text)
    now = time.time()
    problems = []
    if not now - 600 < v["process_start_time_seconds"] <= now + 1:
        problems.append("start time %s is not within the last 10 minutes" % v["process_start_time_seconds"])
    if not 1 << 20 < v["process_resident_memory_bytes"] <= v["process_virtual_memory_bytes"]:
        problems.append("resident %s, virtual %s" % (v["process_resident_memory_bytes"],
                                                      v["process_virtual_memory_bytes"]))
    if not 0 <= v["process_cpu_seconds_total"] < 600:
        problems.append("cpu seconds %s" % v["process_cpu_seconds_total"])
    if not 0 < v["process_open_fds"] <= v["process_max_fds"]:
        problems.append("open fds %s, max %s" % (v["process_open_fds"], v["process_max_fds"]))
    # 20 more idle connections: seqd holds 20 more descriptors. The count to
    # compare with is taken once it is steady: the load before may still be
    # closing connections (on a loaded machine one closed meanwhile: +19).
    def open_fds():
        _, body, _ = s.request("GET", "/metrics")
        return process_values(body.decode())["process_open_fds"]
    before, deadline = open_fds(), time.time() + 5
    while time.time() < deadline:
        time.sleep(0.2)
        again = open_fds()
        if again == before:
            break
        before = again
    socks = [socket.create_connection(("127.0.0.1", s.port)) for _ in range(20)]
    try:
        deadline = time.time() + 5
        while True:
            after = open_fds()
            if after >= before + 20 or time.time() > deadline:
                break
            time.sleep(0.05)
    finally:
        for c in socks:
            c.close()
    if after < before + 20:
        problems.append("process_open_fds went from %s to %s with 20 more connections"
                        % (before, after))
    for p in problems:
        print("FAIL: process_*: " + p)
    return not problems


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
            if not check_process_series(s, text):
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
