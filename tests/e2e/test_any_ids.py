"""End-to-end tests of keys and conversation ids that are any UTF-8 text
(docs/http-api.md "Keys"), on the real seqd binary (SQLite, or MariaDB with
the argument `mariadb`), over HTTP, the binary protocol and RESP:

- OpenIM's conversation ids whatever their user and group ids hold: CJK,
  accents, emoji, spaces, '/', '?', '#', '%', '&', '+', '<', '"', 255 bytes;
- ids that differ only in case, by trailing spaces or by Unicode
  normalization are distinct keys, each gap-free, through a kill -9;
- bad ids (control characters, ill-formed UTF-8, 256 bytes) are refused on
  every protocol with INVALID_ARGUMENT, and nothing is created for them;
- the status page escapes keys; /admin/keys lists them byte for byte;
- the message store takes such conversation, sender and user ids;
- on MariaDB, tables made before (Leaf's own leaf_alloc, whose varchar
  folds case and pads spaces; an older seqd's seqd_min_seq and message
  tables) keep working, and no key is ever served from another key's row.

Frames are built here from docs/protocol.md, not with the project's codec.

Usage: python3 tests/e2e/test_any_ids.py [sqlite|mariadb] [unittest args]
"""
import json
import os
import signal
import struct
import sys
import unittest
import urllib.parse
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Seqd, store_from_argv  # noqa: E402
from lib.mariadb import sql  # noqa: E402
from lib.seqd_case import SeqdCase  # noqa: E402
from lib.wire import BinaryConn, next_ids_payload, resp_pipelined  # noqa: E402

NEXT_BLOCK = 0x05
OK, INVALID_ARGUMENT = 0, 1

# OpenIM builds conversation ids from user and group ids, which may hold
# anything but ':' (si_<a>_<b>, sg_<group>, g_<group>, sn_<...>, n_<...>).
ODD_IDS = [
    "si_张三_李四",
    "sg_Équipe Rouge",
    "g_a/b?c#d%e&f=g+h",
    "n_😀_🚀",
    "sn_<script>alert(\"x\")</script>",
    "si_" + "é" * 123,  # with the run's tag (6 bytes): 255 bytes
    "g_" + "x" * 247,  # likewise
]
# Pairs the store must keep apart: case, trailing spaces, normalization.
TWINS = [("si_Alice_Bob", "si_alice_bob"), ("sg_team", "sg_team "), ("sg_team ", "sg_team  "),
         ("si_\u00e9", "si_e\u0301")]
# Refused everywhere: control characters, ill-formed UTF-8, too long.
BAD_IDS = [b"si_a\tb", b"si_a\x00", b"si_\x7f", "si_\u0085".encode(), b"si_\xff",
           b"si_\xc3", b"si_\xed\xa0\x80", b"si_\xc0\xaf", b"g_" + b"x" * 254]


class Binary(BinaryConn):

    def block(self, key, count):
        status, result = self.call(NEXT_BLOCK, next_ids_payload(key, count))
        if status != OK:
            return status, None
        return OK, struct.unpack(">qq", result)


def resp(port, *commands):
    """Sends the commands (lists of words) pipelined; returns the replies' lines."""
    return resp_pipelined(port, commands).split(b"\r\n")[:-1]


def path_key(key):
    raw = key if isinstance(key, bytes) else key.encode()
    return urllib.parse.quote(raw, safe="")


class Allocations:
    """Every block each key was answered, to check each key's seqs tile 1..max."""

    def __init__(self, test):
        self.test = test
        self.blocks = {}

    def add(self, key, first, last):
        self.blocks.setdefault(key, []).append((first, last))

    def check_tiles(self):
        for key, blocks in self.blocks.items():
            seqs = sorted(s for f, l in blocks for s in range(f, l + 1))
            self.test.assertEqual(seqs, list(range(1, len(seqs) + 1)),
                                  "key %r: a hole or a duplicate" % key)

    def last(self, key):
        return max(l for _, l in self.blocks[key])


class AnyIds(SeqdCase):
    """On seqd's default auto-create rules: OpenIM's prefixes, dense."""

    @classmethod
    def setUpClass(cls):
        cls.run_tag = uuid.uuid4().hex[:6]
        super().setUpClass()

    def ids(self, base):
        """`base` made unique to this run (the MariaDB database is shared),
        its run tag of 6 bytes after the prefix."""
        prefix, rest = base.split("_", 1)
        return "%s_%s%s" % (prefix, self.run_tag, rest)

    def binary(self):
        b = Binary(self.tcp_port)
        self.addCleanup(b.close)
        return b

    def http_block(self, key, count):
        status, body, _ = self.seqd.request(
            "GET", "/seq/%s?count=%d&contiguous=true" % (path_key(key), count))
        return status, json.loads(body)

    def resp_block(self, key, count):
        (reply,) = resp(self.resp_port, ["INCRBY", key, str(count)])
        self.assertTrue(reply.startswith(b":"), reply)
        last = int(reply[1:])
        return last - count + 1, last

    def allocate_everywhere(self, keys, seen, rounds=3):
        """Blocks of sizes that differ per key, over the three protocols in turn."""
        b = self.binary()
        for r in range(rounds):
            for n, key in enumerate(keys):
                count = 1 + (n + r) % 4
                proto = (n + r) % 3
                if proto == 0:
                    status, body = self.http_block(key, count)
                    self.assertEqual(status, 200, (key, body))
                    self.assertEqual(body["key"], key)
                    first, last = body["first"], body["last"]
                elif proto == 1:
                    status, block = b.block(key, count)
                    self.assertEqual(status, OK, key)
                    first, last = block
                else:
                    first, last = self.resp_block(key, count)
                self.assertEqual(last - first + 1, count, key)
                seen.add(key, first, last)

    def check_max(self, keys, seen):
        self.assertEqual(self.binary().max_ids(keys), [seen.last(k) for k in keys])
        status, body, _ = self.seqd.request("POST", "/max_ids", {"keys": keys})
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["max_ids"], {k: seen.last(k) for k in keys})
        replies = resp(self.resp_port, ["MGET", *keys])
        self.assertEqual(replies[0], b"*%d" % len(keys))
        got = [int(v) for v in replies[2::2]]
        self.assertEqual(got, [seen.last(k) for k in keys])

    def test_odd_ids_and_twins_are_distinct_gap_free_keys_through_kill_9(self):
        keys = [self.ids(k) for k in ODD_IDS]
        keys += [self.ids(k) for pair in TWINS for k in pair]
        keys = list(dict.fromkeys(keys))  # "sg_team " is in two pairs
        self.assertEqual(max(len(k.encode()) for k in keys), 255)
        seen = Allocations(self)
        self.allocate_everywhere(keys, seen)
        seen.check_tiles()
        self.check_max(keys, seen)
        # Twins got different totals, so one row serving both would show.
        for a, b in TWINS:
            self.assertNotEqual(seen.blocks[self.ids(a)], seen.blocks[self.ids(b)], (a, b))
        self.restart(signal.SIGKILL)
        self.check_max(keys, seen)
        self.allocate_everywhere(keys, seen, rounds=1)
        seen.check_tiles()
        # Listed byte for byte by /admin/keys, and escaped on the status page.
        listed = set()
        after = ""
        while True:
            status, page = self.seqd.get_json("/admin/keys?limit=1000&after=" +
                                              urllib.parse.quote(after, safe=""))
            self.assertEqual(status, 200)
            listed.update(row["key"] for row in page["keys"])
            if not page.get("next_after"):
                break
            after = page["next_after"]
        self.assertTrue(set(keys) <= listed, set(keys) - listed)
        # The status page lists the first page of keys: a registered key
        # that sorts before every other ('!' is below letters and digits).
        marked = "!<script>alert(\"%s\")</script>" % self.run_tag
        self.seqd.create_key(marked, 10)
        status, body = self.http_block(marked, 2)
        self.assertEqual((status, body["key"]), (200, marked))
        status, html = self.seqd.get("/")
        self.assertEqual(status, 200)
        self.assertNotIn(b"<script>alert", html)
        self.assertIn(("&lt;script&gt;alert(&quot;%s&quot;)" % self.run_tag).encode(), html)

    def test_bad_ids_are_refused_on_every_protocol(self):
        b = self.binary()
        for raw in BAD_IDS:
            status, body, _ = self.seqd.request("GET", "/seq/%s?count=1" % path_key(raw))
            self.assertEqual(status, 400, (raw, body))
            self.assertEqual(json.loads(body)["error"]["code"], "invalid_argument", raw)
            status, _ = b.block(raw, 1)
            self.assertEqual(status, INVALID_ARGUMENT, raw)
            (reply,) = resp(self.resp_port, ["INCR", raw])
            self.assertTrue(reply.startswith(b"-ERR"), (raw, reply))
        # Nothing was created for them (ill-formed UTF-8 cannot be listed in
        # JSON at all; the others would show).
        status, page = self.seqd.get_json("/admin/keys?limit=1000")
        self.assertEqual(status, 200)
        for row in page["keys"]:
            self.assertNotIn(row["key"].encode(), BAD_IDS)
        # A bad id in a JSON list names the problem.
        status, body, _ = self.seqd.request("POST", "/max_ids", {"keys": ["si_ok", "si_a\tb"]})
        self.assertEqual(status, 400, body)
        self.assertIn("control characters", json.loads(body)["error"]["message"])

    def test_messages_take_any_conversation_sender_and_user_id(self):
        conv, twin = self.ids("si_张三 李四/1"), self.ids("si_张三 李四/1 ")
        sender, user = "张三 ", "李四/x?y"
        sent = {}
        for c in (conv, twin, conv):
            cmid = "cm-%s-%d" % (uuid.uuid4().hex[:6], len(sent.get(c, [])))
            status, body, _ = self.seqd.request(
                "POST", "/conversations/%s/messages" % path_key(c),
                {"sender_id": sender, "client_msg_id": cmid, "content_type": 1,
                 "payload": "hi"})
            self.assertIn(status, (200, 201), body)
            sent.setdefault(c, []).append(json.loads(body)["seq"])
        self.assertEqual(sent, {conv: [1, 2], twin: [1]})
        status, body = self.seqd.get_json("/conversations/%s/messages?from=1" % path_key(conv))
        self.assertEqual(status, 200, body)
        self.assertEqual([m["seq"] for m in body["messages"]], [1, 2])
        self.assertEqual({m["sender_id"] for m in body["messages"]}, {sender})
        member = "/conversations/%s/members/%s" % (path_key(conv), path_key(user))
        status, body, _ = self.seqd.request("PUT", member, {})
        self.assertIn(status, (200, 201, 204), body)
        status, body = self.seqd.get_json(member)
        self.assertEqual((status, body["read_seq"]), (200, 2), body)  # joined at the max
        status, body, _ = self.seqd.request(
            "POST", "/conversations/%s/messages" % path_key(conv),
            {"sender_id": sender, "client_msg_id": uuid.uuid4().hex, "payload": "3"})
        self.assertIn(status, (200, 201), body)
        status, body, _ = self.seqd.request("PUT", member + "/read_seq", {"read_seq": 3})
        self.assertIn(status, (200, 204), body)
        status, body = self.seqd.get_json(member)
        self.assertEqual((status, body["read_seq"]), (200, 3), body)


class LegacyTables(unittest.TestCase):
    """MariaDB only: tables made before keys were any UTF-8, in a fresh
    database: Leaf's own leaf_alloc (varchar(128), utf8, case-insensitive,
    padding spaces), an older seqd's seqd_min_seq (ascii_bin) and message
    tables (utf8mb4_bin, padding spaces)."""

    LEAF_DDL = ("CREATE TABLE leaf_alloc ("
                "biz_tag varchar(128) NOT NULL DEFAULT '', "
                "max_id bigint(20) NOT NULL DEFAULT '1', "
                "step int(11) NOT NULL, "
                "description varchar(256) DEFAULT NULL, "
                "update_time timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP "
                "ON UPDATE CURRENT_TIMESTAMP, "
                "PRIMARY KEY (biz_tag)) ENGINE=InnoDB DEFAULT CHARSET=utf8")
    MIN_SEQ_DDL = ("CREATE TABLE seqd_min_seq ("
                   "biz_tag VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, "
                   "min_seq BIGINT NOT NULL, PRIMARY KEY (biz_tag)) ENGINE=InnoDB")
    MESSAGE_DDL = (
        "CREATE TABLE seqd_message ("
        "conv_id VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, "
        "seq BIGINT NOT NULL, server_msg_id BIGINT NOT NULL, "
        "sender_id VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, "
        "client_msg_id VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, "
        "content_type INT NOT NULL, payload MEDIUMBLOB NOT NULL, send_time_ms BIGINT NOT NULL, "
        "status TINYINT NOT NULL DEFAULT 0, PRIMARY KEY (conv_id, seq), "
        "UNIQUE KEY uk_seqd_message_client (conv_id, sender_id, client_msg_id)"
        ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin")

    @classmethod
    def setUpClass(cls):
        base = os.environ["SEQD_TEST_MYSQL_URL"]
        u = urllib.parse.urlparse(base)
        cls.base = base
        # scripts/mariadb.sh grants its user every database named <db>_*.
        cls.db = "%s_legacy_%s" % (u.path.lstrip("/") or "seqd_test", uuid.uuid4().hex[:8])
        sql(base, "CREATE DATABASE %s" % cls.db)
        for ddl in (cls.LEAF_DDL, cls.MIN_SEQ_DDL, cls.MESSAGE_DDL):
            sql(base, ddl, cls.db)
        sql(base, "INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES "
                  "('Leaf_Order', 1, 10, 'leaf'), ('lk_Old', 1, 10, 'leaf')", cls.db)
        sql(base, "INSERT INTO seqd_min_seq VALUES ('lk_Old', 7)", cls.db)
        cls.url = u._replace(path="/" + cls.db).geturl()
        cls.seqd = Seqd(cls.url, "--auto-keys", "lk_:10:dense,ls_:10")

    @classmethod
    def tearDownClass(cls):
        cls.seqd.__exit__()
        sql(cls.base, "DROP DATABASE IF EXISTS %s" % cls.db)

    def max_id_row(self, key):
        out = sql(self.base, "SELECT max_id FROM leaf_alloc WHERE BINARY biz_tag = '%s'" % key,
                  self.db)
        return int(out.strip())

    def block(self, key, count=1):
        status, body, _ = self.seqd.request(
            "GET", "/seq/%s?count=%d&contiguous=true" % (path_key(key), count))
        return status, json.loads(body)

    def test_no_key_is_served_from_another_keys_row(self):
        # Leaf's own key works as before.
        status, body = self.block("Leaf_Order", 3)
        self.assertEqual(status, 200, body)
        before = self.max_id_row("Leaf_Order")
        # Its case twin and its trailing-space twin are refused, and its row
        # is left as it was.
        for twin in ("leaf_order", "LEAF_ORDER", "Leaf_Order "):
            status, body = self.block(twin)
            self.assertEqual(status, 400, (twin, body))
            self.assertIn("only in case or trailing spaces", body["error"]["message"])
        self.assertEqual(self.max_id_row("Leaf_Order"), before)
        # A dense auto-created key: its twins are refused, and it stays gap-free.
        blocks = []
        for n, key in enumerate(["lk_Chat", "lk_chat", "lk_Chat", "lk_Chat ", "lk_CHAT", "lk_Chat"]):
            status, body = self.block(key, 2)
            if key == "lk_Chat":
                self.assertEqual(status, 200, body)
                blocks.append((body["first"], body["last"]))
            else:
                self.assertEqual(status, 400, (key, body))
        self.assertEqual(blocks, [(1, 2), (3, 4), (5, 6)])
        # A segment auto-created key likewise.
        self.assertEqual(self.block("ls_Seg")[0], 200)
        self.assertEqual(self.block("ls_seg")[0], 400)
        # The existing dense-prefixed Leaf row, and its min seq from the old table.
        self.assertEqual(self.block("lk_Old", 2)[0], 200)
        status, body = self.seqd.get_json("/min_seqs?key=lk_Old")
        self.assertEqual((status, body["min_seqs"]), (200, {"lk_Old": 7}))

    def test_ids_the_leaf_table_cannot_hold_are_refused_not_mangled(self):
        for key in ("lk_😀", "lk_" + "x" * 200):
            status, body = self.block(key)
            self.assertEqual(status, 400, (key, body))
            self.assertIn("cannot store this id", body["error"]["message"])
            self.assertNotIn("leaf_alloc", body["error"]["message"])
        # Characters Leaf's utf8 holds are fine.
        self.assertEqual(self.block("lk_张三 é")[0], 200)
        self.assertEqual(sql(self.base, "SHOW CREATE TABLE leaf_alloc", self.db).count(
            "varchar(128)"), 1, "seqd changed Leaf's table")

    def test_a_key_the_table_cannot_hold_fails_only_itself(self):
        """Requests at once are reserved in one transaction: a key Leaf's
        utf8 column cannot hold (4-byte characters) must fail alone, not
        the other keys of its batch."""
        import concurrent.futures
        good = ["lk_batch_%d_%s" % (i, uuid.uuid4().hex[:6]) for i in range(24)]
        good += ["ls_batch_%d_%s" % (i, uuid.uuid4().hex[:6]) for i in range(24)]
        bad = ["lk_😀%d" % i for i in range(12)] + ["ls_😀%d" % i for i in range(12)]
        jobs = [(k, True) for k in good] + [(k, False) for k in bad]
        jobs = [j for pair in zip(jobs[:36], jobs[36:]) for j in pair]  # interleaved
        with concurrent.futures.ThreadPoolExecutor(max_workers=24) as pool:
            got = list(pool.map(lambda j: (j, self.block(j[0], 2)[0]), jobs))
        wrong = [(k, status) for (k, ok), status in got if status != (200 if ok else 400)]
        self.assertEqual(wrong, [])

    def test_older_seqd_tables(self):
        # seqd_min_seq was made exact in place, its rows kept.
        out = sql(self.base, "SELECT DATA_TYPE FROM information_schema.COLUMNS WHERE "
                  "TABLE_SCHEMA = '%s' AND TABLE_NAME = 'seqd_min_seq' AND "
                  "COLUMN_NAME = 'biz_tag'" % self.db)
        self.assertEqual(out.strip(), "varbinary")
        status, body, _ = self.seqd.request("PUT", "/min_seqs", {"min_seqs": {"lk_Ü": 3, "lk_ü": 4}})
        self.assertIn(status, (200, 204), body)
        status, body = self.seqd.get_json("/min_seqs?key=lk_%C3%9C&key=lk_%C3%BC&key=lk_Old")
        self.assertEqual(body["min_seqs"], {"lk_Ü": 3, "lk_ü": 4, "lk_Old": 7})
        # The old message table pads spaces: an id ending with one is refused.
        for conv, want in (("lk_room", (200, 201)), ("lk_room ", (400,))):
            status, body, _ = self.seqd.request(
                "POST", "/conversations/%s/messages" % path_key(conv),
                {"sender_id": "u1", "client_msg_id": uuid.uuid4().hex, "content_type": 1,
                 "payload": "hi"})
            self.assertIn(status, want, (conv, body))
        self.assertIn("ends with a space", json.loads(body)["error"]["message"])
        # Its VARCHAR(128) holds 128 characters: a longer id is refused
        # before the writers' batch, which goes on for the others.
        status, body, _ = self.seqd.request(
            "POST", "/conversations/%s/messages" % path_key("lk_" + "é" * 126),
            {"sender_id": "u1", "client_msg_id": uuid.uuid4().hex, "payload": "hi"})
        self.assertEqual(status, 400, body)
        self.assertIn("128 characters", json.loads(body)["error"]["message"])
        status, body, _ = self.seqd.request(
            "POST", "/conversations/%s/messages" % path_key("lk_" + "é" * 125),
            {"sender_id": "u1", "client_msg_id": uuid.uuid4().hex, "payload": "hi"})
        self.assertIn(status, (200, 201), body)


if __name__ == "__main__":
    AnyIds.STORE = store_from_argv()
    if AnyIds.STORE != "mariadb":
        del LegacyTables  # MySQL's tables only: the mariadb run has them
    unittest.main()
