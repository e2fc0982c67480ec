"""tests/e2e/lib/cluster_case.py's judgement of a cluster, on views of
/admin/cluster written here: nodes that agree on a map whose every shard
has a live owner are stable; a node not ready, a shard of a dead member or
two maps that differ are not; a failing test prints every node's log tail.

Usage: python3 tests/e2e/lib/test_cluster_case.py [unittest args]
"""
import contextlib
import io
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lib import cluster_case  # noqa: E402
from lib.cluster_case import SHARDS  # noqa: E402


class Proc:
    def poll(self):
        return None


class FakeNode:
    """A node whose /admin/cluster is `view` (a dict)."""

    def __init__(self, instance, view):
        self.instance, self.view, self.proc = instance, view, Proc()

    def cluster(self):
        return self.view

    def full_log(self):
        return "log of %s" % self.instance


def view(owners, live=("a", "b"), ready=True):
    return {"ready": ready, "members": [{"instance": m, "live": True} for m in live],
            "shard_map": [{"shard": n, "owner": o} for n, o in enumerate(owners)]}


HALF = ["a"] * (SHARDS // 2) + ["b"] * (SHARDS // 2)


class WaitStable(unittest.TestCase):
    def nodes(self, *views):
        return [FakeNode(name, v) for name, v in zip("ab", views)]

    def test_agreement_is_stable(self):
        self.assertEqual(cluster_case.wait_stable(self.nodes(view(HALF), view(HALF))), HALF)

    def test_unstable_clusters(self):
        dead_owner = ["c"] + HALF[1:]
        other_map = HALF[::-1]
        for views, problem in (((view(HALF, ready=False), view(HALF)), "a not ready"),
                               ((view(dead_owner), view(dead_owner)), "without a live owner"),
                               ((view(HALF), view(other_map)), "disagree on the owners"),
                               ((view(HALF, live=("a",)), view(HALF)), "sees live ['a']")):
            with self.assertRaisesRegex(AssertionError, re.escape(problem)):
                cluster_case.wait_stable(self.nodes(*views), timeout=0.2)


class DumpLogs(unittest.TestCase):
    def test_a_failure_prints_every_nodes_log(self):
        class Case:
            def every_node(self):
                return [FakeNode("a", {}), FakeNode("b", {})]

            @cluster_case.dump_logs_on_failure
            def test(self):
                raise AssertionError("boom")

        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(AssertionError):
            Case().test()
        self.assertIn("log of a", err.getvalue())
        self.assertIn("log of b", err.getvalue())


if __name__ == "__main__":
    unittest.main()
