"""tests/e2e/lib/mariadb.py against stand-ins written here: a mariadb.sh
whose "mariadbd" is a sleeping process named so, and a mariadb client that
records its command line. The controller must find, freeze, thaw, kill,
restart and stop that server; the client runs must carry the URL's user,
password, host, port and database.

Usage: python3 tests/e2e/lib/test_mariadb.py [unittest args]
"""
import os
import sys
import tempfile
import time
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lib import mariadb  # noqa: E402

# scripts/mariadb.sh's interface (ACTION DIR, the URL last on stdout, DIR's
# mariadb.pid and data/) with a python3 that sleeps as "mariadbd".
FAKE_MARIADB_SH = r"""#!/usr/bin/env bash
set -eu
action=$1 dir=$2
mkdir -p "$dir/data"
start() {
  (exec -a mariadbd python3 -c 'import time; time.sleep(120)' \
     "--datadir=$(realpath "$dir/data")" >/dev/null 2>&1 </dev/null) &
  echo $! >"$dir/mariadb.pid"
}
case $action in
  start) echo "starting" >&2; echo 12345 >"$dir/port"; start ;;
  restart) start ;;
  stop) kill "$(cat "$dir/mariadb.pid")"; rm -f "$dir/mariadb.pid" ;;
esac
echo "mysql://seqd:seqd@127.0.0.1:$(cat "$dir/port")/seqd_test"
"""

# A mariadb.sh whose start fails, saying why on stderr.
FAILING_MARIADB_SH = "#!/usr/bin/env bash\necho 'mariadb.sh: no free port' >&2\nexit 1\n"

# A mariadb client that prints its arguments and password, or fails on "bad".
FAKE_CLIENT = r"""#!/usr/bin/env bash
for a in "$@"; do [ "$a" = bad ] && { echo "ERROR 1064: bad" >&2; exit 1; }; done
echo "pwd=$MYSQL_PWD $*" | tee -a "$(dirname "$0")/statements"
"""


def executable(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return path


def state(pid):
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[-1].split()[0]


class Server(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        script = executable(os.path.join(tmp.name, "mariadb.sh"), FAKE_MARIADB_SH)
        self.db = mariadb.MariaDB(tmp.name, script=script)
        self.addCleanup(self.db.stop)

    def wait(self, check):
        deadline = time.monotonic() + 5
        while not check():
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.01)

    def test_start_freeze_thaw(self):
        self.assertEqual(self.db.url, "mysql://seqd:seqd@127.0.0.1:12345/seqd_test")
        pid = self.db.pid()
        self.assertIsNotNone(pid)
        self.assertEqual(self.db.freeze(), pid)
        self.wait(lambda: state(pid) == "T")
        self.db.thaw()
        self.wait(lambda: state(pid) != "T")

    def test_kill9_then_restart_on_the_same_url(self):
        pid = self.db.pid()
        self.assertEqual(self.db.kill9(), pid)
        self.assertFalse(mariadb.alive(pid))
        self.assertIsNone(self.db.pid())
        with self.assertRaises(RuntimeError):
            self.db.freeze()
        self.db.restart()
        self.assertNotIn(self.db.pid(), (None, pid))

    def test_a_pid_file_of_another_process_is_no_server(self):
        pid_file = os.path.join(self.db.dir, "mariadb.pid")
        server = self.db.pid()
        with open(pid_file, "w") as f:
            f.write("%d\n" % os.getpid())
        self.assertIsNone(self.db.pid())
        with open(pid_file, "w") as f:
            f.write("%d\n" % server)

    def test_stop(self):
        pid = self.db.pid()
        self.db.freeze()
        self.db.stop()
        self.wait(lambda: not mariadb.alive(pid))
        self.assertTrue(self.db.err.closed)
        with open(self.db.err.name) as f:
            self.assertIn("starting", f.read())


class FailedStart(unittest.TestCase):
    def test_the_scripts_log_is_in_the_error(self):
        # The log is deleted with the test's directory: a failed start must
        # carry its reason in the exception.
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        script = executable(os.path.join(tmp.name, "mariadb.sh"), FAILING_MARIADB_SH)
        with self.assertRaisesRegex(RuntimeError, "start failed .*\n.*no free port"):
            mariadb.MariaDB(tmp.name, script=script)


class StartAll(unittest.TestCase):
    def test_each_in_its_own_directory_in_order(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        script = executable(os.path.join(tmp.name, "mariadb.sh"), FAKE_MARIADB_SH)
        dbs = mariadb.start_all(tmp.name, 2, script=script)
        for db in dbs:
            self.addCleanup(db.stop)
        self.assertEqual([db.dir for db in dbs],
                         [os.path.join(tmp.name, "db%d" % i, "db") for i in range(2)])
        self.assertNotEqual(dbs[0].pid(), dbs[1].pid())

    def test_a_failed_start_is_raised(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        script = executable(os.path.join(tmp.name, "mariadb.sh"), FAILING_MARIADB_SH)
        with self.assertRaisesRegex(RuntimeError, "no free port"):
            mariadb.start_all(tmp.name, 2, script=script)


class Client(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name
        executable(os.path.join(tmp.name, "mariadb"), FAKE_CLIENT)
        path = mock.patch.dict(os.environ, {"PATH": tmp.name + os.pathsep + os.environ["PATH"],
                                            "SEQD_TEST_MYSQL_URL": "mysql://u:p%40ss@h:3307/t"})
        path.start()
        self.addCleanup(path.stop)

    def test_sql_as_the_urls_user(self):
        self.assertEqual(mariadb.sql("mysql://u:p%40ss@h:3307/t", "SELECT 1", "d").split(),
                         ["pwd=p@ss", "--protocol=TCP", "-h", "h", "-P", "3307", "-u", "u",
                          "--batch", "--skip-column-names", "d", "-e", "SELECT", "1"])
        with self.assertRaisesRegex(RuntimeError, "ERROR 1064"):
            mariadb.sql("mysql://u@h/t", "bad")

    def test_database(self):
        db = mariadb.Database()
        self.assertRegex(db.name, r"^seqd_test_cluster_\d+_\d+$")
        self.assertEqual(db.url, "mysql://u:p%%40ss@h:3307/%s" % db.name)
        db.drop()
        with open(os.path.join(self.dir, "statements")) as f:
            statements = f.read()
        self.assertIn("CREATE DATABASE %s" % db.name, statements)
        self.assertIn("DROP DATABASE IF EXISTS %s\n" % db.name, statements)


if __name__ == "__main__":
    unittest.main()
