#!/usr/bin/env python3
"""Store groups side by side (docs/scale.md): the same message load on a
cluster of two seqd with 1, 2 and 3 store groups, each group a MariaDB of
its own (scripts/mariadb.sh), the shards spread evenly over the groups.
Prints, per run: messages acked per second, seqd CPU per message (both
instances, from /proc), and per group the messages stored and the
statements and commits its server ran during the load (SHOW GLOBAL
STATUS: Questions, Com_commit).

Usage: SECONDS_PER_RUN=10 THREADS=4 python3 bench/store_groups_bench.py
Uses build/seqd (BUILD_DIR overrides). The load generator is Python
threads on the same machine: read the ratios, not the absolute rates.
"""
import os
import random
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
os.environ.setdefault("SEQD_BINARY", os.path.join(
    REPO, os.environ.get("BUILD_DIR", "build"), "seqd"))
from lib.cluster import Instance, Workspace  # noqa: E402
from lib.mariadb import MariaDB  # noqa: E402
from test_store_groups import request, wait_all_owned  # noqa: E402

SECONDS = float(os.environ.get("SECONDS_PER_RUN", "10"))
THREADS = int(os.environ.get("THREADS", "4"))
SHARDS = 64
LEASE_MS = 1000
CONVS = ["sg_bench%d" % i for i in range(256)]


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def status(db, name):
    return int(db.query("SHOW GLOBAL STATUS LIKE '%s'" % name, database=None)[0][1])


def place_evenly(dbs, groups, database):
    """Shard s in group s mod `groups` (g1 is home): home rows sealed, the
    others' opened, the placement written (as e2e_store_groups does)."""
    for g in range(1, groups):
        mine = [s for s in range(SHARDS) if s % groups == g]
        ids = ",".join(map(str, mine))
        dbs[0].query("UPDATE seqd_shard_lease SET owner = '', epoch = epoch + 1, "
                     "version = version + 1, sealed = 1 WHERE shard IN (%s)" % ids, database)
        dbs[g].query("UPDATE seqd_shard_lease SET owner = '', epoch = epoch + 100, "
                     "version = version + 1 WHERE shard IN (%s)" % ids, database)
        rows = ",".join("(%d, 'g%d', '', '')" % (s, g + 1) for s in mine)
        dbs[0].query("INSERT INTO seqd_shard_placement (shard, group_name, move_target, "
                     "move_state) VALUES %s" % rows, database)
    dbs[0].query("UPDATE seqd_placement SET version = version + 1 WHERE id = 1", database)


def run(ws, dbs, groups):
    database = "seqd_test_bg%d" % groups
    urls = []
    for db in dbs[:groups]:
        db.query("CREATE DATABASE %s" % database, None)
        urls.append(db.url.rsplit("/", 1)[0] + "/" + database)
    flags = ["--cluster-shards", str(SHARDS), "--snowflake", "off", "--resp-port", "0"]
    if groups > 1:
        for i, url in enumerate(urls):
            flags += ["--store-group", "g%d=%s" % (i + 1, url)]
    nodes = [Instance("g%d-s%d" % (groups, i), urls[0], LEASE_MS, ws.base, flags) for i in (1, 2)]
    try:
        wait_all_owned(nodes[0])
        if groups > 1:
            place_evenly(dbs, groups, database)
            time.sleep(2 * LEASE_MS / 1000.0)
            wait_all_owned(nodes[0])
        before = {"cpu": sum(cpu_seconds(n.proc.pid) for n in nodes),
                  "q": [status(db, "Questions") for db in dbs[:groups]],
                  "c": [status(db, "Com_commit") for db in dbs[:groups]]}
        acked, stop = [0] * THREADS, threading.Event()

        def load(t):
            rng = random.Random(t)
            n = 0
            while not stop.is_set():
                node = nodes[rng.randrange(2)]
                s, _ = request(node.http_port, "POST", "/conversations/%s/messages" %
                               rng.choice(CONVS), {"sender_id": "b%d" % t,
                                                   "client_msg_id": "m%d" % n, "payload": "x" * 64})
                n += 1
                if s in (200, 201):
                    acked[t] += 1

        threads = [threading.Thread(target=load, args=(t,)) for t in range(THREADS)]
        start = time.monotonic()
        for t in threads:
            t.start()
        time.sleep(SECONDS)
        stop.set()
        for t in threads:
            t.join()
        took = time.monotonic() - start
        cpu = sum(cpu_seconds(n.proc.pid) for n in nodes) - before["cpu"]
        total = sum(acked)
        per_group = []
        for i, db in enumerate(dbs[:groups]):
            rows = int(db.query("SELECT COUNT(*) FROM seqd_message", database)[0][0])
            per_group.append("g%d: %d messages, %d statements, %d commits" % (
                i + 1, rows, status(db, "Questions") - before["q"][i],
                status(db, "Com_commit") - before["c"][i]))
        print("%d group(s): %d messages acked, %.0f/s; seqd CPU %.3f ms per message; %s" % (
            groups, total, total / took, 1000 * cpu / max(total, 1), "; ".join(per_group)))
    finally:
        for n in nodes:
            n.kill()


def main():
    ws = Workspace("seqd-groups-bench-")
    try:
        dbs = []
        for i in range(3):
            base = os.path.join(ws.base, "db%d" % (i + 1))
            os.makedirs(base)
            dbs.append(MariaDB(base))
            ws.on_cleanup(dbs[-1].stop)
        for groups in (1, 2, 3):
            run(ws, dbs, groups)
    finally:
        ws.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
