"""tests/e2e/lib/chaos.py's nemesis on a cluster and a MariaDB played here
(they record what is done to them): every kind runs once a cycle in a
seeded order, each fault does what its kind says and is recorded with its
times, the owner of a key is read from the lease table, and a fault that
raises is reported, not swallowed.

Usage: python3 tests/e2e/lib/test_chaos.py [unittest args]
"""
import contextlib
import io
import os
import random
import signal
import sys
import time
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lib import chaos  # noqa: E402
from lib.cluster import shard_of  # noqa: E402


class Proc:
    pid = 0

    def wait(self, timeout=None):
        return 0

    def poll(self):
        return 0


class Inst:
    def __init__(self, name):
        self.name, self.instance_id, self.state, self.proc = name, "id-" + name, "up", Proc()


class FakeCluster:
    """Records (instance, state, signal) of every set_state and each start."""

    def __init__(self):
        self.instances = [Inst("s1"), Inst("s2"), Inst("s3")]
        self.events = []
        self.shards = None

    def up(self):
        return [i for i in self.instances if i.state == "up"]

    def set_state(self, inst, state, sig=None):
        inst.state = state
        self.events.append((inst.name, state, sig))

    def start_instance(self):
        self.instances.append(Inst("s%d" % (len(self.instances) + 1)))
        self.events.append((self.instances[-1].name, "started", None))
        return self.instances[-1]

    def by_instance_id(self, instance_id):
        return next((i for i in self.instances if i.instance_id == instance_id), None)

    def check_crashes(self):
        return []

    def record_crash(self, inst):
        self.events.append((inst.name, "crashed", None))


class FakeDB:
    """Records freeze, thaw, kill9 and restart; its lease table gives every
    shard of 8 to s2."""

    def __init__(self):
        self.events = []
        self.queries = []

    def pid(self):
        return 42

    def freeze(self):
        self.events.append("freeze")

    def thaw(self):
        self.events.append("thaw")

    def kill9(self):
        self.events.append("kill9")

    def restart(self):
        self.events.append("restart")

    def query(self, statement):
        self.queries.append(statement)
        return [["8"]] if "seqd_cluster" in statement else [["id-s2"]]


class QuickNemesis(chaos.Nemesis):
    """Faults of milliseconds, without the late probes' connections."""
    STOP_LEASES = 8.0
    FREEZE_S = 0.01
    RESTART_PAUSE_S = 0.01

    def late_probes(self, victim):
        return []

    def late_messages(self, victim):
        return []


def nemesis(cluster, db, seconds, kinds=chaos.FAULTS):
    # A lease of 0.05 s: stop_owner stops its victim 0.4 s, the late probes
    # going out 0.3 s before the end.
    return QuickNemesis(cluster, db, random.Random(3), 0.05, time.monotonic() + seconds,
                        kinds=kinds, warmup_s=0)


class Schedule(unittest.TestCase):
    def test_every_kind_once_a_cycle_in_a_seeded_order(self):
        cluster, db = FakeCluster(), FakeDB()
        n = nemesis(cluster, db, 60)
        n.start()
        deadline = time.monotonic() + 20
        while len(n.faults) < 6 and n.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)  # until the second cycle has begun
        n.stop.set()
        n.join(5)
        self.assertIsNone(n.error)
        kinds = [f["kind"] for f in n.faults]
        self.assertEqual(sorted(kinds[:5]), sorted(chaos.FAULTS))
        self.assertIn(kinds[5], chaos.FAULTS)
        order = list(chaos.FAULTS)
        random.Random(3).shuffle(order)
        self.assertEqual(kinds[:5], order)
        for f in n.faults:
            self.assertLessEqual(f["start"], f["end"], f)
        self.assertEqual(db.events[:4], ["freeze", "thaw", "kill9", "restart"]
                         if kinds.index("freeze_db") < kinds.index("kill_db")
                         else ["kill9", "restart", "freeze", "thaw"])

    def test_each_fault_does_what_it_says(self):
        for kind, want in (("kill_instance", ["killed", "started"]),
                           ("leave_join", ["leaving", "gone", "started"]),
                           ("stop_owner", ["frozen", "up"])):
            cluster = FakeCluster()
            n = nemesis(cluster, FakeDB(), 0, kinds=(kind,))
            fault = n.new_fault(kind)
            getattr(n, "fault_" + kind)(fault)
            self.assertEqual([state for _, state, _ in cluster.events], want, kind)
        self.assertEqual(cluster.events[0], ("s2", "frozen", signal.SIGSTOP))
        self.assertIn("owner of ck", fault["detail"])
        self.assertGreaterEqual(fault["end"] - fault["start"], 0.4)

    def test_the_owner_comes_from_the_lease_table(self):
        db = FakeDB()
        n = nemesis(FakeCluster(), db, 0)
        self.assertEqual(n.owner_of("ck3").name, "s2")
        self.assertEqual(n.cluster.shards, 8)
        self.assertIn("WHERE shard = %d" % shard_of("ck3", 8), db.queries[-1])

    def test_a_fault_that_raises_is_reported(self):
        db = FakeDB()
        db.freeze = lambda: 1 / 0
        n = nemesis(FakeCluster(), db, 5, kinds=("freeze_db",))
        n.run()
        self.assertIn("ZeroDivisionError", n.error)
        self.assertEqual(n.faults, [])


class PlayOut(unittest.TestCase):
    def test_ends_by_itself_then_settles(self):
        n = nemesis(FakeCluster(), FakeDB(), 0.1, kinds=("freeze_db",))
        started = time.monotonic()
        self.assertTrue(n.play_out())
        self.assertFalse(n.is_alive())
        self.assertGreaterEqual(time.monotonic() - started, 0.1 + 2 * n.lease_s)


class CommandLine(unittest.TestCase):
    def main(self, argv, self_test=lambda: 7):
        runs = []
        args = chaos.parser("Doc.\n\nMore.", seconds=30).parse_args(argv)
        with mock.patch.object(chaos.progress, "VERBOSE", False):
            code = chaos.main(args, self_test, lambda a: runs.append(a) or 3)
            verbose = chaos.progress.VERBOSE
        return code, runs, verbose

    def test_self_test_only(self):
        with contextlib.redirect_stdout(io.StringIO()) as out:
            self.assertEqual(self.main(["--self-test"]), (0, [], False))
        self.assertIn("judged 7 synthetic histories", out.getvalue())

    def test_a_run_after_the_self_test_with_a_seed(self):
        code, (args,), verbose = self.main(["--seconds", "5", "-v", "--lease-ms", "500"])
        self.assertEqual((code, args.seconds, args.lease_ms, verbose), (3, 5, 500, True))
        self.assertIsInstance(args.seed, int)
        self.assertEqual(self.main(["--seed", "9"])[1][0].seed, 9)

    def test_no_run_when_the_self_test_fails(self):
        def broken():
            raise AssertionError("a checker that cannot fail")
        with self.assertRaises(AssertionError):
            self.main([], self_test=broken)


if __name__ == "__main__":
    unittest.main()
