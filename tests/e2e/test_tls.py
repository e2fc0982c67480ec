"""End-to-end tests of TLS on the real seqd binary (docs/security.md): a CA
and certificates made with the openssl CLI at test time
(tests/tls/make_certs.sh); curl, seqctl and Python's ssl module against the
HTTP, admin, binary and RESP listeners; verification failures (wrong CA,
plain text to a TLS port); mutual TLS; SIGHUP reloading the certificate;
start-up refusals. With MariaDB (SEQD_TEST_MYSQL_URL), two cluster instances
with tokens and mutual TLS on the binary listener forward to each other.

Usage: python3 tests/e2e/test_tls.py [unittest args]
"""
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import REPO, SEQD, free_port, store_spec  # noqa: E402
from lib.cluster import shard_of  # noqa: E402
from lib.cluster_case import SHARDS  # noqa: E402
from lib.mariadb import Database  # noqa: E402
from lib.tokens import token_line, tokens_file  # noqa: E402
from lib.wire import frame, next_ids_payload, read_frame, resp_command  # noqa: E402

BUILD = os.path.dirname(os.path.abspath(SEQD))
SEQCTL = os.environ.get("SEQCTL_BINARY", os.path.join(BUILD, "client", "seqctl"))
MAKE_CERTS = os.path.join(REPO, "tests", "tls", "make_certs.sh")
PING, NEXT_IDS, AUTH = 0x01, 0x02, 0x03


def make_certs(directory):
    subprocess.run(["sh", MAKE_CERTS, directory], check=True)


class TlsServer:
    """A seqd with TLS on every listener (HTTP, admin, binary, RESP)."""

    def __init__(self, tmp, certs, *extra):
        self.http_port, self.admin_port = free_port(), free_port()
        self.tcp_port, self.resp_port = free_port(), free_port()
        self.certs = certs
        self.log = open(os.path.join(tmp, "seqd-%d.log" % self.http_port), "w+")
        self.proc = subprocess.Popen(
            [SEQD, "--store", store_spec("sqlite", tmp), "--http-port", str(self.http_port),
             "--admin-port", str(self.admin_port), "--tcp-port", str(self.tcp_port),
             "--resp-port", str(self.resp_port), "--threads", "2", "--log-level", "info",
             "--tls-cert", os.path.join(certs, "server.crt"),
             "--tls-key", os.path.join(certs, "server.key"), *extra],
            stdout=self.log, stderr=subprocess.STDOUT)

    def logs(self):
        self.log.flush()
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def context(self, ca="ca.crt", client=None):
        ctx = ssl.create_default_context(cafile=os.path.join(self.certs, ca))
        if client:
            ctx.load_cert_chain(os.path.join(self.certs, client + ".crt"),
                                os.path.join(self.certs, client + ".key"))
        return ctx

    def connect(self, port, ca="ca.crt", client=None):
        raw = socket.create_connection(("127.0.0.1", port), timeout=10)
        return self.context(ca, client).wrap_socket(raw, server_hostname="127.0.0.1")

    def curl(self, path, *args, port=None):
        r = subprocess.run(["curl", "-sS", "--max-time", "10", *args,
                            "https://127.0.0.1:%d%s" % (port or self.http_port, path)],
                           capture_output=True, text=True)
        return r.returncode, r.stdout, r.stderr

    def wait_ready(self, client=None):
        deadline = time.time() + 15
        last = None
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("seqd exited: " + self.logs())
            try:
                s = self.connect(self.tcp_port, client=client)
                s.sendall(frame(PING, 1, b"x"))
                read_frame(s)
                s.close()
                return
            except (OSError, EOFError, ssl.SSLError) as e:
                last = e
                time.sleep(0.1)
        raise RuntimeError("seqd did not come up over TLS (%s): %s" % (last, self.logs()))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


class Tls(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.certs = os.path.join(cls.tmp.name, "certs")
        make_certs(cls.certs)
        cls.server = TlsServer(cls.tmp.name, cls.certs)
        cls.server.wait_ready()
        code, out, err = cls.server.curl("/admin/keys", "--cacert",
                                         os.path.join(cls.certs, "ca.crt"), "--json",
                                         '{"key":"tls","step":100}')
        assert code == 0 and '"tls"' in out, (code, out, err)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.tmp.cleanup()

    def ca(self, name="ca.crt"):
        return os.path.join(self.certs, name)

    def test_https_with_curl(self):
        code, out, err = self.server.curl("/seq/tls?count=3", "--cacert", self.ca())
        self.assertEqual(code, 0, err)
        self.assertEqual(json.loads(out)["count"], 3)
        # Verification: a foreign CA and no CA both fail.
        code, _, err = self.server.curl("/seq/tls", "--cacert", self.ca("other-ca.crt"))
        self.assertNotEqual(code, 0)
        code, _, _ = self.server.curl("/seq/tls")
        self.assertNotEqual(code, 0)
        # The admin listener speaks TLS too.
        code, out, err = self.server.curl("/metrics", "--cacert", self.ca(),
                                          port=self.server.admin_port)
        self.assertEqual(code, 0, err)
        self.assertIn("seqd_", out)

    def test_event_stream_over_tls(self):
        """The HTTP session hands a TLS connection whose answer is an event
        stream to the stream's session: the stream goes on over the same TLS
        session (a message sent after it started arrives), and the server
        keeps serving once the client leaves."""
        sock = self.server.connect(self.server.http_port)
        self.addCleanup(sock.close)
        sock.sendall(b"GET /conversations/sg_tls_chat/events HTTP/1.1\r\nHost: x\r\n"
                     b"Accept: text/event-stream\r\n\r\n")
        buf = b""
        while b"\r\n\r\n" not in buf:
            buf += sock.recv(4096)
        self.assertTrue(buf.startswith(b"HTTP/1.1 200"), buf[:200])
        code, out, err = self.server.curl(
            "/conversations/sg_tls_chat/messages", "--cacert", self.ca(), "--json",
            '{"sender_id":"u1","client_msg_id":"m1","payload":"over tls"}')
        self.assertEqual(code, 0, err)
        self.assertIn('"seq":1', out)
        deadline = time.time() + 10
        while b"over tls" not in buf:
            self.assertLess(time.time(), deadline, buf)
            buf += sock.recv(4096)
        self.assertIn(b"id: 1\n", buf)
        sock.close()
        code, out, err = self.server.curl("/seq/tls", "--cacert", self.ca())
        self.assertEqual(code, 0, err)

    def test_plain_text_to_a_tls_port_gets_nothing(self):
        for port, data in ((self.server.http_port, b"GET /seq/tls HTTP/1.1\r\nHost: x\r\n\r\n"),
                           (self.server.tcp_port, frame(NEXT_IDS, 1, next_ids_payload("tls", 1))),
                           (self.server.resp_port, resp_command(["INCR", "tls"]))):
            with self.subTest(port=port):
                s = socket.create_connection(("127.0.0.1", port), timeout=10)
                s.sendall(data)
                got = b""
                try:
                    while True:
                        chunk = s.recv(4096)
                        if not chunk:
                            break
                        got += chunk
                except (ConnectionResetError, socket.timeout):
                    pass
                s.close()
                # No answer in the clear (at most a TLS alert record, type 0x15).
                self.assertNotIn(b"HTTP/1.1 200", got)
                self.assertNotIn(b":", got[:1])
                self.assertTrue(got == b"" or got[0] == 0x15, got[:40])

    def test_binary_and_resp_over_tls(self):
        s = self.server.connect(self.server.tcp_port)
        s.sendall(frame(NEXT_IDS, 2, next_ids_payload("tls", 5)))
        _, _, status, result = read_frame(s)
        self.assertEqual(status, 0)
        s.close()
        r = self.server.connect(self.server.resp_port)
        r.sendall(resp_command(["INCR", "tls"]) * 3)
        got = b""
        while got.count(b"\r\n") < 3:
            got += r.recv(4096)
        values = [int(x[1:]) for x in got.split(b"\r\n") if x]
        self.assertEqual(values, sorted(values))
        self.assertEqual(len(set(values)), 3)
        r.close()
        with self.assertRaises(ssl.SSLError):
            self.server.connect(self.server.resp_port, ca="other-ca.crt")

    def test_seqctl_over_tls(self):
        ok = subprocess.run([SEQCTL, "--tcp", "127.0.0.1:%d" % self.server.tcp_port, "--tls-ca",
                             self.ca(), "next", "tls", "4"], capture_output=True, text=True)
        self.assertEqual(ok.returncode, 0, ok.stderr)
        self.assertEqual(len(ok.stdout.split()), 4)
        ok = subprocess.run([SEQCTL, "--http", "127.0.0.1:%d" % self.server.http_port, "--tls-ca",
                             self.ca(), "next", "tls", "2"], capture_output=True, text=True)
        self.assertEqual(ok.returncode, 0, ok.stderr)
        bad = subprocess.run([SEQCTL, "--tcp", "127.0.0.1:%d" % self.server.tcp_port,
                              "--timeout", "2000", "--tls-ca", self.ca("other-ca.crt"), "next",
                              "tls"], capture_output=True, text=True)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("certificate", bad.stderr)

    def test_sighup_reloads_the_certificate(self):
        # A certificate from another CA replaces the server's files.
        fresh = os.path.join(self.tmp.name, "fresh")
        make_certs(fresh)
        saved = os.path.join(self.tmp.name, "saved")
        os.makedirs(saved, exist_ok=True)
        for name in ("server.crt", "server.key"):
            shutil.copy(os.path.join(self.certs, name), saved)
        try:
            for name in ("server.crt", "server.key"):
                shutil.copy(os.path.join(fresh, name), os.path.join(self.certs, name))
            self.server.proc.send_signal(signal.SIGHUP)
            deadline = time.time() + 5
            while '"action":"tls_reload"' not in self.server.logs() and time.time() < deadline:
                time.sleep(0.05)
            self.assertIn('"action":"tls_reload"', self.server.logs())
            code, _, err = self.server.curl("/seq/tls", "--cacert", os.path.join(fresh, "ca.crt"))
            self.assertEqual(code, 0, err)
            code, _, _ = self.server.curl("/seq/tls", "--cacert", self.ca())
            self.assertNotEqual(code, 0)
            # A broken file on reload keeps the current certificate.
            with open(os.path.join(self.certs, "server.key"), "w") as f:
                f.write("not a key\n")
            mark = self.server.logs().count('"action":"tls_reload"')
            self.server.proc.send_signal(signal.SIGHUP)
            deadline = time.time() + 5
            while self.server.logs().count('"action":"tls_reload"') == mark and \
                    time.time() < deadline:
                time.sleep(0.05)
            self.assertIn("TLS certificate kept as it was", self.server.logs())
            code, _, err = self.server.curl("/seq/tls", "--cacert", os.path.join(fresh, "ca.crt"))
            self.assertEqual(code, 0, err)
        finally:
            for name in ("server.crt", "server.key"):
                shutil.copy(os.path.join(saved, name), os.path.join(self.certs, name))
            self.server.proc.send_signal(signal.SIGHUP)
            time.sleep(0.5)


class MutualTls(unittest.TestCase):
    def test_client_certificate_required(self):
        with tempfile.TemporaryDirectory() as tmp:
            certs = os.path.join(tmp, "certs")
            make_certs(certs)
            server = TlsServer(tmp, certs, "--tls-client-ca", os.path.join(certs, "ca.crt"))
            try:
                server.wait_ready(client="client")
                ca = os.path.join(certs, "ca.crt")
                code, _, _ = server.curl("/healthz", "--cacert", ca)
                self.assertNotEqual(code, 0)
                code, _, _ = server.curl("/healthz", "--cacert", ca, "--cert",
                                         os.path.join(certs, "other.crt"), "--key",
                                         os.path.join(certs, "other.key"))
                self.assertNotEqual(code, 0)
                code, out, err = server.curl("/healthz", "--cacert", ca, "--cert",
                                             os.path.join(certs, "client.crt"), "--key",
                                             os.path.join(certs, "client.key"))
                self.assertEqual(code, 0, err)
                with self.assertRaises((ssl.SSLError, EOFError, ConnectionResetError)):
                    s = server.connect(server.tcp_port)
                    s.sendall(frame(PING, 1, b"x"))
                    read_frame(s)
                ok = subprocess.run([SEQCTL, "--tcp", "127.0.0.1:%d" % server.tcp_port,
                                     "--tls-ca", ca, "--tls-cert", os.path.join(certs, "client.crt"),
                                     "--tls-key", os.path.join(certs, "client.key"), "ping"],
                                    capture_output=True, text=True)
                self.assertEqual(ok.returncode, 0, ok.stderr)
            finally:
                server.stop()


class StartUp(unittest.TestCase):
    def test_bad_tls_settings_are_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            certs = os.path.join(tmp, "certs")
            make_certs(certs)
            cases = [
                (["--tls-cert", os.path.join(certs, "server.crt")], "tls_key"),
                (["--tls-cert", os.path.join(certs, "server.crt"), "--tls-key",
                  os.path.join(certs, "other.key")], "does not match"),
                (["--tls-cert", os.path.join(certs, "missing.crt"), "--tls-key",
                  os.path.join(certs, "server.key")], "missing.crt"),
                (["--tls-cert", os.path.join(certs, "server.crt"), "--tls-key",
                  os.path.join(certs, "server.key"), "--tls-listeners", "http,ftp"], "ftp"),
            ]
            for args, needle in cases:
                with self.subTest(args=args):
                    r = subprocess.run([SEQD, "--store", store_spec("sqlite", tmp),
                                        "--http-port", "0", "--tcp-port", "0", *args],
                                       capture_output=True, text=True, timeout=15)
                    self.assertNotEqual(r.returncode, 0)
                    self.assertIn(needle, r.stdout + r.stderr)


class ClusterOverTls(unittest.TestCase):
    """Two cluster instances with tokens and mutual TLS on the binary
    listener: a request to the instance that does not own the key is
    forwarded over TLS with the cluster token."""

    def test_forwarding_with_tokens_and_mutual_tls(self):
        if not os.environ.get("SEQD_TEST_MYSQL_URL"):
            raise RuntimeError("SEQD_TEST_MYSQL_URL is not set (scripts/test.sh sets it)")
        db = Database()
        self.addCleanup(db.drop)
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        certs = os.path.join(tmp.name, "certs")
        make_certs(certs)
        secrets = {"peer": "sqd_peer-secret-0123456789", "app": "sqd_app-secret-0123456789"}
        tokens = tokens_file(tmp.name, token_line("peer", secrets["peer"], "cluster") + "\n"
                             + token_line("app", secrets["app"], "ids:*,admin") + "\n")
        peer_file = os.path.join(tmp.name, "peer-token")
        with open(peer_file, "w") as f:
            f.write(secrets["peer"] + "\n")
        nodes = []
        for _ in range(2):
            http_port, tcp_port = free_port(), free_port()
            log = open(os.path.join(tmp.name, "node-%d.log" % http_port), "w+")
            p = subprocess.Popen(
                [SEQD, "--store", db.url, "--cluster", "--cluster-lease-ms", "1000",
                 "--cluster-shards", str(SHARDS), "--snowflake", "off", "--auto-keys", "ck:100",
                 "--http-port", str(http_port), "--tcp-port", str(tcp_port),
                 "--advertise", "127.0.0.1:%d" % tcp_port, "--tokens-file", tokens,
                 "--cluster-token-file", peer_file, "--tls-listeners", "binary",
                 "--tls-cert", os.path.join(certs, "server.crt"),
                 "--tls-key", os.path.join(certs, "server.key"),
                 "--tls-client-ca", os.path.join(certs, "ca.crt"),
                 "--cluster-tls-ca", os.path.join(certs, "ca.crt"), "--log-level", "info"],
                stdout=log, stderr=subprocess.STDOUT)
            nodes.append((p, http_port, log))
            self.addCleanup(log.close)
            self.addCleanup(lambda p=p: (p.kill(), p.wait()))
        import http.client

        def get(port, path):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            c.request("GET", path, headers={"Authorization": "Bearer " + secrets["app"]})
            r = c.getresponse()
            body = r.read()
            c.close()
            return r.status, body

        # Wait until both are members and every shard has an owner.
        deadline = time.time() + 30
        view = None
        while time.time() < deadline:
            try:
                status, body = get(nodes[0][1], "/admin/cluster")
                if status == 200:
                    view = json.loads(body)
                    live = [m for m in view["members"] if m.get("live")]
                    if len(live) == 2 and all(s["owner"] for s in view["shard_map"]):
                        break
            except OSError:
                pass
            time.sleep(0.2)
        self.assertIsNotNone(view, "no cluster view")
        owners = {s["shard"]: s["owner"] for s in view["shard_map"]}
        first = view["instance"]
        # A key whose shard the first node does not own: asking it forwards.
        key = next("ck_%d" % i for i in range(1000)
                   if owners[shard_of("ck_%d" % i, SHARDS)] != first)
        seen = []

        def logs():
            out = ""
            for _, _, log in nodes:
                log.flush()
                with open(log.name, errors="replace") as f:
                    out += f.read()[-3000:]
            return out

        for i in range(20):
            status, body = get(nodes[i % 2][1], "/seq/%s" % key)
            self.assertEqual(status, 200, body + logs().encode())
            seen.append(json.loads(body)["id"])
        self.assertEqual(seen, sorted(seen))
        self.assertEqual(len(set(seen)), 20)
        status, metrics = get(nodes[0][1], "/metrics")
        forwarded = [line for line in metrics.decode().splitlines()
                     if line.startswith('seqd_cluster_forwards_total{result="ok"}')]
        self.assertTrue(forwarded and float(forwarded[0].split()[-1]) >= 10, forwarded)


if __name__ == "__main__":
    unittest.main()
