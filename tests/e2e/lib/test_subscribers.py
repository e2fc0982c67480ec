"""tests/e2e/lib/subscribers.py's checker against hand-written deliveries:
its self-test (each failure planted, near misses, random cases), and the
verdict on a clean history and a gappy one read field by field.

Usage: python3 tests/e2e/lib/test_subscribers.py [unittest args]
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lib import subscribers  # noqa: E402


def row(seq):
    return (seq, 100 + seq, "u", "c%d" % seq, "p%d" % seq, "normal")


def delivery(seq):
    return subscribers.Delivery(seq, 100 + seq, "u", "c%d" % seq, "p%d" % seq, 0)


class Checker(unittest.TestCase):
    def test_self_test(self):
        self.assertGreater(subscribers.self_test(), 100)

    def test_clean_and_gappy_deliveries(self):
        stored = {"a": [row(1), row(2), row(3)]}
        clean = subscribers.check_deliveries({"s": {"a": [delivery(1), delivery(2), delivery(3)]}},
                                             stored, {("a", 3)})
        self.assertEqual([clean[f] for f, _ in subscribers.SUB_FAILURES], [0] * 6)
        gappy = subscribers.check_deliveries({"s": {"a": [delivery(1), delivery(3)]}}, stored,
                                             {("a", 2)})
        self.assertEqual((gappy["missing"], gappy["acked_undelivered"]), (1, 1))
        self.assertEqual(subscribers.failures_of(gappy, [], {})[:1],
                         ["1 stored messages a subscriber never delivered"])


if __name__ == "__main__":
    unittest.main()
