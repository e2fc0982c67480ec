"""End-to-end tests of tokens and scopes (docs/security.md) on the real seqd
binary (SQLite store): every listener (HTTP, binary, RESP) refuses requests
without a token, with an unknown one and outside the token's scopes; SIGHUP
reloads (adds, revokes, keeps the old set on a bad file); the audit trail;
secure-by-default start-up refusals; seqctl token new, --token and
SEQD_TOKEN; seqbench --token.

Each attack the issue reported (admin on the client port, reading another
conversation, SUBSCRIBE to it, guessing secrets) is made here and must fail.

Usage: python3 tests/e2e/test_security.py [unittest args]
"""
import hashlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import SEQD, store_spec  # noqa: E402
from lib.seqd_case import SeqdCase  # noqa: E402
from lib.tokens import SCOPES, SECRETS, tokens_file, tokens_text  # noqa: E402
from lib.wire import (call, frame, key_list, next_ids_payload, read_frame, resp_call,  # noqa: E402
                      s16, send_payload)

BUILD = os.path.dirname(os.path.abspath(SEQD))
SEQCTL = os.environ.get("SEQCTL_BINARY", os.path.join(BUILD, "client", "seqctl"))
SEQBENCH = os.environ.get("SEQBENCH_BINARY", os.path.join(BUILD, "bench", "seqbench", "seqbench"))

PING, NEXT_IDS, AUTH = 0x01, 0x02, 0x03
SEND, PULL_RANGE, SET_CONV_MIN_SEQ, SUBSCRIBE = 0x20, 0x21, 0x29, 0x2A
PUSH_MESSAGE, PUSH_DROPPED = 0x2C, 0x2D
OK, UNAUTHENTICATED, PERMISSION_DENIED = 0, 13, 14

class Security(SeqdCase):
    @classmethod
    def seqd_flags(cls):
        cls.tokens = tokens_file(cls.tmp.name,
                                 tokens_text(["ops", "orders", "chat", "reader", "scraper"]))
        return ("--tokens-file", cls.tokens, "--log-level", "info")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.http(cls, "POST", "/admin/keys", {"key": "order_a", "step": 100}, "ops")
        cls.http(cls, "POST", "/admin/keys", {"key": "other", "step": 100}, "ops")

    def http(self, method, path, body=None, token=None, headers=None):
        h = dict(headers or {})
        if token:
            h["Authorization"] = "Bearer " + SECRETS.get(token, token)
        if body is not None:
            h.setdefault("Content-Type", "application/json")
        status, payload, r = self.seqd.request(method, path, body, headers=h)
        return status, payload, r

    def reload(self, text):
        with open(self.tokens, "w") as f:
            f.write(text)
        mark = len(self.full_log())
        self.seqd.proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 5
        while time.time() < deadline:
            if '"action":"tokens_reload"' in self.full_log()[mark:]:
                return self.full_log()[mark:]
            time.sleep(0.02)
        self.fail("no tokens_reload audit line after SIGHUP")

    def full_log(self):
        with open(self.seqd.log.name, errors="replace") as f:
            return f.read()

    def audit_lines(self):
        out = []
        for line in self.full_log().splitlines():
            i = line.find(" audit {")
            if i >= 0:
                out.append(json.loads(line[i + len(" audit "):]))
        return out

    # --- HTTP ---------------------------------------------------------------------

    def test_http_without_token_is_401_with_challenge(self):
        for method, path, body in [("GET", "/seq/order_a", None),
                                   ("GET", "/api/segment/get/order_a", None),
                                   ("POST", "/admin/keys", {"key": "evil", "step": 1}),
                                   ("PUT", "/admin/keys/order_a/step", {"step": 1000000}),
                                   ("GET", "/conversations/sg_victim/messages/1", None),
                                   ("GET", "/snowflake", None),
                                   ("GET", "/", None)]:
            with self.subTest(path=path):
                status, payload, r = self.http(method, path, body)
                self.assertEqual(status, 401, payload)
                self.assertEqual(r.getheader("WWW-Authenticate"), 'Bearer realm="seqd"')
        status, _, _ = self.http("GET", "/seq/order_a", token="not-a-token")
        self.assertEqual(status, 401)
        status, _, _ = self.http("GET", "/seq/order_a", headers={"Authorization": "Basic eDp5"})
        self.assertEqual(status, 401)
        # The step was not changed and the key not created.
        status, payload, _ = self.http("GET", "/admin/keys/order_a", token="ops")
        self.assertEqual(json.loads(payload)["step"], 100)
        self.assertEqual(self.http("GET", "/admin/keys/evil", token="ops")[0], 404)

    def test_http_scopes(self):
        status, payload, _ = self.http("GET", "/seq/order_a", token="orders")
        self.assertEqual(status, 200, payload)
        status, payload, _ = self.http("GET", "/api/segment/get/order_a", token="orders")
        self.assertEqual(status, 200, payload)
        # Outside the prefix, other permissions, admin: 403.
        self.assertEqual(self.http("GET", "/seq/other", token="orders")[0], 403)
        self.assertEqual(self.http("GET", "/api/segment/get/other", token="orders")[0], 403)
        self.assertEqual(self.http("POST", "/admin/keys", {"key": "order_b", "step": 5},
                                   token="orders")[0], 403)
        self.assertEqual(self.http("GET", "/admin/keys", token="orders")[0], 403)
        self.assertEqual(self.http("GET", "/snowflake", token="orders")[0], 403)
        # A message token reads and sends its conversations only.
        conv = "/conversations/sg_team1/messages"
        msg = {"sender_id": "amy", "client_msg_id": "c1", "payload": "hi"}
        status, payload, _ = self.http("POST", conv, msg, token="chat")
        self.assertEqual(status, 201, payload)
        self.assertEqual(self.http("GET", conv + "?from=1", token="chat")[0], 200)
        self.assertEqual(self.http("GET", conv + "?from=1", token="reader")[0], 200)
        self.assertEqual(self.http("POST", conv, dict(msg, client_msg_id="c2"),
                                   token="reader")[0], 403)
        self.assertEqual(self.http("GET", "/conversations/sg_victim/messages/1",
                                   token="chat")[0], 403)
        self.assertEqual(self.http("PUT", "/conversations/sg_team1/min_seq", {"min_seq": 2},
                                   token="chat")[0], 403)
        self.assertEqual(self.http("PUT", "/conversations/sg_team1/min_seq", {"min_seq": 1},
                                   token="ops")[0], 200)
        # Health checks stay open; /metrics is open without --metrics-auth.
        self.assertEqual(self.http("GET", "/healthz")[0], 200)
        self.assertEqual(self.http("GET", "/readyz")[0], 200)
        self.assertEqual(self.http("GET", "/metrics")[0], 200)
        # The status page: admin or metrics tokens.
        self.assertEqual(self.http("GET", "/", token="scraper")[0], 200)
        self.assertEqual(self.http("GET", "/", token="orders")[0], 403)

    def test_audit_lines_for_admin_changes_and_failures(self):
        self.assertEqual(self.http("PUT", "/admin/keys/other/step", {"step": 250},
                                   token="ops")[0], 200)
        self.assertEqual(self.http("PUT", "/admin/keys/other/step", {"step": 7},
                                   token="orders")[0], 403)
        self.http("GET", "/seq/other", token="sqd_guess")
        deadline = time.time() + 5
        while time.time() < deadline:
            lines = self.audit_lines()
            ok = [a for a in lines if a["action"] == "key_step" and a["target"] == "other"]
            denied = [a for a in lines if a["outcome"] == "denied" and a["token"] == "orders"]
            unauth = [a for a in lines if a["outcome"] == "unauthenticated"]
            if ok and denied and unauth:
                break
            time.sleep(0.05)
        self.assertTrue(ok, lines)
        self.assertEqual(ok[-1]["token"], "ops")
        self.assertEqual(ok[-1]["outcome"], "ok")
        self.assertEqual((ok[-1]["old"], ok[-1]["new"]), ("step 100", "step 250"))
        self.assertTrue(ok[-1]["peer"].startswith("127.0.0.1:"), ok[-1])
        self.assertTrue(ok[-1]["time"].endswith("Z"))
        self.assertEqual(denied[-1]["token"], "orders")
        self.assertTrue(unauth)
        # No secret ever reaches the log.
        log = self.full_log()
        for secret in SECRETS.values():
            self.assertNotIn(secret, log)
        self.assertNotIn("sqd_guess", log)

    def test_failure_lines_are_throttled(self):
        before = sum(1 for a in self.audit_lines() if a["outcome"] == "unauthenticated")
        s = self.tcp()
        # 600 refused requests on one connection, as fast as they go.
        s.sendall(b"".join(frame(NEXT_IDS, 100 + i, next_ids_payload("order_a"))
                           for i in range(600)))
        for _ in range(600):
            read_frame(s)
        time.sleep(1.1)
        self.http("GET", "/seq/order_a")  # one more, in the next second
        deadline = time.time() + 5
        while time.time() < deadline:
            lines = self.audit_lines()
            if any(a["action"] == "audit_suppressed" for a in lines):
                break
            time.sleep(0.05)
        failures = sum(1 for a in lines if a["outcome"] == "unauthenticated") - before
        self.assertLess(failures, 200, "every refused request wrote a line")
        self.assertGreater(failures, 10)
        note = [a for a in lines if a["action"] == "audit_suppressed"][-1]
        self.assertIn("not written", note["new"])

    # --- binary -------------------------------------------------------------------

    def test_binary_needs_auth_then_scopes(self):
        s = self.tcp()
        self.assertEqual(call(s, PING, 1, b"x"), (OK, b"x"))
        self.assertEqual(call(s, NEXT_IDS, 2, next_ids_payload("order_a"))[0], UNAUTHENTICATED)
        # The attack from the issue: a SUBSCRIBE to someone else's conversation.
        self.assertEqual(call(s, SUBSCRIBE, 3, key_list(["sg_victim"]))[0],
                         UNAUTHENTICATED)
        self.assertEqual(call(s, AUTH, 4, b"wrong")[0], UNAUTHENTICATED)
        self.assertEqual(call(s, AUTH, 5, SECRETS["orders"].encode())[0], OK)
        status, result = call(s, NEXT_IDS, 6, next_ids_payload("order_a", 3))
        self.assertEqual(status, OK)
        self.assertEqual(call(s, NEXT_IDS, 7, next_ids_payload("other"))[0], PERMISSION_DENIED)
        self.assertEqual(call(s, SUBSCRIBE, 8, key_list(["sg_victim"]))[0],
                         PERMISSION_DENIED)
        # A message token: its conversations only.
        s2 = self.tcp()
        self.assertEqual(call(s2, AUTH, 1, SECRETS["chat"].encode())[0], OK)
        send = send_payload("sg_team2", "amy", "b1", b"hello")
        self.assertEqual(call(s2, SEND, 2, send)[0], OK)
        victim = send_payload("sg_victim", "amy", "b2", b"x")
        self.assertEqual(call(s2, SEND, 3, victim)[0], PERMISSION_DENIED)
        self.assertEqual(call(s2, SUBSCRIBE, 4, key_list(["sg_team2"]))[0], OK)
        self.assertEqual(call(s2, SET_CONV_MIN_SEQ, 5, s16("sg_team2") + struct.pack(">q", 5))[0],
                         PERMISSION_DENIED)

    def test_binary_guessing_costs_the_connection(self):
        s = self.tcp()
        for i in range(3):
            self.assertEqual(call(s, AUTH, 10 + i, b"guess%d" % i)[0], UNAUTHENTICATED)
        s.settimeout(5)
        with self.assertRaises((EOFError, ConnectionResetError)):
            call(s, PING, 20, b"x")

    # --- RESP ---------------------------------------------------------------------

    def test_resp_noauth_wrongpass_noperm(self):
        s = self.resp()
        self.assertEqual(resp_call(s, "PING"), b"+PONG")
        self.assertTrue(resp_call(s, "INCR", "order_a").startswith(b"-NOAUTH"))
        self.assertTrue(resp_call(s, "AUTH", "wrong").startswith(b"-WRONGPASS"))
        # AUTH user secret (Redis 6 style): the user must be the token's id or "default".
        self.assertTrue(resp_call(s, "AUTH", "ops", SECRETS["orders"]).startswith(b"-WRONGPASS"))
        self.assertEqual(resp_call(s, "AUTH", "orders", SECRETS["orders"]), b"+OK")
        self.assertTrue(resp_call(s, "INCR", "order_a").startswith(b":"))
        self.assertTrue(resp_call(s, "INCRBY", "other", "5").startswith(b"-NOPERM"))
        s2 = self.resp()
        self.assertEqual(resp_call(s2, "AUTH", SECRETS["orders"]), b"+OK")
        self.assertTrue(resp_call(s2, "INCRBY", "order_a", "2").startswith(b":"))

    # --- reloads ------------------------------------------------------------------

    def test_sighup_adds_revokes_and_survives_a_bad_file(self):
        s = self.tcp()
        self.assertEqual(call(s, AUTH, 1, SECRETS["orders"].encode())[0], OK)
        self.assertEqual(call(s, NEXT_IDS, 2, next_ids_payload("order_a"))[0], OK)
        r = self.resp()
        self.assertEqual(resp_call(r, "AUTH", SECRETS["orders"]), b"+OK")
        try:
            # A malformed file keeps the tokens loaded now.
            log = self.reload("broken line\n")
            self.assertIn('"outcome":"failed"', log)
            self.assertIn("tokens file line 1", log)
            self.assertEqual(call(s, NEXT_IDS, 3, next_ids_payload("order_a"))[0], OK)
            self.assertEqual(self.http("GET", "/seq/order_a", token="orders")[0], 200)
            # Revoked: the open connections lose their rights on their next request.
            self.reload(tokens_text(["ops", "chat", "reader", "scraper"]))
            self.assertEqual(call(s, NEXT_IDS, 4, next_ids_payload("order_a"))[0], UNAUTHENTICATED)
            self.assertTrue(resp_call(r, "INCR", "order_a").startswith(b"-NOAUTH"))
            self.assertEqual(self.http("GET", "/seq/order_a", token="orders")[0], 401)
            # Added again (wider scopes): the new line counts at once.
            self.reload(tokens_text(["ops", "orders", "chat", "reader", "scraper"],
                                    dict(SCOPES, orders="ids:*")))
            self.assertEqual(self.http("GET", "/seq/other", token="orders")[0], 200)
        finally:
            self.reload(tokens_text(["ops", "orders", "chat", "reader", "scraper"]))

    # --- revocation of what lives on without requests --------------------------

    def post_message(self, conv, n):
        body = {"sender_id": "u", "client_msg_id": "rv%d-%f" % (n, time.time()), "payload": "eA=="}
        status, payload, _ = self.http("POST", "/conversations/%s/messages" % conv, body, "chat")
        self.assertIn(status, (200, 201), payload)

    def next_push(self, s, timeout=5):
        """The next pushed frame (opcode, status, rest), skipping nothing."""
        s.settimeout(timeout)
        try:
            op, rid, status, rest = read_frame(s)
        finally:
            s.settimeout(10)
        return op, status, rest

    def no_frame_within(self, s, seconds):
        s.settimeout(seconds)
        try:
            data = s.recv(1)
            return data == b""  # closed: nothing came either
        except socket.timeout:
            return True
        finally:
            s.settimeout(10)

    def test_reload_and_reauth_end_subscriptions_the_token_no_longer_allows(self):
        # Subscribed as reader (msg:read:sg_team); a message is pushed.
        s = self.tcp()
        self.assertEqual(call(s, AUTH, 1, SECRETS["reader"].encode())[0], OK)
        self.assertEqual(call(s, SUBSCRIBE, 2, key_list(["sg_team"]))[0], OK)
        self.post_message("sg_team", 1)
        self.assertEqual(self.next_push(s)[0], PUSH_MESSAGE)
        # Re-AUTH with a token without msg:read: the AUTH succeeds, then the
        # subscriptions are dropped with PERMISSION_DENIED.
        s2 = self.tcp()
        self.assertEqual(call(s2, AUTH, 1, SECRETS["reader"].encode())[0], OK)
        self.assertEqual(call(s2, SUBSCRIBE, 2, key_list(["sg_team"]))[0], OK)
        self.assertEqual(call(s2, AUTH, 3, SECRETS["orders"].encode())[0], OK)
        op, status, rest = self.next_push(s2)
        self.assertEqual((op, status), (PUSH_DROPPED, PERMISSION_DENIED), rest)
        try:
            # The reader token removed: its subscription ends at the reload,
            # with no request on the connection.
            self.reload(tokens_text(["ops", "orders", "chat", "scraper"]))
            op, status, rest = self.next_push(s)
            self.assertEqual((op, status), (PUSH_DROPPED, UNAUTHENTICATED), rest)
            self.assertIn(b"subscriptions dropped", rest)
            # Nothing more is pushed to either connection.
            self.post_message("sg_team", 2)
            self.assertTrue(self.no_frame_within(s, 1.0), "a push after revocation")
            self.assertTrue(self.no_frame_within(s2, 0.2), "a push after a narrower AUTH")
        finally:
            self.reload(tokens_text(["ops", "orders", "chat", "reader", "scraper"]))

    def test_reload_ends_event_streams_the_token_no_longer_allows(self):
        sock = socket.create_connection(("127.0.0.1", self.seqd.port), timeout=10)
        self.addCleanup(sock.close)
        sock.sendall(b"GET /conversations/sg_team/events HTTP/1.1\r\nHost: x\r\n"
                     b"Accept: text/event-stream\r\nAuthorization: Bearer %s\r\n\r\n"
                     % SECRETS["reader"].encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            buf += sock.recv(4096)
        self.assertTrue(buf.startswith(b"HTTP/1.1 200"), buf[:200])
        self.post_message("sg_team", 3)
        deadline = time.time() + 5
        while b"event: message" not in buf and b"\ndata:" not in buf.split(b"\r\n\r\n", 1)[1]:
            self.assertLess(time.time(), deadline, buf)
            buf += sock.recv(4096)
        try:
            self.reload(tokens_text(["ops", "orders", "chat", "scraper"]))
            sock.settimeout(5)
            while True:
                chunk = sock.recv(4096)
                if not chunk:
                    break  # the server closed the stream
                buf += chunk
            self.assertIn(b"event: dropped", buf)
            self.assertIn(b'"reason":"unauthenticated"', buf)
        finally:
            self.reload(tokens_text(["ops", "orders", "chat", "reader", "scraper"]))

    # --- tools --------------------------------------------------------------------

    def test_seqctl_token_new_and_token_flags(self):
        out = subprocess.run([SEQCTL, "token", "new", "--id", "ci", "--scopes", "ids:ci_,admin",
                              "--json"], capture_output=True, text=True, check=True).stdout
        made = json.loads(out)
        self.assertTrue(made["secret"].startswith("sqd_"))
        self.assertEqual(made["line"].split()[1], hashlib.sha256(made["secret"].encode()).hexdigest())
        again = json.loads(subprocess.run([SEQCTL, "token", "new", "--id", "ci", "--scopes",
                                           "admin", "--json"], capture_output=True, text=True,
                                          check=True).stdout)
        self.assertNotEqual(made["secret"], again["secret"])
        bad = subprocess.run([SEQCTL, "token", "new", "--id", "ci", "--scopes", "ids"],
                             capture_output=True, text=True)
        self.assertEqual(bad.returncode, 2, bad.stderr)
        try:
            with open(self.tokens) as f:
                base = f.read()
            self.reload(base + made["line"] + "\n")
            created = subprocess.run([SEQCTL, "--http", "127.0.0.1:%d" % self.seqd.port, "--token",
                                      made["secret"], "create", "ci_x", "10"], capture_output=True,
                                     text=True)
            self.assertEqual(created.returncode, 0, created.stderr)
            http = ["--http", "127.0.0.1:%d" % self.seqd.port]
            tcp = ["--tcp", "127.0.0.1:%d" % self.tcp_port]
            denied = subprocess.run([SEQCTL, *http, "next", "ci_x"], capture_output=True,
                                    text=True, env=dict(os.environ, SEQD_TOKEN=""))
            self.assertEqual(denied.returncode, 1)
            self.assertIn("401", denied.stderr)
            ok = subprocess.run([SEQCTL, *http, "--token", made["secret"], "next", "ci_x", "2"],
                                capture_output=True, text=True)
            self.assertEqual(ok.returncode, 0, ok.stderr)
            self.assertEqual(len(ok.stdout.split()), 2)
            env = dict(os.environ, SEQD_TOKEN=made["secret"])
            ok = subprocess.run([SEQCTL, *tcp, "next", "ci_x", "3"], capture_output=True,
                                text=True, env=env)
            self.assertEqual(ok.returncode, 0, ok.stderr)
            self.assertEqual(len(ok.stdout.split()), 3)
            no = subprocess.run([SEQCTL, *tcp, "next", "order_a"], capture_output=True, text=True,
                                env=env)
            self.assertEqual(no.returncode, 1)
            self.assertIn("PERMISSION_DENIED", no.stderr)
            self.assertEqual(subprocess.run([SEQCTL, *http, "create", "ci_b", "10"], env=env,
                                            capture_output=True).returncode, 0)
            resp = ["--resp", "127.0.0.1:%d" % self.resp_port]
            for target in (tcp, ["--http", "127.0.0.1:%d" % self.seqd.port], resp):
                bench = subprocess.run([SEQBENCH, *target,
                                        "--key", "ci_b", "--duration", "0.3", "--connections", "1",
                                        "--json"], capture_output=True, text=True, env=env)
                self.assertEqual(bench.returncode, 0, bench.stdout + bench.stderr)
                self.assertGreater(json.loads(bench.stdout)["requests"], 0)
            # seqbench --resp sends AUTH first; a refused one fails the connection.
            bench = subprocess.run([SEQBENCH, *resp, "--key", "ci_b", "--duration", "0.3",
                                    "--connections", "1", "--json"], capture_output=True,
                                   text=True, env=dict(os.environ, SEQD_TOKEN="sqd_wrong"))
            self.assertEqual(bench.returncode, 1, bench.stdout + bench.stderr)
            r = json.loads(bench.stdout)
            self.assertEqual(r["requests"], 0, r)
            self.assertTrue(any(k.startswith("AUTH: WRONGPASS") for k in r["error_kinds"]), r)
        finally:
            self.reload(tokens_text(["ops", "orders", "chat", "reader", "scraper"]))


class StartUp(unittest.TestCase):
    """Secure by default: what seqd refuses to start with."""

    def start(self, *args, wait=5):
        with tempfile.TemporaryDirectory() as tmp:
            p = subprocess.Popen([SEQD, "--store", store_spec("sqlite", tmp), "--http-port", "0",
                                  "--tcp-port", "0", *args], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
            try:
                out, _ = p.communicate(timeout=wait)
                return p.returncode, out
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGTERM)
                out, _ = p.communicate(timeout=15)
                return None, out  # still running: it started

    def test_open_on_a_public_address_is_refused(self):
        for args in (["--http-address", "0.0.0.0"], ["--tcp-address", "0.0.0.0"],
                     ["--admin-address", "0.0.0.0", "--admin-port", "0"]):
            with self.subTest(args=args):
                code, out = self.start(*args)
                self.assertNotIn(code, (None, 0), out)
                self.assertIn("no tokens file", out)
                self.assertIn("--insecure-no-auth", out)

    def test_insecure_no_auth_starts_with_a_warning(self):
        code, out = self.start("--http-address", "0.0.0.0", "--insecure-no-auth", wait=1.5)
        self.assertIsNone(code, out)
        self.assertIn("insecure_no_auth", out)

    def test_loopback_starts_open(self):
        code, out = self.start(wait=1.5)
        self.assertIsNone(code, out)

    def test_bad_tokens_file_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = tokens_file(tmp, "# ok\nops %s admin\nops %s ids:*\n" % ("a" * 64, "b" * 64))
            code, out = self.start("--tokens-file", path)
            self.assertNotIn(code, (None, 0), out)
            self.assertIn("line 3", out)
            code, out = self.start("--tokens-file", os.path.join(tmp, "missing"))
            self.assertNotIn(code, (None, 0), out)
            with open(path, "w") as f:
                f.write("ops %s admin\n" % ("a" * 64))
            code, out = self.start("--tokens-file", path, "--http-address", "0.0.0.0", wait=1.5)
            self.assertIsNone(code, out)  # tokens on: any address


if __name__ == "__main__":
    unittest.main()
