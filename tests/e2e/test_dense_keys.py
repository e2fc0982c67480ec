"""End-to-end tests of dense keys (docs/dense-keys.md) on the real seqd
binary (SQLite, or MariaDB with the argument `mariadb`).

The guarantee under attack: a dense key's blocks are exactly 1..max, with no
hole and no overlap, and MAX_IDS answers max. Clients on several threads and
two protocols (HTTP and binary NEXT_BLOCK_ONCE) take blocks with tokens and
send each request again, with its token, until it is answered, while seqd is
killed with SIGKILL and restarted under them. What every client saw is
recorded and checked. The same load on a segment key must show a hole: that
is the check failing on today's default. Then tokens, bad input, RESP and a
graceful restart. Frames are built here from docs/protocol.md, not with the
project's codec.

Usage: python3 tests/e2e/test_dense_keys.py [sqlite|mariadb] [unittest args]
"""
import http.client
import json
import os
import random
import signal
import struct
import sys
import threading
import time
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import store_from_argv  # noqa: E402
from lib.seqd_case import SeqdCase  # noqa: E402
from lib.wire import (BinaryConn, key_list, next_ids_payload, once_payload,  # noqa: E402
                      resp_command, s16)

NEXT_BLOCK, NEXT_BLOCK_ONCE, MAX_IDS_TIMES = 0x05, 0x09, 0x0A
OK, INVALID_ARGUMENT = 0, 1
RULES = "dk_:50:dense,sk_:50"


class Binary(BinaryConn):

    def once(self, key, count, token):
        status, result = self.call(NEXT_BLOCK_ONCE, once_payload(key, count, token))
        if status != OK:
            return status, result
        return status, struct.unpack(">qq", result)

    def max_ids_times(self, keys):
        status, result = self.call(MAX_IDS_TIMES, key_list(keys))
        assert status == OK, (status, result)
        (n,) = struct.unpack(">I", result[:4])
        values = struct.unpack(">%dq" % (2 * n), result[4:])
        return [(values[2 * i], values[2 * i + 1]) for i in range(n)]


def holes(blocks):
    """What is wrong with `blocks` (a key's (first, last) list) as a tiling of
    1..max: the gaps and overlaps, as text; empty if it is exact."""
    problems, expect = [], 1
    for first, last in sorted(blocks):
        if first > expect:
            problems.append("hole %d..%d" % (expect, first - 1))
        elif first < expect:
            problems.append("overlap at %d" % first)
        expect = max(expect, last + 1)
    return problems


class Load:
    """Client threads taking blocks of `keys`; each request is sent again
    (with its token, if `tokens`) until it is answered. Records every
    answered block and how many attempts failed."""

    def __init__(self, http_port, tcp_port, keys, tokens, threads=6):
        self.http_port, self.tcp_port = http_port, tcp_port
        self.keys, self.tokens = keys, tokens
        self.blocks = {k: [] for k in keys}
        self.failed_attempts = 0
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.errors = []
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True)
                        for i in range(threads)]
        for t in self.threads:
            t.start()

    def attempt(self, i, key, count, token):
        """One try: (first, last), or None if seqd did not answer."""
        try:
            if i % 2 and self.tokens:
                b = Binary(self.tcp_port)
                try:
                    status, got = b.once(key, count, token)
                finally:
                    b.close()
                if status == OK:
                    return got
                if status == INVALID_ARGUMENT:
                    self.errors.append("binary refused %s: %s" % (key, got))
                return None
            path = "/seq/%s?count=%d&contiguous=true" % (key, count)
            if self.tokens:
                path += "&token=" + token
            c = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=5)
            try:
                c.request("GET", path)
                r = c.getresponse()
                body = r.read()
            finally:
                c.close()
            if r.status == 200:
                got = json.loads(body)
                return got["first"], got["last"]
            if r.status == 400:
                self.errors.append("http refused %s: %s" % (key, body))
            return None
        except (OSError, EOFError, http.client.HTTPException, struct.error):
            return None

    def run(self, i):
        rnd = random.Random(i)
        while not self.stopping.is_set():
            key, count = rnd.choice(self.keys), rnd.randint(1, 5)
            token = uuid.uuid4().hex
            while True:
                got = self.attempt(i, key, count, token)
                if got is not None:
                    break
                with self.lock:
                    self.failed_attempts += 1
                if not self.tokens and self.stopping.is_set():
                    return  # a plain request may be given up; its IDs stay unused
                time.sleep(0.02)
            if got[1] - got[0] + 1 != count:
                self.errors.append("%s: asked %d, got %r" % (key, count, got))
            with self.lock:
                self.blocks[key].append(got)

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=60)
            assert not t.is_alive(), "a client never got its answer"


class DenseKeys(SeqdCase):
    @classmethod
    def seqd_flags(cls):
        return ("--auto-keys", RULES, "--db-threads", "4")

    def binary(self):
        b = Binary(self.tcp_port)
        self.addCleanup(b.close)
        return b

    def run_killed(self, keys, tokens, kills=4):
        """The load on `keys` while seqd is killed `kills` times."""
        load = Load(self.http_port, self.tcp_port, keys, tokens)
        try:
            for _ in range(kills):
                time.sleep(0.6)
                self.restart(signal.SIGKILL)
            time.sleep(0.6)
        finally:
            load.stop()
        self.assertEqual(load.errors, [])
        # A run that saw no fault proves nothing.
        self.assertGreater(load.failed_attempts, 0, "no request ever failed: no fault was seen")
        return load

    # --- the guarantee, attacked -------------------------------------------------------

    def test_a_no_hole_and_an_exact_max_through_kill9(self):
        keys = ["dk_kill_%s_%d" % (uuid.uuid4().hex[:6], i) for i in range(8)]
        load = self.run_killed(keys, tokens=True)
        b = self.binary()
        maxes = b.max_ids(keys)
        for key, max_id in zip(keys, maxes):
            blocks = load.blocks[key]
            self.assertTrue(blocks, key)
            self.assertEqual(holes(blocks), [], key)
            self.assertEqual(max_id, max(last for _, last in blocks), key)
        # After the kills, the next block still follows the last.
        status, got = b.once(keys[0], 2, uuid.uuid4().hex)
        self.assertEqual((status, got[0]), (OK, maxes[0] + 1))

    def test_b_the_same_check_finds_the_holes_of_segment_keys(self):
        keys = ["sk_kill_%s_%d" % (uuid.uuid4().hex[:6], i) for i in range(4)]
        load = self.run_killed(keys, tokens=False, kills=2)
        found = [holes(load.blocks[k]) for k in keys]
        self.assertTrue(any(found), "segment keys through kill -9 showed no hole: %r" % found)

    # --- tokens and bad input ------------------------------------------------------------

    def test_tokens_over_http(self):
        key = "dk_http_" + uuid.uuid4().hex[:8]
        path = "/seq/%s?count=3&contiguous=true&token=t-1" % key
        status, first = self.seqd.get_json(path)
        self.assertEqual((status, first["first"], first["last"]), (200, 1, 3))
        self.assertEqual(self.seqd.get_json(path), (200, first))
        self.assertEqual(self.seqd.get_json("/seq/%s?count=2" % key)[1]["ranges"],
                         [{"first": 4, "last": 5}])
        for bad in ("count=4&token=t-1",       # the same token, another count
                    "count=1&token=has%20space",
                    "count=1&token=" + "t" * 65,
                    "count=1&token=%zz",
                    "count=0&token=t-2",
                    "count=100001"):
            status, body = self.seqd.get_json("/seq/%s?%s" % (key, bad))
            self.assertEqual(status, 400, (bad, body))
            self.assertEqual(body["error"]["code"], "invalid_argument", (bad, body))
        status, body = self.seqd.get_json("/seq/sk_seg?count=1&token=t-1")
        self.assertEqual((status, body["error"]["code"]), (400, "invalid_argument"))
        self.assertEqual(self.seqd.get_json("/max_ids?key=" + key)[1], {"max_ids": {key: 5}})
        # The largest block is one range, right after the last.
        status, big = self.seqd.get_json("/seq/%s?count=100000" % key)
        self.assertEqual((status, big["ranges"]), (200, [{"first": 6, "last": 100005}]))

    def test_binary_next_block_once(self):
        b, key = self.binary(), "dk_bin_" + uuid.uuid4().hex[:8]
        self.assertEqual(b.once(key, 4, "abc"), (OK, (1, 4)))
        self.assertEqual(b.once(key, 4, "abc"), (OK, (1, 4)))
        self.assertEqual(b.once(key, 1, "abd"), (OK, (5, 5)))
        status, _ = b.once(key, 5, "abc")
        self.assertEqual(status, INVALID_ARGUMENT)
        # Malformed payloads: answered, and the connection stays open.
        for payload in (s16(key) + struct.pack(">I", 1),            # no token
                        s16(key) + struct.pack(">IB", 1, 0),        # an empty token
                        once_payload(key, 1, "x")[:-1],             # cut short
                        once_payload(key, 1, "x") + b"\x05ab"):     # a bad trailer
            self.assertEqual(b.call(NEXT_BLOCK_ONCE, payload)[0], INVALID_ARGUMENT, payload)
        self.assertEqual(b.once(key, 1, "with space")[0], INVALID_ARGUMENT)
        self.assertEqual(b.once("sk_seg", 1, "tok")[0], INVALID_ARGUMENT)
        # Plain NEXT_BLOCK on a dense key: the next range, no hole.
        status, result = b.call(NEXT_BLOCK, next_ids_payload(key, 3))
        self.assertEqual((status, struct.unpack(">qq", result)), (OK, (6, 8)))
        self.assertEqual(b.max_ids([key]), [8])

    def test_resp_incr_on_a_dense_key(self):
        key = "dk_resp_" + uuid.uuid4().hex[:8]
        s = self.resp()
        cmds = [["INCR", key]] * 3 + [["INCRBY", key, "4"], ["INCR", key]]
        s.sendall(b"".join(resp_command(c) for c in cmds))
        out = b""
        while out.count(b"\r\n") < len(cmds):
            out += s.recv(4096)
        # INCR answers its ID; INCRBY its block's last.
        self.assertEqual(out.split(b"\r\n")[:5], [b":1", b":2", b":3", b":7", b":8"])

    # --- allocation times (restarts seqd with SIGKILL) -----------------------------------

    def test_y_times_over_http_and_binary_through_kill9(self):
        b, key = self.binary(), "dk_time_" + uuid.uuid4().hex[:8]
        seg, never = "sk_time_" + uuid.uuid4().hex[:8], "dk_never_" + uuid.uuid4().hex[:8]
        before = int(time.time() * 1000)
        self.assertEqual(b.once(key, 3, "t1"), (OK, (1, 3)))
        self.assertEqual(self.seqd.get_json("/seq/%s?count=1" % seg)[0], 200)
        after = int(time.time() * 1000)
        got = b.max_ids_times([key, seg, never])
        self.assertEqual(got[0][0], 3)
        for max_id, ms in got[:2]:
            self.assertTrue(before - 5000 <= ms <= after + 5000, (got, before, after))
        self.assertEqual(got[2], (0, -1))
        # HTTP answers the same, by GET and POST.
        path = "/max_ids?key=%s&key=%s&key=%s&with_time=true" % (key, seg, never)
        status, body = self.seqd.get_json(path)
        self.assertEqual(status, 200, body)
        self.assertEqual(body["times"], {key: got[0][1], seg: got[1][1], never: -1})
        self.assertEqual(body["max_ids"][key], 3)
        status, payload, _ = self.seqd.request("POST", "/max_ids",
                                               {"keys": [key, never], "with_time": True})
        self.assertEqual((status, json.loads(payload)["times"]), (200, {key: got[0][1], never: -1}))
        self.assertNotIn("times", self.seqd.get_json("/max_ids?key=" + key)[1])
        for bad in ("with_time=yes", "with_time="):
            status, body = self.seqd.get_json("/max_ids?key=%s&%s" % (key, bad))
            self.assertEqual((status, body["error"]["code"]), (400, "invalid_argument"), bad)
        status, _, _ = self.seqd.request("POST", "/max_ids", {"keys": [key], "with_time": "yes"})
        self.assertEqual(status, 400)
        # A malformed list: answered, the connection stays open.
        self.assertEqual(b.call(MAX_IDS_TIMES, struct.pack(">I", 2) + s16(key))[0],
                         INVALID_ARGUMENT)
        # A later block stamps a later time; a replayed token does not.
        time.sleep(0.02)
        self.assertEqual(b.once(key, 3, "t1"), (OK, (1, 3)))
        self.assertEqual(b.max_ids_times([key]), [got[0]])
        self.assertEqual(b.once(key, 1, "t2"), (OK, (4, 4)))
        stamped = b.max_ids_times([key])[0]
        self.assertGreater(stamped[1], got[0][1])
        b.close()
        # Committed with the block: the same after SIGKILL.
        self.restart(signal.SIGKILL)
        self.assertEqual(self.binary().max_ids_times([key, never]), [stamped, (0, -1)])

    # --- graceful restart (last: restarts seqd) -----------------------------------------

    def test_z_graceful_restart_keeps_the_max_exact(self):
        b, key = self.binary(), "dk_restart_" + uuid.uuid4().hex[:8]
        self.assertEqual(b.once(key, 7, "r1"), (OK, (1, 7)))
        b.close()
        self.restart(signal.SIGTERM)
        b = self.binary()
        self.assertEqual(b.max_ids([key]), [7])
        self.assertEqual(b.once(key, 7, "r1"), (OK, (1, 7)))  # the token outlives the restart
        self.assertEqual(b.once(key, 1, "r2"), (OK, (8, 8)))


if __name__ == "__main__":
    DenseKeys.STORE = store_from_argv()
    unittest.main()
