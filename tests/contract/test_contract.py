#!/usr/bin/env python3
"""ctest openapi_contract: every HTTP route of the real seqd, successes and
errors, sent through Stoplight Prism's validating proxy
(`prism proxy docs/openapi.yaml http://127.0.0.1:PORT --errors`), which
checks each request and each response against docs/openapi.yaml.

Fails on any violation Prism reports (its `sl-violations` header, an answer
of its own in application/problem+json, a "Violation" line in its log), on
an unexpected status, and on an operation of the spec that the suite did not
exercise with a success and an error (EXPECTED_GAPS names the ones no
request can reach here, each with its reason).

Requests outside the spec by definition (an unknown path, a method a path
does not take, a body that is not JSON, no token) cannot pass the proxy,
which answers them itself; they go straight to seqd, and their answers are
checked against the spec's Error schema here.

PENDING_ROUTES and PENDING_FEATURES: what the spec describes ahead of the
server. Their tests below do not run, and every run says so loudly, until
they are removed from these lists.

An event stream never ends, and Prism answers only once a body has ended:
streams' errors go through Prism, their 200s are read straight from seqd
and each event's data is checked against the spec's Message schema.

Needs the pinned Node tools (scripts/node-deps); fails, never skips,
without them. SEQD_BINARY names the seqd to test. The machinery is in
contract_support.py.
"""
import http.client
import json
import os
import re
import sys
import tempfile
import threading
import time
import unittest

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
from contract_support import (SECRETS, ContractCalls, Prism, Seqd, load_spec,  # noqa: E402
                              spec_operations, store_spec, tokens_text)

PENDING_ROUTES: set = set()
PENDING_FEATURES: set = set()

# Operations the suite cannot drive to a success or to an error against one
# SQLite seqd, and why.
EXPECTED_GAPS = {
    ("GET", "/admin/cluster", "2xx"): "cluster mode is off here (tests/e2e/test_cluster.py runs it)",
    ("GET", "/admin/placement", "2xx"): "store groups need cluster mode (test_shard_move.py runs it)",
    ("POST", "/admin/placement/move", "2xx"):
        "store groups need cluster mode (test_shard_move.py runs it)",
    ("GET", "/healthz", "error"): "an open probe with no error of its own",
    ("GET", "/readyz", "error"): "503 only while the store is down or warming",
}

STREAMS_PENDING = ("GET", "/conversations/{conv}/events") in PENDING_ROUTES
MAX_BODY = 65536
MAX_PAYLOAD = 1024


class Contract(ContractCalls, unittest.TestCase):
    """One seqd and one Prism for the whole suite; tests run in name order
    and later ones use what earlier ones created."""

    every_answer_has_request_id = "request-id" not in PENDING_FEATURES

    @classmethod
    def setUpClass(cls):
        cls.spec = load_spec()
        cls.tmp = tempfile.TemporaryDirectory()
        tokens = os.path.join(cls.tmp.name, "tokens")
        with open(tokens, "w") as f:
            f.write(tokens_text())
        cls.seqd = Seqd(store_spec("sqlite", cls.tmp.name), "--tokens-file", tokens,
                        "--metrics-auth", "on",
                        # The contract sends many deliberate wrong tokens from
                        # one address; the failure budget has its own suite
                        # (e2e_auth_budget).
                        "--auth-failure-budget", "0",
                        "--http-max-body-bytes", str(MAX_BODY),
                        "--msg-max-payload-bytes", str(MAX_PAYLOAD),
                        "--auto-create-rate", "1", "--auto-create-burst", "2",
                        *([] if STREAMS_PENDING else ["--sse-max-streams-per-token", "2",
                                                      "--sse-heartbeat-ms", "200"]))
        try:
            cls.prism = Prism(cls.seqd.port, os.path.join(cls.tmp.name, "prism.log"))
        except Exception:
            cls.seqd.__exit__(None, None, None)
            raise
        cls.seen = {}  # (method, template) -> set of statuses

    @classmethod
    def tearDownClass(cls):
        cls.prism.stop()
        cls.seqd.__exit__(None, None, None)
        cls.tmp.cleanup()

    # --- IDs -----------------------------------------------------------------

    def test_10_keys(self):
        c = self.call
        _, r, payload = c("POST", "/admin/keys", body={"key": "order_a", "step": 100,
                                                        "description": "contract"}, expect=201)
        self.assertEqual(json.loads(payload)["key"], "order_a")
        if "location" not in PENDING_FEATURES:
            self.assertEqual(r.getheader("Location"), "/admin/keys/order_a")
        c("POST", "/admin/keys", body={"key": "order_b", "step": 10}, expect=201)
        c("POST", "/admin/keys", body={"key": "order_a", "step": 100}, expect=409)
        c("POST", "/admin/keys", body={"key": "order_c", "step": 2000000000}, expect=400)
        c("POST", "/admin/keys", body={"key": "order_d", "step": 1, "description": "x" * MAX_BODY},
          expect=413)
        c("POST", "/admin/keys", body={"key": "order_e", "step": 1}, token="bad", expect=401)
        c("POST", "/admin/keys", body={"key": "order_e", "step": 1}, token="orders", expect=403)

        c("GET", "/admin/keys/{key}", {"key": "order_a"})
        c("GET", "/admin/keys/{key}", {"key": "order_zz"}, expect=404)
        c("GET", "/admin/keys/{key}", {"key": "order_a"}, token="bad", expect=401)
        c("GET", "/admin/keys/{key}", {"key": "order_a"}, token="reader", expect=403)

        c("PUT", "/admin/keys/{key}/step", {"key": "order_b"}, body={"step": 20})
        c("PUT", "/admin/keys/{key}/step", {"key": "order_zz"}, body={"step": 20}, expect=404)
        c("PUT", "/admin/keys/{key}/step", {"key": "order_b"}, body={"step": 2000000000},
          expect=400)
        c("PUT", "/admin/keys/{key}/step", {"key": "order_b"}, body={"step": 20}, token="bad",
          expect=401)
        c("PUT", "/admin/keys/{key}/step", {"key": "order_b"}, body={"step": 20}, token="orders",
          expect=403)

    def test_20_ids(self):
        c = self.call
        one = self.json_call("GET", "/seq/{key}", {"key": "order_a"})
        self.assertEqual(set(one), {"key", "id"})
        batch = self.json_call("GET", "/seq/{key}", {"key": "order_a"}, query={"count": 3})
        self.assertEqual(batch["count"], 3)
        _, _, text = c("GET", "/seq/{key}", {"key": "order_a"}, query={"count": 2},
                       headers={"Accept": "text/plain"})
        self.assertEqual(len(text.decode().split()), 2)
        c("GET", "/seq/{key}", {"key": "order_a"}, query={"count": 100000}, expect=400)
        c("GET", "/seq/{key}", {"key": "zz_unknown"}, expect=404)
        if "reserved-keys" not in PENDING_FEATURES:
            c("GET", "/seq/{key}", {"key": "seqd.server_msg_id"}, expect=400)
            c("GET", "/api/segment/get/{key}", {"key": "seqd.server_msg_id"}, expect=400)
        c("GET", "/seq/{key}", {"key": "order_a"}, token="bad", expect=401)
        c("GET", "/seq/{key}", {"key": "other_key"}, token="orders", expect=403)
        c("GET", "/seq/{key}", {"key": "order_a"}, token="orders")

        _, _, text = c("GET", "/api/segment/get/{key}", {"key": "order_a"})
        self.assertTrue(text.decode().isdigit(), text)
        c("GET", "/api/segment/get/{key}", {"key": "zz_unknown"}, expect=404)
        c("GET", "/api/segment/get/{key}", {"key": "order_a"}, token="bad", expect=401)
        c("GET", "/api/segment/get/{key}", {"key": "other_key"}, token="orders", expect=403)

        # New auto-created keys over the token's rate (burst 2): 429, on both routes.
        c("GET", "/seq/{key}", {"key": "si_new1"}, token="burst")
        c("GET", "/seq/{key}", {"key": "si_new2"}, token="burst")
        _, r, _ = c("GET", "/seq/{key}", {"key": "si_new3"}, token="burst", expect=429)
        self.assertEqual(r.getheader("Retry-After"), "1")
        c("GET", "/api/segment/get/{key}", {"key": "si_new4"}, token="burst", expect=429)

    def test_25_openim_ids(self):
        c = self.call
        block = self.json_call("GET", "/seq/{key}", {"key": "order_a"},
                               query={"count": 4, "contiguous": "true"})
        self.assertEqual(block["last"] - block["first"], 3)
        c("GET", "/seq/{key}", {"key": "seqd.server_msg_id"}, query={"contiguous": "true"},
          expect=400)
        out = self.json_call("GET", "/max_ids", query={"key": ["order_a", "order_none"]})
        self.assertEqual(out["max_ids"]["order_a"], block["last"])
        c("GET", "/max_ids", query={"key": "seqd.x"}, expect=400)
        c("GET", "/max_ids", query={"key": "order_a"}, token="bad", expect=401)
        c("GET", "/max_ids", query={"key": "other_key"}, token="orders", expect=403)
        c("POST", "/max_ids", body={"keys": ["order_a"]}, token="orders")
        c("POST", "/max_ids", body={"keys": ["seqd.x"]}, expect=400)
        c("PUT", "/min_seqs", body={"min_seqs": {"order_a": 3}})
        c("PUT", "/min_seqs", body={"min_seqs": {"other_key": 1}}, token="orders", expect=403)
        out = self.json_call("GET", "/min_seqs", query={"key": "order_a"})
        self.assertEqual(out, {"min_seqs": {"order_a": 3}})
        c("GET", "/min_seqs", query={"key": "seqd.x"}, expect=400)
        c("POST", "/min_seqs", body={"keys": ["order_a"]})
        c("POST", "/min_seqs", body={"keys": ["other_key"]}, token="orders", expect=403)
        c("PUT", "/user_seqs", body={"user": "alice", "field": "read", "raise_only": True,
                                      "seqs": {"order_a": 7}})
        c("PUT", "/user_seqs", body={"user": "alice", "field": "read", "seqs": {"other_key": 1}},
          token="orders", expect=403)
        out = self.json_call("GET", "/user_seqs", query={"user": "alice", "field": "read",
                                                          "conv": ["order_a", "order_none"]})
        self.assertEqual(out, {"user": "alice", "field": "read",
                               "seqs": {"order_a": 7, "order_none": 0}})
        c("GET", "/user_seqs", query={"user": "alice", "field": "read", "conv": "seqd.x"},
          expect=400)
        c("POST", "/user_seqs", body={"user": "alice", "field": "max", "convs": ["order_a"]})
        c("POST", "/user_seqs", body={"user": "alice", "field": "max", "convs": ["other_key"]},
          token="orders", expect=403)

    def test_30_admin_pages(self):
        c = self.call
        page = self.json_call("GET", "/admin/keys", query={"limit": 1})
        self.assertIsNotNone(page["next_after"])
        c("GET", "/admin/keys", query={"after": page["next_after"], "limit": 100})
        c("GET", "/admin/keys", token="bad", expect=401)
        c("GET", "/admin/keys", token="orders", expect=403)
        c("GET", "/admin/cache")
        c("GET", "/admin/cache", query={"after": "order_a", "limit": 5})
        c("GET", "/admin/cache", token="bad", expect=401)
        c("GET", "/admin/cache", token="orders", expect=403)
        c("GET", "/admin/cluster", expect=404)
        c("GET", "/admin/cluster", token="bad", expect=401)
        c("GET", "/admin/cluster", token="orders", expect=403)
        c("GET", "/admin/placement", expect=404)
        c("GET", "/admin/placement", token="orders", expect=403)
        c("POST", "/admin/placement/move", body={"shard": 1, "to": "b"}, expect=404)
        c("POST", "/admin/placement/move", body={"shard": 1, "to": "b"}, token="bad", expect=401)
        c("GET", "/admin/snowflake")
        c("GET", "/admin/snowflake", token="bad", expect=401)
        c("GET", "/admin/snowflake", token="orders", expect=403)
        _, _, html = c("GET", "/", headers={"Accept": "text/html"})
        self.assertIn(b"<html", html)
        c("GET", "/", token="bad", expect=401)
        c("GET", "/", token="orders", expect=403)

    def test_35_leaf_monitor(self):
        if ("GET", "/cache") in PENDING_ROUTES:
            return
        c = self.call
        cache = self.json_call("GET", "/cache")
        self.assertIn("order_a", cache)
        self.assertEqual(len(self.json_call("GET", "/cache", query={"limit": 1})), 1)
        c("GET", "/cache", token="bad", expect=401)
        c("GET", "/cache", token="orders", expect=403)
        rows = self.json_call("GET", "/db", query={"after": "order_a", "limit": 10})
        self.assertEqual([row["key"] for row in rows][:1], ["order_b"])
        c("GET", "/db")
        c("GET", "/db", token="bad", expect=401)
        c("GET", "/db", token="orders", expect=403)

    def test_40_operations(self):
        c = self.call
        c("GET", "/healthz", token=None)
        c("GET", "/readyz", token=None)
        _, _, text = c("GET", "/metrics")
        self.assertIn(b"seqd_requests_total", text)
        c("GET", "/metrics", token="bad", expect=401)
        c("GET", "/metrics", token="orders", expect=403)

    def test_50_snowflake(self):
        c = self.call
        one = self.json_call("GET", "/snowflake")
        many = self.json_call("GET", "/snowflake", query={"count": 3})
        self.assertEqual(len(many["ids"]), 3)
        c("GET", "/snowflake", query={"count": 2}, headers={"Accept": "text/plain"})
        c("GET", "/snowflake", query={"count": 100000}, expect=400)
        c("GET", "/snowflake", token="bad", expect=401)
        c("GET", "/snowflake", token="orders", expect=403)
        too_big = "9" * 19  # above 2^63 - 1
        c("GET", "/snowflake/decode/{id}", {"id": one["id"]})
        c("GET", "/snowflake/decode/{id}", {"id": too_big}, expect=400)
        c("GET", "/snowflake/decode/{id}", {"id": one["id"]}, token="bad", expect=401)
        c("GET", "/snowflake/decode/{id}", {"id": one["id"]}, token="orders", expect=403)
        c("GET", "/api/snowflake/get/{key}", {"key": "order_a"})
        c("GET", "/api/snowflake/get/{key}", {"key": "order_a"}, token="bad", expect=401)
        c("GET", "/api/snowflake/get/{key}", {"key": "order_a"}, token="orders", expect=403)
        c("GET", "/decodeSnowflakeId", query={"snowflakeId": one["id"]})
        c("GET", "/decodeSnowflakeId", query={"snowflakeId": too_big}, expect=400)
        c("GET", "/decodeSnowflakeId", query={"snowflakeId": one["id"]}, token="bad", expect=401)
        c("GET", "/decodeSnowflakeId", query={"snowflakeId": one["id"]}, token="orders",
          expect=403)

    # --- messages ------------------------------------------------------------

    def test_60_messages(self):
        c = self.call
        conv = {"conv": "sg_team"}
        msg = {"sender_id": "alice", "client_msg_id": "c-1", "content_type": 1, "payload": "hi"}
        _, r, payload = c("POST", "/conversations/{conv}/messages", conv, body=msg, expect=201)
        sent = json.loads(payload)
        if "location" not in PENDING_FEATURES:
            self.assertEqual(r.getheader("Location"), "/conversations/sg_team/messages/1")
        again = self.json_call("POST", "/conversations/{conv}/messages", conv, body=msg)
        self.assertTrue(again["duplicate"])
        self.assertEqual(again["seq"], sent["seq"])
        c("POST", "/conversations/{conv}/messages", conv, body=dict(msg, payload="other"),
          expect=409)
        for i in range(2, 5):
            c("POST", "/conversations/{conv}/messages", conv,
              body={"sender_id": "bob", "client_msg_id": "c-%d" % i, "payload": "m%d" % i},
              expect=201)
        c("POST", "/conversations/{conv}/messages", conv,
          body={"sender_id": "bad\tid!", "client_msg_id": "c-x", "payload": "x"}, expect=400)
        c("POST", "/conversations/{conv}/messages", conv,
          body={"sender_id": "alice", "client_msg_id": "c-big", "payload": "x" * (MAX_PAYLOAD + 1)},
          expect=413)
        c("POST", "/conversations/{conv}/messages", conv, body=msg, token="bad", expect=401)
        c("POST", "/conversations/{conv}/messages", conv, body=msg, token="reader", expect=403)

        page = self.json_call("GET", "/conversations/{conv}/messages", conv, query={"from": 1})
        self.assertEqual([m["seq"] for m in page["messages"]], [1, 2, 3, 4])
        page = self.json_call("GET", "/conversations/{conv}/messages", conv,
                              query={"from": 1, "limit": 2})
        self.assertEqual(page["next_from"], 3)
        page = self.json_call("GET", "/conversations/{conv}/messages", conv,
                              query={"to": 4, "limit": 2, "order": "desc"})
        self.assertEqual(page["next_to"], 2)
        c("GET", "/conversations/{conv}/messages", conv, query={"seqs": "1,3"})
        c("GET", "/conversations/{conv}/messages", conv, query={"from": 5, "wait_ms": 0})
        c("GET", "/conversations/{conv}/messages", conv, token="reader")
        c("GET", "/conversations/{conv}/messages", conv, query={"seqs": "0"}, expect=400)
        c("GET", "/conversations/{conv}/messages", conv, query={"user": "nobody"}, expect=404)
        c("GET", "/conversations/{conv}/messages", conv, token="bad", expect=401)
        c("GET", "/conversations/{conv}/messages", {"conv": "sg_other"}, token="reader",
          expect=403)

        one = {"conv": "sg_team", "seq": 1}
        missing = {"conv": "sg_team", "seq": 999}
        c("GET", "/conversations/{conv}/messages/{seq}", one)
        c("GET", "/conversations/{conv}/messages/{seq}", missing, expect=404)
        c("GET", "/conversations/{conv}/messages/{seq}", one, token="bad", expect=401)
        c("GET", "/conversations/{conv}/messages/{seq}", one, token="orders", expect=403)

        recalled = self.json_call("POST", "/conversations/{conv}/messages/{seq}/recall", one)
        self.assertEqual(recalled["status"], "recalled")
        c("POST", "/conversations/{conv}/messages/{seq}/recall", missing, expect=404)
        c("POST", "/conversations/{conv}/messages/{seq}/recall", one, token="bad", expect=401)
        c("POST", "/conversations/{conv}/messages/{seq}/recall", one, token="reader", expect=403)

        two = {"conv": "sg_team", "seq": 2}
        deleted = self.json_call("DELETE", "/conversations/{conv}/messages/{seq}", two)
        self.assertEqual(deleted["status"], "deleted")
        c("DELETE", "/conversations/{conv}/messages/{seq}", missing, expect=404)
        c("DELETE", "/conversations/{conv}/messages/{seq}", two, token="bad", expect=401)
        c("DELETE", "/conversations/{conv}/messages/{seq}", two, token="reader", expect=403)

    def test_65_long_poll(self):
        if "long-poll" in PENDING_FEATURES:
            return
        c = self.call
        conv = {"conv": "sg_poll"}
        started = time.time()
        page = self.json_call("GET", "/conversations/{conv}/messages", conv,
                              query={"from": 1, "wait_ms": 300})
        self.assertEqual(page["messages"], [])
        self.assertGreaterEqual(time.time() - started, 0.25)

        def send_later():
            time.sleep(0.3)
            self.seqd.request("POST", "/conversations/sg_poll/messages",
                              {"sender_id": "alice", "client_msg_id": "p-1", "payload": "woke"},
                              headers={"Authorization": "Bearer " + SECRETS["ops"]})
        sender = threading.Thread(target=send_later)
        sender.start()
        started = time.time()
        page = self.json_call("GET", "/conversations/{conv}/messages", conv,
                              query={"from": 1, "wait_ms": 10000})
        sender.join()
        self.assertEqual([m["payload"] for m in page["messages"]], ["woke"])
        self.assertLess(time.time() - started, 5)
        c("GET", "/conversations/{conv}/messages", conv, query={"seqs": "1", "wait_ms": 100},
          expect=400)
        c("GET", "/conversations/{conv}/messages", conv,
          query={"from": 1, "order": "desc", "wait_ms": 100}, expect=400)

    def test_66_events(self):
        if STREAMS_PENDING:
            return
        c = self.call
        conv = {"conv": "sg_team"}
        # Errors through Prism.
        c("GET", "/conversations/{conv}/events", conv, token="bad", expect=401)
        c("GET", "/conversations/{conv}/events", conv, token="orders", expect=403)
        c("GET", "/conversations/{conv}/events", conv,
          headers={"Last-Event-ID": "9" * 20}, expect=400)  # beyond 64 bits
        c("GET", "/events", query={"conv": ["sg_team", "sg_poll"]}, token="bad", expect=401)
        c("GET", "/events", query={"conv": ["sg_team", "sg_other"]}, token="reader", expect=403)
        c("GET", "/events", query={"conv": ["sg_team"], "from": "sg_team=" + "9" * 20},
          expect=400)
        # Successes straight from seqd: replay from the store, by ?from=,
        # by Last-Event-ID and with the token in the query.
        conn, r = self.open_stream("/conversations/sg_team/events?from=1")
        self.assertEqual([i for i, _ in self.read_events(r, 4)], ["1", "2", "3", "4"])
        conn.close()
        conn, r = self.open_stream("/conversations/sg_team/events",
                                   headers={"Last-Event-ID": "2"})
        self.assertEqual([i for i, _ in self.read_events(r, 2)], ["3", "4"])
        conn.close()
        conn, r = self.open_stream("/conversations/sg_team/events?from=3&access_token=" +
                                   SECRETS["reader"], token=None)
        self.assertEqual([i for i, _ in self.read_events(r, 2)], ["3", "4"])
        conn.close()
        conn, r = self.open_stream("/events?conv=sg_team&conv=sg_poll&from=sg_team%3D3")
        events = self.read_events(r, 1)
        self.assertEqual(events[0][1]["conv_id"], "sg_team")
        self.assertEqual(events[0][1]["seq"], 4)
        conn.close()
        # Over the reader's limit of open streams (2): 429 through Prism.
        held = [self.open_stream("/conversations/sg_team/events", token="reader")
                for _ in range(2)]
        try:
            _, r, _ = c("GET", "/conversations/{conv}/events", conv, token="reader", expect=429)
            self.assertEqual(r.getheader("Retry-After"), "1")
            c("GET", "/events", query={"conv": ["sg_team"]}, token="reader", expect=429)
        finally:
            for hc, _ in held:
                hc.close()

    def test_70_members(self):
        c = self.call
        carol = {"conv": "sg_team", "user": "carol"}
        member = self.json_call("PUT", "/conversations/{conv}/members/{user}", carol,
                                body={"min_seq": 1})
        self.assertEqual(member["min_seq"], 1)
        c("PUT", "/conversations/{conv}/members/{user}", carol, body={"max_seq": 3})
        c("PUT", "/conversations/{conv}/members/{user}", carol, body={"max_seq": None})
        c("PUT", "/conversations/{conv}/members/{user}", carol, body={"min_seq": 5000},
          expect=400)  # above the conversation's max seq + 1
        c("PUT", "/conversations/{conv}/members/{user}", carol, body={}, token="bad", expect=401)
        c("PUT", "/conversations/{conv}/members/{user}", carol, body={}, token="reader",
          expect=403)

        c("GET", "/conversations/{conv}/members/{user}", carol)
        c("GET", "/conversations/{conv}/members/{user}", {"conv": "sg_team", "user": "nobody"},
          expect=404)
        c("GET", "/conversations/{conv}/members/{user}", carol, token="bad", expect=401)
        c("GET", "/conversations/{conv}/members/{user}", carol, token="orders", expect=403)

        c("PUT", "/conversations/{conv}/members/{user}/read_seq", carol, body={"read_seq": 2})
        c("PUT", "/conversations/{conv}/members/{user}/read_seq", carol, body={"read_seq": 999},
          expect=409)
        c("PUT", "/conversations/{conv}/members/{user}/read_seq",
          {"conv": "sg_team", "user": "nobody"}, body={"read_seq": 1}, expect=404)
        c("PUT", "/conversations/{conv}/members/{user}/read_seq", carol, body={"read_seq": 2},
          token="bad", expect=401)
        c("PUT", "/conversations/{conv}/members/{user}/read_seq", carol, body={"read_seq": 2},
          token="orders", expect=403)

        conv = {"conv": "sg_team"}
        out = self.json_call("PUT", "/conversations/{conv}/min_seq", conv, body={"min_seq": 2})
        self.assertEqual(out, {"conv_id": "sg_team", "min_seq": 2})
        c("PUT", "/conversations/{conv}/min_seq", conv, raw_body='{"min_seq":99999999999999999999}',
          expect=400)  # beyond 64 bits
        c("PUT", "/conversations/{conv}/min_seq", conv, body={"min_seq": 2}, token="bad",
          expect=401)
        c("PUT", "/conversations/{conv}/min_seq", conv, body={"min_seq": 2}, token="reader",
          expect=403)

    def test_80_batches(self):
        c = self.call
        ids = {"conv_ids": ["sg_team", "si_a_b"]}
        out = self.json_call("POST", "/conversations/max_seqs", body=ids)
        self.assertEqual(out["max_seqs"]["sg_team"], 4)
        c("POST", "/conversations/max_seqs", body={"conv_ids": ["sg_team"]}, token="reader")
        c("POST", "/conversations/max_seqs", body={"conv_ids": ["bad\tid!"]}, expect=400)
        c("POST", "/conversations/max_seqs", body=ids, token="bad", expect=401)
        c("POST", "/conversations/max_seqs", body=ids, token="reader", expect=403)
        carol = {"user": "carol"}
        out = self.json_call("POST", "/users/{user}/sync", carol, body=ids)
        self.assertEqual([e["conv_id"] for e in out["conversations"]], ["sg_team", "si_a_b"])
        c("POST", "/users/{user}/sync", carol, body={"conv_ids": ["bad\tid!"]}, expect=400)
        c("POST", "/users/{user}/sync", carol, body=ids, token="bad", expect=401)
        c("POST", "/users/{user}/sync", carol, body=ids, token="reader", expect=403)

    # --- outside the spec: straight to seqd ----------------------------------

    def test_90_outside_the_spec(self):
        r, payload = self.direct("GET", "/no/such/path", token="ops")
        self.assertEqual(r.status, 404)
        self.check_error_shape(r, payload, "not_found")
        self.assertTrue(r.getheader("X-Request-Id"))

        r, payload = self.direct("DELETE", "/seq/order_a", token="ops")
        self.assertEqual(r.status, 405)
        self.check_error_shape(r, payload, "method_not_allowed")
        self.assertEqual(r.getheader("Allow"), "GET")

        r, payload = self.direct("GET", "/seq/order_a")
        self.assertEqual(r.status, 401)
        self.check_error_shape(r, payload, "unauthenticated")
        self.assertEqual(r.getheader("WWW-Authenticate"), 'Bearer realm="seqd"')

        # What a form on another site can send, a body that is not JSON and
        # no token, is 415 where no token is needed (with tokens: 401).
        with tempfile.TemporaryDirectory() as tmp, Seqd(store_spec("sqlite", tmp)) as open_seqd:
            conn = http.client.HTTPConnection("127.0.0.1", open_seqd.port, timeout=10)
            conn.request("POST", "/admin/keys", body="key=order_f&step=1",
                         headers={"Content-Type": "application/x-www-form-urlencoded"})
            r = conn.getresponse()
            payload = r.read()
            conn.close()
            self.assertEqual(r.status, 415, payload)
            self.check_error_shape(r, payload, "unsupported_media_type")

    # --- the whole spec was exercised, and Prism saw nothing wrong ------------

    def test_99_coverage_and_prism_log(self):
        missing = []
        for op in sorted(spec_operations(self.spec)):
            if op in PENDING_ROUTES:
                continue
            statuses = self.seen.get(op, set())
            for kind, hit in (("2xx", any(200 <= s < 300 for s in statuses)),
                              ("error", any(s >= 400 for s in statuses))):
                if not hit and (op[0], op[1], kind) not in EXPECTED_GAPS:
                    missing.append("%s %s: no %s exercised" % (op[0], op[1], kind))
        for method, path in sorted(PENDING_ROUTES):
            print("\n*** NOT EXERCISED: %s %s is in the spec but pending in the server "
                  "(PENDING_ROUTES in %s)" % (method, path, os.path.basename(__file__)),
                  file=sys.stderr)
        for feature in sorted(PENDING_FEATURES):
            print("\n*** NOT EXERCISED: %s is in the spec but pending in the server "
                  "(PENDING_FEATURES in %s)" % (feature, os.path.basename(__file__)),
                  file=sys.stderr)
        for (method, path, kind), why in sorted(EXPECTED_GAPS.items()):
            print("note: %s %s: no %s exercised: %s" % (method, path, kind, why), file=sys.stderr)
        self.assertEqual(missing, [])
        log = self.prism.text()
        bad = [line for line in log.splitlines()
               if re.search(r"Violation|terminated with error|\berror\b", line)]
        self.assertEqual(bad, [], "Prism's log reports problems")
        total = sum(len(s) for s in self.seen.values())
        print("\n%d operations exercised, %d (operation, status) pairs, through Prism; "
              "0 violations" % (len(self.seen), total), file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
