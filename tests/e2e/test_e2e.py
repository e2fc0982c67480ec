"""End-to-end tests of the seqd binary on SQLite or MariaDB.

Usage: python3 tests/e2e/test_e2e.py sqlite|mariadb [unittest args]
"""
import os
import random
import signal
import socket
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Seqd, free_port, http_get, mariadb, run_threads,  # noqa: E402
                     store_from_argv, store_spec)

KIND = "sqlite"
RUN = "%06x" % random.getrandbits(24)  # unique key names per run (MariaDB persists)


def key(name):
    return "e2e_%s_%s" % (name, RUN)


class E2E(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.store = store_spec(KIND, self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def start(self, *extra, **kw):
        s = Seqd(self.store, *extra, **kw)
        self.addCleanup(s.__exit__)
        return s

    def test_concurrent_clients_unique_and_increasing(self):
        s = self.start()
        k = key("conc")
        s.create_key(k, 50)  # small step: many reservations during the test
        per_client = {}
        errors = []

        def client(n):
            conn = s.conn()
            got = []
            try:
                for i in range(150):
                    got.extend(s.ids(k, 1 + (i % 4), conn=conn))
            except Exception as e:  # noqa: BLE001
                errors.append(repr(e))
            per_client[n] = got

        run_threads(client, 16)
        self.assertEqual(errors, [])
        every = [i for ids in per_client.values() for i in ids]
        self.assertEqual(len(every), len(set(every)), "duplicate IDs")
        for ids in per_client.values():
            self.assertEqual(ids, sorted(ids))
            self.assertEqual(len(ids), len(set(ids)))

    def test_new_key_storm_across_processes_and_kill9(self):
        """Two processes bring the same new conversation keys into memory at
        once (rows created and reserved in batches on the shared store); one
        is killed -9 mid-storm and another takes its place. No ID of any key
        is ever issued twice."""
        flags = ("--auto-create-rate", "0")
        servers = [self.start(*flags), self.start(*flags)]
        lock = threading.Lock()
        keys = ["sg_storm_%s_%d" % (RUN, i) for i in range(400)]
        got = {k: [] for k in keys}
        errors = []
        served = [0]

        def client(n):
            rnd = random.Random(n)
            order = keys[:]
            rnd.shuffle(order)
            conns = {}
            for i, k in enumerate(order):
                with lock:
                    s = servers[(n + i) % 2]
                try:
                    c = conns.get(id(s)) or s.conn()
                    conns[id(s)] = c
                    ids = s.ids(k, 1 + i % 3, conn=c)
                except Exception as e:  # noqa: BLE001 - the killed process
                    conns.pop(id(s), None)
                    with lock:
                        errors.append(repr(e))
                    continue
                with lock:
                    got[k].extend(ids)
                    served[0] += 1

        threads = [threading.Thread(target=client, args=(n,)) for n in range(16)]
        for t in threads:
            t.start()
        deadline = time.time() + 60
        while served[0] < 1500 and time.time() < deadline:
            time.sleep(0.01)
        with lock:
            victim = servers[0]
        victim.stop(signal.SIGKILL)
        served_at_kill = served[0]
        replacement = self.start(*flags)
        with lock:
            servers[0] = replacement
        for t in threads:
            t.join()
        # The fault hit a storm under way: requests were answered before the
        # kill and after it.
        self.assertGreater(served_at_kill, 1000)
        self.assertGreater(served[0], served_at_kill + 1000)
        self.assertLess(len(errors), 16 * len(keys) // 4, errors[:5])
        for k, ids in got.items():
            self.assertEqual(len(ids), len(set(ids)), "duplicate IDs of %s" % k)
        self.assertGreater(sum(1 for ids in got.values() if ids), len(keys) // 2)

    def restart_never_reissues(self, sig):
        k = key("restart%d" % sig)
        s = self.start()
        s.create_key(k, 1000)
        first = s.ids(k, 300)
        self.assertEqual(s.stop(sig), 0 if sig == signal.SIGTERM else -signal.SIGKILL)
        s2 = self.start()
        second = s2.ids(k, 300)
        self.assertGreater(min(second), max(first))
        self.assertEqual(s2.stop(), 0)

    def test_restart_never_reissues(self):
        self.restart_never_reissues(signal.SIGTERM)

    def test_kill9_never_reissues(self):
        self.restart_never_reissues(signal.SIGKILL)

    def test_two_processes_get_disjoint_ids(self):
        a, b = self.start(), self.start()
        k = key("two")
        a.create_key(k, 20)
        got = {"a": [], "b": []}

        def pull(name, s):
            conn = s.conn()
            for i in range(200):
                got[name].extend(s.ids(k, 1 + i % 5, conn=conn))

        ts = [threading.Thread(target=pull, args=("a", a)), threading.Thread(target=pull, args=("b", b))]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertFalse(set(got["a"]) & set(got["b"]), "two processes issued the same ID")
        self.assertEqual(len(got["a"]) + len(got["b"]), len(set(got["a"]) | set(got["b"])))

    def test_api_shapes(self):
        s = self.start()
        k = key("shape")
        s.create_key(k, 100)
        status, body = s.get_json("/seq/" + k)
        self.assertEqual(status, 200)
        self.assertEqual(body["key"], k)
        self.assertIsInstance(body["id"], int)
        status, body = s.get_json("/seq/%s?count=5" % k)
        self.assertEqual(body["count"], 5)
        self.assertEqual(sum(r["last"] - r["first"] + 1 for r in body["ranges"]), 5)
        status, text = s.get("/seq/%s?count=3" % k, headers={"Accept": "text/plain"})
        lines = text.decode().splitlines()
        self.assertEqual(len(lines), 3)
        self.assertEqual([int(x) for x in lines], sorted(int(x) for x in lines))
        status, text = s.get("/api/segment/get/" + k)
        self.assertEqual(status, 200)
        self.assertGreater(int(text), int(lines[-1]))
        status, body = s.get_json("/admin/keys/" + k)
        self.assertEqual(status, 200)
        self.assertEqual(body["step"], 100)
        self.assertTrue(body["cache"]["current"]["ready"])
        status, _, _ = s.request("PUT", "/admin/keys/%s/step" % k, {"step": 500})
        self.assertEqual(status, 200)
        self.assertEqual(s.get_json("/admin/keys/" + k)[1]["step"], 500)
        # The page that starts just before k (a shared database holds other
        # tests' keys too).
        status, body = s.get_json("/admin/keys?limit=10&after=" + k[:-1])
        self.assertEqual(status, 200)
        self.assertIn(k, [row["key"] for row in body["keys"]])
        self.assertEqual(s.get("/readyz")[0], 200)
        # auto-created conversation key (default rules: sg_ → 100)
        status, body = s.get_json("/seq/sg_%s" % RUN)
        self.assertEqual((status, body["id"]), (200, 1))
        self.assertEqual(s.get_json("/admin/keys/sg_%s" % RUN)[1]["step"], 100)

    def test_bad_input(self):
        s = self.start("--http-idle-timeout-s", "2", "--http-max-body-bytes", "1024")
        k = key("bad")
        s.create_key(k, 100)
        for q in ("0", "-1", "10001", "abc", "", "99999999999999999999999", "1.5"):
            status, body = s.get_json("/seq/%s?count=%s" % (k, q))
            self.assertEqual(status, 400, q)
            self.assertEqual(body["error"]["code"], "invalid_argument")
        status, body = s.get_json("/seq/" + "x" * 256)
        self.assertEqual((status, body["error"]["code"]), (400, "invalid_argument"))
        status, body = s.get_json("/seq/bad%09key")
        self.assertEqual(status, 400)
        status, body = s.get_json("/seq/no_such_key_" + RUN)
        self.assertEqual((status, body["error"]["code"]), (404, "unknown_key"))
        status, body = s.get_json("/nope")
        self.assertEqual(status, 404)
        status, _, resp = s.request("DELETE", "/seq/" + k)
        self.assertEqual(status, 405)
        status, _, _ = s.request("POST", "/admin/keys", "x" * 5000)
        self.assertEqual(status, 413)
        status, body = s.get_json("/seq/" + k, headers={"X-Big": "y" * 20000})
        self.assertEqual(status, 431)
        status, _, _ = s.request("POST", "/admin/keys", "{not json")
        self.assertEqual(status, 400)

        # malformed HTTP: an error response or a close, never a crash
        with socket.create_connection(("127.0.0.1", s.port), timeout=5) as c:
            c.sendall(b"THIS IS NOT HTTP\r\n\r\n")
            reply = c.recv(4096)
            self.assertTrue(reply == b"" or reply.startswith(b"HTTP/1.1 400"), reply)

        # a slow client trickling its header is cut off at the idle timeout,
        # while others are served meanwhile
        slow = socket.create_connection(("127.0.0.1", s.port), timeout=0.3)
        slow.sendall(b"GET /seq/" + k.encode() + b" HTTP/1.1\r\nHost: x\r\n")
        self.assertEqual(s.get("/healthz")[0], 200)
        start = time.time()
        closed = False
        while not closed and time.time() - start < 8:
            try:
                slow.sendall(b"X-A: b\r\n")  # one header line every 0.3 s
                closed = slow.recv(4096) == b""
            except socket.timeout:
                pass
            except (ConnectionResetError, BrokenPipeError):
                closed = True
        slow.close()
        self.assertTrue(closed, "slow client was not disconnected")
        self.assertLess(time.time() - start, 8)
        self.assertIsNone(s.proc.poll(), "seqd died")
        self.assertEqual(s.stop(), 0)

    def test_sigterm_exits_zero(self):
        s = self.start()
        self.assertEqual(s.stop(signal.SIGINT), 0)

    def test_admin_listener(self):
        admin_port = free_port()
        s = self.start("--admin-port", str(admin_port))

        def admin_get(path):
            return http_get(admin_port, path)

        status, body = admin_get("/metrics")
        self.assertEqual(status, 200)
        self.assertIn(b"seqd_build_info", body)
        self.assertEqual(admin_get("/")[0], 200)
        self.assertEqual(admin_get("/healthz")[0], 200)
        self.assertIn(admin_get("/readyz")[0], (200, 503))  # 503 until the schema is made
        self.assertEqual(admin_get("/seq/k")[0], 404)
        self.assertEqual(admin_get("/admin/keys")[0], 404)
        # The main port still serves /metrics; SIGTERM drains both.
        self.assertEqual(s.get("/metrics")[0], 200)
        self.assertEqual(s.stop(), 0)


class MariaDBOutage(unittest.TestCase):
    """MariaDB stops: buffers serve, then 503; MariaDB back: service resumes."""

    def test_outage_and_recovery(self):
        store = store_spec("mariadb", "")
        s = Seqd(store, "--wait-deadline-ms", "300")
        self.addCleanup(s.__exit__)
        k = key("outage")
        s.create_key(k, 500)
        seen = set(s.ids(k, 60))  # > 10% of the segment: the next one is reserved
        time.sleep(0.3)  # let that reservation land
        status, cache = s.get_json("/admin/keys/" + k)
        self.assertTrue(cache["cache"]["next"]["ready"], cache)
        # What both buffers hold: 440 left in the current segment, and the
        # next one (at least the table step; more if the measured rate and
        # reservation latency asked for it).
        held = cache["cache"]["current"]["remaining"] + cache["cache"]["next"]["remaining"]
        self.assertEqual(cache["cache"]["current"]["remaining"], 440, cache)
        self.assertGreaterEqual(cache["cache"]["next"]["remaining"], 500, cache)
        mariadb("stop")
        try:
            served, status = 0, 200
            while status == 200 and served < held + 5000:
                status, payload, _ = s.request("GET", "/seq/%s?count=10" % k)
                if status == 200:
                    served += 10
            self.assertEqual(status, 503, payload)
            self.assertIn(b"store_unavailable", payload)
            # both buffers kept serving, to their last whole batch of 10, then 503
            self.assertEqual(served, held - held % 10)
            self.assertEqual(s.get("/readyz")[0], 503)
        finally:
            mariadb("restart")
        deadline = time.time() + 30
        while time.time() < deadline:
            status, payload, _ = s.request("GET", "/seq/%s?count=10" % k)
            if status == 200:
                break
            time.sleep(0.2)
        self.assertEqual(status, 200, payload)
        more = s.ids(k, 100)
        self.assertFalse(seen & set(more))
        self.assertEqual(s.get("/readyz")[0], 200)
        self.assertEqual(s.stop(), 0)


if __name__ == "__main__":
    KIND = store_from_argv(required=True)
    unittest.main(defaultTest="E2E" if KIND == "sqlite" else None)
