"""End-to-end tests of snowflake IDs (docs/snowflake.md) through the real seqd
binary on SQLite or MariaDB: the HTTP routes, worker-id leases between
processes (distinct ids, release and return to the same owner, takeover after
kill -9 with the persisted time bound), a store outage (MariaDB) and metrics.

Usage: python3 tests/e2e/test_snowflake.py sqlite|mariadb [unittest args]

On MariaDB every test runs in a scratch database of its own
(seqd_test_sf_<run>_<n>, made and dropped with the `mariadb` client), so the
lease rows of other suites never interfere; without the client it falls back
to the shared database and skips the checks that read the lease table.
"""
import datetime
import itertools
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (SEQD, Seqd, mariadb, run_threads, store_from_argv,  # noqa: E402
                     store_spec)

KIND = "sqlite"
RUN = "%06x" % random.getrandbits(24)
SCRATCH = itertools.count(1)

# The default layout (docs/snowflake.md): Leaf's.
EPOCH_MS = 1288834974657
SEQ_BITS = 12
LEASE_MS = 2000  # short leases keep the suite fast: renewed every 667 ms, cut off at 1800


def fields(id_, worker_bits=10):
    """(unix ms, worker, sequence) of an ID, computed here from the layout."""
    return (EPOCH_MS + (id_ >> (worker_bits + SEQ_BITS)),
            (id_ >> SEQ_BITS) & ((1 << worker_bits) - 1),
            id_ & ((1 << SEQ_BITS) - 1))


def iso_utc(ms):
    t = datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + ".%03dZ" % (ms % 1000)


def error_of(payload):
    """(code, message) of an error body. The usual body is
    {"error":{"code":…,"message":…}}; docs/snowflake.md shows
    {"error":…,"message":…}; both are read."""
    body = json.loads(payload)
    err = body.get("error")
    if isinstance(err, dict):
        return err.get("code"), err.get("message", "")
    return err, body.get("message", "")


def parse_metrics(text):
    """{'name{labels}': value} of a Prometheus text page."""
    out = {}
    for line in text.decode().splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, value = line.rpartition(" ")
        out[name] = float(value)
    return out


# --- MariaDB scratch databases ------------------------------------------------

def mysql_client():
    return shutil.which("mariadb") or shutil.which("mysql")


def mysql_run(url, sql):
    """Runs `sql` with the command-line client as the URL's user, in the URL's
    database; the rows as lists of strings."""
    u = urllib.parse.urlparse(url)
    args = [mysql_client(), "--no-defaults", "--protocol=tcp", "-h", u.hostname,
            "-P", str(u.port or 3306), "-u", urllib.parse.unquote(u.username or ""),
            "-p" + urllib.parse.unquote(u.password or ""), "-N", "-B", "-e", sql]
    if u.path.strip("/"):
        args.append(u.path.strip("/"))
    out = subprocess.run(args, check=True, capture_output=True, text=True, timeout=30).stdout
    return [line.split("\t") for line in out.splitlines()]


def with_database(url, db):
    u = urllib.parse.urlparse(url)
    return urllib.parse.urlunparse(u._replace(path="/" + db))


# --- talking to seqd ----------------------------------------------------------

def snowflake(s, count=None, conn=None):
    """(status, payload) of GET /snowflake[?count=N]."""
    path = "/snowflake" if count is None else "/snowflake?count=%s" % count
    status, payload, _ = s.request("GET", path, conn=conn)
    return status, payload


def take(s, count=1, conn=None):
    """The IDs of one successful /snowflake call, as ints (checks the shape)."""
    status, payload = snowflake(s, count, conn=conn)
    if status != 200:
        raise AssertionError("GET /snowflake?count=%d: %s %s" % (count, status, payload))
    body = json.loads(payload)
    ids = body["ids"]
    if len(ids) != count or not all(isinstance(i, str) for i in ids):
        raise AssertionError("bad /snowflake body for count %d: %s" % (count, payload[:300]))
    if count == 1 and body.get("id") != ids[0]:
        raise AssertionError("count 1: 'id' must be the one ID: %s" % payload)
    return [int(i) for i in ids]


def wait_serving(s, timeout=15):
    """Polls /snowflake until it serves; the IDs it got. Only 503 not_serving
    is expected meanwhile."""
    deadline = time.time() + timeout
    while True:
        status, payload = snowflake(s)
        if status == 200:
            return [int(json.loads(payload)["id"])]
        code, message = error_of(payload)
        if (status, code) != (503, "not_serving") or not message:
            raise AssertionError("while waiting to serve: %s %s" % (status, payload))
        if time.time() > deadline:
            raise AssertionError("not serving after %ss: %s\n%s" % (timeout, payload, s.logs()))
        time.sleep(0.05)


def metrics(s):
    status, payload = s.get("/metrics")
    assert status == 200, status
    return parse_metrics(payload)


def worker_id(s):
    return int(metrics(s)["seqd_snowflake_worker_id"])


class SeqdProcess(Seqd):
    """Seqd that kills its process when it fails to come up (Seqd leaves it)."""

    def wait_healthy(self, timeout=15):
        try:
            super().wait_healthy(timeout)
        except BaseException:
            self.__exit__()
            raise


class Base(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.db_path = None
        self.url = None  # MariaDB scratch database, if there is one
        if KIND == "sqlite":
            self.db_path = os.path.join(tmp.name, "seqd.db")
            self.store = "sqlite:" + self.db_path
            return
        shared = store_spec("mariadb", tmp.name)
        if not mysql_client():
            self.store = shared
            return
        db = "seqd_test_sf_%s_%d" % (RUN, next(SCRATCH))
        mysql_run(shared, "CREATE DATABASE `%s`" % db)
        # Registered before any process starts: dropped after they are killed.
        self.addCleanup(self.drop_database, shared, db)
        self.url = self.store = with_database(shared, db)

    def drop_database(self, shared, db):
        try:
            mysql_run(shared, "DROP DATABASE IF EXISTS `%s`" % db)
        except (subprocess.SubprocessError, OSError) as e:
            print("could not drop %s: %s" % (db, e), file=sys.stderr)

    def start(self, *extra, lease_ms=LEASE_MS):
        s = SeqdProcess(self.store, "--snowflake-lease-ms", str(lease_ms), *extra)
        self.addCleanup(s.__exit__)
        return s

    def start_many(self, n, *extra):
        """n processes started at once (their claims race)."""
        out, errors = [None] * n, []

        def one(i):
            try:
                out[i] = SeqdProcess(self.store, "--snowflake-lease-ms", str(LEASE_MS), *extra)
            except Exception as e:  # noqa: BLE001
                errors.append(repr(e))

        run_threads(one, n)
        for s in out:
            if s is not None:
                self.addCleanup(s.__exit__)
        self.assertEqual(errors, [])
        return out

    def lease_rows(self):
        """{worker_id: (owner, instance, expires_ms, time_bound_ms)} read from
        the store; None when it cannot be read (MariaDB without a client)."""
        sql = ("SELECT worker_id, owner, instance, expires_ms, time_bound_ms "
               "FROM seqd_worker_lease ORDER BY worker_id")
        if self.db_path:
            with sqlite3.connect(self.db_path, timeout=10) as c:
                rows = c.execute(sql).fetchall()
            c.close()
        elif self.url:
            rows = mysql_run(self.url, sql)
        else:
            return None
        return {int(r[0]): (r[1], r[2], int(r[3]), int(r[4])) for r in rows}

    def has_lease_table(self):
        if self.db_path:
            with sqlite3.connect(self.db_path, timeout=10) as c:
                n = c.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND "
                              "name = 'seqd_worker_lease'").fetchone()[0]
            c.close()
            return n == 1
        return bool(mysql_run(self.url, "SHOW TABLES LIKE 'seqd_worker_lease'"))

    def assert_error(self, status, payload, want_status, want_code, what=""):
        self.assertEqual(status, want_status, "%s: %s" % (what, payload))
        code, message = error_of(payload)
        self.assertEqual(code, want_code, "%s: %s" % (what, payload))
        self.assertTrue(message, "%s: no message: %s" % (what, payload))
        return message

    def assert_cut_off(self, s, conn, ids, earliest, latest, what):
        """Takes IDs from `s` into `ids` until it refuses as its lease runs
        out: 503 not_serving naming the lease, no earlier than `earliest` -
        0.3 s (seqd's own count of its lease) and no later than `latest` +
        1.5 s (the cut-off after the last renewal that could succeed)."""
        status, payload = 200, b""
        while time.time() < latest + 5:
            status, payload = snowflake(s, 10, conn=conn)
            if status != 200:
                break
            ids += [int(x) for x in json.loads(payload)["ids"]]
            time.sleep(0.02)
        stopped = time.time()
        message = self.assert_error(status, payload, 503, "not_serving", what)
        self.assertIn("lease", message.lower())
        self.assertGreater(stopped, earliest - 0.3, "stopped %.2fs early" % (earliest - stopped))
        self.assertLess(stopped, latest + 1.5, "still serving %.2fs after the cut-off" % (
            stopped - latest))

    def wait_resumed(self, s, conn, timeout, pause, what):
        """The payload of the first ID `s` serves again within `timeout`
        (asked every `pause` s), every refusal before it 503 not_serving."""
        deadline = time.time() + timeout
        while True:
            status, payload = snowflake(s, conn=conn)
            if status == 200:
                return payload
            self.assert_error(status, payload, 503, "not_serving", what)
            self.assertLess(time.time(), deadline, "did not resume: %s\n%s" % (payload, s.logs()))
            time.sleep(pause)


class Snowflake(Base):
    def test_ids_decode_text_and_bad_input(self):
        s = self.start()
        first = wait_serving(s)[0]
        me = worker_id(s)
        self.assertGreaterEqual(me, 0)
        self.assertEqual(fields(first)[1], me)

        status, payload = snowflake(s)
        self.assertEqual(status, 200, payload)
        body = json.loads(payload)
        self.assertIsInstance(body["id"], str)
        self.assertEqual(body["ids"], [body["id"]])
        one = int(body["id"])
        self.assertGreater(one, first)

        batch = take(s, 1000)
        self.assertNotIn("id", json.loads(snowflake(s, 2)[1]))  # "id" for count 1 only
        self.assertEqual(len(set(batch)), 1000)
        self.assertTrue(all(a < b for a, b in zip(batch, batch[1:])), "not ascending")
        self.assertGreater(batch[0], one)
        full = take(s, 4096)  # a whole millisecond's worth and more
        self.assertTrue(all(a < b for a, b in zip(full, full[1:])))
        self.assertGreater(full[0], batch[-1])

        # decode: ours and Leaf's agree with each other and with the layout
        now_ms = time.time() * 1000
        for id_ in (batch[0], batch[-1], full[-1]):
            t, w, seq = fields(id_)
            status, d = s.get_json("/snowflake/decode/%d" % id_)
            self.assertEqual(status, 200, d)
            self.assertEqual(d, {"id": str(id_), "time_ms": t, "time": iso_utc(t), "worker": me,
                                 "sequence": seq})
            self.assertLess(abs(d["time_ms"] - now_ms), 5000)
            status, leaf = s.get_json("/decodeSnowflakeId?snowflakeId=%d" % id_)
            self.assertEqual(status, 200, leaf)
            self.assertEqual(set(leaf), {"timestamp", "sequenceId", "workerId"}, leaf)
            m = re.fullmatch(r"(\d+)\((\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})( UTC)?\)",
                             leaf["timestamp"])
            self.assertTrue(m, leaf)
            self.assertEqual(int(m.group(1)), t)
            self.assertEqual(m.group(2), iso_utc(t)[:-1].replace("T", " "))
            self.assertEqual((leaf["workerId"], leaf["sequenceId"]), (str(me), str(seq)))
        status, d = s.get_json("/snowflake/decode/0")
        self.assertEqual((status, d["time_ms"], d["worker"], d["sequence"]), (200, EPOCH_MS, 0, 0))
        top = (1 << 63) - 1  # every 63-bit number is an ID of the default layout
        status, d = s.get_json("/snowflake/decode/%d" % top)
        self.assertEqual(status, 200, d)
        self.assertEqual((d["id"], d["time_ms"], d["worker"], d["sequence"]),
                         (str(top), EPOCH_MS + (1 << 41) - 1, 1023, 4095))

        # text/plain: one ID per line
        status, text, r = s.request("GET", "/snowflake?count=5", headers={"Accept": "text/plain"})
        self.assertEqual(status, 200, text)
        self.assertTrue(r.getheader("Content-Type", "").startswith("text/plain"),
                        r.getheader("Content-Type"))
        lines = [int(x) for x in text.decode().split()]
        self.assertEqual(len(lines), 5)
        self.assertTrue(all(a < b for a, b in zip(lines, lines[1:])))
        self.assertGreater(lines[0], full[-1])
        self.assertEqual({fields(i)[1] for i in lines}, {me})

        # Leaf's bare ID
        status, text = s.get("/api/snowflake/get/order")
        self.assertEqual(status, 200, text)
        leaf_id = int(text.decode().strip())
        self.assertGreater(leaf_id, lines[-1])
        self.assertEqual(fields(leaf_id)[1], me)

        # bad input: 400 invalid_argument, never a 5xx
        for q in ("0", "-1", "4097", "abc", "99999999999999999999999", "", "1.5", "10abc"):
            status, payload = snowflake(s, q)
            self.assert_error(status, payload, 400, "invalid_argument", "count=" + q)
        for bad in ("abc", "-1", str(1 << 63), str(1 << 64), "12abc", "1.5"):
            status, payload = s.get("/snowflake/decode/" + bad)
            self.assert_error(status, payload, 400, "invalid_argument", "decode " + bad)
            status, payload = s.get("/decodeSnowflakeId?snowflakeId=" + bad)
            self.assertEqual(status, 400, "Leaf decode %s: %s" % (bad, payload))
        status, payload = s.get("/decodeSnowflakeId")
        self.assertEqual(status, 400, "Leaf decode without snowflakeId: %s" % payload)
        for bad_key in ("a%09b", "k" * 256):
            status, payload = s.get("/api/snowflake/get/" + bad_key)
            self.assertEqual(status, 400, "Leaf get %s: %s" % (bad_key, payload))
        status, payload, _ = s.request("POST", "/snowflake", "")
        self.assertTrue(400 <= status < 500, "POST /snowflake: %s %s" % (status, payload))
        # still serving, still ascending after the bad requests
        self.assertGreater(take(s, 1)[0], leaf_id)
        self.assertIsNone(s.proc.poll())
        self.assertEqual(s.stop(), 0)

    def test_max_count(self):
        s = self.start("--snowflake-max-count", "10")
        wait_serving(s)
        self.assertEqual(len(take(s, 10)), 10)
        status, payload = snowflake(s, 11)
        self.assert_error(status, payload, 400, "invalid_argument", "count=11 with max 10")
        self.assertEqual(s.stop(), 0)

    def test_processes_on_one_store_issue_unique_ids(self):
        procs = self.start_many(3)
        workers = []
        for s in procs:
            wait_serving(s)
            workers.append(worker_id(s))
        self.assertEqual(len(set(workers)), 3, "processes share a worker id: %s" % workers)
        self.assertTrue(all(w >= 0 for w in workers), workers)

        counts = (1000, 4096, 1, 257)
        per_client, errors = {}, []

        def client(n):
            conns = [s.conn() for s in procs]
            got = [[] for _ in procs]
            try:
                for _ in range(2):
                    for count in counts:
                        for i, s in enumerate(procs):
                            ids = take(s, count, conn=conns[i])
                            if fields(ids[0])[1] != workers[i] or fields(ids[-1])[1] != workers[i]:
                                raise AssertionError("process %d issued for another worker" % i)
                            got[i].extend(ids)
            except Exception as e:  # noqa: BLE001
                errors.append(repr(e))
            for c in conns:
                c.close()
            per_client[n] = got

        run_threads(client, 6)
        self.assertEqual(errors, [])
        total = 0
        every = set()
        for got in per_client.values():
            for i, ids in enumerate(got):
                self.assertTrue(all(a < b for a, b in zip(ids, ids[1:])),
                                "a client's IDs from process %d do not strictly increase" % i)
                self.assertEqual({fields(x)[1] for x in ids}, {workers[i]})
                total += len(ids)
                every.update(ids)
        self.assertGreaterEqual(total, 100000)
        self.assertEqual(len(every), total, "duplicate IDs across processes")
        for s in procs:
            self.assertEqual(s.stop(), 0)

    def test_same_owner_gets_its_worker_id_back(self):
        other = self.start("--snowflake-owner", "host-z:1")
        wait_serving(other)
        a = self.start("--snowflake-owner", "host-x:1")
        ids_a = wait_serving(a) + take(a, 500) + take(a, 3)
        w = worker_id(a)
        self.assertNotEqual(w, worker_id(other))
        self.assertEqual({fields(i)[1] for i in ids_a}, {w})
        last = max(ids_a)
        self.assertEqual(a.stop(), 0)

        rows = self.lease_rows()
        if rows is not None:
            owner, _, expires_ms, time_bound_ms = rows[w]
            self.assertEqual(owner, "host-x:1")
            self.assertEqual(expires_ms, 0, "the lease was not released: %s" % (rows[w],))
            self.assertEqual(time_bound_ms, fields(last)[0],
                             "the release must store the exact last issued timestamp")

        # Another owner takes a never-used id, not the released one ...
        y = self.start("--snowflake-owner", "host-y:1")
        wait_serving(y)
        self.assertNotIn(worker_id(y), (w, worker_id(other)))
        # ... and host-x:1 gets its id back at once, above its last ID.
        b = self.start("--snowflake-owner", "host-x:1")
        ids_b = wait_serving(b, timeout=5) + take(b, 100)
        self.assertEqual(worker_id(b), w)
        self.assertEqual({fields(i)[1] for i in ids_b}, {w})
        self.assertGreater(min(ids_b), last)
        self.assertGreater(fields(min(ids_b))[0], fields(last)[0])
        # The same owner twice at once (one hostname in two containers): the
        # live lease is never shared; the second gets an id of its own.
        twin = self.start("--snowflake-owner", "host-x:1")
        ids_twin = wait_serving(twin) + take(twin, 100)
        self.assertNotIn(worker_id(twin), (w, worker_id(y), worker_id(other)))
        self.assertFalse(set(ids_twin) & set(ids_b))
        for s in (twin, b, y, other):
            self.assertEqual(s.stop(), 0)

    def test_kill9_takeover_waits_for_expiry_and_the_time_bound(self):
        if not (self.db_path or self.url):
            self.skipTest("ids 0 and 1 of the shared table may be held by other suites")
        lease = 3000  # long enough that C surely starts before A's lease ends
        a = self.start("--snowflake-worker-bits", "1", lease_ms=lease)
        ids_a = wait_serving(a)
        b = self.start("--snowflake-worker-bits", "1", lease_ms=lease)
        ids_b = wait_serving(b)
        wa, wb = worker_id(a), worker_id(b)
        self.assertEqual({wa, wb}, {0, 1})
        self.assertEqual({fields(i, 1)[1] for i in ids_a}, {wa})
        # decode knows the layout: 1 worker bit, so IDs stop at 2^54
        status, d = a.get_json("/snowflake/decode/%d" % ((1 << 54) - 1))
        self.assertEqual((status, d.get("worker"), d.get("sequence")), (200, 1, 4095), d)
        status, payload = a.get("/snowflake/decode/%d" % (1 << 54))
        self.assert_error(status, payload, 400, "invalid_argument", "decode 2^54")

        conn = a.conn()
        end = time.time() + 0.3
        while time.time() < end:
            ids_a += take(a, 200, conn=conn)
        conn.close()
        a.stop(signal.SIGKILL)
        killed = time.time()
        rows = self.lease_rows()
        if rows is not None:
            _, _, expires_ms, time_bound_ms = rows[wa]
            self.assertGreater(expires_ms, killed * 1000, "A's lease already over?")
            self.assertGreaterEqual(time_bound_ms, fields(max(ids_a), 1)[0])

        c = self.start("--snowflake-worker-bits", "1", lease_ms=lease)
        status, payload = snowflake(c)
        message = self.assert_error(status, payload, 503, "not_serving", "C before A's expiry")
        self.assertEqual(worker_id(c), -1)
        # without a worker id it still serves segment IDs
        c.create_key("sf_k9_%s" % RUN, 100)
        self.assertEqual(len(c.ids("sf_k9_%s" % RUN, 3)), 3)
        deadline = time.time() + lease / 1000.0 + 10
        while True:
            status, payload = snowflake(c)
            if status == 200:
                served = time.time()
                break
            self.assert_error(status, payload, 503, "not_serving", "C waiting")
            self.assertLess(time.time(), deadline, "C never took over: %s\n%s" % (
                payload, c.logs()))
            time.sleep(0.05)
        ids_c = [int(json.loads(payload)["id"])] + take(c, 1000)
        self.assertEqual(worker_id(c), wa, "C did not take over A's worker id")
        self.assertEqual({fields(i, 1)[1] for i in ids_c}, {wa})
        self.assertGreater(min(ids_c), max(ids_a), "C reissued A's IDs")
        if rows is not None:
            # C claimed only after A's lease expired, and issues above A's bound
            self.assertGreaterEqual(served * 1000, expires_ms - 5, message)
            self.assertGreater(fields(min(ids_c), 1)[0], time_bound_ms)
        # B kept its id and kept serving throughout
        self.assertEqual(worker_id(b), wb)
        self.assertGreater(take(b, 10)[0], max(ids_b))
        for s in (b, c):
            self.assertEqual(s.stop(), 0)

    def test_taken_over_id_is_given_up_for_another(self):
        # Another instance takes this process's row (as if its lease had run
        # out): the next renewal is refused, and the process leases another id
        # and goes on, its IDs still strictly increasing.
        if not (self.db_path or self.url):
            self.skipTest("needs the %s client to write the lease table" % KIND)
        s = self.start("--snowflake-owner", "host-t:1")
        conn = s.conn()
        ids = wait_serving(s) + take(s, 100, conn=conn)
        w = worker_id(s)
        sql = ("UPDATE seqd_worker_lease SET owner = 'intruder:1', instance = 'intruder', "
               "expires_ms = expires_ms + 600000 WHERE worker_id = %d" % w)
        if self.db_path:
            with sqlite3.connect(self.db_path, timeout=10) as c:
                c.execute(sql)
            c.close()
        else:
            mysql_run(self.url, sql)
        deadline = time.time() + 3 * LEASE_MS / 1000.0
        messages = set()
        while fields(ids[-1])[1] == w:
            self.assertLess(time.time(), deadline, "still issuing as worker %d: %s\n%s" % (
                w, messages, s.logs()))
            status, payload = snowflake(s, 10, conn=conn)
            if status == 200:
                ids += [int(x) for x in json.loads(payload)["ids"]]
            else:
                messages.add(self.assert_error(status, payload, 503, "not_serving", "switching"))
            time.sleep(0.01)
        ids += take(s, 1000, conn=conn)
        conn.close()
        w2 = worker_id(s)
        self.assertNotEqual(w2, w)
        self.assertEqual(fields(ids[-1])[1], w2)
        self.assertTrue(all(a < b for a, b in zip(ids, ids[1:])), "IDs went back at the switch")
        rows = self.lease_rows()
        self.assertEqual(rows[w][:2], ("intruder:1", "intruder"))
        self.assertEqual(rows[w2][0], "host-t:1")
        self.assertEqual(s.stop(), 0)
        rows = self.lease_rows()
        self.assertEqual(rows[w][:2], ("intruder:1", "intruder"), "released a row it lost")
        self.assertEqual(rows[w2][2], 0, "the new id was not released")

    def test_store_locked_stops_and_resumes(self):
        # SQLite's outage: another connection holds the write lock, so
        # renewals fail (after the busy timeout) until it lets go.
        if not self.db_path:
            self.skipTest("SQLite only (MariaDBOutage stops MariaDB)")
        s = self.start()
        conn = s.conn()
        before = wait_serving(s) + take(s, 100, conn=conn)
        w = worker_id(s)
        left = metrics(s)["seqd_snowflake_lease_seconds_left"]
        earliest = time.time() + left
        lock = sqlite3.connect(self.db_path, timeout=10, isolation_level=None)
        try:
            lock.execute("BEGIN EXCLUSIVE")
            latest = time.time() + LEASE_MS * 0.9 / 1000.0
            self.assert_cut_off(s, conn, before, earliest, latest, "store locked")
            self.assertEqual(metrics(s)["seqd_snowflake_serving"], 0)
        finally:
            lock.execute("ROLLBACK")
            lock.close()
        # A renewal may sit in the 5 s busy timeout.
        payload = self.wait_resumed(s, conn, 15, 0.05, "after the lock")
        after = [int(json.loads(payload)["id"])] + take(s, 100, conn=conn)
        conn.close()
        self.assertEqual(worker_id(s), w)
        self.assertEqual({fields(i)[1] for i in after}, {w})
        self.assertGreater(min(after), max(before))
        self.assertEqual(s.stop(), 0)

    def test_layout_that_cannot_hold_now_refuses_to_start(self):
        tomorrow = str(int(time.time() * 1000) + 86400000)
        for extra in (("--snowflake-time-bits", "30"),  # ran out in 2010
                      ("--snowflake-sequence-bits", "13"),  # 41 + 10 + 13 > 63
                      ("--snowflake-epoch-ms", tomorrow)):  # IDs would be negative
            args = [SEQD, "--store", self.store, "--http-port", "0", "--tcp-port", "-1", *extra]
            try:
                p = subprocess.run(args, capture_output=True, text=True, timeout=15)
            except subprocess.TimeoutExpired:  # run() killed it
                self.fail("seqd started with %s" % (extra,))
            self.assertNotEqual(p.returncode, 0, "started with %s: %s" % (extra, p.stdout))
            self.assertIn("snowflake", (p.stdout + p.stderr).lower())

    def test_snowflake_off(self):
        s = self.start("--snowflake", "off")
        for path in ("/snowflake", "/snowflake?count=3", "/snowflake/decode/1",
                     "/api/snowflake/get/order", "/decodeSnowflakeId?snowflakeId=1"):
            status, payload = s.get(path)
            self.assertEqual(status, 404, "%s: %s" % (path, payload))
        status, payload = s.get("/snowflake")
        self.assert_error(status, payload, 404, "not_found", "/snowflake when off")
        key = "sf_off_%s" % RUN
        s.create_key(key, 100)
        got = s.ids(key, 5)
        self.assertEqual(got, sorted(set(got)))
        # the gauges are left out (nothing to alert on)
        m = metrics(s)
        self.assertNotIn("seqd_snowflake_worker_id", m)
        self.assertNotIn("seqd_snowflake_serving", m)
        self.assertEqual(m.get("seqd_snowflake_serving", 0), 0)
        self.assertEqual(m["seqd_snowflake_ids_issued_total"], 0)
        # no lease: nothing written to the lease table
        if self.db_path or self.url:
            self.assertTrue(not self.has_lease_table() or not self.lease_rows())
        self.assertEqual(s.stop(), 0)

    def test_metrics(self):
        s = self.start()
        issued = len(wait_serving(s))
        issued += len(take(s, 1)) + len(take(s, 1000)) + len(take(s, 4096))
        status, text, _ = s.request("GET", "/snowflake?count=7", headers={"Accept": "text/plain"})
        self.assertEqual(status, 200)
        issued += len(text.split())
        status, text = s.get("/api/snowflake/get/k")
        self.assertEqual(status, 200)
        issued += 1
        # neither errors nor decodes hand out IDs
        self.assertEqual(snowflake(s, 0)[0], 400)
        self.assertEqual(snowflake(s, 4097)[0], 400)
        self.assertEqual(s.get("/snowflake/decode/%s" % text.decode().strip())[0], 200)
        m = metrics(s)
        self.assertGreaterEqual(m["seqd_snowflake_worker_id"], 0)
        self.assertEqual(fields(int(text))[1], m["seqd_snowflake_worker_id"])
        self.assertEqual(m["seqd_snowflake_serving"], 1)
        self.assertEqual(m["seqd_snowflake_ids_issued_total"], issued)
        self.assertGreater(m["seqd_snowflake_lease_seconds_left"], 0)
        self.assertLessEqual(m["seqd_snowflake_lease_seconds_left"], LEASE_MS / 1000.0)
        self.assertEqual(m["seqd_snowflake_parked_requests"], 0)
        self.assertTrue(any(k.startswith("seqd_snowflake_lease_renewals_total{") and 'result="ok"'
                            in k and v >= 1 for k, v in m.items()), "no successful renewal counted")
        ops = [k for k in m if k.startswith("seqd_requests_total{") and 'op="snowflake"' in k]
        self.assertTrue(ops, "requests not counted with op snowflake")
        # renewals keep it serving past several lease lengths
        end = time.time() + 2 * LEASE_MS / 1000.0
        while time.time() < end:
            issued += len(take(s, 10))
            time.sleep(0.1)
        m = metrics(s)
        self.assertEqual(m["seqd_snowflake_ids_issued_total"], issued)
        self.assertEqual(m["seqd_snowflake_serving"], 1)
        self.assertEqual(s.stop(), 0)


class MariaDBOutage(Base):
    """MariaDB stops: snowflake stops within lease - lease/10; MariaDB back:
    the same worker id serves again, without restarting seqd."""

    def test_outage_stops_and_resumes_snowflake(self):
        # Stopping MariaDB takes about 2 s: a lease long enough that the cut-off
        # (lease - lease/10 after the last renewal was sent) falls after it.
        lease = 6000
        s = self.start(lease_ms=lease)
        before = wait_serving(s)
        w = worker_id(s)
        conn = s.conn()
        before += take(s, 100, conn=conn)
        # seqd's own count of how long it may issue without another renewal
        left = metrics(s)["seqd_snowflake_lease_seconds_left"]
        earliest = time.time() + left
        self.assertGreater(left, 0)
        self.assertLessEqual(left, lease * 0.9 / 1000.0)
        mariadb("stop")
        try:
            latest = time.time() + lease * 0.9 / 1000.0  # no renewal can succeed from here
            # It served on its valid lease while the store was down, and stopped in time.
            self.assert_cut_off(s, conn, before, earliest, latest, "during the outage")
            m = metrics(s)
            self.assertEqual(m["seqd_snowflake_serving"], 0)
            self.assertLessEqual(m["seqd_snowflake_lease_seconds_left"], 0)
            self.assertEqual(m["seqd_snowflake_worker_id"], w)
            self.assertGreaterEqual(m['seqd_snowflake_lease_renewals_total{result="error"}'], 1)
            # and it stays down while the store is
            time.sleep(0.5)
            status, payload = snowflake(s, conn=conn)
            self.assert_error(status, payload, 503, "not_serving", "later in the outage")
        finally:
            mariadb("restart")
        payload = self.wait_resumed(s, conn, 30, 0.1, "after the restart")
        after = [int(json.loads(payload)["id"])] + take(s, 1000, conn=conn)
        conn.close()
        self.assertEqual(worker_id(s), w)
        self.assertEqual({fields(i)[1] for i in after}, {w})
        self.assertGreater(min(after), max(before))
        self.assertEqual(metrics(s)["seqd_snowflake_serving"], 1)
        self.assertEqual(s.stop(), 0)


if __name__ == "__main__":
    KIND = store_from_argv(required=True)
    unittest.main(defaultTest="Snowflake" if KIND == "sqlite" else None)
