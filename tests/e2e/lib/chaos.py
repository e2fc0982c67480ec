"""The nemesis of the chaos suites: one fault at a time on a cluster
(lib/cluster.py) and its MariaDB (lib/mariadb.py), the kinds in a seeded
shuffled order, each cycle running every kind, a settling pause of 1.5 to
2.5 leases after each. The kinds:
  kill_instance  kill -9 a random instance, start a fresh one ~1 s later
  stop_owner     SIGSTOP the owner of a random key (every second time of a
                 conversation; from seqd_shard_lease) for 2.5 leases, then
                 SIGCONT, with late probes (lib/load.py) sent to it just
                 before: it must not answer from its stale buffers
  freeze_db      SIGSTOP mariadbd for 2 s, then SIGCONT
  kill_db        kill -9 mariadbd, restart it ~1 s later on the same port
  leave_join     SIGTERM a random instance (a clean leave), start a new one
A suite adds kinds as `fault_<kind>` methods of a subclass. The suites'
common command line and main are here too (`parser`, `main`).

Thread safety: the Nemesis is a thread; read `faults`, `answers` and
`error` once it has stopped (`stop` ends it early).
"""
import argparse
import random
import signal
import subprocess
import threading
import time
import traceback

from lib import progress
from lib.checkers import Msg
from lib.clients import SOCKET_TIMEOUT_S
from lib.cluster import shard_of
from lib.load import CONVS, INTERFACES, KEYS, MSG_INTERFACES, MessageProbe, Probe
from lib.progress import log

FAULTS = ("kill_instance", "stop_owner", "freeze_db", "kill_db", "leave_join")
WARMUP_S = 2.0
LEAVE_TIMEOUT_S = 15.0
LATE_PROBE_LEAD_S = 0.3  # late probes are sent this long before the SIGCONT


class Nemesis(threading.Thread):
    """Runs one fault of `kinds` at a time until `until`: `warmup_s` first, a
    settling pause of 1.5 to 2.5 leases (`lease_s`) after each; `faults`
    records each with its times."""

    STOP_LEASES = 2.5      # how long stop_owner keeps its victim stopped
    FREEZE_S = 2.0         # how long freeze_db keeps mariadbd stopped
    RESTART_PAUSE_S = 1.0  # between a kill -9 and the restart or replacement

    def __init__(self, cluster, db, rng, lease_s, until, kinds=FAULTS, warmup_s=WARMUP_S,
                 dbs=None):
        super().__init__(daemon=True)
        self.cluster, self.db, self.rng, self.lease_s, self.until = cluster, db, rng, lease_s, until
        self.dbs = dbs or [db]  # the database faults pick one (store groups: several)
        self.kinds, self.warmup_s = kinds, warmup_s
        self.faults = []
        self.answers = []  # the late probes' (see fault_stop_owner)
        self.msg_probes = []  # the late message probes, joined by the run
        self.error = None
        self.stop = threading.Event()

    def run(self):
        try:
            self.stop.wait(self.warmup_s)
            order = []
            while not self.stop.is_set() and time.monotonic() < self.until:
                if not order:
                    order = list(self.kinds)
                    self.rng.shuffle(order)
                fault = self.new_fault(order.pop(0))
                kind = fault["kind"]
                getattr(self, "fault_" + kind)(fault)
                self.faults.append(fault)
                log("fault %s done: %s %s" % (kind, fault["target"], fault["detail"]))
                self.cluster.check_crashes()
                self.stop.wait(self.lease_s * self.rng.uniform(1.5, 2.5))
        except Exception:  # noqa: BLE001 - reported as a harness failure
            self.error = traceback.format_exc()

    def play_out(self, overrun_s=120):
        """Starts the nemesis and waits for it, stopping it if it runs
        `overrun_s` past its end; then lets the cluster settle for 2 leases.
        True if it ended by itself."""
        self.start()
        self.join(max(0.0, self.until - time.monotonic()) + overrun_s)
        ended = not self.is_alive()
        if not ended:
            self.stop.set()
            self.join(30)
        log("nemesis stopped; settling for %.1f s" % (2 * self.lease_s))
        time.sleep(2 * self.lease_s)
        return ended

    def new_fault(self, kind):
        """The record of a fault of `kind` about to run; its method fills it in."""
        return {"kind": kind, "start": None, "end": None, "target": None, "detail": ""}

    def begin(self, fault, target, what):
        fault["start"], fault["target"] = time.monotonic(), target
        log("fault %s: %s %s" % (fault["kind"], target, what))

    def fault_kill_instance(self, fault):
        """kill -9 a random instance; a fresh one joins about 1 s later."""
        victim = self.rng.choice(self.cluster.up())
        self.begin(fault, victim.name, "kill -9")
        self.cluster.set_state(victim, "killed", signal.SIGKILL)
        victim.proc.wait()
        time.sleep(self.RESTART_PAUSE_S)
        new = self.cluster.start_instance()
        fault["end"], fault["detail"] = time.monotonic(), "replaced by %s" % new.name

    def fault_stop_owner(self, fault):
        """SIGSTOP the owner of a random key (of a random conversation every
        second time) for STOP_LEASES leases, then SIGCONT. Just before the
        SIGCONT, late probes: one request per key and interface and one new
        message per conversation and interface sent to the frozen instance,
        long after its leases lapsed and other instances answered for its
        keys; the thawed instance must not answer them (or anything) from
        the buffers or cached max seqs it froze with."""
        stops = sum(f["kind"] == "stop_owner" for f in self.faults)
        key = self.rng.choice(CONVS if stops % 2 else KEYS)
        victim, how = self.owner_of(key), "owner of %s" % key
        if victim is None or victim.state != "up":
            victim, how = self.rng.choice(self.cluster.up()), "random (owner of %s unknown)" % key
        stop_s = self.STOP_LEASES * self.lease_s
        self.begin(fault, victim.name, "SIGSTOP (%s) for %.1f s" % (how, stop_s))
        self.cluster.set_state(victim, "frozen", signal.SIGSTOP)
        time.sleep(stop_s - LATE_PROBE_LEAD_S)
        probes, msg_probes = self.late_probes(victim), self.late_messages(victim)
        time.sleep(LATE_PROBE_LEAD_S)  # the probes are in the victim's sockets
        self.cluster.set_state(victim, "up", signal.SIGCONT)
        deadline = time.monotonic() + SOCKET_TIMEOUT_S + 2
        for t in probes:
            t.join(SOCKET_TIMEOUT_S + 2)
        while time.monotonic() < deadline and not all(t.attempts for t in msg_probes):
            time.sleep(0.02)
        late = [a for t in probes for a in t.answers]
        self.answers.extend(late)
        fault["end"] = time.monotonic()
        fault["detail"] = "%s; late probes %d/%d answered, messages %d/%d" % (
            how, sum(a.ok for a in late), len(KEYS) * len(INTERFACES),
            sum(bool(t.attempts) and t.attempts[0].ok for t in msg_probes), len(msg_probes))

    def late_probes(self, victim):
        """Started Probe threads, one per key and interface, at `victim`."""
        probes = [Probe(victim, key, iface) for key in KEYS for iface in INTERFACES]
        for t in probes:
            t.start()
        return probes

    def late_messages(self, victim):
        """Started MessageProbe threads, one new message per conversation and
        interface, at `victim`; also kept in `msg_probes`."""
        n = len(self.faults)
        probes = [MessageProbe(self.cluster, self.rng.getrandbits(32), victim, iface,
                               Msg(conv, "lp", "lp%d-%s-%s" % (n, conv, iface),
                                   "late probe %d" % n))
                  for conv in CONVS for iface in MSG_INTERFACES]
        for t in probes:
            t.start()
        self.msg_probes.extend(probes)
        return probes

    def owner_of(self, key):
        """The instance the lease table names as the owner of `key`'s shard."""
        try:
            if self.cluster.shards is None:
                self.cluster.shards = int(
                    self.db.query("SELECT value FROM seqd_cluster WHERE name = 'shards'")[0][0])
            shard = shard_of(key, self.cluster.shards)
            rows = self.db.query("SELECT owner FROM seqd_shard_lease WHERE shard = %d" % shard)
            return self.cluster.by_instance_id(rows[0][0]) if rows else None
        except (RuntimeError, IndexError, ValueError, subprocess.TimeoutExpired):
            return None

    def pick_db(self):
        """The database a fault hits: the one, or a random store group's."""
        return self.db if len(self.dbs) == 1 else self.rng.choice(self.dbs)

    def fault_freeze_db(self, fault):
        """SIGSTOP mariadbd for FREEZE_S, then SIGCONT."""
        db = self.pick_db()
        pid = db.pid()
        self.begin(fault, "mariadbd %s" % pid, "SIGSTOP for %.1f s" % self.FREEZE_S)
        db.freeze()
        time.sleep(self.FREEZE_S)
        db.thaw()
        fault["end"] = time.monotonic()

    def fault_kill_db(self, fault):
        """kill -9 mariadbd; restart it on the same port about 1 s later."""
        db = self.pick_db()
        pid = db.pid()
        self.begin(fault, "mariadbd %s" % pid, "kill -9")
        db.kill9()
        time.sleep(self.RESTART_PAUSE_S)
        db.restart()
        fault["end"], fault["detail"] = time.monotonic(), "restarted as pid %s" % db.pid()

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


# --- the suites' command line -------------------------------------------------

def parser(doc, seconds):
    """The chaos suites' options (a suite adds its own): --seconds (default
    `seconds`), --seed, --lease-ms, --json, --keep, --self-test, -v."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--seconds", type=int, default=seconds, help="no fault starts after this")
    p.add_argument("--seed", type=int, default=None, help="dice of the load and the nemesis")
    p.add_argument("--lease-ms", type=int, default=2000, help="--cluster-lease-ms of every seqd")
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--keep", action="store_true", help="keep the temp dir (the logs)")
    p.add_argument("--self-test", action="store_true", help="check the checkers, then exit")
    p.add_argument("-v", "--verbose", action="store_true")
    return p


def main(args, self_test, run):
    """A chaos suite's main once `args` are parsed: `self_test()` (the
    number of histories its checkers judged) first, on every run, so a pass
    is never a checker that cannot fail; with --self-test nothing more,
    else `run(args)` with a seed drawn if none was given. The exit code."""
    progress.VERBOSE = args.verbose
    n = self_test()
    if args.self_test:
        print("self-test: the checkers judged %d synthetic histories right" % n)
        return 0
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 31)
    log("self-test passed (%d histories); seed %d" % (n, args.seed))
    return run(args)
