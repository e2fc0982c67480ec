"""Starts the real seqd binary and talks HTTP to it. Standard library only."""
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

SEQD = os.environ.get("SEQD_BINARY", "build/seqd")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# Ports for the servers a test starts: below the kernel's ephemeral range
# (net.ipv4.ip_local_port_range, 32768-60999 by default), so an outgoing
# connection of another test can never take one between free_port() and the
# server's bind. Chosen at random and checked free; two suites picking the
# same port at the same moment is a 1-in-12,000 chance.
_PORT_RANGE = (20000, 32000)
_given = set()


def free_port():
    for _ in range(1000):
        port = random.randint(*_PORT_RANGE)
        if port in _given:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _given.add(port)
        return port
    raise RuntimeError("no free port in %d-%d" % _PORT_RANGE)


def store_spec(kind, tmpdir):
    """The --store value for `kind` ('sqlite' or 'mariadb')."""
    if kind == "sqlite":
        return "sqlite:" + os.path.join(tmpdir, "seqd.db")
    url = os.environ.get("SEQD_TEST_MYSQL_URL")
    if not url:
        raise RuntimeError("SEQD_TEST_MYSQL_URL is not set: start MariaDB with "
                           "scripts/mariadb.sh (scripts/test.sh does)")
    return url


def store_from_argv(required=False):
    """The store a suite runs on, 'sqlite' or 'mariadb': sys.argv[1] if it is
    one (taken out, so the rest goes to unittest); else 'sqlite', or with
    `required` an exit with the usage."""
    if len(sys.argv) > 1 and sys.argv[1] in ("sqlite", "mariadb"):
        return sys.argv.pop(1)
    if required:
        sys.exit("usage: %s sqlite|mariadb [unittest args]" % os.path.basename(sys.argv[0]))
    return "sqlite"


def mariadb(action):
    """Stops or restarts the test MariaDB started by scripts/test.sh."""
    d = os.environ.get("SEQD_TEST_MARIADB_DIR")
    if not d:
        raise RuntimeError("SEQD_TEST_MARIADB_DIR is not set")
    subprocess.run([os.path.join(REPO, "scripts", "mariadb.sh"), action, d], check=True,
                   stdout=subprocess.DEVNULL)


def http_get(port, path, timeout=10):
    """(status, body) of GET `path` from 127.0.0.1:`port` on a connection of its own."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def wait_ready(proc, ready, name, logs, timeout=15, pause=0.05):
    """Returns once `ready()` is true (an OSError counts as not yet);
    RuntimeError with `logs()` if `proc` exits first or `timeout` s pass."""
    deadline = time.time() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError("%s exited with %s: %s" % (name, proc.returncode, logs()))
        try:
            if ready():
                return
        except OSError:
            pass
        if time.time() > deadline:
            raise RuntimeError("%s did not become ready: %s" % (name, logs()))
        time.sleep(pause)


def run_threads(target, count):
    """Runs target(0) .. target(count - 1), each on a thread of its own, and
    waits for them all."""
    threads = [threading.Thread(target=target, args=(n,)) for n in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def wait_stopped(pid, timeout_s=2.0):
    """Returns once every thread of `pid` is stopped (state T in
    /proc/PID/task/*/stat): kill() only makes SIGSTOP pending, and a thread
    on another core may answer a call after it returns."""
    until = time.monotonic() + timeout_s
    while time.monotonic() < until:
        try:
            states = []
            for tid in os.listdir("/proc/%d/task" % pid):
                with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                    states.append(f.read().rsplit(")", 1)[1].split()[0])
        except OSError:
            states = []
        if states and all(s in ("T", "t") for s in states):
            return
        time.sleep(0.001)
    raise RuntimeError("pid %d did not stop within %.1f s" % (pid, timeout_s))


class Seqd:
    """One seqd process. Use as a context manager; stop() sends SIGTERM."""

    def __init__(self, store, *extra, port=None):
        self.port = port or free_port()
        # --tcp-port 0: a free port, so several instances never collide on 7070
        self.args = [SEQD, "--store", store, "--http-port", str(self.port), "--threads", "2",
                     "--tcp-port", "0", "--log-level", "warn", *extra]
        self.log = tempfile.NamedTemporaryFile(prefix="seqd-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=subprocess.STDOUT)
        self.wait_healthy()

    def wait_healthy(self, timeout=15):
        wait_ready(self.proc, lambda: self.get("/healthz")[0] == 200, "seqd", self.logs, timeout)

    def logs(self):
        with open(self.log.name, errors="replace") as f:
            return f.read()[-4000:]

    def conn(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)

    def request(self, method, path, body=None, headers=None, conn=None):
        c = conn or self.conn()
        data = json.dumps(body) if isinstance(body, (dict, list)) else body
        headers = dict(headers or {})
        if data is not None and method in ("POST", "PUT", "PATCH"):
            # seqd refuses body-carrying requests that a browser form could send (CSRF).
            headers.setdefault("Content-Type", "application/json")
        c.request(method, path, body=data, headers=headers)
        r = c.getresponse()
        payload = r.read()
        if conn is None:
            c.close()
        return r.status, payload, r

    def get(self, path, **kw):
        status, payload, _ = self.request("GET", path, **kw)
        return status, payload

    def get_json(self, path, **kw):
        status, payload = self.get(path, **kw)
        return status, json.loads(payload)

    def create_key(self, key, step):
        # 503 is retryable: on a fresh MariaDB the tables are still being
        # created in the background just after start.
        deadline = time.time() + 15
        while True:
            status, payload, _ = self.request("POST", "/admin/keys",
                                              {"key": key, "step": step, "description": "e2e"})
            if status != 503 or time.time() > deadline:
                break
            time.sleep(0.1)
        if status not in (201, 409):
            raise RuntimeError("create_key %s: %s %s" % (key, status, payload))

    def ids(self, key, count=1, conn=None):
        """The IDs of one /seq call, as a list."""
        status, payload, _ = self.request("GET", "/seq/%s?count=%d" % (key, count), conn=conn)
        if status != 200:
            raise RuntimeError("GET /seq/%s: %s %s" % (key, status, payload))
        body = json.loads(payload)
        out = []
        for r in body["ranges"]:
            out.extend(range(r["first"], r["last"] + 1))
        assert len(out) == count, body
        return out

    def stop(self, sig=signal.SIGTERM, timeout=15):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=timeout)
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.unlink(self.log.name)
