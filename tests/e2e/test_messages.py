"""End-to-end tests of the message store through the real seqd binary.

Usage: python3 tests/e2e/test_messages.py sqlite|mariadb [unittest args]
"""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Seqd, run_threads, store_from_argv, store_spec  # noqa: E402

KIND = "sqlite"
RUN = "%06x" % random.getrandbits(24)  # unique conversation ids per run (MariaDB persists)


def conv(name):
    return "sg_e2e_%s_%s" % (name, RUN)


def send(s, c, sender, cmid, payload="hello", conn=None):
    """(status, body) of one send."""
    status, body, _ = s.request("POST", "/conversations/%s/messages" % c,
                                {"sender_id": sender, "client_msg_id": cmid, "content_type": 1,
                                 "payload": payload}, conn=conn)
    return status, json.loads(body)


def pull_all(s, c):
    """Every message of a conversation, ascending, by pages of 1000."""
    out, frm = [], 1
    while True:
        status, body = s.get_json("/conversations/%s/messages?from=%d&limit=1000" % (c, frm))
        assert status == 200, body
        out.extend(body["messages"])
        if body["is_end"] or not body["messages"]:
            return out
        frm = body["messages"][-1]["seq"] + 1


def mysql_sql(statement):
    """Runs `statement` on SEQD_TEST_MYSQL_URL's database with the mariadb client."""
    u = urllib.parse.urlparse(os.environ["SEQD_TEST_MYSQL_URL"])
    client = shutil.which("mariadb") or shutil.which("mysql")
    env = dict(os.environ, MYSQL_PWD=urllib.parse.unquote(u.password or ""))
    subprocess.run([client, "--protocol=TCP", "-h", u.hostname or "127.0.0.1", "-P",
                    str(u.port or 3306), "-u", urllib.parse.unquote(u.username or ""),
                    u.path.lstrip("/"), "-e", statement], env=env, check=True, timeout=30,
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)


class Messages(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.store = store_spec(KIND, self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def start(self, *extra):
        s = Seqd(self.store, *extra)
        self.addCleanup(s.__exit__)
        return s

    def assert_contiguous(self, messages):
        seqs = [m["seq"] for m in messages]
        self.assertEqual(seqs, list(range(1, len(seqs) + 1)))

    def test_concurrent_senders_get_contiguous_unique_seqs(self):
        s = self.start()
        c = conv("storm")
        acked, errors = {}, []
        lock = threading.Lock()

        def sender(t):
            conn = s.conn()
            for i in range(50):
                status, body = send(s, c, "u%d" % t, "m%d" % i, conn=conn)
                with lock:
                    if status == 201:
                        acked[("u%d" % t, "m%d" % i)] = body["seq"]
                    else:
                        errors.append((status, body))
            conn.close()

        run_threads(sender, 16)
        self.assertEqual(errors, [])
        self.assertEqual(sorted(acked.values()), list(range(1, 801)))
        stored = pull_all(s, c)
        self.assert_contiguous(stored)
        for m in stored:
            self.assertEqual(acked[(m["sender_id"], m["client_msg_id"])], m["seq"])
        self.assertEqual(s.stop(), 0)

    def test_kill9_during_send_storm_loses_nothing_acknowledged(self):
        c = conv("kill")
        s = self.start()
        acked, in_flight = {}, set()
        lock = threading.Lock()
        stop = threading.Event()

        def sender(t):
            conn = s.conn()
            i = 0
            while not stop.is_set():
                key = ("u%d" % t, "m%d" % i)
                with lock:
                    in_flight.add(key)
                try:
                    status, body = send(s, c, key[0], key[1], conn=conn)
                except (OSError, ValueError):
                    return  # the server died mid-request: this one stays in flight
                with lock:
                    in_flight.discard(key)
                    if status == 201:
                        acked[key] = body["seq"]
                i += 1

        threads = [threading.Thread(target=sender, args=(t,)) for t in range(8)]
        for t in threads:
            t.start()
        time.sleep(1.5)
        s.stop(signal.SIGKILL)
        stop.set()
        for t in threads:
            t.join()
        self.assertGreater(len(acked), 50)

        s2 = self.start()
        stored = pull_all(s2, c)
        self.assert_contiguous(stored)  # no hole, even after kill -9
        by_key = {(m["sender_id"], m["client_msg_id"]): m["seq"] for m in stored}
        for key, seq in acked.items():
            self.assertEqual(by_key.get(key), seq, key)
        # Re-sending what was acknowledged stores nothing new.
        for key, seq in list(acked.items())[:50]:
            status, body = send(s2, c, key[0], key[1])
            self.assertEqual((status, body["seq"], body["duplicate"]), (200, seq, True))
        # What was in flight was stored once or not at all; re-sending settles it.
        for key in in_flight:
            status, body = send(s2, c, key[0], key[1])
            self.assertIn(status, (200, 201), body)
            if key in by_key:
                self.assertEqual((status, body["seq"]), (200, by_key[key]))
        after = pull_all(s2, c)
        self.assert_contiguous(after)
        self.assertEqual(len(after), len(stored) + sum(1 for k in in_flight if k not in by_key))
        self.assertEqual(s2.stop(), 0)

    def test_two_processes_on_one_conversation(self):
        a, b = self.start(), self.start()
        c = conv("two")
        acked, errors = [], []
        lock = threading.Lock()

        def sender(s, name):
            conn = s.conn()
            for i in range(60):
                status, body = send(s, c, name, "m%d" % i, conn=conn)
                with lock:
                    (acked if status == 201 else errors).append(body)
            conn.close()

        threads = [threading.Thread(target=sender, args=(srv, "%s%d" % (n, t)))
                   for srv, n in ((a, "a"), (b, "b")) for t in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(sorted(m["seq"] for m in acked), list(range(1, 481)))
        self.assert_contiguous(pull_all(a, c))

    def test_resend_after_timeout_is_idempotent(self):
        s = self.start()
        c = conv("resend")
        results = []

        def once():
            results.append(send(s, c, "alice", "same-id"))

        threads = [threading.Thread(target=once) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        seqs = {body["seq"] for _, body in results}
        self.assertEqual(seqs, {1})
        self.assertEqual(sorted(status for status, _ in results), [200] * 7 + [201])
        self.assertEqual(len(pull_all(s, c)), 1)

    def test_reused_id_with_other_content_is_refused(self):
        """Two processes, eight senders: per client message id, some send one
        content and the others each their own. Exactly one message is stored
        per id; everyone whose content it is gets its seq (one 201, the rest
        200 duplicate), everyone else 409 message_id_conflict; after kill -9
        and a restart the same holds for late re-sends."""
        a, b = self.start(), self.start()
        c = conv("collide")
        rounds, told = 25, []
        lock = threading.Lock()

        def sender(srv, t):
            conn = srv.conn()
            for i in range(rounds):
                payload = "shared-text" if t % 2 == 0 else "own-text-%d" % t
                status, body = send(srv, c, "alice", "r%d" % i, payload=payload, conn=conn)
                with lock:
                    told.append((i, payload, status, body))
            conn.close()

        threads = [threading.Thread(target=sender, args=(srv, t))
                   for t, srv in enumerate((a, b) * 4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        stored = pull_all(a, c)
        self.assert_contiguous(stored)
        self.assertEqual(len(stored), rounds)
        by_id = {m["client_msg_id"]: m for m in stored}
        for i, payload, status, body in told:
            m = by_id["r%d" % i]
            if payload == m["payload"]:
                self.assertIn(status, (200, 201), body)
                self.assertEqual((body["seq"], body["duplicate"]), (m["seq"], status == 200))
            else:
                self.assertEqual((status, body["error"]["code"]), (409, "message_id_conflict"),
                                 body)
                self.assertNotIn("-text", json.dumps(body))  # no content echoed
        for i in range(rounds):
            self.assertEqual(sum(1 for r in told if r[0] == i and r[2] == 201), 1, i)

        a.stop(signal.SIGKILL)
        a2 = self.start()
        for m in stored[:5]:
            status, body = send(a2, c, "alice", m["client_msg_id"], payload=m["payload"])
            self.assertEqual((status, body["seq"], body["duplicate"]), (200, m["seq"], True))
            status, body = send(a2, c, "alice", m["client_msg_id"], payload=m["payload"] + "!")
            self.assertEqual((status, body["error"]["code"]), (409, "message_id_conflict"))
        # A recalled message has lost its content: a re-send is a duplicate.
        first = stored[0]
        status, _, _ = a2.request("POST", "/conversations/%s/messages/1/recall" % c)
        self.assertEqual(status, 200)
        status, body = send(a2, c, "alice", first["client_msg_id"], payload="anything")
        self.assertEqual((status, body["seq"]), (200, 1))
        self.assertEqual(len(pull_all(a2, c)), rounds)
        _, metrics, _ = a2.request("GET", "/metrics")
        self.assertIn(b'seqd_message_send_errors_total{status="message_id_conflict"} 5', metrics)

    def test_bad_input(self):
        s = self.start("--msg-max-payload-bytes", "1000")
        c = conv("bad")
        status, body = send(s, c, "u", "m", payload="x" * 1001)
        self.assertEqual((status, body["error"]["code"]), (413, "too_large"))
        status, body = send(s, c, "u\tb", "m")
        self.assertEqual((status, body["error"]["code"]), (400, "invalid_argument"))
        for q in ("limit=-1", "limit=100000", "from=0", "to=abc"):
            status, body = s.get_json("/conversations/%s/messages?%s" % (c, q))
            self.assertEqual(status, 400, q)
        status, _ = s.get_json("/conversations/%s/messages/99" % c)
        self.assertEqual(status, 404)
        status, _, _ = s.request("POST", "/conversations/%s/messages" % c, "{not json")
        self.assertEqual(status, 400)

    def test_a_missing_table_is_store_unavailable(self):
        """A table that is not there (created in the background at start, or
        renamed away by an operator) is a store that cannot serve yet: 503
        store_unavailable, retryable, naming no table; never 500."""
        if KIND != "mariadb":
            self.skipTest("the MariaDB store's error mapping; SQLite creates its tables at open")
        s = self.start()
        c = conv("notable")
        self.assertEqual(send(s, c, "u", "m0")[0], 201)
        mysql_sql("RENAME TABLE seqd_message TO seqd_message_away")
        try:
            status, body = send(s, c, "u", "m1")
            self.assertEqual((status, body["error"]["code"]), (503, "store_unavailable"), body)
            self.assertNotIn("seqd_message", json.dumps(body))
        finally:
            mysql_sql("RENAME TABLE seqd_message_away TO seqd_message")
        status, body = send(s, c, "u", "m1")
        self.assertIn(status, (200, 201), body)
        self.assertEqual(body["seq"], 2, body)


if __name__ == "__main__":
    KIND = store_from_argv(required=True)
    unittest.main()
