"""End-to-end tests of seqd's HTTP conventions and its reserved key namespace
on the real binary (SQLite store), over real HTTP, binary and RESP
connections:

- the route is decided before the CSRF rule: 404/405 first, a bare POST to a
  route without a body is served, a form post is 415 and counted as such;
- HTTP/1.0 without Host is served (HAProxy's option httpchk), HTTP/1.1
  without Host is 400;
- one code for 413 (`too_large`);
- 201 carries Location;
- Leaf's /cache and /db answer in Leaf's field names;
- RESP INCRBY over max_count names the limit;
- keys starting `seqd.` (the message store's `seqd.server_msg_id`) are
  listed nowhere and refused on every protocol, while the message store
  goes on using its key.

Usage: python3 tests/e2e/test_conventions.py [unittest args]
"""
import json
import os
import sqlite3
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib.seqd_case import SeqdCase  # noqa: E402
from lib.sockets import read_all  # noqa: E402
from lib.wire import call, next_ids_payload  # noqa: E402

NEXT_IDS = 0x02
RESERVED = "keys starting with 'seqd.' are reserved"


class Conventions(SeqdCase):
    @classmethod
    def seqd_flags(cls):
        return ("--max-count", "1000", "--http-max-body-bytes", "4096")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.db = os.path.join(cls.tmp.name, "seqd.db")
        cls.seqd.create_key("conv", 100)

    def raw_http(self, data):
        """Sends `data` and reads until the server closes (send Connection: close)."""
        s = self.connect(self.seqd.port)
        s.sendall(data)
        return read_all(s)[0]

    def send_message(self, conv, cmid):
        status, body, r = self.seqd.request(
            "POST", "/conversations/%s/messages" % conv,
            {"sender_id": "u", "client_msg_id": cmid, "payload": "hi"})
        return status, json.loads(body), r

    def row(self, key):
        with sqlite3.connect(self.db) as db:
            return db.execute("SELECT max_id, step FROM leaf_alloc WHERE biz_tag = ?",
                              (key,)).fetchone()

    def test_route_first_then_the_cross_site_rule(self):
        form = b"a=1"
        for request, status in [
                (b"POST /seq/conv HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n", b"405"),
                (b"PUT /healthz HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
                 b"Content-Length: 3\r\n", b"405"),
                (b"POST /nope HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
                 b"Content-Length: 3\r\n", b"404"),
                (b"POST /admin/keys HTTP/1.1\r\nHost: x\r\nContent-Type: "
                 b"application/x-www-form-urlencoded\r\nContent-Length: 3\r\n", b"415")]:
            body = form if b"Content-Length: 3" in request else b""
            out = self.raw_http(request + b"Connection: close\r\n\r\n" + body)
            self.assertTrue(out.startswith(b"HTTP/1.1 " + status), (request, out[:300]))
        self.assertIn(b'"unsupported_media_type"', out)
        metrics = self.seqd.get("/metrics")[1].decode()
        self.assertIn('op="admin",status="unsupported_media_type"', metrics)

        # Recall takes no body: `curl -X POST` (no body, no type) is served;
        # the same with Origin (what a page's fetch sends) is 415.
        status, sent, _ = self.send_message("sg_recall", "r1")
        self.assertEqual(status, 201)
        recall = b"POST /conversations/sg_recall/messages/%d/recall HTTP/1.1\r\nHost: x\r\n" % (
            sent["seq"])
        out = self.raw_http(recall + b"Origin: https://evil.example\r\nContent-Length: 0\r\n"
                            b"Connection: close\r\n\r\n")
        self.assertTrue(out.startswith(b"HTTP/1.1 415"), out[:300])
        out = self.raw_http(recall + b"Content-Length: 0\r\nConnection: close\r\n\r\n")
        self.assertTrue(out.startswith(b"HTTP/1.1 200"), out[:300])
        self.assertIn(b'"status":"recalled"', out)

    def test_http10_without_host(self):
        out = self.raw_http(b"GET /healthz HTTP/1.0\r\n\r\n")
        self.assertTrue(out.startswith(b"HTTP/1.0 200"), out[:300])
        out = self.raw_http(b"OPTIONS / HTTP/1.0\r\n\r\n")  # HAProxy's default httpchk
        self.assertTrue(out.startswith(b"HTTP/1.0 204"), out[:300])
        out = self.raw_http(b"GET /healthz HTTP/1.1\r\n\r\n")
        self.assertTrue(out.startswith(b"HTTP/1.1 400"), out[:300])

    def test_one_code_for_413(self):
        big = json.dumps({"key": "big", "step": 1, "description": "x" * 5000}).encode()
        out = self.raw_http(b"POST /admin/keys HTTP/1.1\r\nHost: x\r\nContent-Type: "
                            b"application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(big), big))
        self.assertTrue(out.startswith(b"HTTP/1.1 413"), out[:300])
        self.assertIn(b'"code":"too_large"', out)

    def test_created_carries_location(self):
        status, _, r = self.seqd.request("POST", "/admin/keys", {"key": "located", "step": 5})
        self.assertEqual(status, 201)
        self.assertEqual(r.getheader("Location"), "/admin/keys/located")
        self.assertEqual(self.seqd.get(r.getheader("Location"))[0], 200)
        status, sent, r = self.send_message("sg_loc", "l1")
        self.assertEqual(status, 201)
        self.assertEqual(r.getheader("Location"), "/conversations/sg_loc/messages/%d" % sent["seq"])
        status, got = self.seqd.get_json(r.getheader("Location"))
        self.assertEqual((status, got["seq"]), (200, sent["seq"]))

    def test_leaf_monitor_routes(self):
        self.seqd.ids("conv", 3)
        status, cache = self.seqd.get_json("/cache")
        self.assertEqual(status, 200)
        view = cache["conv"]
        for field in ("initOk", "key", "pos", "nextReady", "value0", "max0", "step0", "value1",
                      "max1", "step1"):
            self.assertIn(field, view)
        self.assertTrue(view["initOk"])
        self.assertLess(view["value0"], view["max0"])
        status, rows = self.seqd.get_json("/db")
        self.assertEqual(status, 200)
        conv = [r for r in rows if r["key"] == "conv"]
        self.assertEqual(len(conv), 1)
        self.assertEqual(sorted(conv[0]), ["key", "maxId", "step", "updateTime"])
        self.assertEqual(conv[0]["step"], 100)

    def test_resp_incrby_names_the_limit(self):
        s = self.resp()
        s.sendall(b"INCRBY conv 5000\r\n")
        self.assertEqual(s.recv(4096), b"-ERR count 5000 is over max_count 1000\r\n")

    def test_reserved_namespace(self):
        # The message store creates and uses seqd.server_msg_id.
        status, first, _ = self.send_message("sg_res", "m1")
        self.assertEqual(status, 201)
        before = self.row("seqd.server_msg_id")
        self.assertIsNotNone(before)

        # Listed nowhere.
        status, page = self.seqd.get_json("/admin/keys?limit=1000")
        self.assertEqual(status, 200)
        self.assertNotIn("seqd.server_msg_id", [k["key"] for k in page["keys"]])
        self.assertIn("conv", [k["key"] for k in page["keys"]])
        for path in ("/admin/cache", "/cache", "/db", "/"):
            status, body = self.seqd.get(path)
            self.assertEqual(status, 200, path)
            self.assertNotIn(b"seqd.", body, path)

        # Refused on every protocol, as a bad key.
        for key in ("seqd.server_msg_id", "seqd.new"):
            for method, path, body in [("GET", "/seq/" + key, None),
                                       ("HEAD", "/seq/" + key, None),
                                       ("GET", "/api/segment/get/" + key, None),
                                       ("GET", "/admin/keys/" + key, None),
                                       ("PUT", "/admin/keys/%s/step" % key, {"step": 1}),
                                       ("POST", "/admin/keys", {"key": key, "step": 5})]:
                status, payload, _ = self.seqd.request(method, path, body)
                self.assertEqual(status, 400, (method, path, payload))
                if method != "HEAD":
                    self.assertIn(RESERVED.encode(), payload, (method, path))
            status, rest = call(self.tcp(), NEXT_IDS, 9, next_ids_payload(key, 1))
            self.assertEqual(status, 1)  # INVALID_ARGUMENT
            self.assertIn(RESERVED.encode(), rest)
            resp = self.resp()
            resp.sendall(b"INCR %s\r\n" % key.encode())
            self.assertEqual(resp.recv(4096).decode(), "-ERR invalid key: %s\r\n" % RESERVED)
        self.assertIsNone(self.row("seqd.new"))

        # Nothing above changed the message store's row; it still works.
        self.assertEqual(self.row("seqd.server_msg_id"), before)
        status, second, _ = self.send_message("sg_res", "m2")
        self.assertEqual(status, 201)
        self.assertGreater(second["server_msg_id"], first["server_msg_id"])


if __name__ == "__main__":
    unittest.main()
