"""Cluster mode on the shared test MariaDB for unittest suites: `Node`, one
seqd instance in cluster mode (lease LEASE_MS, SHARDS shards) with its
ports and instance id; `wait_stable`, until a set of nodes agrees on one
shard map; `ClusterCase`, a TestCase whose tests each get a fresh
database (lib/mariadb.py) and nodes, and whose failures print the nodes'
log tails (`dump_logs_on_failure`).

Thread safety: a Node is one test's; wait_stable only reads.
"""
import functools
import os
import socket
import sys
import time
import unittest

from harness import Seqd, free_port
from lib.mariadb import Database

LEASE_MS = 1000
SHARDS = 64
STABLE_TIMEOUT = 10.0  # seconds for a cluster to agree on its shard map


def log(msg):
    print(msg, file=sys.stderr, flush=True)


class Node(Seqd):
    """One cluster instance, with its binary and RESP ports known."""

    def __init__(self, url, *extra):
        self.tcp_port, self.resp_port = free_port(), free_port()
        super().__init__(url, "--cluster", "--cluster-lease-ms", str(LEASE_MS),
                         "--cluster-shards", str(SHARDS), "--snowflake", "off",
                         "--auto-keys", "ck:100,cd_:50:dense", "--tcp-port", str(self.tcp_port),
                         "--resp-port", str(self.resp_port), "--log-level", "info", *extra)
        self.instance = self.get_json("/admin/cluster")[1]["instance"]

    def __repr__(self):
        return "<node %s http=%d tcp=%d pid=%d>" % (self.instance, self.port, self.tcp_port,
                                                     self.proc.pid)

    def cluster(self):
        status, body = self.get_json("/admin/cluster")
        if status != 200:
            raise RuntimeError("/admin/cluster: %s %s" % (status, body))
        return body

    def full_log(self):
        try:
            with open(self.log.name, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def warnings(self):
        return [line for line in self.full_log().splitlines()
                if " WARN " in line or " ERROR " in line]

    def tcp(self):
        return socket.create_connection(("127.0.0.1", self.tcp_port), timeout=10)

    def resp(self):
        return socket.create_connection(("127.0.0.1", self.resp_port), timeout=10)

    def __exit__(self, *exc):
        if os.environ.get("SEQD_CLUSTER_SHOW_WARNINGS"):
            for line in self.warnings():
                log("  [%s] %s" % (self.instance, line))
        super().__exit__(*exc)


def wait_stable(nodes, timeout=STABLE_TIMEOUT):
    """Waits until every node in `nodes` is ready, sees exactly these
    instances live, and all show the same map with every shard owned by one
    of them. Returns the owners' instance ids by shard."""
    want = {n.instance for n in nodes}
    deadline = time.time() + timeout
    last = None
    while True:
        try:
            views = [n.cluster() for n in nodes]
            problems = []
            maps = []
            for n, v in zip(nodes, views):
                live = {m["instance"] for m in v["members"] if m["live"]}
                owners = [s["owner"] for s in sorted(v["shard_map"], key=lambda s: s["shard"])]
                maps.append(owners)
                if not v["ready"]:
                    problems.append("%s not ready" % n.instance)
                if live != want:
                    problems.append("%s sees live %s" % (n.instance, sorted(live)))
                if len(owners) != SHARDS or any(o not in want for o in owners):
                    problems.append("%s: shards without a live owner: %s" % (
                        n.instance, [i for i, o in enumerate(owners) if o not in want]))
            if not problems and any(m != maps[0] for m in maps):
                problems.append("the instances disagree on the owners of shards %s" % [
                    i for i in range(SHARDS) if len({m[i] for m in maps}) > 1])
            if not problems:
                return maps[0]
            last = problems
        except (OSError, ValueError, KeyError, RuntimeError) as e:
            last = repr(e)
        if time.time() > deadline:
            raise AssertionError("cluster not stable after %.0f s: %s\n%s" % (
                timeout, last, tails(nodes)))
        time.sleep(0.1)


def tails(nodes, chars=3000):
    out = []
    for n in nodes:
        out.append("---- log of %r (exit %s), last %d chars:\n%s" % (
            n, n.proc.poll(), chars, n.full_log()[-chars:]))
    return "\n".join(out)


def dump_logs_on_failure(test):
    """Prints the tail of every instance's log when the test fails."""
    @functools.wraps(test)
    def wrapper(self):
        try:
            return test(self)
        except BaseException:
            log("\n" + tails(self.every_node()))
            raise
    return wrapper


class ClusterCase(unittest.TestCase):
    """A database and instances of its own per test (failover tests)."""

    def every_node(self):
        return list(getattr(self, "_every", []))

    def new_database(self):
        db = Database()
        self.addCleanup(db.drop)
        return db

    def start_node(self, db):
        n = Node(db.url)
        if not hasattr(self, "_every"):
            self._every = []
        self._every.append(n)
        self.addCleanup(n.__exit__)
        return n

    def cluster_of(self, count):
        db = self.new_database()
        nodes = [self.start_node(db) for _ in range(count)]
        return db, nodes

    @staticmethod
    def asker_problems(asker):
        """What a sequential client must never see: errors it cannot retry,
        IDs that do not grow (it asks one request after the other)."""
        out = []
        if asker.non_retryable():
            out.append("non-retryable errors: %s" % asker.non_retryable()[:5])
        flat = [i for _, ids in asker.samples for i in ids]
        bad = [(a, b) for a, b in zip(flat, flat[1:]) if not a < b]
        if bad:
            out.append("IDs of %s went down or repeated (real-time order): %s" % (
                asker.key, bad[:5]))
        return out

    def fail_rounds(self, problems):
        if problems:
            self.fail("\n".join(problems))
