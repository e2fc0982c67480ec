"""tests/e2e/lib/progress.py: times relative to the start, and progress
lines only with VERBOSE.

Usage: python3 tests/e2e/lib/test_progress.py [unittest args]
"""
import contextlib
import io
import os
import sys
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lib import progress  # noqa: E402


class Progress(unittest.TestCase):
    def test_rel(self):
        self.assertEqual(progress.rel(progress.T0 + 1.23456), 1.235)

    def test_log_only_when_verbose(self):
        for verbose, lines in ((False, 0), (True, 1)):
            out = io.StringIO()
            with mock.patch.object(progress, "VERBOSE", verbose), contextlib.redirect_stdout(out):
                progress.log("fault kill_db done")
            self.assertEqual(out.getvalue().count("fault kill_db done\n"), lines)
        self.assertRegex(out.getvalue(), r"^\[ *\d+\.\d{3}s\] ")


if __name__ == "__main__":
    unittest.main()
