#!/usr/bin/env python3
"""What the store group guard costs a read (docs/scale.md): one seqd
--cluster on two MariaDB of its own (scripts/mariadb.sh) as two store
groups, a conversation of 20 messages and a member; then CALLS calls of
each read kind over HTTP, one client, one at a time. Prints, per kind, the
statements the conversation's group ran per call (SHOW GLOBAL STATUS
Questions, less what the same time idle ran: lease rounds) and the time
per call.

Usage: [CALLS=1000] [NO_GROUPS=1] python3 bench/store_group_reads.py [SEQD...]
Each binary in turn (default build/seqd; BUILD_DIR overrides), each in a
cluster of its own: give the build before a change and the one after to
compare them. NO_GROUPS=1: the same with one database and no store groups.
The client is Python on the same machine: compare statements, and times
only between binaries of the same run.
"""
import json
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CALLS = int(os.environ.get("CALLS", "1000"))
NO_GROUPS = os.environ.get("NO_GROUPS") == "1"


def measure():
    """One run with $SEQD_BINARY: {kind: [statements per call, ms per call]}."""
    sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
    from lib.cluster import Instance, Workspace
    from lib.mariadb import start_all
    from lib.shard_writes import names_in
    from test_store_groups import FLAGS, LEASE_MS, SHARDS, group_flags, request, wait_all_owned

    def questions(db):
        return int(db.query("SHOW GLOBAL STATUS LIKE 'Questions'")[0][1])

    ws = Workspace("seqd-group-reads-")
    try:
        dbs = start_all(ws.base, 2)
        for db in dbs:
            ws.on_cleanup(db.stop)
        flags = FLAGS + ([] if NO_GROUPS else group_flags([db.url for db in dbs]))
        node = Instance("r1", dbs[0].url, LEASE_MS, ws.base, flags)
        ws.on_cleanup(node.kill)
        wait_all_owned(node)
        conv = names_in(3, SHARDS, "sg_reads", 1)[0]  # shard 3: the home group
        port = node.http_port
        for i in range(20):
            request(port, "POST", "/conversations/%s/messages" % conv,
                    {"sender_id": "a", "client_msg_id": "m%d" % i, "payload": "x"})
        request(port, "PUT", "/conversations/%s/members/u" % conv, {"min_seq": 1})
        calls = {
            "pull": ("GET", "/conversations/%s/messages?from=1&limit=10" % conv, None),
            "pull for a user": ("GET", "/conversations/%s/messages?from=1&limit=10&user=u"
                                % conv, None),
            "max seqs": ("POST", "/conversations/max_seqs", {"conv_ids": [conv]}),
            "member": ("GET", "/conversations/%s/members/u" % conv, None),
            "user seqs": ("GET", "/user_seqs?user=u&field=read&conv=%s" % conv, None),
        }
        out = {}
        for kind, (method, path, body) in calls.items():
            start, q0 = time.monotonic(), questions(dbs[0])
            for _ in range(CALLS):
                status, answer = request(port, method, path, body)
                if status != 200:
                    raise RuntimeError("%s: %s %s" % (kind, status, answer))
            q1, took = questions(dbs[0]), time.monotonic() - start
            time.sleep(took)
            idle = questions(dbs[0]) - q1
            out[kind] = [round((q1 - q0 - idle) / CALLS, 2), round(took / CALLS * 1000, 3)]
        return out
    finally:
        ws.cleanup()


def main():
    if os.environ.get("STORE_GROUP_READS_ONE"):
        print(json.dumps(measure()))
        return
    binaries = sys.argv[1:] or [os.path.join(REPO, os.environ.get("BUILD_DIR", "build"), "seqd")]
    for binary in binaries:
        # One process per binary: the test library reads SEQD_BINARY once.
        env = dict(os.environ, SEQD_BINARY=os.path.abspath(binary), STORE_GROUP_READS_ONE="1")
        result = subprocess.run([sys.executable, os.path.abspath(__file__)], env=env,
                                capture_output=True, text=True, check=True)
        per_kind = json.loads(result.stdout.strip().splitlines()[-1])
        print("%s (%s):" % (binary, "one database" if NO_GROUPS else "two store groups"))
        for kind, (statements, ms) in per_kind.items():
            print("  %-16s %5.2f statements  %6.3f ms per call" % (kind, statements, ms))


if __name__ == "__main__":
    main()
