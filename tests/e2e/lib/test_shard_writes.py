"""tests/e2e/lib/shard_writes.py: the names of one shard, the writers
against a stand-in server (a 503 sent again with the same body until it is
acknowledged, other refusals recorded as unexpected, every row used once),
and check_lost against rows written out by hand.

Usage: python3 tests/e2e/lib/test_shard_writes.py [unittest args]
"""
import collections
import http.server
import json
import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lib import shard_writes  # noqa: E402
from lib.cluster import shard_of  # noqa: E402


class StandIn(http.server.ThreadingHTTPServer):
    """Answers each request's first try 503 and its second 200; a read seq
    404 (the member is missing). Records (method, path, body) of each try."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.lock = threading.Lock()
        self.tries = []


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        key = (self.command, self.path, body)
        with self.server.lock:
            first = key not in self.server.tries
            self.server.tries.append(key)
        status = 404 if self.path.endswith("/read_seq") else (503 if first else 200)
        data = json.dumps({"ok": status == 200}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = answer


class ShardWritesTest(unittest.TestCase):
    def test_names_hash_to_the_shard(self):
        names = shard_writes.names_in(5, 64, "sg_x", 20)
        self.assertEqual(len(set(names)), 20)
        self.assertTrue(all(shard_of(n, 64) == 5 for n in names))

    def test_writers_send_again_until_acknowledged(self):
        server = StandIn()
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.shutdown)
        port = server.server_address[1]
        writes = shard_writes.ShardWrites(3, 64, "t", messages=6, pace_s=0.005)
        writes.start([port])
        time.sleep(0.5)
        writes.stop()
        counts = writes.counts()
        self.assertEqual(counts["recall"], 6)        # the pool of messages, each once
        self.assertEqual(counts["conv_min_seq"], 6)  # the pool of conversations
        self.assertEqual(counts["min_seq"], 12)      # the pool of keys
        self.assertEqual(counts["key"], 6)           # the pool of new keys
        self.assertEqual(counts["key_step"], 6)
        self.assertGreater(counts["member"], 0)
        self.assertGreater(counts["user_seq"], 0)
        self.assertEqual(counts["read_seq"], 0)
        self.assertEqual({u[0] for u in writes.unexpected}, {"read_seq"})
        self.assertTrue(all(u[2] == 404 for u in writes.unexpected))
        # Each acknowledged write was answered 503 once, then sent again
        # alike; a write the stop caught after its 503 (one per writer at
        # most) was not acknowledged.
        with server.lock:
            tries = collections.Counter(t for t in server.tries if not t[1].endswith("/read_seq"))
        self.assertEqual(sum(1 for n in tries.values() if n == 2), sum(counts.values()))
        self.assertLessEqual(sum(1 for n in tries.values() if n == 1), len(writes.threads))
        self.assertEqual(max(tries.values()), 2)
        self.assertEqual(writes.refused[port], len(tries))
        rows = [(kind, row) for kind, row, _, _ in writes.acked]
        self.assertEqual(len(rows), len(set(rows)), "a row written twice")
        self.assertEqual({p for _, _, _, p in writes.acked}, {port})

    def test_check_lost(self):
        acked = [("recall", 1, "recalled", 1), ("recall", 2, "deleted", 1),
                 ("member", "u1", 1, 2), ("read_seq", "u1", 7, 2),
                 ("conv_min_seq", "sg_c", 2, 1), ("user_seq", "s1", 4, 2),
                 ("key", "kn", 1, 2), ("key_step", "kn", 15, 2), ("min_seq", "k1", 9, 1)]
        kept = {"recall": {1: "1", 2: "2", 3: "0"}, "member": {"u1": "1"},
                "read_seq": {"u1": "7"}, "conv_min_seq": {"sg_c": "2"},
                "user_seq": {"s1": "4"}, "key": {"kn": "1"}, "key_step": {"kn": "15"},
                "min_seq": {"k1": "9"}}
        self.assertEqual(shard_writes.check_lost(acked, kept), [])
        lossy = {"recall": {1: "0", 2: "2"}, "member": {}, "read_seq": {"u1": "6"},
                 "conv_min_seq": {"sg_c": "1"}, "user_seq": {"s1": "4"}, "key": {"kn": "1"},
                 "key_step": {"kn": "10"}, "min_seq": {}}
        lost = shard_writes.check_lost(acked, lossy)
        self.assertEqual(lost, [("recall", 1, "recalled", 1, "0"), ("member", "u1", 1, 2, None),
                                ("read_seq", "u1", 7, 2, "6"), ("conv_min_seq", "sg_c", 2, 1, "1"),
                                ("key_step", "kn", 15, 2, "10"), ("min_seq", "k1", 9, 1, None)])
        self.assertEqual(shard_writes.count_by_kind_and_port(lost),
                         {"recall": {1: 1}, "member": {2: 1}, "read_seq": {2: 1},
                          "conv_min_seq": {1: 1}, "key_step": {2: 1}, "min_seq": {1: 1}})


if __name__ == "__main__":
    unittest.main()
