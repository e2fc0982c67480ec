"""A row lock held by a frozen transaction delays only its own key.

seqd reserves the segments of several keys in one MariaDB transaction. When
another transaction holds one of those rows and never ends (a seqd instance
SIGSTOPped between its UPDATE and its COMMIT, or any session that sits on
SELECT ... FOR UPDATE), the batch waits at most a short lock wait (1 s), is
rolled back, and runs one key at a time: the other keys are answered within
about a second, the locked key when its row is free (or 503 after its own,
normal wait). Without that, every key of the batch waits for the lock
(innodb_lock_wait_timeout, 50 s by default).

The test makes instance Y put the locked key K and 20 other keys into one
reservation batch: Y has one reservation flush (--db-threads 2), and a decoy
key's row, locked by a helper session, keeps that flush busy until every
request has queued behind it. Two holders of K's row:
  - a helper mysql session (SELECT ... FOR UPDATE), deterministic;
  - a real seqd instance X, SIGSTOPped while it holds K's row inside its
    own reservation transaction (observed by a probe: FOR UPDATE NOWAIT),
    released by SIGKILL (the server then rolls X's transaction back).
Each asserts the other keys' latencies (< 2.5 s; the lock is held 5 s), K's
(not before its row was free) and that no ID is served twice.

Needs SEQD_TEST_MYSQL_URL (scripts/mariadb.sh).
"""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Seqd, store_spec  # noqa: E402

RUN = "%06x" % random.getrandbits(24)
OTHERS = 20
HOLD_S = 5.0  # how long K's row stays locked once the batch runs
FAST_S = 2.5  # the other keys must be answered within this (1 s wait + the per-key pass)


def client_args():
    u = urllib.parse.urlparse(store_spec("mariadb", None))
    client = shutil.which("mariadb") or shutil.which("mysql")
    if not client:
        raise RuntimeError("neither the mariadb nor the mysql client is installed")
    env = dict(os.environ, MYSQL_PWD=urllib.parse.unquote(u.password or ""))
    args = [client, "--no-defaults", "--protocol=TCP", "-h", u.hostname or "127.0.0.1",
            "-P", str(u.port or 3306), "-u", urllib.parse.unquote(u.username or ""),
            "-N", "-B", u.path.lstrip("/")]
    return args, env


def sql(statement):
    args, env = client_args()
    r = subprocess.run(args + ["-e", statement], env=env, capture_output=True, text=True,
                       timeout=30)
    if r.returncode != 0:
        raise RuntimeError("%s: %s" % (statement, r.stderr))
    return r.stdout


class RowLock:
    """A mysql session holding `key`'s leaf_alloc row (SELECT ... FOR UPDATE)
    until release()."""

    def __init__(self, key):
        args, env = client_args()
        self.proc = subprocess.Popen(args + ["--unbuffered"], env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.proc.stdin.write("BEGIN; SELECT max_id FROM leaf_alloc WHERE biz_tag = '%s' "
                              "FOR UPDATE; SELECT 'locked';\n" % key)
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("lock session ended: " + self.proc.stderr.read())
            if line.strip() == "locked":
                return

    def release(self):
        if self.proc.poll() is None:
            self.proc.stdin.write("ROLLBACK;\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        self.proc.stdout.close()
        self.proc.stderr.close()


def waiting_statements():
    """Statements on leaf_alloc running now in other sessions of the test
    user (the lock holders are idle: one running is waiting for a lock)."""
    return int(sql("SELECT COUNT(*) FROM information_schema.PROCESSLIST "
                   "WHERE ID <> CONNECTION_ID() AND INFO LIKE '%leaf_alloc%'").strip())


def row_locked(key):
    """True if another transaction holds `key`'s row (probed without waiting)."""
    args, env = client_args()
    r = subprocess.run(args + ["-e", "SELECT max_id FROM leaf_alloc WHERE biz_tag = '%s' "
                               "FOR UPDATE NOWAIT" % key],
                       env=env, capture_output=True, text=True, timeout=30)
    if r.returncode == 0:
        return False
    if "1205" not in r.stderr:
        raise RuntimeError(r.stderr)
    return True


def metric(s, name):
    status, payload = s.get("/metrics")
    assert status == 200
    for line in payload.decode().splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


class RowLocks(unittest.TestCase):
    def setUp(self):
        self.y = Seqd(store_spec("mariadb", None), "--db-threads", "2",
                      "--wait-deadline-ms", "15000", "--snowflake", "off")
        self.addCleanup(self.y.__exit__)
        self.n = getattr(RowLocks, "n", 0) + 1
        RowLocks.n = self.n
        prefix = "rl_%s_%d_" % (RUN, self.n)
        self.decoy = prefix + "decoy"
        self.k = prefix + "k"
        self.others = [prefix + "o%02d" % i for i in range(OTHERS)]
        for key in [self.decoy, self.k] + self.others:
            self.y.create_key(key, 10)

    def batch_behind(self, release_k):
        """Y's first requests of every key, in one batch with K (whose row
        someone else holds); release_k() frees K's row HOLD_S after the batch
        starts. Returns {key: (seconds after the batch started, status,
        ids)}."""
        decoy = RowLock(self.decoy)
        self.addCleanup(decoy.release)
        done = {}
        lock = threading.Lock()

        def get(key):
            status, payload, _ = self.y.request("GET", "/seq/%s?count=3" % key)
            at = time.monotonic()
            ids = []
            if status == 200:
                for r in json.loads(payload)["ranges"]:
                    ids.extend(range(r["first"], r["last"] + 1))
            with lock:
                done[key] = (at, status, ids, payload[:200])

        # The decoy first: Y's only flush waits for its row...
        threads = [threading.Thread(target=get, args=(self.decoy,), daemon=True)]
        threads[0].start()
        deadline = time.time() + 10
        while waiting_statements() == 0:
            self.assertLess(time.time(), deadline, "Y never waited for the decoy row")
            time.sleep(0.02)
        # ...while every other key's first reservation queues behind it.
        for key in [self.k] + self.others:
            threads.append(threading.Thread(target=get, args=(key,), daemon=True))
            threads[-1].start()
        while metric(self.y, "seqd_parked_requests") < 2 + OTHERS:
            self.assertLess(time.time(), deadline, "requests never parked")
            time.sleep(0.02)
        decoy.release()
        started = time.monotonic()
        # The decoy's reservation lands at once; then the batch of K and the others.
        while not (self.decoy in done and all(k in done for k in self.others)):
            if time.monotonic() - started > HOLD_S:
                break
            time.sleep(0.01)
        time.sleep(max(0.0, started + HOLD_S - time.monotonic()))
        freed = time.monotonic()
        release_k()
        for t in threads:
            t.join(timeout=60)
        out = {k: (v[0] - started, v[1], v[2], v[3]) for k, v in done.items()}
        out["__freed"] = freed - started
        return out

    def check(self, got, label):
        others = [got[k][0] for k in self.others]
        k_at, k_status, k_ids, k_body = got[self.k]
        print("\n%s: other keys answered after %.3f s at most (median %.3f s); "
              "K after %.3f s (row freed at %.3f s), status %d"
              % (label, max(others), sorted(others)[len(others) // 2], k_at, got["__freed"],
                 k_status), file=sys.stderr)
        for key in self.others:
            at, status, _, body = got[key]
            self.assertEqual(status, 200, (key, body))
            self.assertLess(at, FAST_S, "%s waited for another key's locked row" % key)
        # K: answered once its row was free (or, after its own wait, 503).
        self.assertIn(k_status, (200, 503), k_body)
        if k_status == 503:
            self.assertIn(b"store_unavailable", k_body.lower())
        else:
            self.assertGreaterEqual(k_at, got["__freed"] - 0.05)
        self.assertGreaterEqual(metric(self.y, "seqd_store_batch_lock_timeouts_total"), 1)
        # No ID twice, per key, across the rolled-back batch and what followed.
        for key in [self.k] + self.others:
            _, status, ids, _ = got[key]
            if status != 200:
                continue
            more = self.y.ids(key, 25)  # past the first segment: the next reservations
            self.assertEqual(len(set(ids + more)), len(ids) + len(more), key)

    def test_session_holding_a_row(self):
        holder = RowLock(self.k)
        self.addCleanup(holder.release)
        got = self.batch_behind(holder.release)
        self.check(got, "a session holding K's row")

    def test_instance_frozen_mid_transaction(self):
        # X reserves K's segments one ID at a time (--max-step 1), so it is
        # nearly always inside a reservation transaction on K's row.
        self.y.request("PUT", "/admin/keys/%s/step" % self.k, {"step": 1})
        x = Seqd(store_spec("mariadb", None), "--max-step", "1", "--snowflake", "off",
                 "--db-threads", "2")
        self.addCleanup(x.__exit__)
        stop = threading.Event()
        served_by_x = []

        def hammer():
            conn = x.conn()
            while not stop.is_set():
                try:
                    status, payload, _ = x.request("GET", "/seq/%s?count=1" % self.k,
                                                   conn=conn)
                except Exception:  # X stopped or killed
                    conn.close()
                    return
                if status == 200:
                    for r in json.loads(payload)["ranges"]:
                        served_by_x.extend(range(r["first"], r["last"] + 1))

        hammers = [threading.Thread(target=hammer, daemon=True) for _ in range(4)]
        for t in hammers:
            t.start()
        held = False
        for attempt in range(400):
            time.sleep(random.uniform(0.0, 0.005))
            x.proc.send_signal(signal.SIGSTOP)
            time.sleep(0.03)  # what X sent before it stopped has landed
            # Stopped inside a transaction that holds K's row?
            if row_locked(self.k):
                held = True
                break
            x.proc.send_signal(signal.SIGCONT)
        self.assertTrue(held, "never froze X inside a transaction")
        print("\nX frozen holding K's row at attempt %d" % (attempt + 1), file=sys.stderr)
        stop.set()

        def kill_x():
            x.proc.kill()  # its connections close: MariaDB rolls its transaction back
            x.proc.wait()

        got = self.batch_behind(kill_x)
        self.check(got, "an instance SIGSTOPped mid-transaction")
        self.assertFalse(set(served_by_x) & set(got[self.k][2]), "an ID served by X and Y")


if __name__ == "__main__":
    unittest.main()
