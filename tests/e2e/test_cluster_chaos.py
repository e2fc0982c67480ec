#!/usr/bin/env python3
"""Chaos test of cluster mode: per key, IDs are unique and linearizable
across the whole cluster while instances and MariaDB fail.

The promise under test: for every key, no ID is answered twice, and if
request A's answer came back before request B was sent, every ID in B is
above every ID in A, whichever instances A and B went to.

Setup: a MariaDB of the test's own (scripts/mariadb.sh in a temp dir, so it
can be frozen, killed and restarted) and 3 seqd in cluster mode with small
auto-created steps (ck*: 100, cz*: 1) and a small --max-step, so
reservations, i.e. fenced transactions, are frequent all along.

Load: 6 client threads, each in a loop: a random running instance (leaving
ones included; frozen ones for one prober thread only, the others resume
sending to a thawed instance at once), one of 8 keys, one of 5 interfaces
(HTTP GET /seq/KEY, HTTP ?count=N, binary NEXT_IDS, RESP INCR, RESP
INCRBY). Every request is recorded with its send and receive time
(time.monotonic(), one process) and its IDs or its error.

Nemesis (one fault at a time, a settling pause between, the kinds in a
seeded shuffled order, each cycle running every kind):
  kill_instance  kill -9 a random instance, start a fresh one ~1 s later
  stop_owner     SIGSTOP the owner of a random key (from seqd_shard_lease)
                 for 2.5 leases, then SIGCONT: it must not answer from its
                 stale buffers. Late probes: 0.3 s before the SIGCONT, one
                 request per key and interface is sent to the frozen
                 instance, i.e. after other instances answered for its
                 keys; they are answered once it is thawed.
  freeze_db      SIGSTOP mariadbd for 2 s, then SIGCONT
  kill_db        kill -9 mariadbd, restart it ~1 s later on the same port
  leave_join     SIGTERM a random instance (a clean leave), start a new one

Checks (exit 1 if any fails):
  - per key, 0 IDs answered twice across all successful answers;
  - per key, 0 real-time order violations: for every pair A, B of answers
    with A.recv < B.send, min(B) > max(A);
  - every answer is well formed (the IDs asked for, ascending ranges) and
    every error is one the contract allows (503 store_unavailable /
    STORE_UNAVAILABLE, shutting down, a dropped or refused connection or a
    timeout, RESP INCRBY's "no contiguous block");
  - at least MIN_ANSWERS successful answers;
  - every fault kind ran;
  - no instance died unless the nemesis killed it;
  - after the nemesis stops and 2 leases of settling, one request per
    running instance, key and interface all succeed.
Figures (answers per interface, errors by kind, per fault the longest time a
key went without a successful answer) are printed, and written with --json.

--self-test feeds the checker synthetic histories (with duplicates, order
violations and near misses, and random ones against a brute-force check)
and exits; every run does it first, so a pass is never a checker that cannot
fail.

Usage: python3 tests/e2e/test_cluster_chaos.py [--seconds 60] [--seed S]
           [--lease-ms 2000] [--json PATH] [--history PATH] [--keep] [-v]
           [--self-test]
Environment: SEQD_BINARY (default build/seqd). Needs mariadbd (Debian's
mariadb-server; scripts/deps.sh --test installs it).
"""
import argparse
import atexit
import bisect
import collections
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import REPO, SEQD, free_port  # noqa: E402

MARIADB_SH = os.path.join(REPO, "scripts", "mariadb.sh")
KEYS = ("ck0", "ck1", "ck2", "ck3", "ck4", "ck5", "cz0", "cz1")
AUTO_KEYS = "ck:100,cz:1"
# The dynamic step would reach 1,000,000 within seconds; capped, every key
# keeps reserving (each reservation a fenced transaction) all along.
MAX_STEP = 20
INTERFACES = ("http", "http_count", "binary", "resp_incr", "resp_incrby")
FAULTS = ("kill_instance", "stop_owner", "freeze_db", "kill_db", "leave_join")
INSTANCES = 3
CLIENT_THREADS = 6
PROBERS = 1             # client threads that also send to frozen instances
SOCKET_TIMEOUT_S = 3.0
MAX_COUNT = 10          # counts asked for are 1..MAX_COUNT
MIN_ANSWERS = 2000
WARMUP_S = 2.0
EXAMPLES = 5
START_TIMEOUT_S = 20.0
LEAVE_TIMEOUT_S = 15.0
LATE_PROBE_LEAD_S = 0.3  # late probes are sent this long before the SIGCONT

BINARY_NEXT_IDS = 0x02
BINARY_STATUS = {0: "OK", 1: "INVALID_ARGUMENT", 2: "UNKNOWN_KEY", 3: "KEY_EXISTS",
                 4: "STORE_UNAVAILABLE", 5: "SHUTTING_DOWN", 6: "INTERNAL", 7: "UNKNOWN_OPCODE",
                 8: "NOT_FOUND", 9: "FAILED_PRECONDITION", 10: "TOO_LARGE", 11: "NOT_SERVING",
                 12: "WRONG_OWNER", 64: "MALFORMED_FRAME", 65: "UNSUPPORTED_VERSION",
                 66: "FRAME_TOO_LARGE"}
BINARY_EXPECTED = {"STORE_UNAVAILABLE", "SHUTTING_DOWN"}
HTTP_EXPECTED = {(503, "store_unavailable"), (503, "shutting_down")}
# RESP error texts the contract allows, by the part that names them.
RESP_EXPECTED = {"store unavailable": "store_unavailable",
                 "shutting down": "shutting_down",
                 "could not take a contiguous block": "not_contiguous"}

VERBOSE = False
T0 = time.monotonic()


def log(msg):
    """Prints a progress line with the time since the start (with -v)."""
    if VERBOSE:
        print("[%7.3fs] %s" % (time.monotonic() - T0, msg), flush=True)


def rel(t):
    """A monotonic time as seconds since the start, rounded for reports."""
    return round(t - T0, 3)


def fnv1a64(data):
    """FNV-1a 64 of `data` (bytes), seqd's key-to-shard hash."""
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


# --- history -----------------------------------------------------------------

class Answer:
    """One request as a client saw it: `ranges` ((first, last), ...) when it
    succeeded, else `error` (a kind) and `expected` (the contract allows it)."""
    __slots__ = ("key", "iface", "inst", "send", "recv", "ranges", "error", "expected", "lo", "hi")

    def __init__(self, key, iface, inst, send, recv, ranges=None, error=None, expected=True):
        self.key, self.iface, self.inst = key, iface, inst
        self.send, self.recv = send, recv
        self.ranges, self.error, self.expected = ranges, error, expected
        self.lo = ranges[0][0] if ranges else None
        self.hi = ranges[-1][1] if ranges else None

    @property
    def ok(self):
        return self.error is None

    def describe(self):
        what = ("ids %s" % short_ranges(self.ranges)) if self.ok else ("error %s" % self.error)
        return "%s via %s on %s sent %.3f recv %.3f: %s" % (
            self.key, self.iface, self.inst, rel(self.send), rel(self.recv), what)


def short_ranges(ranges):
    text = ",".join("%d" % f if f == l else "%d-%d" % (f, l) for f, l in ranges[:4])
    return "[%s%s]" % (text, ",..." if len(ranges) > 4 else "")


class ServerError(Exception):
    """An answer that is not IDs: `kind` names it, `expected` says whether
    the contract allows it."""

    def __init__(self, kind, expected, close=False):
        super().__init__(kind)
        self.kind, self.expected, self.close = kind, expected, close


def checked_ranges(ranges, count):
    """`ranges` as a tuple if they hold exactly `count` IDs in ascending,
    disjoint ranges; else ServerError (malformed, never expected)."""
    out, total, prev = [], 0, None
    for first, last in ranges:
        if first > last or (prev is not None and first <= prev) or first < 1:
            raise ServerError("malformed: ranges %r" % (ranges,), False, close=True)
        out.append((first, last))
        total += last - first + 1
        prev = last
    if total != count:
        raise ServerError("malformed: %d IDs for count %d" % (total, count), False, close=True)
    return tuple(out)


# --- protocol clients --------------------------------------------------------

class HttpClient:
    """GET /seq on one kept-alive HTTP connection."""

    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=SOCKET_TIMEOUT_S)

    def seq(self, key, count):
        """IDs of GET /seq/KEY (count None) or GET /seq/KEY?count=N."""
        path = "/seq/%s" % key if count is None else "/seq/%s?count=%d" % (key, count)
        self.conn.request("GET", path)
        r = self.conn.getresponse()
        body = r.read()
        if r.status != 200:
            code = error_code(body)
            raise ServerError("http:%d %s" % (r.status, code), (r.status, code) in HTTP_EXPECTED)
        try:
            j = json.loads(body)
            if j.get("key") != key:
                raise ValueError("key %r" % j.get("key"))
            if count is None:
                return checked_ranges([(int(j["id"]), int(j["id"]))], 1)
            return checked_ranges([(int(x["first"]), int(x["last"])) for x in j["ranges"]], count)
        except (ValueError, KeyError, TypeError) as e:
            raise ServerError("malformed: http body %r (%s)" % (body[:120], e), False, close=True)

    def close(self):
        self.conn.close()


def error_code(body):
    """The `code` of an HTTP error body, or '?'."""
    try:
        return json.loads(body)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return "?"


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("connection closed")
        buf += chunk
    return buf


class BinaryClient:
    """NEXT_IDS on one binary-protocol connection, one request at a time."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=SOCKET_TIMEOUT_S)
        self.next_id = 1

    def next_ids(self, key, count):
        rid, self.next_id = self.next_id, self.next_id + 1
        k = key.encode()
        payload = struct.pack(">H", len(k)) + k + struct.pack(">I", count)
        self.sock.sendall(struct.pack(">IBBHI", 8 + len(payload), 1, BINARY_NEXT_IDS, 0, rid)
                          + payload)
        length, _, opcode, flags, got_rid = struct.unpack(">IBBHI", recv_exact(self.sock, 12))
        body = recv_exact(self.sock, length - 8)
        (status,) = struct.unpack(">H", body[:2])
        if status != 0:
            name = BINARY_STATUS.get(status, str(status))
            raise ServerError("binary:%s" % name, name in BINARY_EXPECTED,
                              close=status >= 64 or name == "SHUTTING_DOWN")
        if (opcode, flags, got_rid) != (BINARY_NEXT_IDS, 1, rid):
            raise ServerError("malformed: binary header %r" % ((opcode, flags, got_rid, rid),),
                              False, close=True)
        (n,) = struct.unpack(">I", body[2:6])
        if len(body) != 6 + 16 * n:
            raise ServerError("malformed: binary payload of %d bytes" % len(body), False,
                              close=True)
        return checked_ranges([struct.unpack(">qq", body[6 + 16 * i:22 + 16 * i])
                               for i in range(n)], count)

    def close(self):
        self.sock.close()


class RespClient:
    """INCR and INCRBY on one RESP connection, one command at a time."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=SOCKET_TIMEOUT_S)
        self.buf = b""

    def call(self, *args):
        """The integer reply of one command, or ServerError."""
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a.encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise EOFError("connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        if line.startswith(b":"):
            return int(line[1:])
        text = line.decode(errors="replace")
        for part, name in RESP_EXPECTED.items():
            if part in text:
                raise ServerError("resp:%s" % name, True)
        raise ServerError("resp:%s" % text[:80], False, close=not text.startswith("-"))

    def incr(self, key):
        n = self.call("INCR", key)
        return checked_ranges([(n, n)], 1)

    def incrby(self, key, count):
        """INCRBY answers the last ID of a contiguous block of `count`."""
        last = self.call("INCRBY", key, str(count))
        return checked_ranges([(last - count + 1, last)], count)

    def close(self):
        self.sock.close()


def transport_kind(e):
    """A name for a dropped, refused or timed-out connection."""
    if isinstance(e, (socket.timeout, TimeoutError)):
        return "transport:timeout"
    if isinstance(e, ConnectionRefusedError):
        return "transport:refused"
    if isinstance(e, (ConnectionResetError, BrokenPipeError)):
        return "transport:reset"
    if isinstance(e, (EOFError, http.client.RemoteDisconnected, http.client.IncompleteRead)):
        return "transport:closed"
    return "transport:%s" % type(e).__name__


TRANSPORT_ERRORS = (OSError, EOFError, http.client.HTTPException)


def request(conns, inst, key, iface, count):
    """Sends one request to `inst` on a connection kept in `conns` (made if
    missing, dropped after a transport error or a closing answer) and
    returns its Answer."""
    proto = iface.split("_")[0]
    slot = (inst.name, proto)
    send = time.monotonic()
    try:
        c = conns.get(slot)
        if c is None:
            c = conns[slot] = {"http": lambda: HttpClient(inst.http_port),
                               "binary": lambda: BinaryClient(inst.binary_port),
                               "resp": lambda: RespClient(inst.resp_port)}[proto]()
        if iface == "http":
            ranges = c.seq(key, None)
        elif iface == "http_count":
            ranges = c.seq(key, count)
        elif iface == "binary":
            ranges = c.next_ids(key, count)
        elif iface == "resp_incr":
            ranges = c.incr(key)
        else:
            ranges = c.incrby(key, count)
        return Answer(key, iface, inst.name, send, time.monotonic(), ranges)
    except ServerError as e:
        recv = time.monotonic()
        if e.close:
            drop(conns, slot)
        return Answer(key, iface, inst.name, send, recv, error=e.kind, expected=e.expected)
    except TRANSPORT_ERRORS as e:
        recv = time.monotonic()
        drop(conns, slot)
        return Answer(key, iface, inst.name, send, recv, error=transport_kind(e))


def drop(conns, slot):
    c = conns.pop(slot, None)
    if c is not None:
        try:
            c.close()
        except OSError:
            pass


# --- MariaDB ------------------------------------------------------------------

def alive(pid):
    """True while `pid` runs (a zombie is dead)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


class MariaDB:
    """The test's own mariadbd, run by scripts/mariadb.sh in `dir`."""

    def __init__(self, base):
        self.dir = os.path.join(base, "db")
        self.err = open(os.path.join(base, "mariadb-sh.log"), "ab")
        self.url = self.script("start")

    def script(self, action):
        """Runs scripts/mariadb.sh ACTION DIR; returns its last stdout line."""
        r = subprocess.run([MARIADB_SH, action, self.dir], stdout=subprocess.PIPE,
                           stderr=self.err, text=True, timeout=120)
        if r.returncode != 0:
            raise RuntimeError("scripts/mariadb.sh %s failed (%d); see %s" %
                               (action, r.returncode, self.err.name))
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

    def query(self, sql):
        """Rows of `sql` (tab-separated fields) as root over the socket."""
        r = subprocess.run(["mariadb", "--no-defaults", "--protocol=socket",
                            "--socket=" + os.path.join(self.dir, "mariadb.sock"), "-uroot",
                            "-N", "-B", "seqd_test", "-e", sql],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=3)
        if r.returncode != 0:
            raise RuntimeError("query failed: %s" % sql)
        return [line.split("\t") for line in r.stdout.splitlines()]

    def stop(self):
        """Thaws and stops the server; never raises."""
        try:
            self.thaw()
            self.script("stop")
        except Exception as e:  # noqa: BLE001 - cleanup goes on
            pid = self.pid()
            if pid is not None:
                os.kill(pid, signal.SIGKILL)
            print("warning: stopping MariaDB: %s" % e, file=sys.stderr)
        self.err.close()


# --- seqd instances -----------------------------------------------------------

class Instance:
    """One seqd process in cluster mode. `state`: up, frozen (SIGSTOP),
    leaving (SIGTERM sent), killed (SIGKILL sent), gone (exited after a
    leave) or crashed (exited by itself)."""

    PORT_LINES = {"binary_port": re.compile(r"binary protocol on \S*:(\d+)"),
                  "resp_port": re.compile(r"RESP \(Redis protocol\) on \S*:(\d+)"),
                  "instance_id": re.compile(r"cluster mode: instance (\S+) at")}

    def __init__(self, name, url, lease_ms, base):
        self.name = name
        self.log_path = os.path.join(base, "%s.log" % name)
        self.http_port = free_port()
        self.binary_port = self.resp_port = self.instance_id = None
        self.state = "up"
        self.args = [SEQD, "--store", url, "--cluster", "--cluster-lease-ms", str(lease_ms),
                     "--snowflake", "off", "--tcp-port", "0", "--http-port", str(self.http_port),
                     "--resp-port", "0", "--threads", "2", "--auto-keys", AUTO_KEYS,
                     "--max-step", str(MAX_STEP),
                     "--log-level", "info"]
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(self.args, stdout=out, stderr=subprocess.STDOUT)
        try:
            self.wait_ready()
        except RuntimeError:
            self.kill()
            raise

    def wait_ready(self):
        """Waits for the listener lines in the log and /healthz 200."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited with %s:\n%s" % (self.name, self.proc.returncode,
                                                               self.log_tail()))
            text = self.log_text()
            for attr, pattern in self.PORT_LINES.items():
                m = pattern.search(text)
                if m and getattr(self, attr) is None:
                    setattr(self, attr, int(m.group(1)) if attr.endswith("port") else m.group(1))
            if None not in (self.binary_port, self.resp_port, self.instance_id) and self.healthy():
                return
            time.sleep(0.05)
        raise RuntimeError("%s did not start:\n%s" % (self.name, self.log_tail()))

    def healthy(self):
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=1)
            c.request("GET", "/healthz")
            ok = c.getresponse().status == 200
            c.close()
            return ok
        except TRANSPORT_ERRORS:
            return False

    def log_text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def log_tail(self, n=30):
        return "\n".join(self.log_text().splitlines()[-n:])

    def metrics(self):
        """The instance's /metrics as {name{labels}: value}; {} if it fails."""
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=3)
            c.request("GET", "/metrics")
            body = c.getresponse().read().decode()
            c.close()
        except TRANSPORT_ERRORS:
            return {}
        out = {}
        for line in body.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                out[name] = float(value)
        return out

    def kill(self):
        """SIGCONT then SIGKILL if still running; waits for the exit."""
        if self.proc.poll() is None:
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.kill(self.proc.pid, sig)
                except ProcessLookupError:
                    pass
        self.proc.wait()


class Cluster:
    """The seqd instances, ever started; thread-safe."""

    def __init__(self, url, lease_ms, base):
        self.url, self.lease_ms, self.base = url, lease_ms, base
        self.lock = threading.Lock()
        self.instances = []
        self.crashes = []
        self.shards = None

    def start_instance(self):
        """Starts a new member (a fresh process, a new instance id); retried
        with a new HTTP port if that one was taken meanwhile."""
        with self.lock:
            name = "s%d" % (len(self.instances) + 1)
        for attempt in range(3):
            try:
                inst = Instance(name if attempt == 0 else "%s.%d" % (name, attempt), self.url,
                                self.lease_ms, self.base)
                break
            except RuntimeError:
                if attempt == 2:
                    raise
        with self.lock:
            self.instances.append(inst)
        log("started %s (%s) http %d binary %d resp %d" % (
            inst.name, inst.instance_id, inst.http_port, inst.binary_port, inst.resp_port))
        return inst

    def reachable(self, frozen):
        """Instances clients may send to: running, leaving ones included,
        frozen ones only if `frozen`."""
        states = ("up", "leaving", "frozen") if frozen else ("up", "leaving")
        with self.lock:
            return [i for i in self.instances if i.state in states]

    def up(self):
        with self.lock:
            return [i for i in self.instances if i.state == "up"]

    def set_state(self, inst, state, sig=None):
        with self.lock:
            if sig is not None:
                os.kill(inst.proc.pid, sig)
            inst.state = state

    def by_instance_id(self, instance_id):
        with self.lock:
            return next((i for i in self.instances if i.instance_id == instance_id), None)

    def check_crashes(self):
        """Records instances that exited though not killed or leaving; returns
        every crash so far (a leave that exited with an error counts)."""
        with self.lock:
            exited = [i for i in self.instances
                      if i.state in ("up", "frozen") and i.proc.poll() is not None]
        for i in exited:
            self.record_crash(i)
        with self.lock:
            return list(self.crashes)

    def record_crash(self, inst):
        with self.lock:
            inst.state = "crashed"
            self.crashes.append({"instance": inst.name, "exit": inst.proc.returncode,
                                 "time": rel(time.monotonic()), "log": inst.log_tail()})

    def kill_all(self):
        with self.lock:
            instances = list(self.instances)
        for i in instances:
            i.kill()


# --- load ----------------------------------------------------------------------

class Client(threading.Thread):
    """A loop of random requests (instance, key, interface, count) until
    `stop` is set; `answers` holds what it saw. Only a prober sends to a
    frozen instance (and then waits up to SOCKET_TIMEOUT_S); the others
    keep the rest of the cluster busy meanwhile, and send to the instance
    again as soon as it is thawed."""

    def __init__(self, cluster, seed, stop, prober):
        super().__init__(daemon=True)
        self.cluster, self.rng, self.stop = cluster, random.Random(seed), stop
        self.prober = prober
        self.answers = []
        self.error = None

    def run(self):
        conns = {}
        try:
            while not self.stop.is_set():
                insts = self.cluster.reachable(frozen=self.prober)
                if not insts:
                    time.sleep(0.01)
                    continue
                live = {i.name for i in insts}
                for slot in [s for s in conns if s[0] not in live]:
                    drop(conns, slot)
                inst = self.rng.choice(insts)
                a = request(conns, inst, self.rng.choice(KEYS), self.rng.choice(INTERFACES),
                            self.rng.randint(1, MAX_COUNT))
                self.answers.append(a)
                if not a.ok:
                    time.sleep(0.01)  # no busy loop against a dead port
        except Exception:  # noqa: BLE001 - reported as a harness failure
            self.error = traceback.format_exc()
        finally:
            for slot in list(conns):
                drop(conns, slot)


class Probe(threading.Thread):
    """One request (`key`, `iface`, count 2) to `inst` on a connection of its
    own; `answers` holds its Answer."""

    def __init__(self, inst, key, iface):
        super().__init__(daemon=True)
        self.inst, self.key, self.iface = inst, key, iface
        self.answers = []

    def run(self):
        conns = {}
        self.answers.append(request(conns, self.inst, self.key, self.iface, 2))
        for slot in list(conns):
            drop(conns, slot)


# --- faults ----------------------------------------------------------------------

class Nemesis(threading.Thread):
    """Runs one fault at a time until `until`: WARMUP_S first, a settling
    pause of 1.5 to 2.5 leases after each; `faults` records each with its
    times."""

    def __init__(self, cluster, db, rng, lease_s, until):
        super().__init__(daemon=True)
        self.cluster, self.db, self.rng, self.lease_s, self.until = cluster, db, rng, lease_s, until
        self.faults = []
        self.answers = []  # the late probes' (see fault_stop_owner)
        self.error = None
        self.stop = threading.Event()

    def run(self):
        try:
            self.stop.wait(WARMUP_S)
            order = []
            while not self.stop.is_set() and time.monotonic() < self.until:
                if not order:
                    order = list(FAULTS)
                    self.rng.shuffle(order)
                kind = order.pop(0)
                fault = {"kind": kind, "start": None, "end": None, "target": None, "detail": ""}
                getattr(self, "fault_" + kind)(fault)
                self.faults.append(fault)
                log("fault %s done: %s %s" % (kind, fault["target"], fault["detail"]))
                self.cluster.check_crashes()
                self.stop.wait(self.lease_s * self.rng.uniform(1.5, 2.5))
        except Exception:  # noqa: BLE001 - reported as a harness failure
            self.error = traceback.format_exc()

    def begin(self, fault, target, what):
        fault["start"], fault["target"] = time.monotonic(), target
        log("fault %s: %s %s" % (fault["kind"], target, what))

    def fault_kill_instance(self, fault):
        """kill -9 a random instance; a fresh one joins about 1 s later."""
        victim = self.rng.choice(self.cluster.up())
        self.begin(fault, victim.name, "kill -9")
        self.cluster.set_state(victim, "killed", signal.SIGKILL)
        victim.proc.wait()
        time.sleep(1.0)
        new = self.cluster.start_instance()
        fault["end"], fault["detail"] = time.monotonic(), "replaced by %s" % new.name

    def fault_stop_owner(self, fault):
        """SIGSTOP the owner of a random key for 2.5 leases, then SIGCONT.
        Just before the SIGCONT, late probes: one request per key and
        interface sent to the frozen instance, long after its leases lapsed
        and other instances answered for its keys; the thawed instance must
        not answer them (or anything) from the buffers it froze with."""
        key = self.rng.choice(KEYS)
        victim, how = self.owner_of(key), "owner of %s" % key
        if victim is None or victim.state != "up":
            victim, how = self.rng.choice(self.cluster.up()), "random (owner of %s unknown)" % key
        self.begin(fault, victim.name, "SIGSTOP (%s) for %.1f s" % (how, 2.5 * self.lease_s))
        self.cluster.set_state(victim, "frozen", signal.SIGSTOP)
        time.sleep(2.5 * self.lease_s - LATE_PROBE_LEAD_S)
        probes = self.late_probes(victim)
        time.sleep(LATE_PROBE_LEAD_S)  # the probes are in the victim's sockets
        self.cluster.set_state(victim, "up", signal.SIGCONT)
        for t in probes:
            t.join(SOCKET_TIMEOUT_S + 2)
        late = [a for t in probes for a in t.answers]
        self.answers.extend(late)
        fault["end"] = time.monotonic()
        fault["detail"] = "%s; late probes %d/%d answered" % (
            how, sum(a.ok for a in late), len(KEYS) * len(INTERFACES))

    def late_probes(self, victim):
        """Started Probe threads, one per key and interface, at `victim`."""
        probes = [Probe(victim, key, iface) for key in KEYS for iface in INTERFACES]
        for t in probes:
            t.start()
        return probes

    def owner_of(self, key):
        """The instance the lease table names as the owner of `key`'s shard."""
        try:
            if self.cluster.shards is None:
                self.cluster.shards = int(
                    self.db.query("SELECT value FROM seqd_cluster WHERE name = 'shards'")[0][0])
            shard = fnv1a64(key.encode()) % self.cluster.shards
            rows = self.db.query("SELECT owner FROM seqd_shard_lease WHERE shard = %d" % shard)
            return self.cluster.by_instance_id(rows[0][0]) if rows else None
        except (RuntimeError, IndexError, ValueError, subprocess.TimeoutExpired):
            return None

    def fault_freeze_db(self, fault):
        """SIGSTOP mariadbd for 2 s, then SIGCONT."""
        pid = self.db.pid()
        self.begin(fault, "mariadbd %s" % pid, "SIGSTOP for 2.0 s")
        self.db.freeze()
        time.sleep(2.0)
        self.db.thaw()
        fault["end"] = time.monotonic()

    def fault_kill_db(self, fault):
        """kill -9 mariadbd; restart it on the same port about 1 s later."""
        pid = self.db.pid()
        self.begin(fault, "mariadbd %s" % pid, "kill -9")
        self.db.kill9()
        time.sleep(1.0)
        self.db.restart()
        fault["end"], fault["detail"] = time.monotonic(), "restarted as pid %s" % self.db.pid()

    def fault_leave_join(self, fault):
        """SIGTERM a random instance (a clean leave); once it exited, a new
        one joins. A leave that does not finish in LEAVE_TIMEOUT_S fails."""
        victim = self.rng.choice(self.cluster.up())
        self.begin(fault, victim.name, "SIGTERM")
        self.cluster.set_state(victim, "leaving", signal.SIGTERM)
        try:
            code = victim.proc.wait(timeout=LEAVE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            victim.kill()
            self.cluster.set_state(victim, "killed")
            raise RuntimeError("%s did not exit within %.0f s of SIGTERM:\n%s" % (
                victim.name, LEAVE_TIMEOUT_S, victim.log_tail()))
        self.cluster.set_state(victim, "gone")
        left_at = time.monotonic()
        if code != 0:
            self.cluster.record_crash(victim)
        new = self.cluster.start_instance()
        fault["end"] = time.monotonic()
        fault["detail"] = "exit %d after %.2f s; joined %s" % (code, left_at - fault["start"],
                                                              new.name)


# --- the checker ------------------------------------------------------------------

def by_key(answers):
    """Successful answers grouped by key."""
    out = collections.defaultdict(list)
    for a in answers:
        if a.ok:
            out[a.key].append(a)
    return out


def find_duplicates(answers):
    """Per key, IDs answered more than once (each extra copy counts one).
    Ranges sorted by first ID; each range's overlap with the furthest end
    reached so far is exactly its IDs already answered. O(n log n).
    Returns (count, examples)."""
    count, examples = 0, []
    for key, items in sorted(by_key(answers).items()):
        spans = sorted((f, l, i) for i, a in enumerate(items) for f, l in a.ranges)
        reach, reach_by = None, None
        for first, last, i in spans:
            if reach is not None and first <= reach:
                extra = min(last, reach) - first + 1
                count += extra
                if len(examples) < EXAMPLES:
                    examples.append({"key": key, "ids": [first, min(last, reach)],
                                     "a": items[reach_by].describe(), "b": items[i].describe()})
            if reach is None or last > reach:
                reach, reach_by = last, i
    return count, examples


def find_order_violations(answers):
    """Per key, answers B with an ID at or below the largest ID of an answer
    A received before B was sent (A.recv < B.send). Sweeps B by send time
    while the answers received before it feed a running maximum; each
    violating B counts once. O(n log n). Returns (count, examples)."""
    count, examples = 0, []
    for key, items in sorted(by_key(answers).items()):
        by_recv = sorted(items, key=lambda a: a.recv)
        i, best = 0, None
        for b in sorted(items, key=lambda a: a.send):
            while i < len(by_recv) and by_recv[i].recv < b.send:
                if best is None or by_recv[i].hi > best.hi:
                    best = by_recv[i]
                i += 1
            if best is not None and b.lo <= best.hi:
                count += 1
                if len(examples) < EXAMPLES:
                    examples.append({"key": key, "earlier": best.describe(),
                                     "later": b.describe(),
                                     "gap_s": round(b.send - best.recv, 3)})
    return count, examples


def unexpected_errors(answers):
    """Answers outside the contract (bad error codes, malformed answers)."""
    bad = [a for a in answers if not a.ok and not a.expected]
    kinds = collections.Counter(a.error for a in bad)
    return len(bad), dict(kinds), [a.describe() for a in bad[:EXAMPLES]]


def availability(answers, faults, end):
    """Per fault: the longest time any key went without a successful answer
    (by receive time) between the fault's start and the next fault's start
    (or `end`), counting from the fault's start. Informative only."""
    recvs = {k: sorted(a.recv for a in v) for k, v in by_key(answers).items()}
    out = []
    for n, f in enumerate(faults):
        w0, w1 = f["start"], faults[n + 1]["start"] if n + 1 < len(faults) else end
        worst, worst_key = 0.0, None
        for key in KEYS:
            times = recvs.get(key, [])
            lo, hi = bisect.bisect_left(times, w0), bisect.bisect_right(times, w1)
            prev, gap = w0, 0.0
            for t in times[lo:hi] + [w1]:
                gap, prev = max(gap, t - prev), t
            if gap > worst:
                worst, worst_key = gap, key
        out.append({"kind": f["kind"], "start": rel(f["start"]), "end": rel(f["end"]),
                    "target": f["target"], "detail": f["detail"],
                    "max_gap_s": round(worst, 3), "gap_key": worst_key})
    return out


def check_history(answers):
    """The safety verdict of a history: duplicates, order violations and
    answers outside the contract, with examples."""
    dups, dup_examples = find_duplicates(answers)
    order, order_examples = find_order_violations(answers)
    bad, bad_kinds, bad_examples = unexpected_errors(answers)
    return {"duplicates": dups, "duplicate_examples": dup_examples,
            "order_violations": order, "order_examples": order_examples,
            "unexpected_errors": bad, "unexpected_kinds": bad_kinds,
            "unexpected_examples": bad_examples}


# --- self-test ------------------------------------------------------------------

def self_test():
    """Proves the checker can fail: synthetic histories with a duplicate, an
    order violation (against the latest and against an older answer, with
    several ranges), near misses that must pass (concurrent inversions, a
    send at the very instant of a receive, separate keys, errors), and 300
    random histories compared with an O(n^2) brute force. Raises
    AssertionError on any mismatch."""
    def A(send, recv, *ranges, key="k", error=None, expected=True):
        return Answer(key, "http", "s1", send, recv, tuple(ranges) or None, error, expected)

    cases = [
        ("sequential", [A(0, 1, (1, 2)), A(2, 3, (3, 3)), A(4, 5, (4, 9))], 0, 0, 0),
        ("concurrent share an id", [A(0, 2, (1, 5)), A(1, 3, (5, 6))], 1, 0, 0),
        ("stale after an answer", [A(0, 1, (10, 10)), A(2, 3, (5, 5))], 0, 1, 0),
        ("equal id later", [A(0, 1, (10, 10)), A(2, 3, (10, 10))], 1, 1, 0),
        ("concurrent inversion", [A(0, 2, (10, 10)), A(1, 3, (5, 5))], 0, 0, 0),
        ("send at recv instant", [A(0, 1, (10, 10)), A(1, 2, (5, 5))], 0, 0, 0),
        ("older answer holds the max", [A(0, 1, (100, 100)), A(0.5, 2, (50, 50)),
                                        A(3, 4, (70, 70))], 0, 1, 0),
        ("gap inside a multi-range", [A(0, 1, (1, 5), (10, 12)), A(2, 3, (6, 9))], 0, 1, 0),
        ("keys are separate", [A(0, 1, (5, 5), key="a"), A(2, 3, (5, 5), key="b")], 0, 0, 0),
        ("errors carry no ids", [A(0, 1, (5, 5)), A(2, 3, error="transport:timeout"),
                                 A(2, 4, error="http:500 internal", expected=False)], 0, 0, 1),
        ("triple overlap", [A(0, 9, (1, 10)), A(0, 9, (5, 20)), A(0, 9, (8, 9))], 8, 0, 0),
    ]
    for name, history, dups, order, bad in cases:
        v = check_history(history)
        got = (v["duplicates"], v["order_violations"], v["unexpected_errors"])
        assert got == (dups, order, bad), "self-test %r: got %r, want %r" % (
            name, got, (dups, order, bad))
    rng = random.Random(7)
    for _ in range(300):
        history = []
        for _ in range(rng.randint(1, 40)):
            send = rng.uniform(0, 10)
            first = rng.randint(1, 60)
            history.append(A(send, send + rng.uniform(0, 2), (first, first + rng.randint(0, 3)),
                             key=rng.choice("ab")))
        v = check_history(history)
        assert (v["duplicates"], v["order_violations"]) == brute_force(history), \
            "self-test: random history disagrees with the brute force"
    clean = {"duplicates": 0, "order_violations": 0, "unexpected_errors": 0,
             "unexpected_kinds": {}, "answers_ok": MIN_ANSWERS,
             "faults_by_kind": dict.fromkeys(FAULTS, 1),
             "final_round": {"requests": 1, "failed": []}}
    assert failures_of(clean, [], []) == [], "self-test: a clean run must pass"
    for field, value in (("duplicates", 1), ("order_violations", 1), ("unexpected_errors", 1),
                         ("answers_ok", MIN_ANSWERS - 1), ("faults_by_kind", {})):
        assert failures_of(dict(clean, **{field: value}), [], []), \
            "self-test: %s=%r must fail the run" % (field, value)
    return len(cases) + 300


def brute_force(history):
    """(extra copies of IDs, violating answers) by the definitions, O(n^2)."""
    ids = collections.Counter((a.key, i) for a in history if a.ok
                              for f, l in a.ranges for i in range(f, l + 1))
    dups = sum(c - 1 for c in ids.values())
    order = sum(1 for b in history if b.ok and any(
        a.ok and a.key == b.key and a.recv < b.send and b.lo <= a.hi for a in history))
    return dups, order


# --- the run ---------------------------------------------------------------------

def final_round(cluster):
    """One request per running instance, key and interface on fresh
    connections; returns the answers."""
    out = []
    for inst in cluster.up():
        conns = {}
        for key in KEYS:
            for iface in INTERFACES:
                out.append(request(conns, inst, key, iface, 3))
        for slot in list(conns):
            drop(conns, slot)
    return out


def scan_logs(base):
    """WARN and ERROR lines of every seqd log, grouped with digits masked."""
    groups, count = collections.OrderedDict(), 0
    for name in sorted(os.listdir(base)):
        if not name.endswith(".log") or not name.startswith("s"):
            continue
        with open(os.path.join(base, name), errors="replace") as f:
            for line in f:
                if " WARN " in line or " ERROR " in line:
                    count += 1
                    text = line.split(" ", 1)[-1].strip()
                    pattern = re.sub(r"\d+", "N", text)
                    g = groups.setdefault(pattern, {"count": 0, "example": "%s: %s" % (
                        name[:-4], line.strip())})
                    g["count"] += 1
    ranked = sorted(groups.items(), key=lambda pg: -pg[1]["count"])
    return {"count": count, "groups": [dict(pattern=p, **g) for p, g in ranked]}


def cluster_metrics(cluster):
    """Cluster counters summed over the instances still running (killed
    ones took theirs with them). Informative only."""
    names = ("seqd_cluster_fenced_total", "seqd_cluster_takeovers_total",
             "seqd_cluster_handoffs_total", 'seqd_cluster_forwards_total{result="ok"}',
             'seqd_cluster_forwards_total{result="error"}', "seqd_cluster_owner_waits_total",
             "seqd_cluster_wrong_owner_total", 'seqd_cluster_rounds_total{result="error"}')
    totals = dict.fromkeys(names, 0)
    for inst in cluster.up():
        m = inst.metrics()
        for n in names:
            totals[n] += int(m.get(n, 0))
    return totals


def figures_of(args, answers, final, faults, end, started):
    """Every figure of the run, for the summary and --json."""
    ok = [a for a in answers if a.ok]
    verdict = check_history(answers)
    return {
        "seconds": args.seconds, "seed": args.seed, "lease_ms": args.lease_ms,
        "wall_s": round(time.monotonic() - started, 1),
        "answers_ok": len(ok), "answers_failed": len(answers) - len(ok),
        "ids": sum(l - f + 1 for a in ok for f, l in a.ranges),
        "by_interface": dict(collections.Counter(a.iface for a in ok)),
        "by_instance": dict(sorted(collections.Counter(a.inst for a in ok).items())),
        "errors": dict(collections.Counter(a.error for a in answers if not a.ok).most_common()),
        "faults": availability(answers, faults, end),
        "faults_by_kind": dict(collections.Counter(f["kind"] for f in faults)),
        "final_round": {"requests": len(final),
                        "failed": [a.describe() for a in final if not a.ok]},
        **verdict,
    }


def failures_of(fig, harness_errors, crashes):
    """The reasons the run fails; empty if it passes."""
    out = []
    if fig["duplicates"]:
        out.append("%d IDs answered twice" % fig["duplicates"])
    if fig["order_violations"]:
        out.append("%d real-time order violations" % fig["order_violations"])
    if fig["unexpected_errors"]:
        out.append("%d answers outside the contract: %s" % (fig["unexpected_errors"],
                                                            fig["unexpected_kinds"]))
    if fig["answers_ok"] < MIN_ANSWERS:
        out.append("only %d successful answers (want >= %d)" % (fig["answers_ok"], MIN_ANSWERS))
    missing = [k for k in FAULTS if k not in fig["faults_by_kind"]]
    if missing:
        out.append("faults that never ran: %s" % ", ".join(missing))
    if fig["final_round"]["failed"]:
        out.append("%d of %d final-round requests failed" % (
            len(fig["final_round"]["failed"]), fig["final_round"]["requests"]))
    for c in crashes:
        out.append("%s exited by itself or with an error (code %s) at %.1f s" % (
            c["instance"], c["exit"], c["time"]))
    out.extend("harness error: %s" % e for e in harness_errors)
    return out


def write_history(path, answers):
    """Every answer as a JSON line (times in seconds since the start), in
    send order, for a closer look at a failed or slow run."""
    with open(path, "w") as f:
        for a in sorted(answers, key=lambda a: a.send):
            f.write(json.dumps({"key": a.key, "iface": a.iface, "inst": a.inst,
                                "send": rel(a.send), "recv": rel(a.recv), "ranges": a.ranges,
                                "error": a.error}) + "\n")


def print_summary(fig, failures):
    p = print
    p("cluster chaos: %d s, seed %d, lease %d ms, wall %.1f s" % (
        fig["seconds"], fig["seed"], fig["lease_ms"], fig["wall_s"]))
    p("answers: %d ok (%d IDs), %d failed; by interface %s" % (
        fig["answers_ok"], fig["ids"], fig["answers_failed"], fig["by_interface"]))
    p("by instance: %s" % fig["by_instance"])
    p("errors: %s" % fig["errors"])
    p("faults run: %s" % fig["faults_by_kind"])
    for f in fig["faults"]:
        p("  %7.2f-%7.2f s %-13s %-14s longest gap %.3f s (%s) %s" % (
            f["start"], f["end"], f["kind"], f["target"], f["max_gap_s"], f["gap_key"],
            f["detail"]))
    p("duplicates: %d; order violations: %d; answers outside the contract: %d" % (
        fig["duplicates"], fig["order_violations"], fig["unexpected_errors"]))
    for e in fig["duplicate_examples"]:
        p("  duplicate %s %s:\n    %s\n    %s" % (e["key"], e["ids"], e["a"], e["b"]))
    for e in fig["order_examples"]:
        p("  order %s (sent %.3f s after):\n    earlier %s\n    later   %s" % (
            e["key"], e["gap_s"], e["earlier"], e["later"]))
    for e in fig["unexpected_examples"]:
        p("  outside the contract: %s" % e)
    p("final round: %d requests, %d failed" % (fig["final_round"]["requests"],
                                                len(fig["final_round"]["failed"])))
    for e in fig["final_round"]["failed"][:EXAMPLES]:
        p("  %s" % e)
    p("cluster metrics (running instances): %s" % fig.get("cluster_metrics"))
    logs = fig.get("seqd_logs", {})
    p("seqd WARN/ERROR lines: %d" % logs.get("count", 0))
    for g in logs.get("groups", [])[:12]:
        p("  %4d x %s" % (g["count"], g["example"][:220]))
    p("PASS" if not failures else "FAIL:\n  " + "\n  ".join(failures))


def run(args):
    """Starts MariaDB and the cluster, runs load and nemesis, checks; returns
    the exit code. Everything started is stopped whatever happens."""
    started = time.monotonic()
    base = tempfile.mkdtemp(prefix="seqd-chaos-")
    state = {"db": None, "cluster": None, "cleaned": False}

    def cleanup():
        if state["cleaned"]:
            return
        state["cleaned"] = True
        if state["cluster"]:
            state["cluster"].kill_all()
        if state["db"]:
            state["db"].stop()
        if args.keep:
            print("kept %s" % base)
        else:
            shutil.rmtree(base, ignore_errors=True)

    atexit.register(cleanup)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    stop = threading.Event()
    try:
        db = state["db"] = MariaDB(base)
        log("MariaDB at %s (pid %s)" % (db.url.split("@")[-1], db.pid()))
        cluster = state["cluster"] = Cluster(db.url, args.lease_ms, base)
        for _ in range(INSTANCES):
            cluster.start_instance()
        rng = random.Random(args.seed)
        clients = [Client(cluster, rng.getrandbits(32), stop, prober=n < PROBERS)
                   for n in range(CLIENT_THREADS)]
        for c in clients:
            c.start()
        lease_s = args.lease_ms / 1000.0
        nemesis = Nemesis(cluster, db, random.Random(rng.getrandbits(32)), lease_s,
                          time.monotonic() + args.seconds)
        nemesis.start()
        nemesis.join(args.seconds + 120)
        if nemesis.is_alive():
            nemesis.stop.set()
            nemesis.join(30)
        log("nemesis stopped; settling for %.1f s" % (2 * lease_s))
        time.sleep(2 * lease_s)
        end = time.monotonic()
        stop.set()
        for c in clients:
            c.join(SOCKET_TIMEOUT_S + 5)
        crashes = cluster.check_crashes()
        final = final_round(cluster)
        answers = [a for c in clients for a in c.answers] + nemesis.answers + final
        harness_errors = [e for e in [nemesis.error] + [c.error for c in clients] if e]
        harness_errors += ["a client thread did not stop" for c in clients if c.is_alive()]
        harness_errors += ["the nemesis did not stop"] if nemesis.is_alive() else []
        fig = figures_of(args, answers, final, nemesis.faults, end, started)
        fig["cluster_metrics"] = cluster_metrics(cluster)
        fig["seqd_logs"] = scan_logs(base)
        fig["crashes"] = crashes
        failures = failures_of(fig, harness_errors, crashes)
        fig["failures"], fig["passed"] = failures, not failures
    finally:
        stop.set()
        cleanup()
    fig["wall_s"] = round(time.monotonic() - started, 1)
    print_summary(fig, failures)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(fig, f, indent=2)
    if args.history:
        write_history(args.history, answers)
    return 0 if not failures else 1


def main():
    global VERBOSE
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=int, default=60, help="no fault starts after this")
    p.add_argument("--seed", type=int, default=None, help="dice of clients and nemesis")
    p.add_argument("--lease-ms", type=int, default=2000, help="--cluster-lease-ms of every seqd")
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--history", help="write every answer here, one JSON object a line")
    p.add_argument("--keep", action="store_true", help="keep the temp dir (seqd and MariaDB logs)")
    p.add_argument("--self-test", action="store_true", help="check the checker, then exit")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args()
    VERBOSE = args.verbose
    n = self_test()
    if args.self_test:
        print("self-test: the checker judged %d synthetic histories right" % n)
        return 0
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 31)
    log("self-test passed (%d histories); seed %d" % (n, args.seed))
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
