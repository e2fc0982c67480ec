"""Online shard moves between store groups (docs/cluster.md, "Moving a
shard"): two seqd --cluster on two MariaDB servers of the test's own (groups
home and b). A shard holding messages, dense and segment keys, min seqs and
user seqs is moved to b while a client keeps writing to it; the instance
running the move is killed (-9) in the middle of the copy, and the move is
re-run with seqctl on the other instance, which finishes it. Afterwards:
every acked message is in b at its seq, seqs have no hole, IDs of each key
are unique and in real-time order, the shard's rows are gone from home and
its home lease row is sealed. A second move is killed mid-copy and undone
with `seqctl shard move S --undo`: b's copies are deleted and home serves on.
Then, while a shard moves, writes that no lease fences (recalls, members,
read seqs, conversations' min seqs, user seqs, new keys and their steps)
and fenced key min seqs go to it through its owner and through an instance
whose map stays stale after the switch: every acknowledged one must be in b
afterwards. Last, while a shard moves, every write acknowledged through its
owner is read at once through such an instance (a pull, max seq, member,
user seq, key): every read must see the write before it.

Usage: python3 tests/e2e/test_shard_move.py [-v]
"""
import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import free_port  # noqa: E402
from lib.cluster import Instance, Workspace, shard_of  # noqa: E402
from test_store_groups import (FLAGS, LEASE_MS, SHARDS, group_flags, request,  # noqa: E402
                               seqctl, wait_all_owned)
from lib.mariadb import start_all  # noqa: E402
from lib.shard_reads import ShardReads  # noqa: E402
from lib.shard_writes import (ShardWrites, check_lost, count_by_kind_and_port,  # noqa: E402
                              names_in)

MESSAGES = 1500   # messages of the moved shard before the move
RATE = 400        # rows per second: the copy takes a few seconds


class Writer(threading.Thread):
    """Sends messages to `conv` and asks IDs of `key` through `port` until
    stopped, re-sending a message after an error; records every answer
    with its send and receive times."""

    def __init__(self, port, conv, key):
        super().__init__(daemon=True)
        self.port, self.conv, self.key = port, conv, key
        self.stop = threading.Event()
        self.acked = {}   # client_msg_id -> seq
        self.ids = []     # (sent, received, first, last)
        self.errors = 0

    def run(self):
        # An ID request not answered is sent again with its token until it
        # is: a lost answer then costs no hole (docs/dense-keys.md), so any
        # gap between two answers of the dense key is one.
        n, block, first_sent = 0, 0, None
        while not self.stop.is_set():
            msg_id = "w%d" % n
            try:
                status, body = request(self.port, "POST", "/conversations/%s/messages" % self.conv,
                                       {"sender_id": "w", "client_msg_id": msg_id, "payload": msg_id})
                if status in (200, 201):
                    self.acked[msg_id] = body["seq"]
                    n += 1
                else:
                    self.errors += 1
                if first_sent is None:
                    first_sent = time.monotonic()
                status, body = request(self.port, "GET", "/seq/%s?count=2&token=w%d"
                                       % (self.key, block))
                if status == 200:
                    r = body["ranges"]
                    self.ids.append((first_sent, time.monotonic(), r[0]["first"], r[-1]["last"]))
                    block, first_sent = block + 1, None
                else:
                    self.errors += 1
            except OSError:
                self.errors += 1
                time.sleep(0.05)


class ShardMoveTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ws = Workspace("seqd-move-")
        dbs = start_all(cls.ws.base, 2)
        for db in dbs:
            cls.ws.on_cleanup(db.stop)
        cls.dbs = dbs
        flags = FLAGS + group_flags([db.url for db in dbs])
        cls.nodes = []
        for name in ("s1", "s2"):
            node = Instance(name, dbs[0].url, LEASE_MS, cls.ws.base, flags)
            cls.ws.on_cleanup(node.kill)
            cls.nodes.append(node)
        wait_all_owned(cls.nodes[1])

    @classmethod
    def tearDownClass(cls):
        cls.ws.cleanup()

    def fill(self, shard):
        """Rows of every kind for `shard`; returns (convs, keys)."""
        convs = names_in(shard, SHARDS, "sg_mc", 3)
        keys = names_in(shard, SHARDS, "sg_mk", 2) + names_in(shard, SHARDS, "seg_mk", 2)
        port = self.nodes[1].http_port
        for i in range(MESSAGES):
            for _ in range(20):  # a 503 while a shard changes hands: sent again
                status, body = request(port, "POST", "/conversations/%s/messages" % convs[i % 3],
                                       {"sender_id": "f", "client_msg_id": "f%d" % i,
                                        "payload": "x"})
                if status != 503:
                    break
            self.assertIn(status, (200, 201), body)
        for k in keys:
            self.assertEqual(request(port, "GET", "/seq/%s?count=5" % k)[0], 200)
        self.assertEqual(request(port, "PUT", "/min_seqs", {"min_seqs": {keys[0]: 3}})[0], 200)
        self.assertEqual(request(port, "PUT", "/user_seqs", {
            "user": "u", "field": "read", "seqs": {convs[0]: 4}})[0], 200)
        return convs, keys

    def start_move_and_kill(self, node, shard, killed_rows=300):
        """Starts moving `shard` to b on `node` (slowly) and kills it -9
        once the copy is under way."""
        status, body = request(node.http_port, "POST", "/admin/placement/move",
                               {"shard": shard, "to": "b", "rate": RATE})
        self.assertEqual(status, 202, body)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            m = request(node.http_port, "GET", "/admin/placement")[1]["mover"]
            if m["phase"] == "copying" and m["rows_copied"] >= killed_rows:
                break
            self.assertNotEqual(m["phase"], "failed", m)
            time.sleep(0.05)
        node.kill()
        state = self.dbs[0].query("SELECT move_state FROM seqd_shard_placement WHERE shard = %d"
                                  % shard)
        self.assertEqual(state, [["copying"]])

    def rows_of(self, db, shard):
        """Rows of `shard` in `db`: leaf_alloc keys and message conversations."""
        keys = [r[0] for r in db.query("SELECT biz_tag FROM leaf_alloc")]
        convs = [r[0] for r in db.query("SELECT DISTINCT conv_id FROM seqd_message")]
        return [k for k in keys + convs if shard_of(k, SHARDS) == shard]

    def test_1_killed_mid_copy_then_finished(self):
        shard = 5
        convs, keys = self.fill(shard)
        before = {c: int(self.dbs[0].query("SELECT MAX(seq) FROM seqd_message WHERE conv_id = '%s'"
                                           % c)[0][0]) for c in convs}
        writer = Writer(self.nodes[1].http_port, convs[0], keys[0])
        writer.start()
        self.start_move_and_kill(self.nodes[0], shard)
        r = seqctl(self.nodes[1].http_port, "shard", "move", str(shard), "--to", "b")
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("done", r.stdout)
        time.sleep(0.5)
        writer.stop.set()
        writer.join()
        print("moved: %s; writer acked %d messages, %d ID answers, %d errors" % (
            r.stdout.strip(), len(writer.acked), len(writer.ids), writer.errors))
        self.assertGreater(len(writer.acked), 10)
        # Placement: b, no move; the home lease row sealed, b's owned.
        self.assertEqual(self.dbs[0].query(
            "SELECT group_name, move_state FROM seqd_shard_placement WHERE shard = %d" % shard),
            [["b", ""]])
        self.assertEqual(self.dbs[0].query(
            "SELECT sealed, owner FROM seqd_shard_lease WHERE shard = %d" % shard), [["1", ""]])
        owner = self.dbs[1].query("SELECT owner FROM seqd_shard_lease WHERE shard = %d" % shard)
        self.assertNotEqual(owner, [[""]])
        # The shard's rows left home, and b holds every message once, no hole.
        self.assertEqual(self.rows_of(self.dbs[0], shard), [])
        for c in convs:
            seqs = [int(x[0]) for x in self.dbs[1].query(
                "SELECT seq FROM seqd_message WHERE conv_id = '%s' ORDER BY seq" % c)]
            self.assertEqual(seqs, list(range(1, len(seqs) + 1)), c)
            self.assertGreaterEqual(len(seqs), before[c])
        stored = dict((row[0], int(row[1])) for row in self.dbs[1].query(
            "SELECT client_msg_id, seq FROM seqd_message WHERE conv_id = '%s' AND sender_id = 'w'"
            % convs[0]))
        lost = {m: s for m, s in writer.acked.items() if stored.get(m) != s}
        self.assertEqual(lost, {}, "acked messages lost or moved")
        # IDs: unique, and in real-time order.
        seen = set()
        for i, (sent, received, first, last) in enumerate(writer.ids):
            for x in range(first, last + 1):
                self.assertNotIn(x, seen)
                seen.add(x)
            for (sent2, received2, first2, last2) in writer.ids[i + 1:]:
                if sent2 > received:
                    self.assertGreater(first2, last, "real-time order")
        # Dense key: no hole across the move.
        dense = [r for r in writer.ids]
        for (a, b) in zip(dense, dense[1:]):
            self.assertEqual(b[2], a[3] + 1, "a hole in dense key %s" % keys[0])
        m = request(self.nodes[1].http_port, "GET", "/admin/placement")[1]["mover"]
        print("pause: %s ms (seal to the owner's lease in b)" % m["pause_ms"])
        self.assertGreaterEqual(m["pause_ms"], 0)

    def test_2_killed_mid_copy_then_undone(self):
        node = Instance("s3", self.dbs[0].url, LEASE_MS, self.ws.base,
                        FLAGS + group_flags([db.url for db in self.dbs]))
        self.ws.on_cleanup(node.kill)
        time.sleep(LEASE_MS / 1000.0)  # it joins: shards move to it
        wait_all_owned(node)
        shard = 9
        convs, keys = self.fill(shard)
        self.start_move_and_kill(node, shard)
        r = seqctl(self.nodes[1].http_port, "shard", "move", str(shard), "--undo")
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("undone", r.stdout)
        self.assertEqual(self.rows_of(self.dbs[1], shard), [])
        self.assertEqual(self.dbs[0].query(
            "SELECT group_name, move_state FROM seqd_shard_placement WHERE shard = %d" % shard),
            [["home", ""]])
        # Home serves on: the next message follows the last one. The killed
        # mover may have owned the shard: until its lease runs out a send
        # may be answered 503 (retryable), and a client sends it again
        # (the same client_msg_id, so a retry can never store it twice).
        deadline = time.time() + 15
        while True:
            status, body = request(self.nodes[1].http_port, "POST",
                                   "/conversations/%s/messages" % convs[0],
                                   {"sender_id": "f", "client_msg_id": "after-undo",
                                    "payload": "x"})
            if status != 503 or time.time() > deadline:
                break
            time.sleep(0.2)
        self.assertIn(status, (200, 201), body)
        self.assertEqual(body["seq"], MESSAGES // 3 + 1)
        r = seqctl(self.nodes[1].http_port, "shard", "status")
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("placement version", r.stdout)

    def test_3_rebalance_moves_count_shards_one_at_a_time(self):
        before = {int(r[0]) for r in self.dbs[0].query(
            "SELECT shard FROM seqd_shard_placement WHERE group_name = 'b'")}
        r = seqctl(self.nodes[1].http_port, "shard", "rebalance", "--to", "b", "--count", "2",
                   "--rate", "1000")
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("2 shards moved", r.stdout)
        after = {int(r[0]) for r in self.dbs[0].query(
            "SELECT shard FROM seqd_shard_placement WHERE group_name = 'b' AND move_state = ''")}
        self.assertEqual(len(after - before), 2, (before, after))
        # Each moved shard is served from b: an ID of a key in it.
        for shard in after - before:
            key = names_in(shard, SHARDS, "seg_rb", 1)[0]
            status, body = request(self.nodes[1].http_port, "GET", "/seq/%s" % key)
            self.assertEqual(status, 200, body)
            self.assertEqual(self.dbs[1].query(
                "SELECT COUNT(*) FROM leaf_alloc WHERE biz_tag = '%s'" % key), [["1"]])

    def home_shard_owned_by(self, node):
        """A shard in the home group, with no move, that `node` owns."""
        placed = {int(r[0]) for r in self.dbs[0].query("SELECT shard FROM seqd_shard_placement")}
        status, body = request(node.http_port, "GET", "/admin/cluster")
        self.assertEqual(status, 200, body)
        for s in body["shard_map"]:
            if s["owner"] == node.instance_id and s["shard"] not in placed:
                return s["shard"]
        self.fail("%s owns no shard of the home group" % node.name)

    def stale_instance(self, name):
        """A new instance whose advertised address is dead: the mover's
        nudge never reaches it, so its map stays stale after a switch until
        its next lease round (or until a read or write of it is refused)."""
        stale = Instance(name, self.dbs[0].url, LEASE_MS, self.ws.base,
                         FLAGS + group_flags([db.url for db in self.dbs])
                         + ["--advertise", "127.0.0.1:%d" % free_port()])
        self.ws.on_cleanup(stale.kill)
        time.sleep(LEASE_MS / 1000.0)  # it joins: shards move to it
        wait_all_owned(stale)
        return stale

    def move_to_b(self, node, shard):
        """Moves `shard` to b through `node`, unthrottled; the mover's
        state once done."""
        status, body = request(node.http_port, "POST", "/admin/placement/move",
                               {"shard": shard, "to": "b", "rate": 0})
        self.assertEqual(status, 202, body)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            m = request(node.http_port, "GET", "/admin/placement")[1]["mover"]
            self.assertNotEqual(m["phase"], "failed", m)
            if not m["running"] and m["phase"] == "done":
                return m
            time.sleep(0.05)
        self.fail("the move did not finish: %s" % m)

    def test_4_unfenced_writes_survive_a_move(self):
        stale = self.stale_instance("s4")
        owner = self.nodes[1]
        shard = self.home_shard_owned_by(owner)
        writes = ShardWrites(shard, SHARDS, "w4")
        writes.setup(owner.http_port)
        writes.start([owner.http_port, stale.http_port])
        time.sleep(0.5)
        m = self.move_to_b(owner, shard)
        time.sleep(0.3)  # writes after the clean-up too
        writes.stop()
        lost = check_lost(writes.acked, writes.read_rows(self.dbs[1].query))
        last = writes.last_refused
        print("moved shard %d (pause %s ms); owner port %d, stale port %d; acked %s; "
              "503s or no answer by port %s; the stale one's last 503 %s ms after the owner's; "
              "lost %d by kind and port %s; first ones %s"
              % (shard, m["pause_ms"], owner.http_port, stale.http_port, writes.counts(),
                 writes.refused,
                 round((last[stale.http_port] - last[owner.http_port]) * 1000)
                 if len(last) == 2 else None,
                 len(lost), count_by_kind_and_port(lost), lost[:5]))
        self.assertEqual(lost, [], "acknowledged writes missing from the new group")
        self.assertEqual(writes.unexpected, [])
        self.assertTrue(all(n > 0 for n in writes.counts().values()), writes.counts())
        self.assertEqual(self.rows_of(self.dbs[0], shard), [])
        # Both instances refused writes in the sealed group (and retried).
        for node in (owner, stale):
            self.assertGreater(node.metrics().get("seqd_shard_move_writes_refused_total", 0), 0,
                               node.name)

    def test_5_reads_see_the_writes_before_them(self):
        # Only reads go through the stale instance: before reads were
        # checked, nothing it did told it the placement changed, so after
        # the switch it read the old group, as the seal left it, for up to
        # a lease round.
        stale = self.stale_instance("s5")
        owner = self.nodes[1]
        shard = self.home_shard_owned_by(owner)
        reads = ShardReads(shard, SHARDS, "r5", owner.http_port, stale.http_port)
        reads.start()
        time.sleep(0.5)
        m = self.move_to_b(owner, shard)
        time.sleep(0.3)  # reads after the clean-up too
        reads.stop()
        refused = stale.metrics().get("seqd_shard_move_reads_refused_total", 0)
        print("moved shard %d (pause %s ms); reads that saw their write %s; stale reads %d, "
              "first ones %s; reads refused (503, sent again) %d, counted by the stale "
              "instance %s"
              % (shard, m["pause_ms"], reads.rounds, len(reads.stale), reads.stale[:5],
                 reads.refused, refused))
        self.assertEqual(reads.stale, [], "reads that missed a write acknowledged before them")
        self.assertEqual(reads.unexpected, [])
        self.assertTrue(all(n > 0 for n in reads.rounds.values()), reads.rounds)
        # The reads met the moved shard in the old group (and were retried).
        self.assertGreater(refused, 0)


if __name__ == "__main__":
    unittest.main()
