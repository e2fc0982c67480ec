"""tests/e2e/lib/seqd_case.py with the real seqd (SEQD_BINARY): a SeqdCase
class's tests find one seqd on SQLite with its flags, answering on its
binary and RESP listeners, again on the same ports after restart(); after
the class it is stopped and its directory gone.

Usage: SEQD_BINARY=build/seqd python3 tests/e2e/lib/test_seqd_case.py [unittest args]
"""
import os
import signal
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lib.seqd_case import SeqdCase  # noqa: E402
from lib.wire import call, resp_call  # noqa: E402

PING = 0x01
SEEN = {}


class OneServer(SeqdCase):
    """Run by the test below, not on its own (its name does not start with Test)."""

    @classmethod
    def seqd_flags(cls):
        return ("--max-count", "77")

    def test_listeners_flags_and_restart(self):
        SEEN["class"] = type(self)
        self.assertEqual(call(self.tcp(), PING, 1, b"hi"), (0, b"hi"))
        self.assertEqual(resp_call(self.resp(), "PING"), b"+PONG")
        self.assertEqual(self.seqd.get("/seq/k?count=78")[0], 400)
        self.assertIn("--max-count", self.seqd.args)
        ports = (self.seqd.port, self.tcp_port, self.resp_port)
        self.restart(signal.SIGTERM)
        self.assertEqual((self.seqd.port, self.tcp_port, self.resp_port), ports)
        self.assertEqual(call(self.tcp(), PING, 2, b"again"), (0, b"again"))


class SeqdCases(unittest.TestCase):
    def test_a_class_runs_on_one_seqd(self):
        result = unittest.TestResult()
        unittest.defaultTestLoader.loadTestsFromTestCase(OneServer).run(result)
        self.assertEqual((result.testsRun, result.errors, result.failures), (1, [], []))
        case = SEEN["class"]
        self.assertIsNotNone(case.seqd.proc.poll(), "seqd still runs after the class")
        self.assertFalse(os.path.exists(case.tmp.name))


def load_tests(loader, tests, pattern):
    """Only SeqdCases: OneServer runs inside it."""
    return loader.loadTestsFromTestCase(SeqdCases)


if __name__ == "__main__":
    unittest.main()
