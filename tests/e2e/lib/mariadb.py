"""MariaDB for the end-to-end suites: a throwaway server of a test's own
(`MariaDB`: started by scripts/mariadb.sh in a directory of the test's, so
it can be frozen, killed and restarted on the same port), a fresh database
on the shared test server (`Database`, next to SEQD_TEST_MYSQL_URL's), and
statements run with the mariadb command-line client (`sql`).

Thread safety: a MariaDB's freeze, thaw, kill9 and query may be called
from any thread; start-up and stop are one thread's.
"""
import itertools
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.parse

from harness import REPO

MARIADB_SH = os.path.join(REPO, "scripts", "mariadb.sh")


def client():
    """The mariadb (or mysql) command-line client's path."""
    found = shutil.which("mariadb") or shutil.which("mysql")
    if not found:
        raise RuntimeError("neither the mariadb nor the mysql client is installed")
    return found


def sql(url, statement, database=None):
    """Runs `statement` as the user of `url` (mysql://user:password@host:port/...)
    over TCP, in `database` if given; returns its output (tab-separated
    rows, no column names). RuntimeError with the client's message if it
    fails."""
    u = urllib.parse.urlparse(url)
    env = dict(os.environ, MYSQL_PWD=urllib.parse.unquote(u.password or ""))
    args = [client(), "--protocol=TCP", "-h", u.hostname or "127.0.0.1", "-P",
            str(u.port or 3306), "-u", urllib.parse.unquote(u.username or ""), "--batch",
            "--skip-column-names"]
    r = subprocess.run(args + ([database] if database else []) + ["-e", statement], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    if r.returncode != 0:
        raise RuntimeError("%s: %s" % (statement, r.stderr.decode(errors="replace")))
    return r.stdout.decode()


def alive(pid):
    """True while `pid` runs (a zombie is dead)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


class MariaDB:
    """A mariadbd of the test's own, run by `script` (scripts/mariadb.sh) in
    `base`/db; its stderr goes to `base`/mariadb-sh.log. `url` is the seqd
    URL it printed; it stays the same across restarts."""

    def __init__(self, base, script=MARIADB_SH):
        self.dir = os.path.join(base, "db")
        self.socket = os.path.join(self.dir, "mariadb.sock")
        self.script_path = script
        self.err = open(os.path.join(base, "mariadb-sh.log"), "ab")
        self.url = self.script("start")

    def script(self, action):
        """Runs the script's ACTION on the directory; returns its last stdout line."""
        r = subprocess.run([self.script_path, action, self.dir], stdout=subprocess.PIPE,
                           stderr=self.err, text=True, timeout=120)
        if r.returncode != 0:
            # The log lives in the test's temporary directory, which is
            # deleted with it: its tail goes into the error.
            self.err.flush()
            with open(self.err.name, "rb") as log:
                tail = log.read()[-2000:].decode(errors="replace")
            raise RuntimeError("scripts/mariadb.sh %s failed (%d); the end of %s:\n%s" %
                               (action, r.returncode, self.err.name, tail))
        lines = r.stdout.strip().splitlines()
        return lines[-1] if lines else ""

    def pid(self):
        """mariadbd's pid from its pid file, checked to be a live mariadbd of
        this datadir; None if there is none."""
        try:
            with open(os.path.join(self.dir, "mariadb.pid")) as f:
                pid = int(f.read().strip())
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmdline = f.read().split(b"\0")
        except (OSError, ValueError):
            return None
        datadir = ("--datadir=" + os.path.realpath(os.path.join(self.dir, "data"))).encode()
        server = os.path.basename(cmdline[0]) in (b"mariadbd", b"mysqld")
        return pid if server and datadir in cmdline else None

    def signal(self, sig):
        pid = self.pid()
        if pid is None:
            raise RuntimeError("no mariadbd running in %s" % self.dir)
        os.kill(pid, sig)
        return pid

    def freeze(self):
        return self.signal(signal.SIGSTOP)

    def thaw(self):
        pid = self.pid()
        if pid is not None:
            os.kill(pid, signal.SIGCONT)

    def kill9(self):
        """kill -9 mariadbd; waits until it is dead (a zombie counts: init
        reaps it when it likes) and removes its pid file, so that `restart`
        never mistakes the zombie for a running server."""
        pid = self.signal(signal.SIGKILL)
        deadline = time.monotonic() + 10
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        try:
            os.unlink(os.path.join(self.dir, "mariadb.pid"))
        except FileNotFoundError:
            pass
        return pid

    def restart(self):
        """After kill -9: `restart` starts again on the port the URLs name."""
        url = self.script("restart")
        if url != self.url:
            raise RuntimeError("MariaDB came back at %s, not %s" % (url, self.url))

    def query(self, statement, database="seqd_test", timeout=3):
        """Rows of `statement` (lists of fields) as root over the socket, in
        `database` (None: none)."""
        r = subprocess.run(["mariadb", "--no-defaults", "--protocol=socket",
                            "--socket=" + self.socket, "-uroot", "-N", "-B"]
                           + ([database] if database else []) + ["-e", statement],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                           timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError("query failed: %s" % statement)
        return [line.split("\t") for line in r.stdout.splitlines()]

    def stop(self):
        """Thaws and stops the server, once; never raises."""
        if self.err.closed:
            return
        try:
            self.thaw()
            self.script("stop")
        except Exception as e:  # noqa: BLE001 - cleanup goes on
            pid = self.pid()
            if pid is not None:
                os.kill(pid, signal.SIGKILL)
            print("warning: stopping MariaDB: %s" % e, file=sys.stderr)
        self.err.close()


_databases = itertools.count()


def start_all(base, count, script=None):
    """`count` MariaDB started at once, under `base`/db0, db1, ...; returns
    them in that order. If any did not start, the others are stopped and
    the first error is raised, in the caller's thread."""
    dbs, errors = [None] * count, []

    def start(i):
        path = os.path.join(base, "db%d" % i)
        os.makedirs(path)
        try:
            dbs[i] = MariaDB(path, script=script) if script else MariaDB(path)
        except Exception as e:  # noqa: BLE001 - raised below
            errors.append(e)

    threads = [threading.Thread(target=start, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        for db in dbs:
            if db is not None:
                db.stop()
        raise errors[0]
    return dbs


class Database:
    """A fresh database next to SEQD_TEST_MYSQL_URL's (the shared test
    MariaDB, whose user may create databases named seqd_test_*): `name`,
    and `url`, the test URL with it; drop() drops it."""

    def __init__(self):
        self.base = os.environ.get("SEQD_TEST_MYSQL_URL")
        if not self.base:
            raise RuntimeError("SEQD_TEST_MYSQL_URL is not set: start MariaDB with "
                               "scripts/mariadb.sh (scripts/test.sh does)")
        u = urllib.parse.urlparse(self.base)
        self.name = "seqd_test_cluster_%d_%d" % (os.getpid(), next(_databases))
        self.sql("DROP DATABASE IF EXISTS %s; CREATE DATABASE %s" % (self.name, self.name))
        netloc = u.netloc.rsplit("@", 1)[0] + "@%s:%d" % (u.hostname or "127.0.0.1",
                                                          u.port or 3306)
        self.url = urllib.parse.urlunparse((u.scheme, netloc, "/" + self.name, "", "", ""))

    def sql(self, statement):
        """`statement`'s output, run as the test URL's user (no default database)."""
        return sql(self.base, statement)

    def drop(self):
        self.sql("DROP DATABASE IF EXISTS %s" % self.name)
