"""The C++ client's Subscription handles: conversations added and removed
while messages flow, through seqd killed with SIGKILL and restarted.

client_live_subs_driver (one seqd::client::Client, subscriptions A, B and
C) takes add/remove commands and prints every event in the order it
happened on the client (see the driver's header). Senders post messages over
HTTP to six conversations, re-sending the same client_msg_id until acked.
The script adds conversations from now and from a given seq, removes them,
adds one again, holds one in all three subscriptions, and adds one and
removes one while seqd is down; seqd is killed twice (the SQLite store
survives).

The check, per subscription and conversation membership (a delivery
belongs to the membership whose "adding" line came last before it; a
removed membership delivers through its cut, which may come after its
"removed" line, and a later membership of the conversation only after that;
the script re-adds long after a removal): the messages delivered are
consecutive seqs, each the acked message (client_msg_id, payload); the first
is from + 1, or above every seq acked before the add command was written;
every message sent after "added" was read and acked before the remove
command was written is among them, and none sent after "removed" was read
(A's on_message is slow: it holds the client's I/O thread, so pushes and
calls queue up behind it); a membership
still open delivered everything. The subscriptions share the client's one
connection: seqd counts 1 binary connection (the senders use HTTP), and its
subscription gauge matches the conversations held.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Seqd, free_port, http_get, store_spec  # noqa: E402

DRIVER = os.environ.get("CLIENT_LIVE_SUBS_DRIVER", "client_live_subs_driver")
CONVS = ["sg_lv0", "sg_lv1", "sg_lv2", "sg_lv3", "sg_lv4", "sg_lv5"]
WAIT_S = 20


class Sender(threading.Thread):
    """Sends to one conversation until stopped; a send is retried with the
    same client_msg_id until acked. acked: seq -> (cid, start, ack) with
    time.monotonic() before the first try and after the ack."""

    def __init__(self, holder, conv):
        super().__init__(daemon=True)
        self.holder, self.conv = holder, conv
        self.acked = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.failures = 0

    def run(self):
        i = 0
        while not self.stop.is_set():
            cid = "%s-%d" % (self.conv, i)
            body = {"sender_id": "u", "client_msg_id": cid, "payload": cid + "/payload"}
            start = time.monotonic()
            while True:
                try:
                    status, payload, _ = self.holder["seqd"].request(
                        "POST", "/conversations/%s/messages" % self.conv, body)
                except OSError:
                    status, payload = None, b""
                if status in (200, 201):
                    seq = json.loads(payload)["seq"]
                    with self.lock:
                        self.acked[seq] = (cid, start, time.monotonic())
                    break
                self.failures += 1
                time.sleep(0.02)
            i += 1
            time.sleep(0.002)

    def snapshot(self):
        with self.lock:
            return dict(self.acked)

    def max_seq(self):
        with self.lock:
            return max(self.acked, default=0)


class Driver:
    """The driver process and its output: lines[i] = (read time, event)."""

    def __init__(self, tcp_port, subs):
        self.proc = subprocess.Popen([DRIVER, "127.0.0.1:%d" % tcp_port, *subs],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.lines, self.lock = [], threading.Lock()
        self.errors = []
        threading.Thread(target=self.read, daemon=True).start()
        threading.Thread(target=lambda: self.errors.extend(self.proc.stderr), daemon=True).start()

    def read(self):
        for line in self.proc.stdout:
            with self.lock:
                self.lines.append((time.monotonic(), json.loads(line)))

    def snapshot(self):
        with self.lock:
            return list(self.lines)

    def command(self, text):
        """Writes a command; returns the time it was written."""
        t = time.monotonic()
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()
        return t

    def wait_for(self, pred, what):
        deadline = time.time() + WAIT_S
        while time.time() < deadline:
            for i, (t, ev) in enumerate(self.snapshot()):
                if pred(ev):
                    return i, t
            time.sleep(0.005)
        raise AssertionError("no %s within %d s: %s" % (what, WAIT_S, "".join(self.errors)))

    def stop(self):
        """Ends the driver (end of its stdin); its exit status."""
        self.proc.stdin.close()
        return self.proc.wait(timeout=20)


class Membership:
    def __init__(self, sub, conv, frm, cmd_t):
        self.sub, self.conv, self.frm, self.cmd_t = sub, conv, frm, cmd_t
        self.adding_idx = self.added_t = None
        self.rm_cmd_t = self.removed_idx = self.removed_t = None

    def __repr__(self):
        return "%s/%s[%s..%s]" % (self.sub, self.conv, self.adding_idx, self.removed_idx)


class LiveSubscriptions(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.http_port, self.tcp_port = free_port(), free_port()
        self.store = store_spec("sqlite", self.tmp.name)
        self.holder = {"seqd": self.start_seqd()}
        self.driver = Driver(self.tcp_port, ["A:300", "B", "C"])
        self.driver.wait_for(lambda ev: ev["ev"] == "ready", "ready")
        self.members = []
        self.n_cmds = 0

    def tearDown(self):
        if self.driver.proc.poll() is None:
            self.driver.proc.kill()
            self.driver.proc.wait()
        for f in (self.driver.proc.stdin, self.driver.proc.stdout, self.driver.proc.stderr):
            f.close()
        self.holder["seqd"].__exit__(None, None, None)
        self.tmp.cleanup()

    def start_seqd(self):
        return Seqd(self.store, "--tcp-port", str(self.tcp_port), port=self.http_port)

    def kill_seqd(self):
        self.holder["seqd"].stop(signal.SIGKILL)
        self.holder["seqd"].__exit__(None, None, None)

    def metric(self, name, label=""):
        status, body = http_get(self.http_port, "/metrics")
        self.assertEqual(status, 200)
        total = 0.0
        for line in body.decode().splitlines():
            if (line.startswith(name + "{") or line.startswith(name + " ")) and label in line:
                total += float(line.split()[-1])
        return total

    def add(self, sub, convs, frm=None, wait=True):
        frm = frm or {}
        text = "add %s %s" % (sub, ",".join(convs))
        if frm:
            text += " " + ",".join("%s:%d" % kv for kv in frm.items())
        held = {m.conv for m in self.members if m.sub == sub and m.removed_idx is None}
        fresh = [Membership(sub, c, frm.get(c), None) for c in convs if c not in held]
        t = self.driver.command(text)
        for m in fresh:
            m.cmd_t = t
        self.members.extend(fresh)
        pending = (sub, convs, fresh)
        return self.finish_add(pending) if wait else pending

    def finish_add(self, pending):
        sub, convs, fresh = pending
        i, _ = self.driver.wait_for(
            lambda ev: ev["ev"] == "adding" and ev["sub"] == sub and ev["convs"] == convs and
            not self.seen(ev), "adding %s %s" % (sub, convs))
        self.mark(i)
        j, t = self.driver.wait_for(
            lambda ev: ev["ev"] in ("added", "failed") and ev["sub"] == sub and
            ev["convs"] == convs and not self.seen(ev), "added %s %s" % (sub, convs))
        self.mark(j)
        self.assertEqual(self.driver.snapshot()[j][1]["ev"], "added", self.driver.snapshot()[j])
        for m in fresh:
            m.adding_idx, m.added_t = i, t

    def remove(self, sub, convs, wait=True):
        t = self.driver.command("remove %s %s" % (sub, ",".join(convs)))
        return self.finish_remove(sub, convs, t) if wait else (sub, convs, t)

    def finish_remove(self, sub, convs, t):
        j, read_t = self.driver.wait_for(
            lambda ev: ev["ev"] == "removed" and ev["sub"] == sub and ev["convs"] == convs and
            not self.seen(ev), "removed %s %s" % (sub, convs))
        self.mark(j)
        for m in self.members:
            if m.sub == sub and m.conv in convs and m.removed_idx is None:
                m.rm_cmd_t, m.removed_idx, m.removed_t = t, j, read_t

    # Each result line matches one command: the ones taken are marked.
    def seen(self, ev):
        return ev.get("_taken", False)

    def mark(self, i):
        with self.driver.lock:
            self.driver.lines[i][1]["_taken"] = True

    def test_add_remove_through_kill_9(self):
        senders = {c: Sender(self.holder, c) for c in CONVS}
        for s in senders.values():
            s.start()
        try:
            self.run_script(senders)
        finally:
            for s in senders.values():
                s.stop.set()
            for s in senders.values():
                s.join(timeout=30)
                self.assertFalse(s.is_alive(), "a sender is stuck")
        self.wait_caught_up(senders)
        time.sleep(0.3)  # a late duplicate would show by now
        self.assertEqual(self.metric("seqd_open_connections", 'interface="binary"'), 1,
                         "the subscriptions do not share the client's connection")
        held = {m.conv for m in self.members if m.removed_idx is None}
        self.assertEqual(self.metric("seqd_message_subscriptions"), len(held))
        self.assertEqual(self.driver.stop(), 0, "".join(self.driver.errors))
        deliveries = self.check(senders)
        lost = [ev for _, ev in self.driver.snapshot() if ev["ev"] == "lost"]
        self.assertGreaterEqual(len({ev["sub"] for ev in lost}), 3, lost)
        self.assertGreater(sum(s.failures for s in senders.values()), 0, "no send ever failed")
        print("%d deliveries over %d memberships; %d lost notices; held at the end %s"
              % (deliveries, len(self.members), len(lost), sorted(held)))

    def run_script(self, senders):
        time.sleep(0.2)
        self.add("A", ["sg_lv0", "sg_lv1", "sg_lv2"])
        from3 = max(senders["sg_lv3"].max_seq() - 5, 0)  # what exists above it is pulled first
        self.add("B", ["sg_lv1", "sg_lv3"], {"sg_lv3": from3})
        self.add("C", ["sg_lv1", "sg_lv5"])
        time.sleep(0.2)
        self.assertEqual(self.metric("seqd_open_connections", 'interface="binary"'), 1,
                         "three subscriptions: want the client's one connection")
        self.add("A", ["sg_lv3"])
        time.sleep(0.2)
        self.remove("A", ["sg_lv0"])
        self.add("B", ["sg_lv4"], {"sg_lv4": 0})
        time.sleep(0.2)

        self.kill_seqd()
        removing = self.remove("B", ["sg_lv1"], wait=False)  # its cut waits for seqd
        pending = self.add("C", ["sg_lv2"], {"sg_lv2": senders["sg_lv2"].max_seq()}, wait=False)
        time.sleep(0.3)
        self.holder["seqd"] = self.start_seqd()
        self.finish_remove(*removing)
        self.finish_add(pending)  # it waited for seqd
        time.sleep(0.2)
        self.add("A", ["sg_lv0"])  # again, afresh
        self.remove("C", ["sg_lv5"])
        time.sleep(0.2)

        self.kill_seqd()
        self.holder["seqd"] = self.start_seqd()
        time.sleep(0.2)
        self.remove("A", ["sg_lv2"])  # C holds it still
        self.remove("B", ["sg_lv4"])  # the last holder: unsubscribed
        self.add("B", ["sg_lv1"])
        time.sleep(0.3)

    def wait_caught_up(self, senders):
        """Until each membership delivered the last message acked (before its
        remove command, if removed)."""
        deadline = time.time() + WAIT_S
        while time.time() < deadline:
            got = {}
            for idx, (_, ev) in enumerate(self.driver.snapshot()):
                if ev["ev"] == "msg":
                    m = self.member_at(ev["sub"], ev["conv"], idx)
                    got[id(m)] = max(got.get(id(m), 0), ev["seq"])
            if all(got.get(id(m), 0) >= self.last_due(m, senders[m.conv].snapshot())
                   for m in self.members):
                return
            time.sleep(0.05)
        self.fail("memberships not caught up: %s" % self.members)

    @staticmethod
    def last_due(m, acked):
        due = [seq for seq, (_, _, ack) in acked.items()
               if (m.rm_cmd_t is None or ack < m.rm_cmd_t) and (m.frm is None or seq > m.frm)]
        return max(due, default=0)

    def member_at(self, sub, conv, idx):
        """The membership of sub in conv whose "adding" line came last before idx."""
        best = None
        for m in self.members:
            if m.sub == sub and m.conv == conv and m.adding_idx < idx:
                if best is None or m.adding_idx > best.adding_idx:
                    best = m
        return best

    def check(self, senders):
        got = {id(m): [] for m in self.members}
        lines = self.driver.snapshot()
        for idx, (_, ev) in enumerate(lines):
            if ev["ev"] != "msg":
                continue
            m = self.member_at(ev["sub"], ev["conv"], idx)
            self.assertIsNotNone(m, "line %d: %s delivered outside its memberships %s"
                                 % (idx, ev, [x for x in self.members if x.conv == ev["conv"]]))
            got[id(m)].append(ev)
        for m in self.members:
            self.check_member(m, got[id(m)], senders[m.conv].snapshot())
        return sum(len(v) for v in got.values())

    def check_member(self, m, got, acked):
        seqs = [ev["seq"] for ev in got]
        for a, b in zip(seqs, seqs[1:]):
            self.assertEqual(b, a + 1, "%s: seq %d after %d (hole, duplicate or disorder)"
                             % (m, b, a))
        for ev in got:
            self.assertIn(ev["seq"], acked, "%s: seq %d was never acked" % (m, ev["seq"]))
            cid, start, _ = acked[ev["seq"]]
            self.assertEqual((ev["cmid"], ev["payload"]), (cid, cid + "/payload"),
                             "%s: seq %d is another message" % (m, ev["seq"]))
            if m.removed_t is not None:
                self.assertLess(start, m.removed_t, "%s: seq %d sent after Remove returned"
                                % (m, ev["seq"]))
        if seqs and m.frm is not None:
            self.assertEqual(seqs[0], m.frm + 1, "%s: starts at %d" % (m, seqs[0]))
        if seqs and m.frm is None:
            before = max((s for s, (_, _, ack) in acked.items() if ack < m.cmd_t), default=0)
            self.assertGreater(seqs[0], before, "%s: delivered a message acked before Add" % m)
        delivered = set(seqs)
        for seq, (cid, start, ack) in acked.items():
            due = start > m.added_t or (m.frm is not None and seq > m.frm)
            if due and (m.rm_cmd_t is None or ack < m.rm_cmd_t):
                self.assertIn(seq, delivered, "%s: %s (seq %d) never delivered" % (m, cid, seq))
        if m.removed_idx is None and acked:
            self.assertEqual(seqs[-1] if seqs else 0, max(acked), "%s: not everything" % m)


if __name__ == "__main__":
    unittest.main()
