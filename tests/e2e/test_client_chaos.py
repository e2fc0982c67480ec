#!/usr/bin/env python3
"""Chaos test of the client libraries in cluster mode: with retries on and
a 5 s deadline per call, the C++ client and the Go client see 0 failed
calls, and no ID twice or out of real-time order, while owners are killed
or stopped and the database is frozen or killed.

The promise under test (client/README.md, "Faults and deadlines"): a call
made with a 5 s deadline (C++ ClientOptions::call_deadline, Go a context
deadline) and retries allowed until then gets its IDs through every fault
below, since each leaves every key served again well within the deadline;
and per key, across both client processes and all their threads, no ID is
answered twice, and if call A's answer came back before call B was sent,
min(B) > max(A).

Setup (tests/e2e/lib/mariadb.py, lib/cluster.py): the cluster chaos
test's MariaDB (a server of the test's own, so it can be frozen and
killed) and 3 seqd in cluster mode (its flags, lib/load.py's: small
auto-created steps, so reservations, i.e. fenced transactions, are
frequent). Unlike there, an instance that is killed or leaves is replaced
by a new process on the SAME ports, as a restarted server would be: the
clients are given the 3 binary-protocol endpoints once.

Load: two driver processes, each one client shared by its threads calling
NextIds(key, count) in a loop (one of 8 keys, count 1..10):
  cpp  tests/e2e/client_chaos_driver.cc (seqd::client::Client;
       call_deadline 5000 ms, call_timeout 1500 ms, max_attempts 1000,
       backoff 20..250 ms)
  go   client/go/cmd/seqd-chaosdriver (seqd.Client; a 5 s context per call,
       CallTimeout 1500 ms, MaxAttempts 1000, backoff 20..250 ms)
Each records every call's send and receive time as CLOCK_MONOTONIC
nanoseconds, so the two processes' histories merge into one.

Nemesis (lib/chaos.py's schedule: one fault at a time, a settling pause
of 1.5 to 2.5 leases after each, the kinds in a seeded shuffled order,
each cycle running every kind):
  kill_owner   kill -9 the owner of a random key; a new process on its
               ports ~1 s later
  stop_owner   SIGSTOP the owner of a random key for 2.5 leases, SIGCONT
  freeze_db    SIGSTOP mariadbd for 2 s, SIGCONT  (lib/chaos.py's)
  kill_db      kill -9 mariadbd, restart ~1 s later (lib/chaos.py's)
  leave_join   SIGTERM an instance, start a new one (lib/chaos.py's; here
               on the same ports)

The bound: a call fails only if no instance serves its key for the rest of
its deadline. At lease L (2 s by default) a kill -9 or SIGSTOP of an owner
leaves its keys unserved for about L x 1.01 plus a lease round (2.0-2.6 s
measured), the database faults for their length plus a round (2 s frozen:
about 2 s; killed: 1-2 s until MariaDB is back), a leave tens of
milliseconds: all within 5 s, so the goal is 0 failed calls. Faults this
test does not make break that bound and fail calls by design: every
instance down, or the database away, longer than the deadline (a call then
ends with TIMEOUT at its deadline, 5 s, never later), or a lease longer
than about 4 s (--lease-ms).

Checks (exit 1 if any fails):
  - 0 failed calls: no call ended in an error, and none took longer than
    its deadline (5 s + 0.2 s for scheduling). A call whose deadline ran
    out while the database was still away (or within 1 s of its return) (a freeze, or a kill and a
    restart that took longer than the deadline: MariaDB can take seconds
    to start on a loaded machine) is beyond the bound: reported apart,
    not failed;
  - per key, 0 IDs answered twice across both processes;
  - per key, 0 real-time order violations across both processes;
  - every answer well formed (count IDs, ascending disjoint ranges);
  - at least MIN_CALLS calls per client, every fault kind ran, no instance
    died unless the nemesis killed it, both drivers exited 0;
  - every kill_owner and stop_owner fault delayed some call of the
    victim's keys by at least a quarter lease (the fault reached the
    clients: a pass is never a nemesis that missed); the key counts as
    served again only by a call sent once the victim was surely dead or
    stopped, not one the victim answered as the signal was on its way.
Figures: calls and failed calls per client, latency p50/p99/max of all
calls and of the calls that crossed a fault (in flight while it ran;
owner faults: calls of the victim's keys), per client and fault kind;
with --json, all of it.

--self-test checks the checker (client_chaos_check.py) on synthetic
driver output (a failed call, a late answer, a duplicate and an order
violation across the two processes, a malformed answer, near misses) and
exits; every run does it first, with lib/checkers.py's own
self-test. --break-retry runs the
drivers with 1 attempt per call: the run must then FAIL (failed calls),
showing the check can fail on real runs.

Usage: python3 tests/e2e/test_client_chaos.py [--seconds 45] [--seed S]
           [--lease-ms 2000] [--threads 4] [--route-by-shard] [--async-go]
           [--break-retry] [--json PATH] [--keep] [-v] [--self-test]
Environment: SEQD_BINARY (default build/seqd), CLIENT_CHAOS_DRIVER
(default build/tests/e2e/client_chaos_driver), GO (default go; the Go
driver is built with GOPROXY=off). Needs mariadbd.
"""
import collections
import json
import os
import random
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client_chaos_check import (CLIENTS, DEADLINE_S, FAULTS, failures_of,  # noqa: E402
                                latency_figures, parse_output, self_test, verdict)
from harness import REPO, wait_stopped  # noqa: E402
from lib import chaos, checkers  # noqa: E402
from lib.chaos import WARMUP_S, Nemesis  # noqa: E402
from lib.cluster import FixedPortCluster, Workspace  # noqa: E402
from lib.load import KEYS, SEQD_FLAGS  # noqa: E402
from lib.mariadb import MariaDB  # noqa: E402
from lib.progress import log, rel  # noqa: E402

DRIVER = os.environ.get("CLIENT_CHAOS_DRIVER",
                        os.path.join(REPO, "build", "tests", "e2e", "client_chaos_driver"))
GO = os.environ.get("GO", "go")
GO_DIR = os.path.join(REPO, "client", "go")
INSTANCES = 3
MAX_COUNT = 10
PAUSE_US = 200          # a driver thread's pause between calls (2 cores shared)
DRIVER_EXIT_S = DEADLINE_S + 10


# --- faults --------------------------------------------------------------------

class ClientNemesis(Nemesis):
    """lib/chaos.py's Nemesis with FAULTS: its database faults and its
    leave_join, and owner faults aimed at the drivers' keys. Each fault
    records the keys its victim owned (`keys`). Its warm-up is two leases
    longer than the chaos test's: the instances started a moment apart are
    still handing shards over, and an owner read from the lease table then
    may not be serving yet (a CI run stopped such an "owner" 2 s in, and no
    call felt it)."""

    def __init__(self, cluster, db, rng, lease_s, until):
        super().__init__(cluster, db, rng, lease_s, until, kinds=FAULTS,
                         warmup_s=WARMUP_S + 2 * lease_s)

    def new_fault(self, kind):
        return dict(super().new_fault(kind), keys=list(KEYS))

    def victim_of(self, fault):
        """The owner of a random key (a random instance if unknown); sets
        fault["keys"] to the keys it owns."""
        key = self.rng.choice(KEYS)
        victim = self.owner_of(key)
        if victim is None or victim.state != "up":
            victim = self.rng.choice(self.cluster.up())
            fault["detail"] = "random (owner of %s unknown)" % key
        owned = [k for k in KEYS if self.owner_of(k) is victim]
        fault["keys"] = owned or list(KEYS)
        return victim

    def fault_kill_owner(self, fault):
        victim = self.victim_of(fault)
        self.begin(fault, victim.name, "kill -9 (owner of %s)" % ",".join(fault["keys"]))
        self.cluster.set_state(victim, "killed", signal.SIGKILL)
        victim.proc.wait()
        fault["taken"] = time.monotonic()
        time.sleep(self.RESTART_PAUSE_S)
        new = self.cluster.start_instance()
        fault["end"] = time.monotonic()
        fault["detail"] += " replaced by %s" % new.name

    def fault_stop_owner(self, fault):
        victim = self.victim_of(fault)
        self.begin(fault, victim.name, "SIGSTOP (owner of %s) for %.1f s" % (
            ",".join(fault["keys"]), self.STOP_LEASES * self.lease_s))
        self.cluster.set_state(victim, "frozen", signal.SIGSTOP)
        wait_stopped(victim.proc.pid)
        fault["taken"] = time.monotonic()
        time.sleep(self.STOP_LEASES * self.lease_s)
        self.cluster.set_state(victim, "up", signal.SIGCONT)
        fault["end"] = time.monotonic()


# --- drivers -------------------------------------------------------------------

def build_go_driver(base):
    """Builds client/go/cmd/seqd-chaosdriver into `base`; returns its path."""
    out = os.path.join(base, "seqd-chaosdriver")
    env = dict(os.environ, GOPROXY="off", GOFLAGS="-mod=mod")
    r = subprocess.run([GO, "build", "-o", out, "./cmd/seqd-chaosdriver"], cwd=GO_DIR, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError("go build of the chaos driver failed:\n%s" % r.stdout)
    return out


def driver_args(client, binary, endpoints, args, seed):
    common = ["--endpoints", ",".join(endpoints), "--keys", ",".join(KEYS),
              "--threads", str(args.threads), "--max-count", str(MAX_COUNT),
              "--call-timeout", "1500", "--backoff-initial", "20", "--backoff-max", "250",
              "--max-attempts", "1" if args.break_retry else "1000",
              "--seed", str(seed), "--pause-us", str(PAUSE_US)]
    if args.route_by_shard:
        common.append("--route-by-shard")
    if client == "cpp":
        return [binary, "--call-deadline", str(int(DEADLINE_S * 1000))] + common
    extra = ["--async"] if args.async_go else []
    return [binary, "--deadline-ms", str(int(DEADLINE_S * 1000))] + extra + common


class Driver:
    """One driver process: stdin a pipe (closed to stop it), stdout a file."""

    def __init__(self, client, argv, base):
        self.client = client
        self.out_path = os.path.join(base, "%s.calls" % client)
        self.err_path = os.path.join(base, "%s.stderr" % client)
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=out, stderr=err)

    def stop(self):
        """Closes stdin and waits; returns the exit code (None: killed)."""
        try:
            self.proc.stdin.close()
            return self.proc.wait(timeout=DRIVER_EXIT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None

    def kill(self):
        """Kills the driver if it still runs."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stderr(self):
        with open(self.err_path, errors="replace") as f:
            return f.read()[-2000:]


# --- the run -------------------------------------------------------------------

def print_summary(fig, failures):
    p = print
    p("client chaos: %d s, seed %d, lease %d ms, %d threads per client%s%s, wall %.1f s" % (
        fig["seconds"], fig["seed"], fig["lease_ms"], fig["threads"],
        ", route_by_shard" if fig["route_by_shard"] else "",
        ", BREAK-RETRY (1 attempt)" if fig["break_retry"] else "", fig["wall_s"]))
    for client, row in fig["clients"].items():
        p("%s: %d calls (%d IDs), %d ended in an error %s" % (
            client, row["calls"], row["ids"], row["failed"], row["failed_codes"]))
    p("faults run: %s" % fig["faults_by_kind"])
    for f in fig["faults"]:
        p("  %7.2f-%7.2f s %-11s %-6s keys %s %s" % (f["start"], f["end"], f["kind"], f["target"],
                                                     ",".join(f["keys"]), f["detail"]))
    p("latency of successful calls (ms): n p50 p99 max")
    for client, row in fig["latency"].items():
        for name, q in [("all", row["all"]), ("crossed a fault", row["crossed_fault"]),
                        ("crossed takeover", row["crossed_takeover"])] + sorted(
                row["by_fault"].items()):
            p("  %-4s %-17s %7d %8s %8s %8s" % (client, name, q["n"], q["p50_ms"], q["p99_ms"],
                                                q["max_ms"]))
    v = fig["verdict"]
    p("failed calls: %d; late: %d; malformed: %d; duplicates: %d; order violations: %d" % (
        v["failed"], v["late"], v["malformed"], v["duplicates"], v["order_violations"]))
    if v["beyond_bound"]:
        p("calls failed beyond the bound (the database away past their deadline; not counted "
          "as failed): %d" % v["beyond_bound"])
    for field in ("failed_examples", "late_examples", "malformed_examples",
                  "beyond_bound_examples"):
        for e in v[field]:
            p("  %s: %s" % (field.split("_")[0], e))
    for e in v["duplicate_examples"]:
        p("  duplicate %s %s:\n    %s\n    %s" % (e["key"], e["ids"], e["a"], e["b"]))
    for e in v["order_examples"]:
        p("  order %s (sent %.3f s after):\n    earlier %s\n    later   %s" % (
            e["key"], e["gap_s"], e["earlier"], e["later"]))
    p("PASS" if not failures else "FAIL:\n  " + "\n  ".join(failures))


def run(args):
    started = time.monotonic()
    ws = Workspace("seqd-client-chaos-", keep=args.keep)
    base = ws.base
    drivers = []
    harness_errors = []
    try:
        go_driver = build_go_driver(base)
        log("built the Go driver")
        db = MariaDB(base)
        ws.on_cleanup(db.stop)
        cluster = FixedPortCluster(db.url, args.lease_ms, base, SEQD_FLAGS, INSTANCES)
        ws.on_cleanup(cluster.kill_all)
        for _ in range(INSTANCES):
            cluster.start_instance()
        rng = random.Random(args.seed)
        for client, binary in (("cpp", DRIVER), ("go", go_driver)):
            argv = driver_args(client, binary, cluster.endpoints(), args, rng.getrandbits(31))
            log("%s driver: %s" % (client, " ".join(argv)))
            drivers.append(Driver(client, argv, base))
            ws.on_cleanup(drivers[-1].kill)
        lease_s = args.lease_ms / 1000.0
        nemesis = ClientNemesis(cluster, db, random.Random(rng.getrandbits(32)), lease_s,
                                time.monotonic() + args.seconds)
        if not nemesis.play_out():
            harness_errors.append("the nemesis did not stop")
        calls = []
        for d in drivers:
            code = d.stop()
            if code != 0:
                harness_errors.append("the %s driver exited with %s: %s" % (
                    d.client, code, d.stderr()))
            with open(d.out_path, errors="replace") as f:
                mine, bad = parse_output(d.client, f.read())
            calls += mine
            if bad:
                harness_errors.append("%d unparsable lines from the %s driver, e.g. %r" % (
                    len(bad), d.client, bad[0]))
        if nemesis.error:
            harness_errors.append(nemesis.error)
        crashes = cluster.check_crashes()
        harness_errors += ["%s exited by itself (code %s) at %.1f s" % (
            c["instance"], c["exit"], c["time"]) for c in crashes]
    finally:
        ws.cleanup()
    faults = nemesis.faults
    v = verdict(calls, faults=faults)
    fig = {"seconds": args.seconds, "seed": args.seed, "lease_ms": args.lease_ms,
           "threads": args.threads, "route_by_shard": args.route_by_shard,
           "break_retry": args.break_retry, "wall_s": round(time.monotonic() - started, 1),
           "clients": {}, "verdict": v,
           "faults_by_kind": dict(collections.Counter(f["kind"] for f in faults)),
           "faults": [{"kind": f["kind"], "start": rel(f["start"]),
                       "end": rel(f["end"]), "target": f["target"], "keys": f["keys"],
                       "detail": f["detail"]} for f in faults],
           "latency": latency_figures(calls, faults)}
    for client in CLIENTS:
        mine = [c for c in calls if c.client == client]
        fig["clients"][client] = {
            "calls": len(mine), "ids": sum(c.count for c in mine if c.ok),
            "failed": sum(c.code is not None for c in mine),
            "failed_codes": dict(collections.Counter(c.code for c in mine if c.code))}
    failures = failures_of(v, calls, faults, args.lease_ms / 1000.0)
    failures += ["harness error: %s" % e for e in harness_errors]
    fig["failures"], fig["passed"] = failures, not failures
    print_summary(fig, failures)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(fig, f, indent=2)
    return 0 if not failures else 1


def main():
    p = chaos.parser(__doc__, seconds=45)
    p.add_argument("--threads", type=int, default=4, help="calling threads per driver")
    p.add_argument("--route-by-shard", action="store_true", help="both clients route by shard")
    p.add_argument("--async-go", action="store_true", help="the Go driver uses GoNextIDs")
    p.add_argument("--break-retry", action="store_true",
                   help="1 attempt per call: the run must fail (failed calls)")
    return chaos.main(p.parse_args(), lambda: self_test() + checkers.self_test(), run)


if __name__ == "__main__":
    sys.exit(main())
