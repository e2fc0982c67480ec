"""End-to-end tests of logs and request ids (docs/operations.md, "Logs") on
the real seqd binary (SQLite store):

- --log-format json: every line of the log is a JSON object with time,
  level and message; an audit event (an admin change, a refused token over
  HTTP and over the binary protocol) is an object of its own, its fields at
  the top level;
- X-Request-Id: a client's id is echoed on a success and on an error, is in
  the error body and in the log; a malformed one is replaced, never echoed;
  a traceparent's trace id is in the log;
- generated ids differ across two instances and across a restart;
- --log-format text keeps the audit line's shape.

Usage: python3 tests/e2e/test_logs.py [unittest args]
"""
import json
import os
import re
import socket
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Seqd, free_port, store_spec  # noqa: E402
from lib.tokens import token_line, tokens_file  # noqa: E402
from lib.wire import call  # noqa: E402

SECRET = "sqd_ops-secret-0123456789"
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
MADE_ID = re.compile(r"^[0-9a-f]{16}-[0-9a-f]+$")
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
AUTH_OP = 0x03


def bearer(secret=SECRET):
    return {"Authorization": "Bearer " + secret}


def read_log(seqd):
    with open(seqd.log.name, encoding="utf-8", errors="strict") as f:
        return f.read().splitlines()


def binary_auth(port, secret):
    """Sends one binary AUTH frame and returns its status."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        return call(s, AUTH_OP, 1, secret.encode())[0]


class JsonLogs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        tokens = tokens_file(cls.tmp.name, token_line("ops", SECRET, "admin,ids:*") + "\n")
        cls.tcp_port = free_port()
        cls.seqd = Seqd(store_spec("sqlite", cls.tmp.name), "--log-format", "json",
                        "--log-level", "debug", "--tokens-file", tokens,
                        "--tcp-port", str(cls.tcp_port))
        s = cls.seqd
        # An admin change: an audit event, with the client's request id.
        status, _, r = s.request("POST", "/admin/keys", {"key": "order", "step": 10},
                                 headers={**bearer(), "X-Request-Id": "e2e-audit-1"})
        assert status == 201, status
        cls.create_id = r.getheader("X-Request-Id")
        # A success and an error with the client's id; an error with a trace.
        cls.ok = s.request("GET", "/seq/order", headers={**bearer(), "X-Request-Id": "e2e-ok-1"})
        cls.err = s.request("GET", "/seq/nokey", headers={**bearer(), "X-Request-Id": "e2e-err-1"})
        cls.traced = s.request("GET", "/nope", headers={
            **bearer(), "traceparent": "00-%s-00f067aa0ba902b7-01" % TRACE})
        # Malformed ids: replaced, never echoed.
        cls.bad = [s.request("GET", "/seq/order", headers={**bearer(), "X-Request-Id": v})
                   for v in ("has space", "x" * 129, 'quo"te', "semi;colon")]
        # Refused tokens: audit events from HTTP and from the binary protocol.
        cls.refused = s.request("GET", "/seq/order", headers={
            **bearer("sqd_wrong-secret"), "X-Request-Id": "e2e-refused-1"})
        cls.binary_status = binary_auth(cls.tcp_port, "sqd_wrong-secret-binary")
        cls.exit_code = s.stop()
        cls.lines = read_log(s)
        cls.objects = [json.loads(line) for line in cls.lines]

    @classmethod
    def tearDownClass(cls):
        cls.seqd.__exit__(None, None, None)
        cls.tmp.cleanup()

    def test_every_line_is_a_json_object_with_time_level_message(self):
        self.assertEqual(self.exit_code, 0)
        self.assertGreater(len(self.lines), 5)
        for line in self.lines:
            obj = json.loads(line)  # raises on any line that is not JSON
            self.assertIsInstance(obj, dict, line)
            self.assertRegex(obj["time"], TIME, line)
            self.assertIn(obj["level"], ("debug", "info", "warn", "error"), line)
            self.assertIsInstance(obj["message"], str, line)

    def audits(self, **match):
        return [o for o in self.objects if o.get("log") == "audit" and
                all(o.get(k) == v for k, v in match.items())]

    def test_audit_event_is_an_object_with_its_fields_at_the_top(self):
        created = self.audits(action="key_create")
        self.assertEqual(len(created), 1, self.objects)
        a = created[0]
        self.assertEqual(a["message"], "audit")
        self.assertEqual(a["level"], "info")
        self.assertEqual(a["interface"], "http")
        self.assertEqual(a["token"], "ops")
        self.assertEqual(a["target"], "order")
        self.assertEqual(a["outcome"], "ok")
        self.assertEqual(a["request_id"], "e2e-audit-1")
        self.assertEqual(self.create_id, "e2e-audit-1")
        self.assertTrue(re.match(r"^127\.0\.0\.1:\d+$", a["peer"]), a)

    def test_refused_tokens_are_audit_objects_from_http_and_binary(self):
        self.assertEqual(self.refused[0], 401)
        self.assertEqual(self.refused[2].getheader("X-Request-Id"), "e2e-refused-1")
        http = self.audits(interface="http", outcome="unauthenticated")
        self.assertTrue(any(a.get("request_id") == "e2e-refused-1" for a in http), http)
        self.assertEqual(self.binary_status, 13)  # UNAUTHENTICATED
        binary = self.audits(interface="binary", outcome="unauthenticated")
        self.assertEqual(len(binary), 1, self.objects)
        self.assertNotIn("request_id", binary[0])  # no header to carry one

    def test_client_request_id_echoed_on_success_and_error(self):
        status, payload, r = self.ok
        self.assertEqual(status, 200)
        self.assertEqual(r.getheader("X-Request-Id"), "e2e-ok-1")
        status, payload, r = self.err
        self.assertEqual(status, 404)
        self.assertEqual(r.getheader("X-Request-Id"), "e2e-err-1")
        self.assertEqual(json.loads(payload)["error"]["request_id"], "e2e-err-1")
        logged = [o for o in self.objects if o.get("request_id") == "e2e-err-1"]
        self.assertEqual(len(logged), 1, self.objects)
        self.assertEqual(logged[0]["status"], 404)
        self.assertEqual(logged[0]["code"], "unknown_key")
        self.assertEqual(logged[0]["level"], "debug")

    def test_traceparent_trace_id_in_the_log(self):
        status, payload, r = self.traced
        self.assertEqual(status, 404)
        made = r.getheader("X-Request-Id")
        self.assertRegex(made, MADE_ID)
        self.assertEqual(json.loads(payload)["error"]["request_id"], made)
        logged = [o for o in self.objects if o.get("trace_id") == TRACE]
        self.assertEqual(len(logged), 1, self.objects)
        self.assertEqual(logged[0]["request_id"], made)

    def test_malformed_request_id_is_replaced(self):
        ids = []
        for status, _, r in self.bad:
            self.assertEqual(status, 200)
            ids.append(r.getheader("X-Request-Id"))
        for i in ids:
            self.assertRegex(i, MADE_ID)
        self.assertEqual(len(set(ids)), len(ids))
        for line in self.lines:
            self.assertNotIn("has space", line)
            self.assertNotIn("semi;colon", line)


class Instances(unittest.TestCase):
    def made_id(self, seqd):
        status, _, r = seqd.request("GET", "/healthz")
        self.assertEqual(status, 200)
        rid = r.getheader("X-Request-Id")
        self.assertRegex(rid, MADE_ID)
        return rid

    def test_generated_ids_differ_across_instances_and_restarts(self):
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            with Seqd(store_spec("sqlite", a)) as one, Seqd(store_spec("sqlite", b)) as two:
                x, y = self.made_id(one), self.made_id(two)
                self.assertNotEqual(x.split("-")[0], y.split("-")[0])
                port = one.port
                one.stop()
            with Seqd(store_spec("sqlite", a), port=port) as again:
                z = self.made_id(again)
                self.assertNotEqual(x.split("-")[0], z.split("-")[0])

    def test_text_format_keeps_the_audit_line_shape(self):
        with tempfile.TemporaryDirectory() as d:
            tokens = tokens_file(d, token_line("ops", SECRET, "admin") + "\n")
            with Seqd(store_spec("sqlite", d), "--tokens-file", tokens) as s:
                status, _, _ = s.request("POST", "/admin/keys", {"key": "k", "step": 5},
                                         headers={**bearer(), "X-Request-Id": "text-1"})
                self.assertEqual(status, 201)
                s.stop()
                audits = [json.loads(line[line.index(" INFO audit {") + 12:])
                          for line in read_log(s) if " INFO audit {" in line]
                self.assertEqual([a["action"] for a in audits], ["key_create"])
                self.assertEqual(audits[0]["request_id"], "text-1")


if __name__ == "__main__":
    unittest.main()
