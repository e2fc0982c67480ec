"""The store's user, host, port and schema never reach anyone outside the
process (docs/security.md, "Error texts"): seqd with a MySQL URL that cannot
connect, asked on every listener and page.

Usage: python3 tests/e2e/test_store_internals.py [unittest args]
"""
import json
import os
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Seqd, free_port  # noqa: E402
from lib.wire import call, next_ids_payload, resp_call  # noqa: E402

NEXT_IDS = 0x02


class StoreInternals(unittest.TestCase):
    """The store's user, host, port and schema never reach anyone outside
    the process (docs/security.md): not a client on any protocol, not an
    admin route, not the status page or the probes. Only the log has the
    driver's full text."""

    def test_an_unreachable_store_is_named_in_the_log_only(self):
        dead = free_port()
        url = "mysql://seqd_secret_user:pw@127.0.0.1:%d/seqdb_secret_schema" % dead
        secrets = [b"seqd_secret_user", b"seqdb_secret_schema", b"127.0.0.1:%d" % dead,
                   b"%d" % dead, b"Can't connect", b"Can&#39;t connect"]
        tcp_port, resp_port = free_port(), free_port()
        # n_ as a segment key: its failed reservation shows in /admin/cache
        # (dense keys keep no cache).
        with Seqd(url, "--tcp-port", str(tcp_port), "--resp-port", str(resp_port),
                  "--log-level", "info", "--auto-keys", "n_:50:segment") as s:
            seen = {}
            status, body, _ = s.request("GET", "/seq/n_leak?count=1")
            self.assertEqual(status, 503, body)
            seen["GET /seq"] = body
            sock = socket.create_connection(("127.0.0.1", tcp_port), timeout=10)
            self.addCleanup(sock.close)
            status, rest = call(sock, NEXT_IDS, 7, next_ids_payload("n_leak"))
            self.assertNotEqual(status, 0)
            seen["binary NEXT_IDS"] = rest
            r = socket.create_connection(("127.0.0.1", resp_port), timeout=10)
            self.addCleanup(r.close)
            seen["RESP INCR"] = resp_call(r, "INCR", "n_leak")
            self.assertTrue(seen["RESP INCR"].startswith(b"-"), seen["RESP INCR"])
            # The key's failed reservation is on the admin cache view and the
            # status page; give the retry loop a moment to record it.
            deadline = time.time() + 5
            while True:
                status, cache, _ = s.request("GET", "/admin/cache")
                self.assertEqual(status, 200, cache)
                keys = [k for k in json.loads(cache)["keys"] if k["key"] == "n_leak"]
                if keys and keys[0]["last_error"]:
                    break
                self.assertLess(time.time(), deadline, "no last_error recorded: %s" % cache)
                time.sleep(0.1)
            self.assertEqual(keys[0]["last_error"], "store unavailable, retry later")
            seen["GET /admin/cache"] = cache
            for path in ("/", "/readyz", "/healthz", "/metrics", "/admin/keys"):
                seen["GET " + path] = s.request("GET", path)[1]
            for where, text in seen.items():
                for secret in secrets:
                    self.assertNotIn(secret, text, "%s shows %r: %r" % (where, secret, text[:400]))
            self.assertIn("seqdb_secret_schema", s.logs(), "the log should have the full text")



if __name__ == "__main__":
    unittest.main()
