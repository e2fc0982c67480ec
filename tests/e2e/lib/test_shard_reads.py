"""tests/e2e/lib/shard_reads.py: the verdict on each read's answer, for
answers that saw their write, answers to send again, and stale ones.

Usage: python3 tests/e2e/lib/test_shard_reads.py [unittest args]
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lib.shard_reads import RETRY, verdict  # noqa: E402


class VerdictTest(unittest.TestCase):
    def test_refusals_and_silence_are_sent_again(self):
        for kind in ("max_seq", "pull", "member", "user_seq", "key"):
            self.assertEqual(verdict(kind, 3, 503, None), RETRY)
            self.assertEqual(verdict(kind, 3, None, None), RETRY)

    def test_max_seq_at_least_the_write(self):
        self.assertIsNone(verdict("max_seq", 7, 200, {"max_seqs": {"c": 7}}))
        self.assertIsNone(verdict("max_seq", 7, 200, {"max_seqs": {"c": 9}}))
        self.assertEqual(verdict("max_seq", 7, 200, {"max_seqs": {"c": 6}}), "max seq 6")
        self.assertEqual(verdict("max_seq", 7, 200, {"max_seqs": {}}), "max seq None")

    def test_pull_holds_the_message(self):
        self.assertIsNone(verdict("pull", 4, 200, {"messages": [{"seq": 4}]}))
        self.assertEqual(verdict("pull", 4, 200, {"messages": []}), "seqs []")
        self.assertEqual(verdict("pull", 4, 404, {"error": "x"}), "status 404")

    def test_member_and_key_exist(self):
        self.assertIsNone(verdict("member", True, 200, {"user_id": "u"}))
        self.assertEqual(verdict("member", True, 404, {}), "status 404")
        self.assertIsNone(verdict("key", True, 200, {"key": "k"}))
        self.assertEqual(verdict("key", True, 404, {}), "status 404")

    def test_user_seq_is_the_value_written(self):
        self.assertIsNone(verdict("user_seq", 5, 200, {"seqs": {"c": 5}}))
        self.assertEqual(verdict("user_seq", 5, 200, {"seqs": {"c": 0}}), "user seq 0")

    def test_unknown_kind_is_an_error(self):
        with self.assertRaises(ValueError):
            verdict("nope", 1, 200, {})


if __name__ == "__main__":
    unittest.main()
