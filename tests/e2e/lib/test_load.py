"""tests/e2e/lib/load.py with a cluster and connections played here:
`deliver` sends a message again after every unknown outcome until it is
answered, gives up on an error outside the contract or at its deadline;
a probe records a refused connection.

Usage: python3 tests/e2e/lib/test_load.py [unittest args]
"""
import collections
import os
import random
import socket
import sys
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lib import load  # noqa: E402
from lib.checkers import Msg, MsgAttempt  # noqa: E402

MSG = Msg("ck_conv0", "w1", "w1-1", "payload of w1-1")
Instance = collections.namedtuple("Instance", "name http_port binary_port resp_port")


class FakeCluster:
    def __init__(self, insts):
        self.insts = insts
        self.asked_frozen = []

    def reachable(self, frozen):
        self.asked_frozen.append(frozen)
        return list(self.insts)


class ScriptedConnections:
    """Answers each send with the next outcome: a seq, or (error, expected)."""

    def __init__(self, outcomes):
        self.outcomes = list(outcomes)

    def send_message(self, inst, msg, iface, kind):
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, int):
            return MsgAttempt(msg, kind, iface, inst.name, 0, 1, (outcome, 100, False))
        error, expected = outcome
        return MsgAttempt(msg, kind, iface, inst.name, 0, 1, error=error, expected=expected)


class Deliver(unittest.TestCase):
    def deliver(self, outcomes, insts=(Instance("s1", 0, 0, 0),), **kw):
        attempts = []
        with mock.patch.object(load, "MSG_RETRY_PAUSE_S", 0):
            ok = load.deliver(FakeCluster(insts), random.Random(1), ScriptedConnections(outcomes),
                              MSG, attempts, **kw)
        return ok, [(a.kind, a.inst, a.seq, a.error) for a in attempts]

    def test_sent_again_until_answered(self):
        ok, attempts = self.deliver([("transport:timeout", True), ("http:503 x", True), 7])
        self.assertTrue(ok)
        self.assertEqual(attempts, [("first", "s1", None, "transport:timeout"),
                                    ("retry", "s1", None, "http:503 x"), ("retry", "s1", 7, None)])

    def test_first_to_the_given_instance(self):
        s2 = Instance("s2", 0, 0, 0)
        ok, attempts = self.deliver([("transport:refused", True), 3], first=(s2, "binary"),
                                    kind="probe")
        self.assertTrue(ok)
        self.assertEqual([(k, i) for k, i, _, _ in attempts], [("probe", "s2"), ("retry", "s1")])

    def test_gives_up_on_an_error_outside_the_contract(self):
        ok, attempts = self.deliver([("http:500 internal", False), 1])
        self.assertFalse(ok)
        self.assertEqual(len(attempts), 1)

    def test_gives_up_at_the_deadline(self):
        with mock.patch.object(load, "MSG_RESOLVE_S", 0.05):
            ok, attempts = self.deliver([], insts=())
        self.assertEqual((ok, attempts), (False, []))


class Probes(unittest.TestCase):
    def test_a_refused_probe_is_recorded(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        probe = load.Probe(Instance("s1", port, port, port), "ck0", "binary")
        probe.start()
        probe.join(10)
        (a,) = probe.answers
        self.assertEqual((a.key, a.iface, a.inst, a.error),
                         ("ck0", "binary", "s1", "transport:refused"))

    def test_the_flags_serve_the_keys(self):
        flags = dict(zip(load.SEQD_FLAGS[::2], load.SEQD_FLAGS[1::2]))
        prefixes = [rule.split(":")[0] for rule in flags["--auto-keys"].split(",")]
        self.assertTrue(all(any(k.startswith(p) for p in prefixes) for k in load.KEYS))
        self.assertTrue(all(any(c.startswith(p) for p in prefixes) for c in load.CONVS))


if __name__ == "__main__":
    unittest.main()
