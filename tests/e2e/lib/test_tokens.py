"""tests/e2e/lib/tokens.py against tokens-file lines written out by hand
(docs/security.md: `id sha256-of-secret-in-hex scopes`).

Usage: python3 tests/e2e/lib/test_tokens.py [unittest args]
"""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lib import tokens  # noqa: E402

# sha256("abc"), FIPS 180-2's first example.
ABC_SHA256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


class Tokens(unittest.TestCase):
    def test_token_line(self):
        self.assertEqual(tokens.token_line("ops", "abc", "admin,ids:*"),
                         "ops %s admin,ids:*" % ABC_SHA256)

    def test_tokens_text_names_and_scopes(self):
        text = tokens.tokens_text(["orders", "ops"])
        lines = text.splitlines()
        self.assertTrue(text.endswith("\n"))
        self.assertTrue(lines[0].startswith("#"))
        self.assertEqual([line.split()[0] for line in lines[1:]], ["orders", "ops"])
        self.assertEqual(lines[1], tokens.token_line("orders", tokens.SECRETS["orders"],
                                                     "ids:order_"))

    def test_tokens_text_with_other_scopes(self):
        wider = dict(tokens.SCOPES, orders="ids:*")
        self.assertEqual(tokens.tokens_text(["orders"], wider).splitlines()[1].split()[2],
                         "ids:*")
        self.assertEqual(tokens.SCOPES["orders"], "ids:order_")


class TokensFile(unittest.TestCase):
    def test_written_where_said(self):
        with tempfile.TemporaryDirectory() as d:
            path = tokens.tokens_file(d, tokens.tokens_text(["ops"]))
            self.assertEqual(path, os.path.join(d, "tokens"))
            with open(path) as f:
                self.assertEqual(f.read(), tokens.tokens_text(["ops"]))


if __name__ == "__main__":
    unittest.main()
