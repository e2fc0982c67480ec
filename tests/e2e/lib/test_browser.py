"""tests/e2e/lib/browser.py: Chromium found on PATH by any of its names,
and a clear error, never None, without it.

Usage: python3 tests/e2e/lib/test_browser.py [unittest args]
"""
import os
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lib import browser  # noqa: E402


class Chromium(unittest.TestCase):
    def test_found_by_any_name_or_refused(self):
        with tempfile.TemporaryDirectory() as d:
            with mock.patch.dict(os.environ, {"PATH": d}):
                with self.assertRaisesRegex(RuntimeError, "scripts/deps.sh --test"):
                    browser.chromium()
                path = os.path.join(d, "chromium-browser")
                with open(path, "w") as f:
                    f.write("#!/bin/sh\n")
                os.chmod(path, 0o755)
                self.assertEqual(browser.chromium(), path)


if __name__ == "__main__":
    unittest.main()
