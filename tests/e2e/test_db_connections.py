"""seqd opens at most --db-threads connections to MariaDB, plus one for
worker-id leases: the segment and message stores share one pool.

Load on many new keys (auto-created), message sends to many conversations and
snowflake IDs, all at once, while SHOW PROCESSLIST is sampled; the most
connections of the seqd user ever seen (less the sampler's own) must stay
within db_threads + 1.

Usage: python3 tests/e2e/test_db_connections.py [unittest args]
Environment: SEQD_TEST_MYSQL_URL, SEQD_BINARY.
"""
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Seqd, store_spec  # noqa: E402

RUN = "%06x" % random.getrandbits(24)


def seqd_connections(url):
    """Connections of the URL's user other than this query's own."""
    u = urllib.parse.urlparse(url)
    client = shutil.which("mariadb") or shutil.which("mysql")
    out = subprocess.run(
        [client, "--no-defaults", "--protocol=tcp", "-h", u.hostname, "-P", str(u.port),
         "-u", urllib.parse.unquote(u.username), "-p" + urllib.parse.unquote(u.password),
         "-N", "-B", "-e",
         "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
         "WHERE USER = SUBSTRING_INDEX(CURRENT_USER(), '@', 1) AND ID <> CONNECTION_ID()"],
        check=True, capture_output=True, text=True, timeout=10).stdout
    return int(out.strip())


class DbConnections(unittest.TestCase):
    def quiet_database(self):
        """The test MariaDB's URL, once no client of our user holds a
        connection (nothing else of ours may while we count)."""
        url = store_spec("mariadb", None)
        deadline = time.time() + 10
        while seqd_connections(url) > 0 and time.time() < deadline:
            time.sleep(0.2)
        self.assertEqual(seqd_connections(url), 0, "another client holds connections")
        return url

    def test_db_threads_bounds_the_connections(self):
        url = self.quiet_database()
        db_threads = 2
        with Seqd(url, "--db-threads", str(db_threads), "--auto-keys", "dbc_:10",
                  "--snowflake-lease-ms", "1500") as s:
            stop = threading.Event()
            errors = []

            def ids(t):
                conn = s.conn()
                i = 0
                while not stop.is_set():
                    i += 1
                    status, payload, _ = s.request(
                        "GET", "/seq/dbc_%s_%d_%d?count=5" % (RUN, t, i % 200), conn=conn)
                    if status != 200:
                        errors.append((status, payload[:100]))

            def sends(t):
                conn = s.conn()
                i = 0
                while not stop.is_set():
                    i += 1
                    status, payload, _ = s.request(
                        "POST", "/conversations/dbc_%s_%d/messages" % (RUN, i % 50),
                        {"sender_id": "u%d" % t, "client_msg_id": "%d-%d" % (t, i),
                         "content_type": 1, "payload": "x"}, conn=conn)
                    if status not in (200, 201):
                        errors.append((status, payload[:100]))

            def snowflakes():
                conn = s.conn()
                while not stop.is_set():
                    s.request("GET", "/snowflake", conn=conn)

            workers = [threading.Thread(target=ids, args=(t,)) for t in range(4)]
            workers += [threading.Thread(target=sends, args=(t,)) for t in range(4)]
            workers.append(threading.Thread(target=snowflakes))
            for w in workers:
                w.start()
            most, samples = 0, 0
            until = time.time() + 6
            while time.time() < until:
                most = max(most, seqd_connections(url))
                samples += 1
                time.sleep(0.05)
            stop.set()
            for w in workers:
                w.join()
            metrics = s.get("/metrics")[1].decode()
            reservations = sum(float(line.rpartition(" ")[2]) for line in metrics.splitlines()
                               if line.startswith("seqd_segment_reservations_total"))
            print("most connections seen: %d in %d samples (db_threads %d); %d reservations" %
                  (most, samples, db_threads, reservations))
            self.assertEqual(errors[:5], [])
            self.assertGreater(reservations, 100, "the load must keep the store busy")
            self.assertGreaterEqual(most, db_threads, "the pool was never used in full")
            self.assertLessEqual(most, db_threads + 1)

    def test_the_pool_is_opened_at_start(self):
        """An idle seqd opens its db_threads connections once the schema is
        ready, before any request: the first reservations do not pay for
        opening connections and preparing statements."""
        url = self.quiet_database()
        db_threads = 3
        with Seqd(url, "--db-threads", str(db_threads), "--snowflake", "off"):
            seen, until = 0, time.time() + 10
            while seen < db_threads and time.time() < until:
                seen = seqd_connections(url)
                time.sleep(0.05)
            time.sleep(0.5)  # and no more than that
            now = seqd_connections(url)
            print("connections of an idle seqd: %d (db_threads %d)" % (now, db_threads))
            self.assertEqual(now, db_threads)


if __name__ == "__main__":
    unittest.main()
