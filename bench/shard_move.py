#!/usr/bin/env python3
"""The pause a client sees when a shard holding N messages moves to another
store group (docs/cluster.md, "Moving a shard"; docs/scale.md).

Two MariaDB of its own (scripts/mariadb.sh) as groups g1 and g2, two seqd
--cluster; N messages of one conversation are written straight into g1's
seqd_message (MariaDB's SEQUENCE engine), then a client sends a message to
that conversation every few milliseconds while `seqctl shard move` moves
its shard to g2. Prints the copy's time and rows, the mover's pause (seal
to the new owner's lease), and the longest time the client's conversation
went without an acked send.

Usage: MESSAGES=1000000 LEASE_MS=3000 python3 bench/shard_move.py
Uses build/seqd and build/client/seqctl (BUILD_DIR overrides).
"""
import os
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
os.environ.setdefault("SEQD_BINARY", os.path.join(
    REPO, os.environ.get("BUILD_DIR", "build"), "seqd"))
from lib.cluster import Instance, Workspace, shard_of  # noqa: E402
from lib.mariadb import MariaDB  # noqa: E402
from test_store_groups import request  # noqa: E402

MESSAGES = int(os.environ.get("MESSAGES", "1000000"))
LEASE_MS = int(os.environ.get("LEASE_MS", "3000"))
SHARDS = 64
SEQCTL = os.path.join(REPO, os.environ.get("BUILD_DIR", "build"), "client", "seqctl")
CONV = next("sg_bench%d" % i for i in range(1000) if shard_of("sg_bench%d" % i, SHARDS) == 3)


def main():
    ws = Workspace("seqd-move-bench-", keep=bool(os.environ.get("KEEP")))
    try:
        dbs = []
        for i in range(2):
            base = os.path.join(ws.base, "g%d" % (i + 1))
            os.makedirs(base)
            dbs.append(MariaDB(base))
            ws.on_cleanup(dbs[-1].stop)
        flags = ["--cluster-shards", str(SHARDS), "--snowflake", "off", "--resp-port", "0"]
        for i, db in enumerate(dbs):
            flags += ["--store-group", "g%d=%s" % (i + 1, db.url)]
        nodes = [Instance("s%d" % i, dbs[0].url, LEASE_MS, ws.base, flags) for i in (1, 2)]
        for n in nodes:
            ws.on_cleanup(n.kill)
        time.sleep(2 * LEASE_MS / 1000.0)
        port = nodes[1].http_port
        status, _ = request(port, "POST", "/conversations/%s/messages" % CONV,
                            {"sender_id": "b", "client_msg_id": "first", "payload": "x"})
        assert status in (200, 201), status
        t0 = time.monotonic()
        dbs[0].query("INSERT INTO seqd_message (conv_id, seq, server_msg_id, sender_id, "
                     "client_msg_id, content_type, payload, send_time_ms, status) "
                     "SELECT '%s', seq + 1, seq + 1000000000000, 'bulk', CONCAT('m', seq), 0, "
                     "REPEAT('x', 100), 0, 0 FROM seq_1_to_%d" % (CONV, MESSAGES), timeout=600)
        print("loaded %d messages in %.1f s" % (MESSAGES, time.monotonic() - t0))
        # The writer's cached max seq is stale now: one send re-reads it.
        acks, stop = [], threading.Event()

        def send():
            n = 0
            while not stop.is_set():
                sent = time.monotonic()
                try:
                    s, body = request(port, "POST", "/conversations/%s/messages" % CONV,
                                      {"sender_id": "c", "client_msg_id": "c%d" % n, "payload": "y"})
                except OSError:
                    s = 0
                if s in (200, 201):
                    acks.append((sent, time.monotonic()))
                    n += 1
                time.sleep(0.002)

        writer = threading.Thread(target=send, daemon=True)
        writer.start()
        time.sleep(1)
        t0 = time.monotonic()
        r = subprocess.run([SEQCTL, "--http", "127.0.0.1:%d" % port, "--timeout", "600000",
                            "shard", "move", str(shard_of(CONV, SHARDS)), "--to", "g2"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        took = time.monotonic() - t0
        time.sleep(1)
        stop.set()
        writer.join()
        print(r.stdout.strip())
        gaps = [b[1] - a[1] for a, b in zip(acks, acks[1:]) if a[1] >= t0]
        rows = int(dbs[1].query("SELECT COUNT(*) FROM seqd_message WHERE conv_id = '%s'" % CONV,
                                timeout=120)[0][0])
        print("move: %.1f s end to end (copy, seal, delta, switch, 2-lease clean-up); "
              "lease %d ms" % (took, LEASE_MS))
        print("client: %d sends acked; longest time without an ack during the move: %.0f ms"
              % (len(acks), 1000 * max(gaps, default=0)))
        print("target group holds %d messages of the conversation (want %d)" % (
            rows, MESSAGES + 1 + len(acks)))
        return 0 if r.returncode == 0 and rows == MESSAGES + 1 + len(acks) else 1
    finally:
        ws.cleanup()


if __name__ == "__main__":
    sys.exit(main())
