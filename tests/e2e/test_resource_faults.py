"""Resource faults: the store runs out of something, or
refuses writes, while seqd serves. Each fault must give clean answers:
HTTP 503 with Retry-After and error store_unavailable, binary
STORE_UNAVAILABLE, a RESP error, with no internals (hosts, users, schema,
SQL, paths) in the text; a log line that names the cause; recovery without
a restart once the fault ends; and never an ack for what was not stored
(every acked message is in the store afterwards, no ID served twice).

  (a) SQLite on a full filesystem (a 2 MiB tmpfs filled with a file);
  (b) MariaDB SET GLOBAL read_only = 1 (the seqd user has no SUPER / READ
      ONLY ADMIN: scripts/mariadb.sh grants only on its databases);
  (c) MariaDB max_connections reached (the test hogs the free connections
      and kills seqd's, which must reconnect);
  (d) a Galera-style host list whose first host stops resolving (a name
      added to /etc/hosts, then removed): served through the next host;
      clean errors once no host is left.

Needs root (mount, /etc/hosts) and mariadbd (a server of the test's own,
scripts/mariadb.sh in a temp dir, so no RESOURCE_LOCK).

Usage: python3 tests/e2e/test_resource_faults.py [unittest args]
Environment: SEQD_BINARY.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Seqd, free_port  # noqa: E402
from lib.mariadb import MariaDB  # noqa: E402
from lib.wire import call, ids_of, next_ids_payload, resp_call, send_payload  # noqa: E402

NEXT_IDS, SEND = 0x02, 0x20
OK, STORE_UNAVAILABLE = 0, 4
HOSTS = "/etc/hosts"
HOSTS_MARK = "# seqd test_resource_faults"
# Words that must never reach a client: the store's kind, driver and SQL.
INTERNAL_WORDS = [b"sqlite", b"SQLITE", b"mysql", b"MySQL", b"MariaDB", b"SQL", b"INSERT",
                  b"UPDATE", b"leaf_alloc", b"seqd_test", b"read-only", b"read_only",
                  b"Too many connections", b"disk", b"full", b"errno", b"127.0.0.1",
                  b"rfdb-"]


def full_log(s):
    with open(s.log.name, errors="replace") as f:
        return f.read()


class Ledger:
    """What seqd acknowledged: IDs per key, messages per conversation."""

    def __init__(self):
        self.mu = threading.Lock()
        self.ids = {}
        self.acked = {}
        self.errors = 0

    def add_ids(self, key, ids):
        with self.mu:
            self.ids.setdefault(key, []).extend(ids)

    def add_msg(self, conv, cmid):
        with self.mu:
            self.acked.setdefault(conv, set()).add(cmid)


class Client:
    """One seqd's three listeners, with checks of every error answer."""

    def __init__(self, test, s, tcp_port, resp_port, secrets):
        self.test, self.s, self.secrets = test, s, list(INTERNAL_WORDS) + secrets
        self.tcp = socket.create_connection(("127.0.0.1", tcp_port), timeout=15)
        self.resp = socket.create_connection(("127.0.0.1", resp_port), timeout=15)
        self.rid = 0
        test.addCleanup(self.tcp.close)
        test.addCleanup(self.resp.close)

    def clean(self, where, text):
        for w in self.secrets:
            self.test.assertNotIn(w, text, "%s shows internals (%r): %r" % (where, w, text[:300]))

    def next_rid(self):
        self.rid += 1
        return self.rid

    # Each returns True when acked (and records it), False on a clean error.
    def http_seq(self, ledger, key, count=1):
        status, body, r = self.s.request("GET", "/seq/%s?count=%d" % (key, count))
        if status == 200:
            ids = []
            for rg in json.loads(body)["ranges"]:
                ids.extend(range(rg["first"], rg["last"] + 1))
            ledger.add_ids(key, ids)
            return True
        self.http_error("GET /seq", status, body, r)
        return False

    def http_send(self, ledger, conv, cmid, payload="x"):
        status, body, r = self.s.request("POST", "/conversations/%s/messages" % conv,
                                         {"sender_id": "u1", "client_msg_id": cmid,
                                          "content_type": 1, "payload": payload})
        if status in (200, 201):
            ledger.add_msg(conv, cmid)
            return True
        self.http_error("POST messages", status, body, r)
        return False

    def http_error(self, where, status, body, r):
        self.test.assertEqual(status, 503, "%s: %s %r" % (where, status, body[:300]))
        self.test.assertTrue(r.getheader("Retry-After"), "%s: 503 without Retry-After" % where)
        self.test.assertEqual(json.loads(body)["error"]["code"], "store_unavailable", body)
        self.clean(where, body)

    def bin_ids(self, ledger, key, count=1):
        status, rest = call(self.tcp, NEXT_IDS, self.next_rid(), next_ids_payload(key, count))
        if status == OK:
            ledger.add_ids(key, ids_of(rest))
            return True
        self.test.assertEqual(status, STORE_UNAVAILABLE, "NEXT_IDS: %d %r" % (status, rest))
        self.clean("binary NEXT_IDS", rest)
        return False

    def bin_send(self, ledger, conv, cmid, payload=b"x"):
        status, rest = call(self.tcp, SEND, self.next_rid(),
                            send_payload(conv, "u1", cmid, payload))
        if status == OK:
            ledger.add_msg(conv, cmid)
            return True
        self.test.assertEqual(status, STORE_UNAVAILABLE, "SEND: %d %r" % (status, rest))
        self.clean("binary SEND", rest)
        return False

    def resp_incr(self, ledger, key):
        line = resp_call(self.resp, "INCR", key)
        if line.startswith(b":"):
            ledger.add_ids(key, [int(line[1:].strip())])
            return True
        self.test.assertTrue(line.startswith(b"-"), line)
        self.test.assertIn(b"unavailable", line)
        self.clean("RESP INCR", line)
        return False

    def round(self, ledger, tag):
        """One request of each kind on fresh keys / new messages; the list of
        which ones were acked."""
        return [self.http_seq(ledger, "rf_h%s" % tag), self.bin_ids(ledger, "rf_b%s" % tag),
                self.resp_incr(ledger, "rf_r%s" % tag),
                self.http_send(ledger, "rf_conv", "h" + tag),
                self.bin_send(ledger, "rf_conv", "b" + tag)]


class ResourceFaults(unittest.TestCase):
    mdb_dir = None
    db = None

    @classmethod
    def tearDownClass(cls):
        if cls.db:
            cls.db.stop()
        if cls.mdb_dir:
            shutil.rmtree(cls.mdb_dir, ignore_errors=True)

    # ------------------------------------------------------------- helpers

    def mariadb_url(self):
        """A MariaDB of this test class's own (started on first use)."""
        cls = type(self)
        if cls.db is None:
            cls.mdb_dir = tempfile.mkdtemp(prefix="rf-mdb-", dir="/tmp")
            cls.db = MariaDB(cls.mdb_dir)
        return cls.db.url

    def root_sql(self, sql):
        """`sql`'s output (tab-separated rows), run as root."""
        rows = self.db.query(sql, database=None, timeout=30)
        return "\n".join("\t".join(row) for row in rows)

    def kill_seqd_connections(self):
        self.root_sql("KILL CONNECTION USER seqd")

    def start(self, store, *extra, deadline_ms=300):
        tcp_port, resp_port = free_port(), free_port()
        s = Seqd(store, "--tcp-port", str(tcp_port), "--resp-port", str(resp_port),
                 "--auto-keys", "rf_:1", "--max-step", "3",
                 "--wait-deadline-ms", str(deadline_ms),
                 "--db-threads", "2", "--snowflake", "off", *extra)
        self.addCleanup(s.__exit__)
        return s, tcp_port, resp_port

    def wait_round(self, c, ledger, tag, want, timeout=20):
        """Rounds until each of `want(acked list)` holds; returns the rounds."""
        deadline = time.time() + timeout
        n = 0
        while True:
            n += 1
            acked = c.round(ledger, "%s%d" % (tag, n))
            if want(acked):
                return n
            self.assertLess(time.time(), deadline, "%s: rounds never got %s" % (tag, acked))
            time.sleep(0.2)

    def check_ledger(self, s, ledger):
        for key, ids in ledger.ids.items():
            self.assertEqual(len(ids), len(set(ids)), "%s: an ID served twice" % key)
        for conv, cmids in ledger.acked.items():
            messages, frm = [], 1
            while True:  # pages: a pull answers about 1 MiB at most
                status, body = s.get_json("/conversations/%s/messages?from=%d&limit=1000" %
                                          (conv, frm))
                self.assertEqual(status, 200, body)
                messages.extend(body["messages"])
                if body["is_end"] or not body["messages"]:
                    break
                frm = body["messages"][-1]["seq"] + 1
            stored = [m["client_msg_id"] for m in messages]
            self.assertEqual(len(stored), len(set(stored)), "a message stored twice")
            missing = cmids - set(stored)
            self.assertFalse(missing, "acked but not stored: %s" % sorted(missing))
            seqs = [m["seq"] for m in messages]
            self.assertEqual(seqs, list(range(1, len(seqs) + 1)), "holes in the seqs")

    def loader(self, c_factory, ledger, stop):
        """A thread sending one key and one conversation in a loop, so a
        fault begins and ends under load; errors must be clean."""
        failures = []

        def run():
            c = c_factory()
            n = 0
            try:
                while not stop.is_set():
                    n += 1
                    c.http_seq(ledger, "rf_load", 2)
                    c.bin_ids(ledger, "rf_load", 1)
                    c.resp_incr(ledger, "rf_load")
                    c.bin_send(ledger, "rf_lconv", "l%d" % n)
                    time.sleep(0.01)
            except Exception as e:  # noqa: BLE001 - reported by the test
                failures.append(e)

        t = threading.Thread(target=run, daemon=True)
        t.start()
        return t, failures

    def fault_cycle(self, s, tcp_port, resp_port, secrets, begin, end, log_words,
                    reads_ok=True):
        """Serves, begins the fault (all requests that need the store fail
        cleanly), ends it (served again, no restart), checks the ledger."""
        ledger = Ledger()
        c = Client(self, s, tcp_port, resp_port, secrets)
        self.wait_round(c, ledger, "pre", all)
        stop = threading.Event()
        t, failures = self.loader(lambda: Client(self, s, tcp_port, resp_port, secrets), ledger,
                                  stop)
        try:
            time.sleep(0.3)
            t0 = time.time()
            begin()
            t1 = time.time()
            self.wait_round(c, ledger, "during", lambda acked: not any(acked))
            t2 = time.time()
            # Two more rounds: every kind fails, consistently.
            for i in range(2):
                self.assertEqual(c.round(ledger, "dur%d" % i), [False] * 5)
            # Reads need no new row: served when the store can still read.
            status, body, r = s.request("GET", "/conversations/rf_conv/messages?from=1")
            if reads_ok:
                self.assertEqual(status, 200, body)
            else:
                c.http_error("GET messages", status, body, r)
            ready = s.get("/readyz")
            self.assertIn(ready[0], (200, 503), ready)
            c.clean("/readyz", ready[1])
            end()
            t3 = time.time()
            self.wait_round(c, ledger, "post", all)
            print("\n  %s: fault set up in %.1f s, all failing %.1f s later, recovered %.1f s "
                  "after it ended; /readyz during it: %d" % (
                      self.id().split(".")[-1], t1 - t0, t2 - t1, time.time() - t3, ready[0]),
                  file=sys.stderr)
        finally:
            stop.set()
            t.join(timeout=30)
        self.assertFalse(failures, failures)
        self.assertIsNone(s.proc.poll(), "seqd exited")
        self.check_ledger(s, ledger)
        logs = full_log(s)
        if os.environ.get("RF_SHOW_LOG"):
            print(logs, file=sys.stderr)
        for w in log_words:
            self.assertIn(w, logs, "the log should name the cause")

    # --------------------------------------------------------------- tests

    def test_a_sqlite_full_filesystem(self):
        self.assertEqual(os.geteuid(), 0, "needs root to mount a tmpfs")
        tmp = tempfile.mkdtemp(prefix="rf-sqlite-")
        self.addCleanup(shutil.rmtree, tmp, True)
        mnt = os.path.join(tmp, "vol")
        os.mkdir(mnt)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mnt], check=True)
        self.addCleanup(subprocess.run, ["umount", "-l", mnt])
        s, tcp_port, resp_port = self.start("sqlite:" + os.path.join(mnt, "seqd.db"))
        filler = os.path.join(mnt, "filler")

        def fill():
            fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                while os.write(fd, b"\0" * 4096) > 0:
                    pass
            except OSError:
                pass  # ENOSPC: full
            finally:
                os.close(fd)
            # Big messages until the WAL's own slack is used up too.
            c = Client(self, s, tcp_port, resp_port, [mnt.encode()])
            for i in range(200):
                if not c.http_send(fill_ledger, "rf_fill", "f%d" % i, "y" * 8000):
                    return

        fill_ledger = Ledger()
        self.fault_cycle(s, tcp_port, resp_port, [mnt.encode()], fill,
                         lambda: os.unlink(filler), ["database or disk is full"])
        self.check_ledger(s, fill_ledger)

    def test_b_mariadb_read_only(self):
        url = self.mariadb_url()
        grants = self.root_sql("SHOW GRANTS FOR 'seqd'@'127.0.0.1'")
        self.assertNotIn("SUPER", grants)
        self.assertNotIn("READ ONLY ADMIN", grants)
        self.assertNotIn("ALL PRIVILEGES ON *.*", grants)
        s, tcp_port, resp_port = self.start(url)
        self.fault_cycle(s, tcp_port, resp_port, self.url_secrets(url),
                         lambda: self.root_sql("SET GLOBAL read_only = 1"),
                         lambda: self.root_sql("SET GLOBAL read_only = 0"), ["read-only"])

    def test_c_mariadb_max_connections(self):
        url = self.mariadb_url()
        s, tcp_port, resp_port = self.start(url)
        hogs = []
        self.root_sql("CREATE USER IF NOT EXISTS 'rf_hog'@'localhost'")
        client = shutil.which("mariadb") or shutil.which("mysql")
        sock = self.db.socket

        def hog_all():
            # Authenticated connections of a user without SUPER fill the
            # server (unauthenticated ones would time out); root keeps the
            # one extra connection MariaDB holds for SUPER. The cap goes
            # down to what the hogs hold (10, MariaDB's least) once they
            # are in, and seqd's connections are killed: they cannot come
            # back.
            for _ in range(10):
                hogs.append(subprocess.Popen(
                    [client, "--no-defaults", "--protocol=socket", "--socket=" + sock,
                     "-urf_hog", "-N", "-B", "-e", "SELECT SLEEP(120)"],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            deadline = time.time() + 10
            while int(self.root_sql("SELECT COUNT(*) FROM information_schema.PROCESSLIST "
                                    "WHERE USER = 'rf_hog'")) < 10:
                self.assertLess(time.time(), deadline, "the hogs did not connect")
                time.sleep(0.05)
            # One root session: nothing can connect between the two.
            self.root_sql("SET GLOBAL max_connections = 10; KILL CONNECTION USER seqd")

        def free():
            for p in hogs:
                if p.poll() is None:
                    p.kill()
                p.wait()
            hogs.clear()

        self.addCleanup(free)
        self.addCleanup(lambda: self.root_sql("SET GLOBAL max_connections = 500"))
        self.fault_cycle(s, tcp_port, resp_port, self.url_secrets(url), hog_all, free,
                         ["Too many connections"], reads_ok=False)

    def test_d_first_host_stops_resolving(self):
        url = self.mariadb_url()
        u = urllib.parse.urlparse(url)
        self.addCleanup(self.hosts_remove, "rfdb-a.test")
        self.addCleanup(self.hosts_remove, "rfdb-b.test")
        self.hosts_add("rfdb-a.test")
        self.hosts_add("rfdb-b.test")
        multi = "mysql://seqd:seqd@rfdb-a.test:%d,rfdb-b.test:%d%s" % (u.port, u.port, u.path)
        # Auto-creating a key takes several round trips: the default
        # deadline, so that a loaded machine does not time them out.
        s, tcp_port, resp_port = self.start(multi, deadline_ms=1000)
        ledger = Ledger()
        c = Client(self, s, tcp_port, resp_port, self.url_secrets(url))
        self.wait_round(c, ledger, "pre", all)
        # The first host stops resolving: the pool moves to the next one.
        self.hosts_remove("rfdb-a.test")
        self.kill_seqd_connections()
        # Killed connections idle in the pool are found dead when next used
        # (a clean 503 if replacing one outlasts the 300 ms deadline): then
        # steady service through the next host.
        self.wait_round(c, ledger, "next", all, timeout=10)
        steady, n, deadline = 0, 0, time.time() + 20
        while steady < 2:
            self.assertLess(time.time(), deadline, "no steady service through the next host")
            n += 1
            steady = steady + 1 if all(c.round(ledger, "b%d" % n)) else 0
        # A seqd started now, its first host unknown from the start, serves.
        s2, tcp2, resp2 = self.start(multi, deadline_ms=1000)
        c2 = Client(self, s2, tcp2, resp2, self.url_secrets(url))
        self.wait_round(c2, ledger, "fresh", all)
        s2.stop()
        # No host left: clean errors, then service again once one is back.
        self.hosts_remove("rfdb-b.test")
        self.kill_seqd_connections()
        self.wait_round(c, ledger, "none", lambda acked: not any(acked))
        self.hosts_add("rfdb-a.test")
        self.wait_round(c, ledger, "back", all)
        self.assertIsNone(s.proc.poll(), "seqd exited")
        self.check_ledger(s, ledger)
        # One log line names every host's cause, not just the first's.
        lines = [ln for ln in full_log(s).splitlines() if "no host of 2" in ln]
        self.assertTrue(lines, "no log line for 'no host left'")
        self.assertTrue(any("rfdb-a.test" in ln and "rfdb-b.test" in ln for ln in lines),
                        "the log should name both hosts' failures: %s" % lines[-1])

    # ------------------------------------------------------------ /etc/hosts

    def url_secrets(self, url):
        u = urllib.parse.urlparse(url)
        return [u.username.encode(), u.path.strip("/").encode(), str(u.port).encode()]

    def hosts_add(self, name):
        with open(HOSTS, "a") as f:
            f.write("127.0.0.1 %s %s\n" % (name, HOSTS_MARK))

    def hosts_remove(self, name):
        """Removes our line for `name` in place (/etc/hosts may be a bind
        mount: never replaced)."""
        with open(HOSTS, "r+") as f:
            lines = f.readlines()
            keep = [ln for ln in lines if not (HOSTS_MARK in ln and (" %s " % name) in ln)]
            if keep != lines:
                f.seek(0)
                f.writelines(keep)
                f.truncate()


if __name__ == "__main__":
    unittest.main()
