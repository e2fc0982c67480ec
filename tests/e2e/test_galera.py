"""seqd on a 3-node MariaDB Galera cluster (scripts/galera.sh) through
multi-host store URLs, under load, while the node a seqd talks to is killed
with kill -9 and then rejoins.

Six seqd: three plain (A, B, C) and three in cluster mode (X, Y, Z, on a
database of their own), each pair listing a different node first, so
writes reach all three nodes at once. Clients take segment IDs from shared
keys (small steps: many reservations, the same leaf_alloc rows updated
through every node, so Galera certification conflicts really happen) and
send messages to shared conversations (re-sending with the same
client_msg_id after a 503 or a dropped connection, the documented retry).
Every answer is recorded with its time. Then, per round, the first node of
one pair is killed with kill -9, load goes on for a while, and the node
rejoins (IST). The checks:
- no ID handed out twice, across all six seqd;
- dense keys (docs/dense-keys.md; blocks with a token, sent again with it
  until answered): per key, the blocks every client saw tile 1..max
  exactly, with no hole and no overlap, MAX_IDS is that max, and the seqd
  that used the killed node answered dense blocks after the kill;
- OpenIM's unread (max - read): each client marks every block it got as
  read (a user's read seq, raised only); at the end each user's read seq
  is at least the last one acknowledged and at most MAX_IDS, so unread is
  never inflated by a lost read or by a max above the last seq;
- per conversation, stored seqs are 1..n, every acknowledged message is
  stored once, at the seq it was acknowledged with;
- the killed node did serve seqd before it died (a connection of ours on
  it), the cluster shrank to two nodes and grew back to three, and the
  seqd that used it answered again after the kill without a restart
  (every seqd passes /readyz, an ID and a send at the end);
- seqd_store_conflicts_total summed over the seqd is > 0;
- the only errors clients see are 503s, and connection errors while a seqd
  waits out its database (none from the seqd that do not use the node);
- push subscribers (tests/e2e/lib/subscribers.py: `seqctl msg subscribe`
  over X, Y and Z's binary ports, and SSE clients resuming by
  Last-Event-ID, ?from= and the multi-conversation token at a random one of
  X, Y, Z), started before the load on the cluster-mode conversations,
  deliver every acked message within QUIET_WAIT_S of the load stopping, and
  then per subscriber and conversation exactly the stored seqs from 1, each
  once, in order, with the stored content. (Plain seqd sharing a database,
  A, B and C, push only what they commit themselves: cross-instance push is
  cluster mode's.)
A run where no node was killed fails.

Usage: python3 tests/e2e/test_galera.py [--seconds N] [--rounds R]
Environment: SEQD_GALERA_DIR (a cluster started by scripts/galera.sh),
SEQD_BINARY.
"""
import argparse
import collections
import http.client
import json
import os
import random
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import REPO, Seqd, free_port  # noqa: E402
from lib import subscribers  # noqa: E402

GALERA = os.path.join(REPO, "scripts", "galera.sh")
RUN = "%06x" % random.getrandbits(24)
ORDERS = [(1, 2, 3), (2, 3, 1), (3, 1, 2)]
PACE_S = 0.01  # between a client's requests
# A range a seqd installed (logged at info).
RESERVED = re.compile(r"INFO reserved key=(\S+) range=\[(\d+),(\d+)\]")
QUIET_WAIT_S = 10.0  # subscribers deliver every acked message this soon after the load


def log(*a):
    print(*a, flush=True)


def galera(*args):
    r = subprocess.run([GALERA, args[0], os.environ["SEQD_GALERA_DIR"], *map(str, args[1:])],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError("galera.sh %s: %s" % (" ".join(map(str, args)), r.stderr[-2000:]))
    return r.stdout.strip()


def root_sql(node, statement):
    """Runs `statement` as root on node `node` (its socket); the output."""
    sock = os.path.join(os.environ["SEQD_GALERA_DIR"], "n%d" % node, "sock")
    r = subprocess.run(["mariadb", "--no-defaults", "--protocol=socket", "--socket=" + sock,
                        "-uroot", "-N", "-B", "-e", statement],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30)
    if r.returncode != 0:
        raise RuntimeError("%s on node %d: %s" % (statement, node, r.stderr))
    return r.stdout.strip()


def url(order, database=None):
    u = galera("url", *order)
    if database:
        u = u.rsplit("/", 1)[0] + "/" + database
    return u


def metric(s, name):
    try:
        status, body = s.get("/metrics")
    except OSError:
        return 0.0
    total = 0.0
    for line in body.decode().splitlines():
        if line.startswith(name) and not line.startswith("#"):
            total += float(line.rpartition(" ")[2])
    return total


class History:
    """What the clients saw, thread-safe: every answer with its time."""

    def __init__(self):
        self.lock = threading.Lock()
        self.ids = collections.Counter()
        self.id_answers = collections.defaultdict(list)  # (key, id) -> [(instance, time)]
        self.acked = {}  # (conv, client_msg_id) -> seq
        self.answers = collections.Counter()  # (instance, what, status)
        self.ok_times = collections.defaultdict(list)  # instance -> times of successes
        self.dense_blocks = collections.defaultdict(list)  # key -> [(first, last)]
        self.dense_times = collections.defaultdict(list)  # instance -> times of dense blocks
        self.dense_retries = 0  # dense requests sent again with their token
        self.reads_acked = {}  # (user, key) -> the highest read seq acknowledged
        self.commit_times = collections.defaultdict(list)  # instance -> times of acked sends
        self.bad = []

    def saw(self, inst, what, status, payload):
        with self.lock:
            self.answers[(inst, what, status)] += 1
            if 200 <= status < 300:
                self.ok_times[inst].append(time.time())
                if what == "send":  # a commit: proof that the store works, not the buffers
                    self.commit_times[inst].append(time.time())
            elif status != 503 and status != -1:
                self.bad.append((inst, what, status, payload[:200]))


class Load:
    """Client threads against the seqd in `procs` until stop() is called."""

    def __init__(self, procs, history, keys, convs):
        # keys[inst], convs[inst]: the names each seqd's clients use (one set
        # per database).
        self.procs, self.h, self.keys, self.convs = procs, history, keys, convs
        self.dense_keys = {}  # inst -> its database's dense key
        self.stopping = threading.Event()
        self.threads = []

    def request(self, s, conn, method, path, body=None):
        try:
            status, payload, _ = s.request(method, path, body, conn=conn)
            return status, payload, conn
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            return -1, str(e).encode(), s.conn()

    def ids(self, inst, s, key):
        conn = s.conn()
        while not self.stopping.is_set():
            n = random.randint(1, 4)
            status, payload, conn = self.request(s, conn, "GET", "/seq/%s?count=%d" % (key, n))
            self.h.saw(inst, "seq", status, payload)
            if status == 200:
                got = []
                for r in json.loads(payload)["ranges"]:
                    got.extend(range(r["first"], r["last"] + 1))
                now = time.time()
                with self.h.lock:
                    self.h.ids.update((key, i) for i in got)
                    for i in got:
                        self.h.id_answers[(key, i)].append((inst, now))
            # Paced: the load must leave CPU for a rejoining node to catch up.
            time.sleep(PACE_S if status == 200 else 0.02)
        conn.close()

    def dense(self, inst, s, key):
        """Dense blocks of `key`, each with a token of its own, sent again
        with it until answered (a lost answer then costs no ID)."""
        conn = s.conn()
        i = 0
        while not self.stopping.is_set():
            n, token = random.randint(1, 3), "%s-%s-%d" % (inst, RUN, i)
            i += 1
            path = "/seq/%s?count=%d&contiguous=true&token=%s" % (key, n, token)
            deadline = time.time() + 60
            while time.time() < deadline:  # past stop() too: the answer may be lost
                status, payload, conn = self.request(s, conn, "GET", path)
                self.h.saw(inst, "dense", status, payload)
                if status == 200:
                    body = json.loads(payload)
                    with self.h.lock:
                        self.h.dense_blocks[key].append((body["first"], body["last"]))
                        self.h.dense_times[inst].append(time.time())
                    conn = self.mark_read(inst, s, conn, key, body["last"])
                    break
                if status not in (503, -1):
                    break
                with self.h.lock:
                    self.h.dense_retries += 1
                time.sleep(0.05)
            time.sleep(PACE_S)
        conn.close()

    def mark_read(self, inst, s, conn, key, seq):
        """OpenIM's SetUserReadSeq for this client's user: `seq` read, sent
        again after a 503 or a lost answer (raising it twice is harmless)."""
        user = "reader_%s" % inst
        body = {"user": user, "field": "read", "raise_only": True, "seqs": {key: seq}}
        deadline = time.time() + 60
        while time.time() < deadline:
            status, payload, conn = self.request(s, conn, "PUT", "/user_seqs", body)
            self.h.saw(inst, "read", status, payload)
            if status == 200:
                with self.h.lock:
                    had = self.h.reads_acked.get((user, key), 0)
                    self.h.reads_acked[(user, key)] = max(had, seq)
                return conn
            if status not in (503, -1):
                return conn
            time.sleep(0.05)
        return conn

    def sends(self, inst, s, conv, name):
        conn = s.conn()
        i = 0
        while not self.stopping.is_set():
            cmid = "%s-%d" % (name, i)
            i += 1
            body = {"sender_id": name, "client_msg_id": cmid, "content_type": 1,
                    "payload": "m %s" % cmid}
            # Until acknowledged, even past stop(): an unacknowledged send may
            # have been stored, and a re-send resolves it.
            deadline = time.time() + 60
            while time.time() < deadline:
                status, payload, conn = self.request(s, conn, "POST",
                                                     "/conversations/%s/messages" % conv, body)
                self.h.saw(inst, "send", status, payload)
                if status in (200, 201):
                    with self.h.lock:
                        self.h.acked[(conv, cmid)] = json.loads(payload)["seq"]
                    time.sleep(PACE_S)
                    break
                if status not in (503, -1):
                    break
                time.sleep(0.05)
        conn.close()

    def start(self):
        for inst, s in self.procs.items():
            for t in range(2):
                self.threads.append(threading.Thread(
                    target=self.ids, args=(inst, s, self.keys[inst][t])))
            self.threads.append(threading.Thread(
                target=self.dense, args=(inst, s, self.dense_keys[inst])))
            for t in range(2):
                conv = self.convs[inst][t]
                self.threads.append(threading.Thread(
                    target=self.sends, args=(inst, s, conv, "%s%d" % (inst, t))))
        for t in self.threads:
            t.start()

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join()


def cluster_size(node):
    return int(root_sql(node, "SHOW STATUS LIKE 'wsrep_cluster_size'").split()[1])


def our_connections(node):
    return int(root_sql(node, "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
                              "WHERE USER = 'seqd'"))


def wait_until(what, check, timeout):
    deadline = time.time() + timeout
    while True:
        if check():
            return
        if time.time() > deadline:
            raise AssertionError("not within %ss: %s" % (timeout, what))
        time.sleep(0.2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=8, help="load per phase")
    ap.add_argument("--rounds", type=int, default=3, help="kill/rejoin rounds (nodes 1, 2, 3)")
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    if not os.environ.get("SEQD_GALERA_DIR"):
        raise SystemExit("SEQD_GALERA_DIR is not set: run scripts/galera-test")
    started = time.time()

    cluster_db = "seqd_test_galera_%s" % RUN
    root_sql(1, "CREATE DATABASE %s" % cluster_db)
    # info: each reservation's range is logged (the duplicate check's evidence)
    flags = ["--max-step", "20", "--db-threads", "4", "--snowflake", "off", "--log-level", "info",
             "--auto-keys", "gd_:20:dense"]
    procs = {}
    subs = []
    tcp_ports = {}
    try:
        for name, order in zip("ABC", ORDERS):
            procs[name] = Seqd(url(order), *flags)
        for name, order in zip("XYZ", ORDERS):
            tcp_ports[name] = free_port()
            procs[name] = Seqd(url(order, cluster_db), *flags, "--cluster",
                               "--cluster-shards", "64", "--tcp-port", str(tcp_ports[name]),
                               "--sse-heartbeat-ms", str(subscribers.HEARTBEAT_MS))
        for s in procs.values():
            wait_until("readyz", lambda s=s: s.get("/readyz")[0] == 200, 30)
        # One set of keys and conversations per database, shared by its
        # three seqd.
        keys, convs = {}, {}
        for group in ("ABC", "XYZ"):
            names = ["gal_%s_%s_%d" % (group, RUN, k) for k in range(2)]
            for k in names:
                procs[group[0]].create_key(k, 10)
            # Served by the gd_ rule: a conversation follows the key rules.
            conv_names = ["gd_gal_%s_%s_%d" % (group, RUN, c) for c in range(2)]
            for inst in group:
                keys[inst], convs[inst] = names, conv_names
        h = History()
        pick_rng = random.Random()
        subs = subscribers.start_subscribers(
            convs["X"], ["127.0.0.1:%d" % tcp_ports[n] for n in "XYZ"],
            lambda: procs[pick_rng.choice("XYZ")].port, threading.Event())
        load = Load(procs, h, keys, convs)
        for group in ("ABC", "XYZ"):  # one dense key per database, shared by its three seqd
            for inst in group:
                load.dense_keys[inst] = "gd_%s_%s" % (group, RUN)
        conflicts_before = sum(metric(s, "seqd_store_conflicts_total") for s in procs.values())
        load.start()
        kills = []
        try:
            time.sleep(args.seconds)
            for r in range(args.rounds):
                node = ORDERS[r % 3][0]
                users = [n for n, o in zip("ABC", ORDERS) if o[0] == node] + \
                        [n for n, o in zip("XYZ", ORDERS) if o[0] == node]
                before = our_connections(node)
                t_kill = time.time()
                galera("kill", node)
                survivor = ORDERS[r % 3][1]
                # Galera evicts a killed node after its suspect and inactive
                # timeouts (5 + 15 s by default), later on a loaded machine:
                # beside the test command's soak and clang builds it once
                # took over 30 s.
                wait_until("cluster of 2", lambda: cluster_size(survivor) == 2, 60)
                time.sleep(args.seconds)
                t_rejoin = time.time()
                galera("rejoin", node)
                rejoin_s = time.time() - t_rejoin
                wait_until("cluster of 3", lambda: cluster_size(node) == 3, 30)
                kills.append({"node": node, "users": users, "connections_before": before,
                              "t_kill": t_kill, "t_rejoin": t_rejoin, "rejoin_s": rejoin_s})
                log("round %d: node %d killed with %d seqd connections on it (used first by %s); "
                    "rejoined in %.1f s" % (r + 1, node, before, "".join(users), rejoin_s))
                time.sleep(args.seconds)
        finally:
            load.stop()
        # No message follows now: what was acked must arrive all the same.
        acked_xyz = {(c, seq) for (c, _), seq in h.acked.items() if c in convs["X"]}
        waits = {"quiet": subscribers.wait_delivered(subs, acked_xyz, QUIET_WAIT_S)}

        problems = []
        # --- the fault happened and mattered.
        if not kills:
            problems.append("no node was killed: the run proves nothing")
        for k in kills:
            if k["connections_before"] == 0:
                problems.append("node %d held no seqd connection when killed" % k["node"])
            for inst in k["users"]:
                times = h.ok_times[inst]
                after = [t for t in times if t > k["t_kill"]]
                if not after:
                    problems.append("%s answered nothing after node %d died" % (inst, k["node"]))
                    continue
                last_before = max([t for t in times if t <= k["t_kill"]], default=k["t_kill"])
                k.setdefault("failover_s", {})[inst] = round(min(after) - last_before, 3)
                if not [t for t in h.commit_times[inst] if k["t_kill"] < t < k["t_rejoin"]]:
                    problems.append("%s acknowledged no message while node %d was down" %
                                    (inst, k["node"]))
        for k in kills:
            for inst in k["users"]:
                if not [t for t in h.dense_times[inst] if k["t_kill"] < t]:
                    problems.append("%s answered no dense block after node %d died" %
                                    (inst, k["node"]))
        # --- dense keys: exactly 1..max, and MAX_IDS says max.
        for group in ("ABC", "XYZ"):
            key = load.dense_keys[group[0]]
            blocks, expect = sorted(h.dense_blocks[key]), 1
            for first, last in blocks:
                if first != expect:
                    problems.append("dense %s: block %d..%d where %d was next (a hole or an "
                                    "overlap)" % (key, first, last, expect))
                    break
                expect = last + 1
            status, body = procs[group[1]].get_json("/max_ids?key=" + key)
            if status != 200 or body["max_ids"][key] != expect - 1:
                problems.append("dense %s: MAX_IDS %s %s, the blocks end at %d" %
                                (key, status, body, expect - 1))
            if len(blocks) < 50:
                problems.append("dense %s: only %d blocks" % (key, len(blocks)))
            log("galera: dense %s: %d blocks tile 1..%d; %d requests sent again with their "
                "token" % (key, len(blocks), expect - 1, h.dense_retries))
            # --- unread = max - read, never inflated: every acknowledged read
            # is kept, and no read is above the max.
            for inst in group:
                user = "reader_%s" % inst
                status, body = procs[group[2]].get_json(
                    "/user_seqs?user=%s&field=read&conv=%s" % (user, key))
                acked = h.reads_acked.get((user, key), 0)
                read = body.get("seqs", {}).get(key) if status == 200 else None
                if read is None or not acked <= read <= expect - 1 or acked == 0:
                    problems.append("unread of %s in %s: read seq %s, last acknowledged %d, max "
                                    "%d" % (user, key, read, acked, expect - 1))
            log("galera: %s: each reader's read seq kept through the kills (unread exact)" % key)
        for k in kills:  # every seqd's longest wait between answers while the node was down
            k["stall_s"] = {}
            for inst, times in h.ok_times.items():
                window = sorted(t for t in times if k["t_kill"] - 5 <= t <= k["t_rejoin"])
                gaps = [b - a for a, b in zip(window, window[1:])]
                k["stall_s"][inst] = round(max(gaps, default=0), 3)
        # --- IDs: none twice.
        dups = sum(c - 1 for c in h.ids.values() if c > 1)
        if dups:
            problems.append("%d IDs handed out twice" % dups)
            t0 = min(t for answers in h.id_answers.values() for _, t in answers)
            twice = sorted(k for k, c in h.ids.items() if c > 1)
            for k in kills:
                log("  node %d killed at %.3f s, rejoined at %.3f s" %
                    (k["node"], k["t_kill"] - t0, k["t_rejoin"] - t0))
            for k in twice[:20]:  # who served them, and when (s from the first ID)
                log("  twice: %s %d by %s" % (k[0], k[1], [(i, round(t - t0, 3))
                                                           for i, t in h.id_answers[k]]))
            # Which reservations hold the first ones: two overlapping ranges
            # point at the store, one range at the server.
            for key, i in twice[:3]:
                for inst, s in procs.items():
                    with open(s.log.name, errors="replace") as f:
                        for m in RESERVED.finditer(f.read()):
                            if m.group(1) == key and int(m.group(2)) <= i <= int(m.group(3)):
                                log("  %s %d: in %s's reservation %s" % (key, i, inst, m.group(0)))
        if len(h.ids) < 1000:
            problems.append("only %d IDs handed out" % len(h.ids))
        # --- reservations (every seqd logs each range it installs): no two
        # overlap, whether or not all their IDs were handed out.
        ranges = collections.defaultdict(list)  # key -> [(first, last, instance)]
        for inst, s in procs.items():
            with open(s.log.name, errors="replace") as f:
                for m in RESERVED.finditer(f.read()):
                    ranges[m.group(1)].append((int(m.group(2)), int(m.group(3)), inst))
        overlaps = []
        for key, rs in ranges.items():
            rs.sort()
            overlaps += [(key, a, b) for a, b in zip(rs, rs[1:]) if b[0] <= a[1]]
        for key, a, b in overlaps[:10]:
            log("  reserved twice: %s %s and %s" % (key, a, b))
        log("galera: %d reservations installed, %d overlapping another" %
            (sum(len(rs) for rs in ranges.values()), len(overlaps)))
        if overlaps:
            problems.append("%d reserved ranges overlap another" % len(overlaps))
        if sum(len(rs) for rs in ranges.values()) < 100:
            problems.append("only %d reservations logged" % sum(len(rs) for rs in ranges.values()))
        # --- messages: 1..n, every ack stored at its seq, once.
        stored_total = 0
        stored_rows = {}
        for group, conv in [(g, c) for g in ("ABC", "XYZ") for c in convs[g[0]]]:
            stored, after = [], 0
            while True:
                status, body = procs[group[0]].get_json(
                    "/conversations/%s/messages?from=%d&limit=1000" % (conv, after + 1))
                if status != 200:
                    problems.append("pull %s: %s %s" % (conv, status, body))
                    break
                stored.extend(body["messages"])
                if body["is_end"] or not body["messages"]:
                    break
                after = body["messages"][-1]["seq"]
            stored_total += len(stored)
            if group == "XYZ":
                stored_rows[conv] = [(m["seq"], m["server_msg_id"], m["sender_id"],
                                      m["client_msg_id"], m["payload"], m["status"])
                                     for m in stored]
            seqs = [m["seq"] for m in stored]
            if seqs != list(range(1, len(seqs) + 1)):
                problems.append("%s: seqs are not 1..n" % conv)
            by_cmid = collections.defaultdict(list)
            for m in stored:
                by_cmid[m["client_msg_id"]].append(m["seq"])
            for (c, cmid), seq in h.acked.items():
                if c != conv:
                    continue
                if cmid not in by_cmid:
                    problems.append("%s: acked %s (seq %d) missing" % (conv, cmid, seq))
                elif by_cmid[cmid] != [seq]:
                    problems.append("%s: acked %s at %d, stored at %s" %
                                    (conv, cmid, seq, by_cmid[cmid]))
        acked = len(h.acked)
        if acked < 100:
            problems.append("only %d messages acknowledged" % acked)
        # --- push: every stored message to every subscriber, once, in order
        # (before the sends below, which the pull did not see).
        waits["final"] = subscribers.wait_delivered(
            subs, {(c, r[0]) for c, rows in stored_rows.items() for r in rows}, 10.0)
        for sub in subs:
            sub.stop()
        sub_verdict = subscribers.check_deliveries(
            {sub.name: sub.snapshot() for sub in subs}, stored_rows, acked_xyz)
        problems += ["subscribers: %s" % p for p in subscribers.failures_of(
            sub_verdict, subs, waits)]
        log("galera: subscribers on %s (seconds to catch up after the load / after the "
            "pulls):" % ", ".join(convs["X"]))
        subscribers.print_figures(
            subscribers.subscriber_figures(subs, sub_verdict, waits), sub_verdict, log)
        # --- answers: 503s and dropped connections only.
        problems += ["unexpected answer %s" % (b,) for b in h.bad[:10]]
        # --- back to full service, no restart.
        for inst, s in procs.items():
            try:
                wait_until("%s ready" % inst, lambda s=s: s.get("/readyz")[0] == 200, 30)
                for i in range(10):
                    s.ids(keys[inst][0])
                    status, payload, _ = s.request(
                        "POST", "/conversations/%s/messages" % convs[inst][0],
                        {"sender_id": "end", "client_msg_id": "%s-end-%d" % (inst, i),
                         "content_type": 1, "payload": "x"})
                    if status != 201:
                        raise AssertionError("send: %s %s" % (status, payload))
            except (AssertionError, RuntimeError, OSError) as e:
                problems.append("%s not back to full service: %s" % (inst, e))
            if s.proc.poll() is not None:
                problems.append("%s exited" % inst)
        conflicts = sum(metric(s, "seqd_store_conflicts_total")
                        for s in procs.values()) - conflicts_before
        retries = sum(metric(s, "seqd_store_conflict_retries_total") for s in procs.values())
        silent = sum(metric(s, "seqd_store_silent_rollbacks_total") for s in procs.values())
        lost = sum(metric(s, 'seqd_store_commit_failures_total{reason="lost"}')
                   for s in procs.values())
        if conflicts <= 0:
            problems.append("no certification conflict counted (seqd_store_conflicts_total)")

        statuses = collections.Counter()
        for (inst, what, status), n in h.answers.items():
            statuses[(what, status)] += n
        log("galera: %d IDs (%d twice), %d messages acked, %d stored; answers %s" %
            (len(h.ids), dups, acked, stored_total, dict(statuses)))
        log("galera: seqd_store_conflicts_total %d (%d rolled back while preparing a statement), "
            "conflict retries %d, COMMITs lost %d" % (conflicts, silent, retries, lost))
        for k in kills:
            log("galera: node %d: first answer after the kill, per seqd that used it first: %s s "
                "after the last one before; longest wait between answers while it was down, "
                "per seqd: %s s; rejoin (recovery, IST, catching up to Synced) %.1f s" %
                (k["node"], k.get("failover_s"), k["stall_s"], k["rejoin_s"]))
        log("galera: %.0f s" % (time.time() - started))
        if problems:
            for p in problems:
                log("FAIL: " + p)
            for inst, s in procs.items():
                log("--- %s log tail:\n%s" % (inst, s.logs()[-1500:]))
            return 1
        log("galera: OK")
        return 0
    finally:
        for sub in subs:
            sub.stop()
        for s in procs.values():
            s.__exit__()
        try:
            root_sql(1, "DROP DATABASE IF EXISTS %s" % cluster_db)
        except RuntimeError:
            pass


if __name__ == "__main__":
    sys.exit(main())
