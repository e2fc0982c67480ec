"""tests/e2e/lib/checkers.py against histories written out by hand: each
failure the checkers exist for (an ID answered twice, an ID out of
real-time order, an acked message lost, a hole in a conversation) must be
caught and a clean history must pass; the checkers' own self-test must pass
and must fail when a checker is broken.

Usage: python3 tests/e2e/lib/test_checkers.py [unittest args]
"""
import os
import sys
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lib import checkers  # noqa: E402
from lib.checkers import Answer, Msg, MsgAttempt  # noqa: E402


def ids(send, recv, first, last, key="k"):
    """A successful request for IDs first..last of `key`."""
    return Answer(key, "binary", "s1", send, recv, ((first, last),))


def sent(msg, send, recv, seq, duplicate=False):
    """An answered try at sending `msg`, stored at `seq`."""
    return MsgAttempt(msg, "first", "http", "s1", send, recv, (seq, 1000 + seq, duplicate))


def stored(msg, seq):
    """`msg` as a pull returns it, at `seq`."""
    return (seq, 1000 + seq, msg.sender, msg.cmid, msg.payload, "normal")


A, B, C = (Msg("c", "u", name, "payload " + name) for name in ("a", "b", "c"))
FAILURES = [field for field, _ in checkers.MSG_FAILURES]


class IdChecker(unittest.TestCase):
    def verdict(self, history):
        v = checkers.check_history(history)
        return v["duplicates"], v["order_violations"], v["unexpected_errors"]

    def test_a_clean_history_passes(self):
        self.assertEqual(self.verdict([ids(0, 1, 1, 3), ids(0.5, 2, 4, 4), ids(3, 4, 5, 9),
                                       ids(0, 1, 1, 1, key="other")]), (0, 0, 0))

    def test_an_id_answered_twice(self):
        self.assertEqual(self.verdict([ids(0, 2, 1, 5), ids(1, 3, 5, 6)]), (1, 0, 0))

    def test_an_id_below_an_earlier_answer(self):
        v = checkers.check_history([ids(0, 1, 10, 10), ids(2, 3, 7, 8)])
        self.assertEqual((v["duplicates"], v["order_violations"]), (0, 1))
        self.assertIn("ids [7-8]", v["order_examples"][0]["later"])

    def test_an_error_outside_the_contract(self):
        bad = Answer("k", "http", "s1", 0, 1, error="http:500 internal", expected=False)
        allowed = Answer("k", "http", "s1", 0, 1, error="transport:timeout")
        self.assertEqual(self.verdict([bad, allowed]), (0, 0, 1))


class MessageChecker(unittest.TestCase):
    def failures(self, attempts, rows):
        v = checkers.check_messages(attempts, {"c": rows})
        return {f: v[f] for f in FAILURES if v[f]}

    def test_a_clean_history_passes(self):
        attempts = [sent(A, 0, 1, 1), sent(B, 2, 3, 2), sent(A, 4, 5, 1, duplicate=True)]
        self.assertEqual(self.failures(attempts, [stored(A, 1), stored(B, 2)]), {})

    def test_an_acked_message_lost(self):
        attempts = [sent(A, 0, 1, 1), sent(B, 2, 3, 2)]
        self.assertEqual(self.failures(attempts, [stored(A, 1)]), {"lost": 1})

    def test_a_hole(self):
        unacked = MsgAttempt(B, "first", "http", "s1", 2, 3, error="transport:timeout")
        attempts = [sent(A, 0, 1, 1), unacked, sent(C, 4, 5, 3)]
        self.assertEqual(self.failures(attempts, [stored(A, 1), stored(C, 3)]), {"holes": 1})

    def test_a_seq_out_of_real_time_order(self):
        attempts = [sent(A, 0, 1, 2), sent(B, 2, 3, 1)]
        self.assertEqual(self.failures(attempts, [stored(B, 1), stored(A, 2)]),
                         {"order_violations": 1})


class SelfTest(unittest.TestCase):
    def test_passes(self):
        self.assertEqual(checkers.self_test(), 311 + 223)

    def test_fails_when_a_checker_cannot_fail(self):
        with mock.patch.object(checkers, "find_duplicates", return_value=(0, [])):
            with self.assertRaises(AssertionError):
                checkers.history_self_test()
        with mock.patch.object(checkers, "find_message_order_violations",
                               return_value=(0, [], 0)):
            with self.assertRaises(AssertionError):
                checkers.message_self_test()


if __name__ == "__main__":
    unittest.main()
