"""End-to-end tests of the failed-authentication budget (docs/security.md,
"Guessing secrets") on the real seqd binary, with its own instance (the
budget is per address, and every test comes from 127.0.0.1):

- wrong secrets over many new connections on binary, RESP and HTTP count
  against the address together; past the budget every attempt, right
  secret included, is refused at once with the throttled error
  (RESOURCE_EXHAUSTED, -ERR, 429 with Retry-After), counted in
  seqd_auth_throttled_total and audited once as auth_throttled;
- an unauthenticated POST is refused before its body: 401 without a
  100 Continue, 401 before a large announced body is sent, then a close.

Usage: python3 tests/e2e/test_auth_budget.py [unittest args]
"""
import json
import os
import re
import socket
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Seqd, free_port, store_spec  # noqa: E402
from lib.sockets import closed_within, read_head  # noqa: E402
from lib.tokens import SECRETS, tokens_file, tokens_text  # noqa: E402
from lib.wire import call, next_ids_payload, resp_call  # noqa: E402

NEXT_IDS, AUTH = 0x02, 0x03
OK, UNAUTHENTICATED, RESOURCE_EXHAUSTED = 0, 13, 15
THROTTLED = "too many failed authentications from this address"
BUDGET = 20


def read_http_head(sock, timeout=5):
    """The status line and headers of the next response ("" if closed)."""
    return read_head(sock, timeout).decode(errors="replace")


class Budget(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        tokens = tokens_file(self.tmp.name, tokens_text(["ops", "orders"]))
        self.tcp_port, self.resp_port = free_port(), free_port()
        self.seqd = Seqd(store_spec("sqlite", self.tmp.name), "--tcp-port", str(self.tcp_port),
                         "--resp-port", str(self.resp_port), "--tokens-file", tokens,
                         "--auth-failure-budget", str(BUDGET))
        self.addCleanup(self.seqd.__exit__)

    def binary_auth(self, secret):
        with socket.create_connection(("127.0.0.1", self.tcp_port), timeout=10) as s:
            status, rest = call(s, AUTH, 1, secret.encode())
            if status == OK:
                status = call(s, NEXT_IDS, 2, next_ids_payload("order_a"))[0]
                return ("ok" if status in (OK, 2) else "status %d" % status), rest
            if status == RESOURCE_EXHAUSTED:
                return "throttled", rest.decode(errors="replace")
            return ("unauthenticated" if status == UNAUTHENTICATED else "status %d" % status), rest

    def resp_auth(self, secret):
        with socket.create_connection(("127.0.0.1", self.resp_port), timeout=10) as s:
            text = resp_call(s, "AUTH", secret).decode(errors="replace")
        if text.startswith("+OK"):
            return "ok", text
        if text.startswith("-ERR") and THROTTLED in text:
            return "throttled", text
        return ("unauthenticated" if text.startswith("-WRONGPASS") else text), text

    def http_auth(self, secret):
        status, payload, r = self.seqd.request("GET", "/seq/order_a",
                                               headers={"Authorization": "Bearer " + secret})
        if status == 429:
            self.assertIn(THROTTLED, json.loads(payload)["error"]["message"])
            retry = r.getheader("Retry-After")
            self.assertTrue(retry and retry.isdigit() and 1 <= int(retry) <= 60, retry)
            return "throttled", payload
        return {200: "ok", 401: "unauthenticated"}.get(status, "http %d" % status), payload

    def metrics(self):
        _, payload, _ = self.seqd.request("GET", "/metrics")
        out = {}
        for line in payload.decode().splitlines():
            m = re.match(r'^(seqd_auth_\w+?)(\{interface="(\w+)"\})? (\S+)$', line)
            if m:
                out[(m.group(1), m.group(3))] = float(m.group(4))
        return out

    def test_wrong_secrets_across_connections_and_listeners_are_throttled(self):
        self.seqd.request("POST", "/admin/keys", {"key": "order_a", "step": 100},
                          headers={"Authorization": "Bearer " + SECRETS["ops"]})
        listeners = [self.binary_auth, self.resp_auth, self.http_auth]
        answers = []
        # 60 wrong secrets, each on a new connection, the listeners in turn.
        for i in range(60):
            answers.append(listeners[i % 3]("sqd_guess-%d" % i)[0])
        # The right secret from the same address, on each listener, while blocked.
        right = [f(SECRETS["orders"])[0] for f in listeners]
        self.assertEqual(answers[:BUDGET], ["unauthenticated"] * BUDGET, answers)
        self.assertEqual(answers[BUDGET], "throttled", answers)
        self.assertEqual(answers[-3:], ["throttled"] * 3, answers)
        self.assertGreaterEqual(answers.count("throttled"), 30, answers)
        self.assertEqual(right, ["throttled"] * 3)
        m = self.metrics()
        self.assertGreaterEqual(m[("seqd_auth_failures_total", None)], BUDGET)
        for interface in ("binary", "resp", "http"):
            self.assertGreaterEqual(m[("seqd_auth_throttled_total", interface)], 1, m)
        with open(self.seqd.log.name, errors="replace") as f:
            log = f.read()
        self.assertIn('"action":"auth_throttled"', log)
        self.assertNotIn("sqd_guess", log)
        self.assertNotIn(SECRETS["orders"], log)

    def test_the_block_ends(self):
        for i in range(BUDGET):
            self.assertEqual(self.resp_auth("sqd_guess-%d" % i)[0], "unauthenticated")
        kind, text = self.resp_auth(SECRETS["orders"])
        self.assertEqual(kind, "throttled")
        self.assertRegex(text, r"retry in \d+ s")
        time.sleep(1.2)  # the first block lasts 1 s
        self.assertEqual(self.resp_auth(SECRETS["orders"])[0], "ok")

    # --- HTTP: refused before the body ------------------------------------------

    def raw_http(self, head):
        s = socket.create_connection(("127.0.0.1", self.seqd.port), timeout=10)
        self.addCleanup(s.close)
        s.sendall(head.encode())
        return s

    def test_unauthenticated_expect_continue_gets_401_without_100(self):
        s = self.raw_http("POST /admin/keys HTTP/1.1\r\nHost: x\r\n"
                          "Content-Type: application/json\r\nContent-Length: 30\r\n"
                          "Expect: 100-continue\r\n\r\n")
        head = read_http_head(s)
        self.assertTrue(head.startswith("HTTP/1.1 401"), head)
        self.assertIn('WWW-Authenticate: Bearer realm="seqd"', head)
        self.assertIn("Connection: close", head)
        self.assertTrue(closed_within(s, 5), "the connection stayed open")

    def test_unauthenticated_large_body_gets_401_before_it_is_sent(self):
        s = self.raw_http("POST /conversations/sg_a/messages HTTP/1.1\r\nHost: x\r\n"
                          "Content-Type: application/json\r\nContent-Length: 200000\r\n\r\n")
        head = read_http_head(s)  # nothing of the body sent
        self.assertTrue(head.startswith("HTTP/1.1 401"), head)
        self.assertTrue(closed_within(s, 5), "the connection stayed open")

    def test_a_throttled_address_gets_429_before_the_body(self):
        for i in range(BUDGET):
            self.assertEqual(self.resp_auth("sqd_guess-%d" % i)[0], "unauthenticated")
        s = self.raw_http("POST /admin/keys HTTP/1.1\r\nHost: x\r\n"
                          "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
                          "Content-Length: 100000\r\n\r\n" % SECRETS["ops"])
        head = read_http_head(s)
        self.assertTrue(head.startswith("HTTP/1.1 429"), head)
        self.assertRegex(head, r"Retry-After: \d+")

    def test_a_valid_token_still_gets_100_continue(self):
        body = json.dumps({"key": "k_continue", "step": 10})
        s = self.raw_http("POST /admin/keys HTTP/1.1\r\nHost: x\r\n"
                          "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
                          "Content-Length: %d\r\nExpect: 100-continue\r\n\r\n"
                          % (SECRETS["ops"], len(body)))
        head = read_http_head(s)
        self.assertTrue(head.startswith("HTTP/1.1 100"), head)
        s.sendall(body.encode())
        head = read_http_head(s)
        self.assertTrue(head.startswith("HTTP/1.1 201") or head.startswith("HTTP/1.1 200"), head)

    def test_a_whole_unauthenticated_request_keeps_its_connection(self):
        # The body already arrived with the header: answered as before.
        c = self.seqd.conn()
        for _ in range(2):
            status, _, r = self.seqd.request("POST", "/admin/keys", {"key": "x", "step": 1},
                                             conn=c)
            self.assertEqual(status, 401)
        c.close()


if __name__ == "__main__":
    unittest.main()
