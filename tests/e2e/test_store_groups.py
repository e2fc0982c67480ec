"""Store groups (docs/cluster.md, "Store groups"): two seqd --cluster on two
MariaDB servers of the test's own, one store group each. Half the shards
are placed in the second group by a test helper (placement rows written in
the home database, the home lease rows of those shards sealed), then IDs
(dense and segment keys), messages, min seqs and user seqs are written
through both instances. Every row must land in its shard's group only, and
each group must hold some. An instance started with the groups' names
swapped is refused (it never becomes ready and says why).

The placement version travels with replies: after a shard move, a C++
client kept open records the new version, and two instances whose own
poll is ten minutes away, having missed the move's last change, learn it
within seconds: one from a peer's reply to a request it forwarded, the
other from a request a peer forwarded to it.

Usage: python3 tests/e2e/test_store_groups.py [-v] [--keep]
"""
import http.client
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import REPO  # noqa: E402
from lib.cluster import Instance, Workspace, shard_of  # noqa: E402
from lib.mariadb import start_all  # noqa: E402

LEASE_MS = 1000
SHARDS = 64
DRIVER = os.environ.get("CLIENT_PLACEMENT_DRIVER", "client_placement_driver")
SEQCTL = os.environ.get("SEQCTL_BINARY", os.path.join(REPO, "build", "client", "seqctl"))
GROUPS = ("home", "b")
FLAGS = ["--cluster-shards", str(SHARDS), "--snowflake", "off", "--resp-port", "0",
         "--auto-keys", "sg_:20:dense,seg_:20:segment"]


def request(port, method, path, body=None):
    """(status, parsed JSON or None) of one HTTP request to 127.0.0.1:port."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Content-Type": "application/json"} if body is not None else {}
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    r = c.getresponse()
    data = r.read()
    c.close()
    try:
        return r.status, json.loads(data) if data else None
    except ValueError:
        return r.status, None


def in_group_b(shard):
    """The test's placement: odd shards in group b, even ones at home."""
    return shard % 2 == 1


def seqctl(port, *words):
    return subprocess.run([SEQCTL, "--http", "127.0.0.1:%d" % port, *words],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)


def group_flags(urls):
    return [f for name, url in zip(GROUPS, urls) for f in ("--store-group", name + "=" + url)]


def place_odd_shards(home, other):
    """The test helper standing in for a shard move of empty shards: odd
    shards' home lease rows sealed, their rows in b opened above the sealed
    epoch, the placement rows written and the version raised."""
    odd = ",".join(str(s) for s in range(SHARDS) if in_group_b(s))
    home.query("UPDATE seqd_shard_lease SET owner = '', epoch = epoch + 1, version = version + 1, "
               "sealed = 1 WHERE shard IN (%s)" % odd)
    other.query("UPDATE seqd_shard_lease SET owner = '', epoch = epoch + 100, "
                "version = version + 1, sealed = 0 WHERE shard IN (%s)" % odd)
    rows = ",".join("(%d, 'b', '', '')" % s for s in range(SHARDS) if in_group_b(s))
    home.query("INSERT INTO seqd_shard_placement (shard, group_name, move_target, move_state) "
               "VALUES %s; UPDATE seqd_placement SET version = version + 1 WHERE id = 1" % rows)


def wait_all_owned(inst, deadline_s=15):
    """Waits until /admin/cluster shows every shard owned."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        status, body = request(inst.http_port, "GET", "/admin/cluster")
        if status == 200 and body.get("ready") and all(
                s.get("owner") for s in body.get("shard_map", [])):
            return body
        time.sleep(0.1)
    raise AssertionError("shards still unowned after %ds" % deadline_s)


def wait_until(what, pred, deadline_s=15):
    """Waits until pred() holds; returns the seconds it took."""
    start = time.monotonic()
    while not pred():
        if time.monotonic() - start > deadline_s:
            raise AssertionError("%s: not after %ds" % (what, deadline_s))
        time.sleep(0.02)
    return time.monotonic() - start


def placement_version(inst):
    """The placement version `inst` read last (GET /admin/placement)."""
    status, body = request(inst.http_port, "GET", "/admin/placement")
    if status != 200:
        raise AssertionError("GET /admin/placement: %s %s" % (status, body))
    return body["version"]


def key_owned_by(inst, prefix):
    """A key PREFIXn whose shard `inst` owns, as its own map says."""
    shard_map = request(inst.http_port, "GET", "/admin/cluster")[1]["shard_map"]
    owners = {s["shard"]: s.get("owner") for s in shard_map}
    for i in range(10000):
        key = "%s%d" % (prefix, i)
        if owners.get(shard_of(key, SHARDS)) == inst.instance_id:
            return key
    raise AssertionError("no key of %s found" % inst.name)


class StoreGroupsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ws = Workspace("seqd-groups-", keep="--keep" in sys.argv)
        dbs = start_all(cls.ws.base, 2)
        cls.dbs = dbs
        for db in dbs:
            cls.ws.on_cleanup(db.stop)
        cls.urls = [db.url for db in dbs]
        flags = FLAGS + group_flags(cls.urls)
        cls.nodes = []
        for name in ("s1", "s2"):
            node = Instance(name, cls.urls[0], LEASE_MS, cls.ws.base, flags)
            cls.ws.on_cleanup(node.kill)
            cls.nodes.append(node)
        wait_all_owned(cls.nodes[0])
        place_odd_shards(*dbs)
        time.sleep(LEASE_MS / 1000.0)  # a round reads the placement
        wait_all_owned(cls.nodes[0])

    @classmethod
    def tearDownClass(cls):
        cls.ws.cleanup()

    def rows(self, db, sql):
        return [r[0] for r in db.query(sql)]

    def check_placed(self, sql, what):
        """Every key `sql` lists in each group belongs to that group's
        shards, and each group holds some."""
        for index, db in enumerate(self.dbs):
            keys = self.rows(db, sql)
            self.assertTrue(keys, "%s: group %s holds none" % (what, GROUPS[index]))
            wrong = [k for k in keys if in_group_b(shard_of(k, SHARDS)) != (index == 1)]
            self.assertEqual(wrong, [], "%s in the wrong group %s" % (what, GROUPS[index]))

    def test_rows_land_in_their_shards_group(self):
        keys = ["sg_k%d" % i for i in range(24)] + ["seg_k%d" % i for i in range(24)]
        last = {}
        for round_ in range(3):
            for i, key in enumerate(keys):
                port = self.nodes[(i + round_) % 2].http_port
                status, body = request(port, "GET", "/seq/%s?count=3" % key)
                self.assertEqual(status, 200, body)
                first = body["ranges"][0]["first"]
                self.assertGreater(first, last.get(key, 0), key)
                last[key] = body["ranges"][-1]["last"]
        convs = ["sg_c%d" % i for i in range(16)]
        for n in range(3):
            for i, conv in enumerate(convs):
                port = self.nodes[(i + n) % 2].http_port
                status, body = request(port, "POST", "/conversations/%s/messages" % conv,
                                       {"sender_id": "u", "client_msg_id": "m%d" % n,
                                        "payload": "p"})
                self.assertIn(status, (200, 201), body)
                self.assertEqual(body["seq"], n + 1, conv)
        status, body = request(self.nodes[0].http_port, "PUT", "/min_seqs",
                               {"min_seqs": {k: 7 for k in keys[:20]}})
        self.assertEqual(status, 200, body)
        status, body = request(self.nodes[1].http_port, "PUT", "/user_seqs",
                               {"user": "alice", "field": "read",
                                "seqs": {c: 2 for c in convs}})
        self.assertEqual(status, 200, body)
        # Read back through the other instance.
        status, body = request(self.nodes[1].http_port, "GET",
                               "/min_seqs?" + "&".join("key=" + k for k in keys[:20]))
        self.assertEqual(status, 200, body)
        self.assertEqual(set(body["min_seqs"].values()), {7})
        status, body = request(self.nodes[0].http_port, "GET", "/conversations/sg_c3/messages?from=1")
        self.assertEqual(status, 200, body)
        self.assertEqual([m["seq"] for m in body["messages"]], [1, 2, 3])

        self.check_placed("SELECT biz_tag FROM leaf_alloc", "leaf_alloc rows")
        self.check_placed("SELECT DISTINCT conv_id FROM seqd_message", "messages")
        self.check_placed("SELECT biz_tag FROM seqd_min_seq", "min seqs")
        self.check_placed("SELECT DISTINCT conv FROM seqd_user_seq", "user seqs")
        self.check_placed("SELECT DISTINCT biz_tag FROM seqd_key_time", "dense key times")
        # Fences went to each shard's own group: b's rows of odd shards only.
        fenced_b = self.rows(self.dbs[1], "SELECT shard FROM seqd_shard_lease WHERE fences > 0")
        self.assertTrue(fenced_b)
        self.assertTrue(all(in_group_b(int(s)) for s in fenced_b), fenced_b)
        fenced_home_odd = self.rows(
            self.dbs[0], "SELECT shard FROM seqd_shard_lease WHERE fences > 0 AND shard % 2 = 1 "
            "AND sealed = 0")
        self.assertEqual(fenced_home_odd, [])

    # Named to run last (unittest runs a class's tests in name order): it
    # moves shard 2 to group b, where the tests above expect even shards
    # at home.
    def test_version_of_the_placement_travels_in_replies(self):
        s1 = self.nodes[0]
        home = self.dbs[0]
        in_database = lambda: int(home.query("SELECT version FROM seqd_placement")[0][0])
        # Two more instances whose own placement poll is ten minutes away.
        flags = FLAGS + group_flags(self.urls) + ["--placement-poll-ms", "600000"]
        slow = []
        for name in ("p1", "p2"):
            node = Instance(name, self.urls[0], LEASE_MS, self.ws.base, flags)
            self.ws.on_cleanup(node.kill)
            slow.append(node)
        wait_until("4 live members, every shard owned", lambda: len([
            m for m in request(s1.http_port, "GET", "/admin/cluster")[1]["members"]
            if m["live"]]) == 4)
        wait_all_owned(s1)
        before = in_database()
        for node in self.nodes + slow:
            wait_until("%s at version %d" % (node.name, before),
                       lambda: placement_version(node) == before)

        # A client of s1, kept open across a move s1 runs.
        driver = subprocess.Popen([DRIVER, "127.0.0.1:%d" % s1.binary_port],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.ws.on_cleanup(driver.kill)

        def ask(command):
            driver.stdin.write(command + "\n")
            driver.stdin.flush()
            return driver.stdout.readline().split()

        # Its key is s1's: no request of it is forwarded (a forward would
        # tell the owner the version, which the checks below must not see).
        client_key = key_owned_by(s1, "seg_pvc")
        self.assertEqual(ask("next " + client_key), ["ids", "1", "placement", str(before)])
        moved = seqctl(s1.http_port, "shard", "move", "2", "--to", "b")
        self.assertEqual(moved.returncode, 0, moved.stdout)
        after = in_database()
        self.assertGreater(after, before)
        # seqctl showed the shard each time an answer carried a newer version.
        shown = [int(line.split()[2].rstrip(":")) for line in moved.stdout.splitlines()
                 if line.startswith("placement version ")]
        print("move: %d -> %d; seqctl showed %s" % (before, after, shown))
        self.assertGreaterEqual(len(shown), 2, moved.stdout)
        self.assertEqual(shown, sorted(set(shown)), moved.stdout)
        self.assertTrue(before < shown[0] and shown[-1] <= after, moved.stdout)
        self.assertIn("shard 2 in b", moved.stdout)
        # The mover's instance reads its own changes at once; its client
        # records the version its next answer came after.
        wait_until("s1 at version %d" % after, lambda: placement_version(s1) == after, 5)
        reply = ask("next " + client_key)
        self.assertEqual(reply[0], "ids", reply)
        self.assertEqual(int(reply[3]), after, "the client's recorded placement version")

        # The move's last change nudged nobody: the slow instances still
        # hold an older version, and keep it while nobody talks to them.
        time.sleep(1.0)  # four lease rounds
        stale = {node.name: placement_version(node) for node in slow}
        print("after the move: database %d, slow instances %s" % (after, stale))
        for node in slow:
            self.assertLess(stale[node.name], after, node.name)

        # p1 forwards a request to s1: s1's reply carries the version.
        key = key_owned_by(s1, "seg_pvr")
        self.assertEqual(request(slow[0].http_port, "GET", "/seq/" + key)[0], 200)
        took = wait_until("p1 learns version %d from s1's reply" % after,
                          lambda: placement_version(slow[0]) == after, 5)
        print("p1 learned it from a reply in %.0f ms (its poll: 600 s)" % (took * 1000))
        # s1 forwards a request to p2: the request carries the version.
        self.assertLess(placement_version(slow[1]), after)
        key = key_owned_by(slow[1], "seg_pvq")
        self.assertEqual(request(s1.http_port, "GET", "/seq/" + key)[0], 200)
        took = wait_until("p2 learns version %d from s1's request" % after,
                          lambda: placement_version(slow[1]) == after, 5)
        print("p2 learned it from a request in %.0f ms (its poll: 600 s)" % (took * 1000))
        driver.stdin.close()
        driver.wait(5)

    def test_swapped_group_names_are_refused(self):
        flags = FLAGS + ["--store-group", "b=" + self.urls[0], "--store-group",
                         "home=" + self.urls[1]]
        with self.assertRaises(RuntimeError) as refused:
            node = Instance("swapped", self.urls[0], LEASE_MS, self.ws.base, flags)
            self.ws.on_cleanup(node.kill)
        self.assertIn("its database is store group", str(refused.exception))


if __name__ == "__main__":
    if "--keep" in sys.argv:
        sys.argv.remove("--keep")
    unittest.main()
