"""The MySQL store over TLS, on the real seqd binary and a MariaDB of the
test's own that requires secure transport (certificates from
tests/tls/make_certs.sh): the store URL's ssl-mode, ssl-ca, ssl-cert and
ssl-key reach the driver. A verifying mode with the right CA serves; no TLS,
or a CA that did not sign the server's certificate, never reaches the data.

Usage: python3 tests/e2e/test_store_tls.py [unittest args]
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import REPO, SEQD, free_port  # noqa: E402

MARIADB = os.path.join(REPO, "scripts", "mariadb.sh")
MAKE_CERTS = os.path.join(REPO, "tests", "tls", "make_certs.sh")


def http(port, method, path, body=None):
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Content-Type": "application/json"} if body is not None else {}
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


class StoreTls(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.certs = os.path.join(cls.tmp.name, "pki")
        subprocess.run(["sh", MAKE_CERTS, cls.certs], check=True)
        # mariadbd runs as this user: it must read the key.
        for name in os.listdir(cls.certs):
            os.chmod(os.path.join(cls.certs, name), 0o644)
        os.chmod(cls.certs, 0o755)
        cls.dir = os.path.join(cls.tmp.name, "mariadb")
        args = ("--ssl-cert=%s --ssl-key=%s --ssl-ca=%s --require-secure-transport=ON" % (
            os.path.join(cls.certs, "server.crt"), os.path.join(cls.certs, "server.key"),
            os.path.join(cls.certs, "ca.crt")))
        out = subprocess.run([MARIADB, "start", cls.dir], check=True, capture_output=True,
                             text=True, env=dict(os.environ, SEQD_MARIADB_ARGS=args))
        cls.url = out.stdout.strip().splitlines()[-1]

    @classmethod
    def tearDownClass(cls):
        subprocess.run([MARIADB, "stop", cls.dir], capture_output=True)
        cls.tmp.cleanup()

    def seqd(self, query):
        port = free_port()
        log = tempfile.NamedTemporaryFile(prefix="seqd-store-tls-", suffix=".log", delete=False)
        self.addCleanup(os.unlink, log.name)
        p = subprocess.Popen([SEQD, "--store", self.url + query, "--http-port", str(port),
                              "--tcp-port", "-1", "--snowflake", "off", "--log-level", "info"],
                             stdout=log, stderr=subprocess.STDOUT)
        self.addCleanup(lambda: (p.kill(), p.wait()))
        deadline = time.time() + 15
        while time.time() < deadline:
            try:
                if http(port, "GET", "/healthz")[0] == 200:
                    break
            except OSError:
                time.sleep(0.05)
        return port, log.name

    def ready_within(self, port, seconds):
        deadline = time.time() + seconds
        while time.time() < deadline:
            if http(port, "GET", "/readyz")[0] == 200:
                return True
            time.sleep(0.2)
        return False

    def test_verified_tls_serves(self):
        for mode in ("VERIFY_CA", "VERIFY_IDENTITY"):
            with self.subTest(mode=mode):
                port, _ = self.seqd("?ssl-mode=%s&ssl-ca=%s" % (
                    mode, urllib.parse.quote(os.path.join(self.certs, "ca.crt"))))
                self.assertTrue(self.ready_within(port, 15))
                status, body = http(port, "POST", "/admin/keys", {"key": "tls_" + mode, "step": 10})
                self.assertEqual(status, 201, body)
                status, body = http(port, "GET", "/seq/tls_" + mode)
                self.assertEqual(status, 200, body)

    def test_without_tls_or_with_a_foreign_ca_the_store_is_unreachable(self):
        for query in ("?ssl-mode=DISABLED",
                      "?ssl-mode=VERIFY_CA&ssl-ca=" +
                      urllib.parse.quote(os.path.join(self.certs, "other-ca.crt"))):
            with self.subTest(query=query):
                port, log = self.seqd(query)
                self.assertFalse(self.ready_within(port, 4), "store reachable with " + query)
                status, body = http(port, "POST", "/admin/keys", {"key": "nope", "step": 10})
                self.assertEqual(status, 503, body)
                # The client learns nothing about the database.
                self.assertNotIn(b"127.0.0.1", body)
                self.assertNotIn(b"seqd_test", body)


if __name__ == "__main__":
    unittest.main()
