"""The seqd processes of a cluster-mode run: each `Instance` one seqd with
its ports read from its log, a `Cluster` the members ever started (and
their states), `FixedPortCluster` one whose replacements come back on the
ports of the member they replace; the shard a key maps to; a `Workspace`,
the run's temporary directory and everything started in it, stopped at
the end whatever happens.

Thread safety: a Cluster's methods may be called from any thread; an
Instance is changed through its Cluster (set_state).
"""
import atexit
import http.client
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from harness import SEQD, free_port
from lib.progress import log, rel

START_TIMEOUT_S = 20.0
HTTP_ERRORS = (OSError, EOFError, http.client.HTTPException)


def fnv1a64(data):
    """FNV-1a 64 of `data` (bytes), seqd's key-to-shard hash."""
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def shard_of(key, shards):
    """The shard of `key` among `shards` (--cluster-shards)."""
    return fnv1a64(key.encode()) % shards


class Instance:
    """One seqd process in cluster mode on `url`, run with `flags` besides
    its store, lease and ports; its log is `base`/NAME.log. `state`: up,
    frozen (SIGSTOP), leaving (SIGTERM sent), killed (SIGKILL sent), gone
    (exited after a leave) or crashed (exited by itself). RuntimeError if it
    does not serve within START_TIMEOUT_S."""

    PORT_LINES = {"binary_port": re.compile(r"binary protocol on \S*:(\d+)"),
                  "resp_port": re.compile(r"RESP \(Redis protocol\) on \S*:(\d+)"),
                  "instance_id": re.compile(r"cluster mode: instance (\S+) at")}

    def __init__(self, name, url, lease_ms, base, flags, binary_port=0, http_port=None,
                 seqd=SEQD):
        self.name = name
        self.log_path = os.path.join(base, "%s.log" % name)
        self.http_port = http_port or free_port()
        self.binary_port = self.resp_port = self.instance_id = None
        self.state = "up"
        self.args = [seqd, "--store", url, "--cluster", "--cluster-lease-ms", str(lease_ms),
                     "--tcp-port", str(binary_port), "--http-port", str(self.http_port), *flags]
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
        except HTTP_ERRORS:
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
        except HTTP_ERRORS:
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
    """The seqd instances of a run on `url`, ever started, named s1, s2, ...
    in start order; `size` binary-port slots: a replacement takes the port
    of the instance it replaces, so a client given `binary_ports` (the
    subscribers) always has somewhere to go."""

    RETRIES = 3          # tries to start a member
    RETRY_PAUSE_S = 0.5
    SLOT_TRIES = 2       # of them on the slot's ports; then any port (None: never)

    def __init__(self, url, lease_ms, base, flags, size=3, seqd=SEQD):
        self.url, self.lease_ms, self.base = url, lease_ms, base
        self.flags, self.seqd = list(flags), seqd
        self.lock = threading.Lock()
        self.instances = []
        self.crashes = []
        self.shards = None  # --cluster-shards as the lease table says, once read
        self.binary_ports = [free_port() for _ in range(size)]

    def start_instance(self):
        """Starts a new member (a fresh process, a new instance id) on a free
        slot; returns it once it serves."""
        with self.lock:
            name = "s%d" % (len(self.instances) + 1)
            http_port, binary_port = self.free_slot()
        for attempt in range(self.RETRIES):
            on_slot = self.SLOT_TRIES is None or attempt < self.SLOT_TRIES
            try:
                inst = Instance(name if attempt == 0 else "%s.%d" % (name, attempt), self.url,
                                self.lease_ms, self.base, self.flags,
                                binary_port if on_slot else 0, http_port if on_slot else None,
                                seqd=self.seqd)
                break
            except RuntimeError:
                if attempt == self.RETRIES - 1:
                    raise
                time.sleep(self.RETRY_PAUSE_S)  # the old process's ports not free yet
        with self.lock:
            self.instances.append(inst)
        log("started %s (%s) http %d binary %d resp %d" % (
            inst.name, inst.instance_id, inst.http_port, inst.binary_port, inst.resp_port))
        return inst

    def free_slot(self):
        """(HTTP port or None for any, binary port or 0 for any) of a new
        member: the binary port of a slot no running process holds."""
        held = {i.binary_port for i in self.instances if i.proc.poll() is None}
        return None, next((p for p in self.binary_ports if p not in held), 0)

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
        """Sends `sig` (if any) to `inst` and records its new `state`, at once."""
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


class FixedPortCluster(Cluster):
    """A Cluster whose slots hold an HTTP port too: a new member takes both
    ports of a slot no member up, frozen or leaving holds, as a restarted
    server would, retried until the old process has let them go. Clients
    are given `endpoints()` once."""

    RETRIES = 40
    RETRY_PAUSE_S = 0.25
    SLOT_TRIES = None

    def __init__(self, url, lease_ms, base, flags, size=3, seqd=SEQD):
        super().__init__(url, lease_ms, base, flags, size, seqd)
        self.slots = [(free_port(), binary) for binary in self.binary_ports]

    def endpoints(self):
        """The slots' binary endpoints, host:port."""
        return ["127.0.0.1:%d" % binary for _, binary in self.slots]

    def free_slot(self):
        held = {(i.http_port, i.binary_port) for i in self.instances
                if i.state in ("up", "frozen", "leaving")}
        return next(s for s in self.slots if s not in held)


class Workspace:
    """A run's temporary directory (`base`, named `prefix`...) and what was
    started in it: cleanup() runs the `on_cleanup` stops in reverse order,
    once, at the latest at exit (SIGTERM exits), then removes the directory
    unless `keep`."""

    def __init__(self, prefix, keep=False):
        self.base = tempfile.mkdtemp(prefix=prefix)
        self.keep = keep
        self.stops = []
        self.cleaned = False
        atexit.register(self.cleanup)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    def on_cleanup(self, stop):
        """Has cleanup() call `stop()` (before the ones registered earlier)."""
        self.stops.append(stop)

    def cleanup(self):
        if self.cleaned:
            return
        self.cleaned = True
        for stop in reversed(self.stops):
            stop()
        if self.keep:
            print("kept %s" % self.base)
        else:
            shutil.rmtree(self.base, ignore_errors=True)
