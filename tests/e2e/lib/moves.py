"""Shard moves between store groups during a chaos run (docs/cluster.md,
"Moving a shard"): a thread that moves the shard of one conversation to the
second group, killing (-9) the instance running the move in the middle of
its copy (checked: the home database still says "copying") and finishing it
with `seqctl shard move` on another instance, then moves the shard of one
key to the third group. Each move is re-run
(seqctl) until it is done, through whatever the nemesis does meanwhile.

`broken=True` is the checker's proof: the conversation's shard is switched to the
second group by rewriting the placement (no copy, no seal), so both groups
serve it for a while; the run must then fail.

Thread safety: a thread; read `moves` and `error` once it stopped.
"""
import json
import os
import signal
import subprocess
import threading
import time
import traceback
import urllib.request

from lib.cluster import shard_of
from lib.progress import log

RATE = 40            # rows per second of the first move: its copy takes seconds
KILL_AFTER_ROWS = 20
MOVE_DEADLINE_S = 90.0


def http_json(port, method, path, body=None, timeout=5):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


class Mover(threading.Thread):
    """Moves shards of `cluster` (lib/cluster.py) to `groups[1]` and
    `groups[2]`, starting `start_after_s` in; `home` is the home group's
    MariaDB (lib/mariadb.py), `seqctl` the tool's path."""

    def __init__(self, cluster, groups, dbs, key, conv, seqctl, start_after_s, broken=False):
        super().__init__(daemon=True)
        self.cluster, self.groups, self.dbs = cluster, groups, dbs
        self.key, self.conv, self.seqctl = key, conv, seqctl
        self.start_after_s, self.broken = start_after_s, broken
        self.moves = []
        self.error = None
        self.stop = threading.Event()

    def shards(self):
        if self.cluster.shards is None:
            self.cluster.shards = int(self.dbs[0].query(
                "SELECT value FROM seqd_cluster WHERE name = 'shards'")[0][0])
        return self.cluster.shards

    def run(self):
        try:
            self.stop.wait(self.start_after_s)
            first = shard_of(self.conv, self.shards())
            if self.broken:
                self.switch_without_seal(first, self.groups[1])
                return
            self.move_killing_mid_copy(first, self.groups[1])
            second = shard_of(self.key, self.shards())
            if second != first:
                self.finish(second, self.groups[2], killed=False)
        except Exception:  # noqa: BLE001 - reported as a harness failure
            self.error = traceback.format_exc()

    def move_killing_mid_copy(self, shard, group):
        inst = self.cluster.up()[0]
        start = time.monotonic()
        http_json(inst.http_port, "POST", "/admin/placement/move",
                  {"shard": shard, "to": group, "rate": RATE})
        while time.monotonic() - start < 30:
            m = http_json(inst.http_port, "GET", "/admin/placement")["mover"]
            if m["phase"] == "copying" and m["rows_copied"] >= KILL_AFTER_ROWS:
                break
            if not m["running"]:
                raise RuntimeError("the first move ended before it could be killed: %s" % m)
            time.sleep(0.05)
        log("move: shard %d to %s, killing the mover %s mid-copy (%s rows copied)" % (
            shard, group, inst.name, m["rows_copied"]))
        self.cluster.set_state(inst, "killed", signal.SIGKILL)
        inst.proc.wait()
        state = self.dbs[0].query("SELECT move_state FROM seqd_shard_placement WHERE shard = %d"
                                  % shard)
        if state != [["copying"]]:
            raise RuntimeError("killed mid-copy, yet the placement says %r" % state)
        self.cluster.start_instance()
        self.finish(shard, group, killed=True, started=start)

    def finish(self, shard, group, killed, started=None):
        """`seqctl shard move` on running instances until it succeeds."""
        start = started or time.monotonic()
        tries = 0
        while time.monotonic() - start < MOVE_DEADLINE_S and not self.stop.is_set():
            insts = self.cluster.up()
            if not insts:
                time.sleep(0.5)
                continue
            inst = insts[tries % len(insts)]
            tries += 1
            r = subprocess.run([self.seqctl, "--http", "127.0.0.1:%d" % inst.http_port,
                                "shard", "move", str(shard), "--to", group],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=MOVE_DEADLINE_S)
            if r.returncode == 0:
                pause = None
                try:
                    pause = http_json(inst.http_port, "GET", "/admin/placement")["mover"][
                        "pause_ms"]
                except (OSError, ValueError, KeyError):
                    pass
                self.moves.append({"shard": shard, "to": group, "killed_mid_copy": killed,
                                   "tries": tries, "seconds": round(time.monotonic() - start, 2),
                                   "pause_ms": pause})
                log("move: shard %d now in %s after %d tries (pause %s ms)" % (
                    shard, group, tries, pause))
                return
            log("move: shard %d to %s: try %d on %s: %s" % (shard, group, tries, inst.name,
                                                            r.stdout.strip()[-300:]))
            time.sleep(1.0)
        raise RuntimeError("shard %d never reached %s" % (shard, group))

    def switch_without_seal(self, shard, group):
        """The broken move: the placement rewritten at once, nothing copied,
        nothing sealed."""
        log("move (broken on purpose): shard %d switched to %s with no seal" % (shard, group))
        self.dbs[0].query(
            "INSERT INTO seqd_shard_placement (shard, group_name, move_target, move_state) "
            "VALUES (%d, '%s', '', '') ON DUPLICATE KEY UPDATE group_name = '%s'; "
            "UPDATE seqd_placement SET version = version + 1 WHERE id = 1" % (shard, group, group))
        self.moves.append({"shard": shard, "to": group, "broken": True})
