"""End-to-end tests of OpenIM's ID ops on the real seqd binary (SQLite, or
MariaDB with the argument `mariadb`): contiguous blocks (binary NEXT_BLOCK,
HTTP ?contiguous=true, RESP INCRBY), the largest ID handed out per key
(MAX_IDS, /max_ids, GET/MGET) and the durable per-key min seqs
(GET/SET_MIN_SEQS, /min_seqs, SEQD.MINSEQ/SEQD.SETMINSEQ): bad input,
durability across a restart, MAX after a restart. Frames are built here
from docs/protocol.md, not with the project's codec.

Usage: python3 tests/e2e/test_openim_ids.py [sqlite|mariadb] [unittest args]
"""
import json
import os
import signal
import struct
import sys
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import store_from_argv  # noqa: E402
from lib.seqd_case import SeqdCase  # noqa: E402
from lib.wire import (BinaryConn, ids_of, int64_list, key_list, key_values,  # noqa: E402
                      next_ids_payload, resp_pipelined, s16)

NEXT_IDS, NEXT_BLOCK, MAX_IDS, GET_MIN_SEQS, SET_MIN_SEQS = 0x02, 0x05, 0x06, 0x07, 0x08
USER_SEQS, SET_USER_SEQS = 0x0B, 0x0C
MIN, MAX, READ = 1, 2, 3
OK, INVALID_ARGUMENT, TOO_LARGE = 0, 1, 10


def unique(prefix):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:10])


class Binary(BinaryConn):

    def block(self, key, count):
        status, result = self.call(NEXT_BLOCK, next_ids_payload(key, count))
        assert status == OK, (status, result)
        first, last = struct.unpack(">qq", result)
        return first, last

    def next_ids(self, key, count):
        status, result = self.call(NEXT_IDS, next_ids_payload(key, count))
        assert status == OK, (status, result)
        return ids_of(result)

    def min_seqs(self, keys):
        status, result = self.call(GET_MIN_SEQS, key_list(keys))
        assert status == OK, (status, result)
        return int64_list(result)

    def set_min_seqs(self, items):
        return self.call(SET_MIN_SEQS, key_values(items))


def resp(port, *commands):
    """Sends the commands (lists of words) pipelined; returns the raw reply bytes."""
    return resp_pipelined(port, commands)


class OpenImIds(SeqdCase):
    @classmethod
    def seqd_flags(cls):
        return ("--max-count", "1000", "--auto-keys", "auto_:10")

    def binary(self):
        b = Binary(self.tcp_port)
        self.addCleanup(b.close)
        return b

    def key(self, step=10):
        k = unique("oim")
        self.seqd.create_key(k, step)
        return k

    # --- contiguous blocks -------------------------------------------------------

    def test_binary_block_skips_a_short_rest_and_serves_blocks_larger_than_the_step(self):
        b, k = self.binary(), self.key(step=10)
        self.assertEqual(b.block(k, 7), (1, 7))
        first, last = b.block(k, 7)  # 8..10 is too short: skipped, never handed out
        self.assertEqual(last - first + 1, 7)
        self.assertGreater(first, 10)
        later = b.next_ids(k, 50)
        self.assertTrue(all(i > last for i in later), later)
        big_first, big_last = b.block(k, 500)  # far larger than the step
        self.assertEqual(big_last - big_first + 1, 500)
        self.assertGreater(big_first, max(later))
        # MAX: the last ID handed out, exactly
        self.assertEqual(b.max_ids([k]), [big_last])

    def test_binary_block_bad_input(self):
        b, k = self.binary(), self.key()
        for key, count in (("bad\tkey!", 1), ("seqd.reserved", 1), (k, 0), (k, 1001)):
            status, _ = b.call(NEXT_BLOCK, next_ids_payload(key, count))
            self.assertEqual(status, INVALID_ARGUMENT, (key, count))
        status, _ = b.call(NEXT_BLOCK, s16(k))  # no count
        self.assertEqual(status, INVALID_ARGUMENT)
        self.assertEqual(b.block(k, 3), (1, 3))  # the connection stayed open

    def test_binary_max_ids(self):
        b, k = self.binary(), self.key()
        missing = unique("oim")
        auto = unique("auto_")
        self.assertEqual(b.max_ids([k, missing, auto]), [0, 0, 0])
        ids = b.next_ids(k, 13)
        self.assertEqual(b.max_ids([missing, k]), [0, ids[-1]])
        # never creates a row, not even for an auto-create key
        self.assertEqual(self.seqd.get("/admin/keys/" + missing)[0], 404)
        self.assertEqual(self.seqd.get("/admin/keys/" + auto)[0], 404)
        for keys in (["bad\tkey!"], ["seqd.x"]):
            self.assertEqual(b.call(MAX_IDS, key_list(keys))[0], INVALID_ARGUMENT)
        self.assertEqual(b.call(MAX_IDS, key_list([k] * 1001))[0], TOO_LARGE)
        self.assertEqual(b.call(MAX_IDS, key_list([k])[:-1])[0], INVALID_ARGUMENT)
        self.assertEqual(len(b.max_ids([k] * 1000)), 1000)

    def test_binary_min_seqs(self):
        b = self.binary()
        k1, k2 = unique("oim"), unique("oim")  # no leaf_alloc row needed
        self.assertEqual(b.min_seqs([k1, k2]), [0, 0])
        self.assertEqual(b.set_min_seqs([(k1, 5), (k2, 0)]), (OK, b""))
        self.assertEqual(b.min_seqs([k2, k1]), [0, 5])
        self.assertEqual(b.set_min_seqs([(k1, 3)])[0], OK)  # may go down: OpenIM sets it
        self.assertEqual(b.min_seqs([k1]), [3])
        bad = [[(k1, -1)], [(k1, 1), (k1, 2)], [("bad\tkey!", 1)], [("seqd.x", 1)]]
        for items in bad:
            self.assertEqual(b.set_min_seqs(items)[0], INVALID_ARGUMENT, items)
        self.assertEqual(b.min_seqs([k1]), [3])  # nothing of a refused request written
        many = [(unique("m"), i) for i in range(1001)]
        self.assertEqual(b.set_min_seqs(many)[0], TOO_LARGE)
        self.assertEqual(b.set_min_seqs(many[:1000])[0], OK)
        self.assertEqual(b.min_seqs([k for k, _ in many[:1000]]), list(range(1000)))
        self.assertEqual(b.call(GET_MIN_SEQS, key_list([k1] * 1001))[0], TOO_LARGE)
        self.assertEqual(b.call(SET_MIN_SEQS, key_values([(k1, 1)]) + b"x")[0],
                         INVALID_ARGUMENT)

    def test_binary_user_seqs(self):
        b, user = self.binary(), unique("u")
        c1, c2 = unique("si"), unique("sg")

        def get(field, convs, who=user):
            return b.call(USER_SEQS, s16(who) + bytes([field]) + key_list(convs))

        def put(field, raise_only, items, who=user):
            return b.call(SET_USER_SEQS, s16(who) + bytes([field, raise_only]) + key_values(items))

        self.assertEqual(get(READ, [c1, c2]), (OK, struct.pack(">Iqq", 2, 0, 0)))
        self.assertEqual(put(READ, 1, [(c1, 9), (c2, 4)]), (OK, b""))
        self.assertEqual(put(READ, 1, [(c1, 5)]), (OK, b""))  # a raise only: ignored
        self.assertEqual(int64_list(get(READ, [c1, c2])[1]), [9, 4])
        self.assertEqual(put(READ, 0, [(c1, 5)]), (OK, b""))  # overwrite
        self.assertEqual(int64_list(get(READ, [c1])[1]), [5])
        self.assertEqual(put(MAX, 0, [(c1, 70)]), (OK, b""))
        self.assertEqual(int64_list(get(MAX, [c1])[1]), [70])
        self.assertEqual(int64_list(get(MIN, [c1])[1]), [0])
        self.assertEqual(int64_list(get(MAX, [c1], who=user.upper())[1]), [0])
        # Bad input: answered, nothing written, the connection stays open.
        for status, what in (
                (put(4, 0, [(c1, 1)])[0], "field 4"),
                (put(READ, 2, [(c1, 1)])[0], "raise_only 2"),
                (put(READ, 0, [(c1, -1)])[0], "a negative seq"),
                (put(READ, 0, [(c1, 1), (c1, 2)])[0], "a conversation twice"),
                (put(READ, 0, [("bad\tkey!", 1)])[0], "a bad conversation"),
                (put(READ, 0, [(c1, 1)], who="")[0], "an empty user"),
                (put(READ, 0, [(c1, 1)], who="a\x01b")[0], "a control character"),
                (put(READ, 0, [(c1, 1)], who="u" * 256)[0], "a user of 256 bytes"),
                (get(0, [c1])[0], "field 0"),
                (b.call(USER_SEQS, s16(user) + bytes([READ]) + key_list([c1])[:-1])[0], "cut"),
                (b.call(SET_USER_SEQS, s16(user) + bytes([READ]))[0], "no raise byte")):
            self.assertEqual(status, INVALID_ARGUMENT, what)
        self.assertEqual(int64_list(get(READ, [c1])[1]), [5])
        self.assertEqual(get(READ, [c1] * 1001)[0], TOO_LARGE)
        many = [(unique("m"), i) for i in range(1001)]
        self.assertEqual(put(READ, 1, many)[0], TOO_LARGE)
        self.assertEqual(put(READ, 1, many[:1000])[0], OK)
        self.assertEqual(int64_list(get(READ, [k for k, _ in many[:1000]])[1]), list(range(1000)))

    # --- HTTP --------------------------------------------------------------------------

    def test_http(self):
        k = self.key(step=10)
        status, body = self.seqd.get_json("/seq/%s?count=7&contiguous=true" % k)
        self.assertEqual((status, body), (200, {"key": k, "first": 1, "last": 7}))
        status, body = self.seqd.get_json("/seq/%s?count=7&contiguous=true" % k)
        self.assertEqual(body["last"] - body["first"], 6)
        self.assertGreater(body["first"], 10)
        last = body["last"]
        self.assertEqual(self.seqd.get("/seq/%s?count=2&contiguous=maybe" % k)[0], 400)
        self.assertEqual(self.seqd.get("/seq/%s?count=0&contiguous=true" % k)[0], 400)
        self.assertEqual(self.seqd.get("/seq/bad%%09key?contiguous=true")[0], 400)
        missing = unique("oim")
        status, body = self.seqd.get_json("/max_ids?key=%s&key=%s" % (k, missing))
        self.assertEqual((status, body), (200, {"max_ids": {k: last, missing: 0}}))
        status, payload, _ = self.seqd.request("POST", "/max_ids", {"keys": [k]})
        self.assertEqual((status, json.loads(payload)), (200, {"max_ids": {k: last}}))
        keys = ["h%d-%s" % (i, missing) for i in range(1000)]
        status, payload, _ = self.seqd.request("POST", "/max_ids", {"keys": keys})
        self.assertEqual(status, 200)
        self.assertEqual(len(json.loads(payload)["max_ids"]), 1000)
        status, _, _ = self.seqd.request("POST", "/max_ids", {"keys": keys + ["one-more"]})
        self.assertEqual(status, 413)
        self.assertEqual(self.seqd.get("/max_ids?key=seqd.x")[0], 400)
        # min seqs
        status, payload, _ = self.seqd.request("PUT", "/min_seqs", {"min_seqs": {k: 4, missing: 9}})
        self.assertEqual((status, json.loads(payload)), (200, {"min_seqs": {k: 4, missing: 9}}))
        status, body = self.seqd.get_json("/min_seqs?key=%s&key=%s" % (missing, k))
        self.assertEqual(body, {"min_seqs": {missing: 9, k: 4}})
        status, payload, _ = self.seqd.request("POST", "/min_seqs", {"keys": [k]})
        self.assertEqual(json.loads(payload), {"min_seqs": {k: 4}})
        for bad in ('{"min_seqs":{"%s":1,"%s":2}}' % (k, k), {"min_seqs": {k: -1}},
                    {"min_seqs": {k: "x"}}, {"min_seqs": [1]}, {"min_seqs": {"seqd.x": 1}}):
            status, payload, _ = self.seqd.request("PUT", "/min_seqs", bad)
            self.assertEqual(status, 400, (bad, payload))
        self.assertEqual(self.seqd.get_json("/min_seqs?key=" + k)[1], {"min_seqs": {k: 4}})
        status, _, r = self.seqd.request("DELETE", "/min_seqs")
        self.assertEqual(status, 405)
        self.assertIn("PUT", r.getheader("Allow"))

    # --- RESP ---------------------------------------------------------------------------

    def test_resp(self):
        k = self.key(step=10)
        missing = unique("oim")
        # Commands of one connection run concurrently (their replies are in
        # order): GET is asked once the INCRBYs are answered.
        out = resp(self.resp_port, ["INCRBY", k, "7"], ["INCRBY", k, "7"])
        lines = out.split(b"\r\n")
        self.assertEqual(lines[0], b":7")
        second = int(lines[1][1:])
        self.assertGreater(second - 6, 10, out)  # 8..10 skipped: a block from one segment
        out = resp(self.resp_port, ["GET", k], ["MGET", k, missing], ["GET", missing])
        lines = out.split(b"\r\n")
        self.assertEqual(lines[0:3], [b"$%d" % len(str(second)), str(second).encode(), b"*2"])
        self.assertEqual(lines[3:7], [b"$%d" % len(str(second)), str(second).encode(), b"$-1",
                                      b"$-1"])
        self.assertEqual(resp(self.resp_port, ["SEQD.SETMINSEQ", k, "3", missing, "8"]),
                         b"+OK\r\n")
        out = resp(self.resp_port, ["SEQD.MINSEQ", missing, k, unique("x")])
        self.assertEqual(out, b"*3\r\n:8\r\n:3\r\n:0\r\n")
        out = resp(self.resp_port, ["SEQD.SETMINSEQ", k, "-1"], ["SEQD.SETMINSEQ", k, "1", k, "2"],
                   ["SEQD.SETMINSEQ", k], ["SEQD.SETMINSEQ", k, "x"], ["GET", "seqd.x"],
                   ["GET"], ["MGET", "bad\tkey"], ["SEQD.MINSEQ", k])
        replies = out.split(b"\r\n")[:-1]
        self.assertEqual(len(replies), 9, out)  # 7 errors, then *1 :3
        for r in replies[:7]:
            self.assertTrue(r.startswith(b"-ERR"), out)
        self.assertEqual(replies[7:], [b"*1", b":3"])

    # --- durability (last: restarts seqd) ------------------------------------------------

    def test_z_restart_keeps_min_seqs_and_max_is_the_tables(self):
        b, k = self.binary(), self.key(step=10)
        handed = b.next_ids(k, 4)
        self.assertEqual(b.max_ids([k]), [handed[-1]])
        self.assertEqual(b.set_min_seqs([(k, 42)])[0], OK)
        b.close()
        self.restart(signal.SIGTERM)
        b = self.binary()
        self.assertEqual(b.min_seqs([k]), [42])
        row = self.seqd.get_json("/admin/keys/" + k)[1]
        table_max = row["max_id"] - 1  # the last ID reserved
        self.assertGreaterEqual(table_max, handed[-1])
        self.assertEqual(b.max_ids([k]), [table_max])
        nxt = b.next_ids(k, 1)[0]
        self.assertGreater(nxt, table_max)
        self.assertEqual(b.max_ids([k]), [nxt])


if __name__ == "__main__":
    OpenImIds.STORE = store_from_argv()
    unittest.main()
