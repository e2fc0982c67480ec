"""End-to-end tests of cluster mode through the real seqd binary: several
instances on one MariaDB share the keys by shard (FNV-1a-64 of the key, mod
the shard count), each shard leased by one live instance; the others forward
to it (HTTP, binary and RESP requests for IDs, message sends), so IDs and
seqs grow in real-time order across instances. Covers the shard map,
forwarding, NO_FORWARD, messages, pushes and event streams (resumed by
Last-Event-ID) on any instance, planned handoffs (SIGTERM, a member joining), kill -9, a
SIGSTOP past the lease, and the start-up refusals.

Each test runs on a database of its own (seqd_test_cluster_<pid>_<n>,
created and dropped with the mariadb/mysql client), so the cluster tables
start empty. Needs SEQD_TEST_MYSQL_URL (scripts/test.sh sets it); never stops
the shared MariaDB.

Usage: SEQD_TEST_MYSQL_URL=mysql://... python3 tests/e2e/test_cluster.py [unittest args]
Set SEQD_CLUSTER_SHOW_WARNINGS=1 to print every instance's WARN/ERROR log
lines when it is cleaned up.
"""
import base64
import http.client
import itertools
import json
import os
import queue
import random
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import SEQD, wait_stopped  # noqa: E402
from lib.cluster import shard_of  # noqa: E402
from lib.cluster_case import (LEASE_MS, SHARDS, ClusterCase, Node, dump_logs_on_failure,  # noqa: E402
                              log, wait_stable)
from lib.mariadb import Database  # noqa: E402
from lib.wire import (frame, ids_of, int64_list, key_list, key_values,  # noqa: E402
                      next_ids_payload, once_payload, read_frame_with_flags, read_s16,
                      resp_command, resp_read_line, send_payload)

LEASE = LEASE_MS / 1000.0
# An owner stopped past its lease: its keys move after lease * 1.01 plus up
# to a quarter lease of polling and a quarter deadline for a forward to the
# frozen owner to be routed again, as after kill -9 (lease + 1.5 s here). If
# it froze inside a transaction (a sub-millisecond window per reservation,
# hit about once in ten rounds with these tiny steps), its row locks last
# until MariaDB ends the idle transaction (idle_txn_timeout, 1 s in cluster
# mode, seen up to ~1.8 s): docs/cluster.md. Hence the stop of 4.5 leases and
# the bound of lease + 3 s.
STOP_LEASES = 4.5
STOPPED_EXTRA_S = 3.0

NEXT_IDS, SEND = 0x02, 0x20
NO_FORWARD = 0x0004
OK, WRONG_OWNER, MESSAGE_ID_CONFLICT = 0, 12, 16


# ---------------------------------------------------------------- owners

def key_owned_by(owners, instance, prefix, exclude=()):
    for i in itertools.count():
        key = "%s%d" % (prefix, i)
        if owners[shard_of(key, SHARDS)] == instance and key not in exclude:
            return key


def owner_of(nodes, owners, key):
    return next(n for n in nodes if n.instance == owners[shard_of(key, SHARDS)])


# ---------------------------------------------------------------- clients

def next_ids_frame(request_id, key, count, flags=0):
    return frame(NEXT_IDS, request_id, next_ids_payload(key, count), flags=flags)


def send_frame(request_id, conv, sender, cmid, payload, flags=0):
    return frame(SEND, request_id, send_payload(conv, sender, cmid, payload, content_type=1),
                 flags=flags)


def error_text(result):
    return read_s16(result)[0]


def http_ids(node, key, count, conn=None):
    status, body, _ = node.request("GET", "/seq/%s?count=%d" % (key, count), conn=conn)
    if status != 200:
        raise AssertionError("HTTP GET /seq/%s on %r: %s %s" % (key, node, status, body))
    out = []
    for r in json.loads(body)["ranges"]:
        out.extend(range(r["first"], r["last"] + 1))
    return out


def binary_ids(sock, request_id, key, count, flags=0):
    sock.sendall(next_ids_frame(request_id, key, count, flags))
    opcode, _, rid, status, result = read_frame_with_flags(sock)
    assert (opcode, rid) == (NEXT_IDS, request_id), (opcode, rid)
    if status != OK:
        raise AssertionError("binary NEXT_IDS %s: status %d %s" % (key, status, error_text(result)))
    return ids_of(result)


def resp_int(sock, *args):
    sock.sendall(resp_command(args))
    line = resp_read_line(sock)
    if not line.startswith(b":"):
        raise AssertionError("RESP %s: %r" % (args, line))
    return int(line[1:])


class Asker(threading.Thread):
    """Asks one key for one ID at a time, as fast as it can, over one
    keep-alive HTTP connection; records every success and error with the
    monotonic time its answer came."""

    def __init__(self, node, key):
        super().__init__(daemon=True)
        self.node, self.key = node, key
        self.samples = []  # (time, [ids])
        self.errors = []   # (time, status or "transport", detail)
        self.stopping = threading.Event()

    def run(self):
        conn = self.node.conn()
        path = "/seq/%s?count=1" % self.key
        while not self.stopping.is_set():
            try:
                conn.request("GET", path)
                r = conn.getresponse()
                body = r.read()
            except (OSError, http.client.HTTPException) as e:
                self.errors.append((time.monotonic(), "transport", repr(e)))
                conn.close()
                time.sleep(0.01)
                conn = self.node.conn()
                continue
            t = time.monotonic()
            if r.status == 200:
                ids = []
                for rg in json.loads(body)["ranges"]:
                    ids.extend(range(rg["first"], rg["last"] + 1))
                self.samples.append((t, ids))
            else:
                self.errors.append((t, r.status, body[:300]))
        conn.close()

    def wait_for(self, n, timeout=5):
        deadline = time.time() + timeout
        while len(self.samples) < n:
            if time.time() > deadline:
                raise AssertionError("only %d answers for %s via %r in %s s; errors %s" % (
                    len(self.samples), self.key, self.node, timeout, self.errors[-5:]))
            time.sleep(0.01)

    def finish(self):
        self.stopping.set()
        self.join(15)
        assert not self.is_alive(), "the asking thread is stuck"
        self.t_end = time.monotonic()

    def max_id(self):
        return max(i for _, ids in self.samples for i in ids)

    def longest_gap(self, settled_after=None, settle_answers=20):
        """(seconds, time before, time after) between consecutive successes,
        the end of the run (finish()) counting as one: answers that never
        came back make a gap too. With settled_after (a monotonic time), only
        gaps up to the settle_answers-th answer after it count: later ones
        are the store's own latency (a slow commit on a loaded machine), not
        the event the test times."""
        times = [t for t, _ in self.samples] + [self.t_end]
        if settled_after is not None:
            after = [i for i, t in enumerate(times) if t > settled_after]
            if len(after) > settle_answers:
                times = times[:after[settle_answers] + 1]
        best = (0.0, times[0], times[0])
        for a, b in zip(times, times[1:]):
            if b - a > best[0]:
                best = (b - a, a, b)
        return best

    def non_retryable(self):
        # 503 (store_unavailable while no instance serves the shard, or
        # shutting_down) is what a client retries; nothing else should come.
        return [e for e in self.errors if e[1] != 503]


# ---------------------------------------------------------------- tests

class ClusterServing(unittest.TestCase):
    """Three instances on one fresh database, shared by the tests of this class."""

    @classmethod
    def setUpClass(cls):
        cls.db = Database()
        cls.nodes = []
        try:
            for _ in range(3):
                cls.nodes.append(Node(cls.db.url))
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for n in cls.nodes:
            n.__exit__()
        cls.db.drop()

    def every_node(self):
        return list(self.nodes)

    def stable(self):
        return wait_stable(self.nodes)

    @dump_logs_on_failure
    def test_1_three_instances_agree_on_the_shard_map(self):
        owners = self.stable()
        by_id = {n.instance: n for n in self.nodes}
        self.assertEqual(len(by_id), 3, "instance ids must be unique")
        for n in self.nodes:
            v = n.cluster()
            self.assertEqual(v["instance"], n.instance)
            self.assertTrue(v["ready"])
            self.assertEqual((v["shards"], v["lease_ms"]), (SHARDS, LEASE_MS))
            members = {m["instance"]: m for m in v["members"]}
            self.assertEqual(set(members), set(by_id))
            for iid, m in members.items():
                self.assertTrue(m["live"], m)
                self.assertEqual(m["advertise"], "127.0.0.1:%d" % by_id[iid].tcp_port, m)
                self.assertEqual(m["shards_owned"], owners.count(iid), m)
                self.assertGreater(m["shards_owned"], 0, "%s owns no shard" % iid)
            self.assertEqual(sorted(s["shard"] for s in v["shard_map"]), list(range(SHARDS)))
            for s in v["shard_map"]:
                self.assertGreaterEqual(s["epoch"], 1, s)

    @dump_logs_on_failure
    def test_2_forwarding_keeps_real_time_order_over_every_protocol(self):
        owners = self.stable()
        # 20 keys, about a third owned by each instance.
        keys = []
        for i in range(20):
            keys.append(key_owned_by(owners, self.nodes[i % 3].instance, "ck_order_",
                                     exclude=keys))
        http_conns = [n.conn() for n in self.nodes]
        tcps = [n.tcp() for n in self.nodes]
        resps = [n.resp() for n in self.nodes]
        try:
            last = dict.fromkeys(keys, 0)
            rid = itertools.count(1)
            for count in (1, 5):
                for i in range(300):
                    key, at, proto = keys[i % 20], i % 3, (i // 3) % 3
                    node = self.nodes[at]
                    where = "request %d (count %d) for %s at %r over %s, owner %s" % (
                        i, count, key, node, ("HTTP", "binary", "RESP")[proto],
                        owners[shard_of(key, SHARDS)])
                    if proto == 0:
                        ids = http_ids(node, key, count, conn=http_conns[at])
                    elif proto == 1:
                        ids = binary_ids(tcps[at], next(rid), key, count)
                    else:
                        if count == 1:
                            v = resp_int(resps[at], "INCR", key)
                        else:
                            v = resp_int(resps[at], "INCRBY", key, str(count))
                        # INCRBY answers the last of `count` new IDs, all above
                        # every earlier one.
                        self.assertGreaterEqual(v, last[key] + count,
                                                "%s: %d after %d" % (where, v, last[key]))
                        last[key] = v
                        continue
                    self.assertEqual(len(ids), count, where)
                    self.assertEqual(ids, sorted(set(ids)), where)
                    self.assertGreater(ids[0], last[key],
                                       "%s: %s after %d" % (where, ids, last[key]))
                    last[key] = ids[-1]
        finally:
            for c in http_conns:
                c.close()
            for s in tcps + resps:
                s.close()

    @dump_logs_on_failure
    def test_3_no_forward_flag(self):
        owners = self.stable()
        key = "ck_noforward"
        owner = owner_of(self.nodes, owners, key)
        others = [n for n in self.nodes if n is not owner]
        seen = 0
        for n in others:
            with n.tcp() as s:
                s.sendall(next_ids_frame(1, key, 3, flags=NO_FORWARD))
                opcode, _, rid, status, result = read_frame_with_flags(s)
                self.assertEqual((opcode, rid), (NEXT_IDS, 1))
                self.assertEqual(status, WRONG_OWNER,
                                 "NO_FORWARD NEXT_IDS to non-owner %r (owner %r): status %d %r"
                                 % (n, owner, status, result))
                # The connection stays; without the flag it is forwarded.
                ids = binary_ids(s, 2, key, 3)
                self.assertEqual(len(ids), 3)
                self.assertGreater(ids[0], seen)
                seen = ids[-1]
        with owner.tcp() as s:
            ids = binary_ids(s, 3, key, 3, flags=NO_FORWARD)
            self.assertEqual(len(ids), 3)
            self.assertGreater(ids[0], seen, "the owner answers after the forwarded ones")
            seen = ids[-1]
        # SEND: the same rule, by the conversation id's shard.
        conv = "ck_noforward_conv"
        owner = owner_of(self.nodes, owners, conv)
        other = next(n for n in self.nodes if n is not owner)
        with other.tcp() as s:
            s.sendall(send_frame(4, conv, "alice", "nf-1", b"x", flags=NO_FORWARD))
            opcode, _, rid, status, result = read_frame_with_flags(s)
            self.assertEqual((opcode, rid, status), (SEND, 4, WRONG_OWNER),
                             "NO_FORWARD SEND to a non-owner: %r" % (result,))
            s.sendall(send_frame(5, conv, "alice", "nf-1", b"x"))
            opcode, _, rid, status, result = read_frame_with_flags(s)
            self.assertEqual((opcode, rid, status), (SEND, 5, OK), result)
            seq, _, _, duplicate = struct.unpack(">qqqB", result)
            self.assertEqual((seq, duplicate), (1, 0))
            # Another content under the used id, forwarded: the owner's
            # MESSAGE_ID_CONFLICT comes back as it is, naming no instance.
            s.sendall(send_frame(7, conv, "alice", "nf-1", b"other"))
            opcode, _, rid, status, result = read_frame_with_flags(s)
            self.assertEqual((opcode, rid, status), (SEND, 7, MESSAGE_ID_CONFLICT), result)
            self.assertIn("client_msg_id", error_text(result))
        status, body, _ = other.request("POST", "/conversations/%s/messages" % conv,
                                        {"sender_id": "alice", "client_msg_id": "nf-1",
                                         "content_type": 1, "payload": "other"})
        self.assertEqual(status, 409, body)
        self.assertEqual(json.loads(body)["error"]["code"], "message_id_conflict")
        for a in (m["advertise"] for m in self.nodes[0].cluster()["members"]):
            self.assertNotIn(a.encode(), body)
        with owner.tcp() as s:
            s.sendall(send_frame(6, conv, "alice", "nf-2", b"y", flags=NO_FORWARD))
            opcode, _, rid, status, result = read_frame_with_flags(s)
            self.assertEqual((opcode, rid, status), (SEND, 6, OK), result)
            self.assertEqual(struct.unpack(">qqqB", result)[0], 2)

    @dump_logs_on_failure
    def test_3b_forwarded_errors_name_no_instance(self):
        """An error answered by the owner comes back unchanged, without the
        address of the instance that answered it."""
        self.stable()
        addresses = [m["advertise"] for m in self.nodes[0].cluster()["members"]]
        for node in self.nodes:
            status, body = node.get("/seq/unregistered_key")
            self.assertEqual(status, 404, body)
            self.assertIn(b"unknown_key", body)
            for a in addresses:
                self.assertNotIn(a.encode(), body, "%r leaked a peer address" % node)

    def test_4_message_seqs_in_send_order_across_instances(self):
        self.stable()
        conv = "ck_chat"
        sent = []
        for i in range(30):
            node = self.nodes[i % 3]
            payload = base64.b64encode(("message %d from %s" % (i, node.instance)).encode()).decode()
            body = {"sender_id": "u%d" % (i % 4), "client_msg_id": "m%d" % i,
                    "content_type": 1, "payload": payload}
            status, answer, _ = node.request("POST", "/conversations/%s/messages" % conv, body)
            answer = json.loads(answer)
            self.assertEqual(status, 201, "send %d via %r: %s" % (i, node, answer))
            self.assertEqual((answer["seq"], answer["duplicate"]), (i + 1, False),
                             "send %d via %r: %s" % (i, node, answer))
            sent.append((body, answer))
        # A re-send through another instance is the first message.
        for i in (0, 13, 29):
            body, first = sent[i]
            node = self.nodes[(i + 1) % 3]
            status, answer, _ = node.request("POST", "/conversations/%s/messages" % conv, body)
            answer = json.loads(answer)
            self.assertEqual(status, 200, "re-send %d via %r: %s" % (i, node, answer))
            self.assertEqual((answer["seq"], answer["server_msg_id"], answer["duplicate"]),
                             (first["seq"], first["server_msg_id"], True), answer)
        for node in self.nodes:
            status, page = node.get_json("/conversations/%s/messages?from=1&limit=1000" % conv)
            self.assertEqual(status, 200, page)
            self.assertTrue(page["is_end"])
            got = [(m["seq"], m["sender_id"], m["client_msg_id"], m["payload"])
                   for m in page["messages"]]
            want = [(a["seq"], b["sender_id"], b["client_msg_id"], b["payload"]) for b, a in sent]
            self.assertEqual(got, want, "pull via %r" % node)

    @dump_logs_on_failure
    def test_4b_a_forward_answered_late_stores_the_message_once(self):
        """The owner freezes for longer than a forward's call timeout (a
        quarter of the 1 s wait deadline) but less than its lease: the
        forwarding instance sends again, and the owner, woken, stores the
        first copy and finds the others stored. The message is stored once at
        seq 1; the client's answer is that seq (201, or 200 duplicate when the
        stored copy was the router's own earlier forward: the owner cannot
        tell it from a re-send); a re-send by the client is always 200
        duplicate."""
        owners = self.stable()
        for rnd in range(2):
            conv = "ck_late%d" % rnd
            owner = owner_of(self.nodes, owners, conv)
            via = next(n for n in self.nodes if n is not owner)
            body = {"sender_id": "u", "client_msg_id": "late", "payload": "bGF0ZQ=="}
            answers = []
            os.kill(owner.proc.pid, signal.SIGSTOP)
            try:
                sender = threading.Thread(target=lambda: answers.append(
                    via.request("POST", "/conversations/%s/messages" % conv, body)))
                sender.start()
                time.sleep(0.6)  # two forwards time out; a third waits at the owner
            finally:
                os.kill(owner.proc.pid, signal.SIGCONT)
            sender.join(10)
            status, answer, _ = answers[0]
            answer = json.loads(answer)
            self.assertIn(status, (200, 201), answer)
            self.assertEqual((answer.get("seq"), answer.get("duplicate")), (1, status == 200),
                             "round %d, send via %r, owner %r frozen: %s" % (rnd, via, owner, answer))
            status, again, _ = via.request("POST", "/conversations/%s/messages" % conv, body)
            again = json.loads(again)
            self.assertEqual((status, again["seq"], again["duplicate"]), (200, 1, True), again)
            status, page = via.get_json("/conversations/%s/messages?from=1&limit=10" % conv)
            self.assertEqual([m["seq"] for m in page["messages"]], [1], page)


class PlannedHandoff(ClusterCase):
    ROUNDS = 3

    @dump_logs_on_failure
    def test_5_sigterm_of_the_owner_moves_its_keys_at_once(self):
        db, nodes = self.cluster_of(3)
        gaps, problems = [], []
        for rnd in range(self.ROUNDS):
            owners = wait_stable(nodes)
            via = nodes[0]  # never stopped
            key = key_owned_by(owners, nodes[1 + rnd % 2].instance, "ck_handoff%d_" % rnd)
            owner = owner_of(nodes, owners, key)
            self.assertIsNot(owner, via)
            asker = Asker(via, key)
            asker.start()
            try:
                asker.wait_for(100)
                t_term = time.monotonic()
                rc = owner.stop(signal.SIGTERM)
                t_exit = time.monotonic()
                n_before_exit = len(asker.samples)
                time.sleep(1.0)
                asker.wait_for(n_before_exit + 50)
            finally:
                asker.finish()
            # The handoff is over once the successor has answered 20 times
            # after the owner exited; a stall after that is a slow commit.
            gap, a, b = asker.longest_gap(settled_after=t_exit)
            whole_run_gap = asker.longest_gap()[0]
            gaps.append(gap)
            retryable = [e for e in asker.errors if e[1] == 503]
            log("\n  handoff round %d: key %s via %s, owner %s exited %.0f ms after SIGTERM; "
                "longest gap %.1f ms (%+.0f ms..%+.0f ms from SIGTERM; %.1f ms in the whole "
                "run); %d answers, "
                "%d retryable errors %s, %d other" % (
                    rnd, key, via.instance, owner.instance, (t_exit - t_term) * 1000, gap * 1000,
                    (a - t_term) * 1000, (b - t_term) * 1000, whole_run_gap * 1000,
                    len(asker.samples), len(retryable), ["%+.0f ms: %s" % ((t - t_term) * 1000, body[:80])
                                     for t, _, body in retryable[:3]],
                    len(asker.non_retryable())))
            mine = self.asker_problems(asker)
            if rc != 0:
                mine.append("the owner exited with %s after SIGTERM" % rc)
            # The goal is 100 ms (20-40 ms measured); 0.5 s leaves room for a
            # loaded CI machine and still fails on a lease wait or a deadline.
            if gap >= 0.5:
                mine.append("longest gap between answers %.0f ms (%+.0f..%+.0f ms from SIGTERM), "
                            "not under 0.5 s; 503s: %s" % (
                                gap * 1000, (a - t_term) * 1000, (b - t_term) * 1000,
                                retryable[:3]))
            if retryable:
                # The successor takes the released shards at once: no request
                # should fail (a 503 here came after waiting out the 1 s wait
                # deadline, which already spoils the gap).
                mine.append("%d request(s) answered 503 across a planned handoff: %s" % (
                            len(retryable), [
                                "%+.0f ms from SIGTERM: %s" % ((t - t_term) * 1000, body)
                                for t, _, body in retryable[:3]]))
            problems.extend("round %d (key %s via %s, owner %s): %s" % (
                rnd, key, via.instance, owner.instance, p) for p in mine)
            nodes.remove(owner)
            nodes.append(self.start_node(db))
        log("  handoff gaps (ms): %s" % ", ".join("%.1f" % (g * 1000) for g in gaps))
        self.fail_rounds(problems)

    @dump_logs_on_failure
    def test_5b_a_join_moves_its_keys_at_once(self):
        """A member joining takes its shards from the others in a planned
        handoff: the keys that move to it keep being answered, through the
        same instance, with no lease wait and no 503."""
        db, nodes = self.cluster_of(2)
        gaps, problems = [], []
        for rnd in range(self.ROUNDS):
            owners = wait_stable(nodes)
            via = nodes[0]
            # Keys on 24 shards: whichever shards the joiner gets, some of
            # these move (a third of them, on average, with three members; a
            # quarter with four). None moving is a (3/4)^24 = 0.1% chance
            # in the second round; with 12 shards it was 3% and was seen.
            by_shard = {}
            for i in itertools.count():
                k = "ck_join%d_%d" % (rnd, i)
                by_shard.setdefault(shard_of(k, SHARDS), k)
                if len(by_shard) == 24:
                    break
            askers = [Asker(via, k) for k in by_shard.values()]
            for a in askers:
                a.start()
            try:
                for a in askers:
                    a.wait_for(50)
                t_start = time.monotonic()
                joiner = self.start_node(db)
                t_up = time.monotonic()
                nodes.append(joiner)
                after = wait_stable(nodes)
                t_stable = time.monotonic()
                n_before = [len(a.samples) for a in askers]
                time.sleep(0.5)
                for a, n in zip(askers, n_before):
                    a.wait_for(n + 20)
            finally:
                for a in askers:
                    a.finish()
            moved = [a for a in askers if after[shard_of(a.key, SHARDS)] == joiner.instance]
            if not moved:
                problems.append("round %d: no asked key moved to the joiner %s" % (
                    rnd, joiner.instance))
            for a in moved:
                # The move is over once the joiner has answered 20 times after
                # the map settled; a stall after that is a slow commit.
                gap, x, y = a.longest_gap(settled_after=t_stable)
                gaps.append(gap)
                retryable = [e for e in a.errors if e[1] == 503]
                log("\n  join round %d: key %s moved %s -> %s (started in %.0f ms); longest gap "
                    "%.1f ms (%+.0f..%+.0f ms from the start), %d answers, %d 503s" % (
                        rnd, a.key, owners[shard_of(a.key, SHARDS)], joiner.instance,
                        (t_up - t_start) * 1000, gap * 1000, (x - t_start) * 1000,
                        (y - t_start) * 1000, len(a.samples), len(retryable)))
                mine = self.asker_problems(a)
                # The goal is 100 ms; 0.9 s leaves room for a loaded CI
                # machine and still fails on a lease wait or a wait deadline
                # (both 1 s or more here).
                if gap >= 0.9:
                    mine.append("longest gap between answers %.0f ms, not under 0.9 s" % (
                        gap * 1000))
                if retryable:
                    mine.append("%d request(s) answered 503 across a join: %s" % (
                        len(retryable), retryable[:3]))
                problems.extend("round %d (key %s via %s): %s" % (rnd, a.key, via.instance, p)
                                for p in mine)
            # Back to two members for the next round: the joiner leaves.
            nodes.remove(joiner)
            joiner.stop(signal.SIGTERM)
        log("  join gaps (ms): %s" % ", ".join("%.1f" % (g * 1000) for g in gaps))
        self.fail_rounds(problems)


class Kill9Takeover(ClusterCase):
    ROUNDS = 2

    @dump_logs_on_failure
    def test_6_kill9_of_the_owner(self):
        db, nodes = self.cluster_of(3)
        gaps, problems = [], []
        for rnd in range(self.ROUNDS):
            owners = wait_stable(nodes)
            via = nodes[0]
            key = key_owned_by(owners, nodes[1 + rnd % 2].instance, "ck_kill%d_" % rnd)
            owner = owner_of(nodes, owners, key)
            asker = Asker(via, key)
            asker.start()
            try:
                asker.wait_for(100)
                t_kill = time.monotonic()
                owner.stop(signal.SIGKILL)
                n_before = len(asker.samples)
                max_before = asker.max_id()
                deadline = time.monotonic() + LEASE + 3.0
                # Answers resume; then a little more to see them flowing.
                while len(asker.samples) <= n_before and time.monotonic() < deadline:
                    time.sleep(0.01)
                time.sleep(0.5)
            finally:
                asker.finish()
            after = [ids for _, ids in asker.samples[n_before:]]
            gap, a, b = asker.longest_gap()
            gaps.append(gap)
            log("\n  kill -9 round %d: key %s via %s, owner %s; longest gap %.1f ms "
                "(%+.0f..%+.0f ms from the kill); %d retryable errors, %d other" % (
                    rnd, key, via.instance, owner.instance, gap * 1000, (a - t_kill) * 1000,
                    (b - t_kill) * 1000, len(asker.errors) - len(asker.non_retryable()),
                    len(asker.non_retryable())))
            mine = self.asker_problems(asker)
            if not after:
                mine.append("no answer within %.1f s of the kill; errors %s" % (
                    LEASE + 3.0, asker.errors[-3:]))
            elif after[0][0] <= max_before:
                mine.append("the first IDs after the takeover %s are not above %d, the "
                            "largest before it" % (after[0], max_before))
            # lease x 1.01 after the last renewal seen, one lease round (a quarter
            # lease), and a round that meets a row lock waits up to the lease
            # connection's lock_wait_timeout (1 s) before it skips it: 2.5 s
            # beyond the lease is the bound on a loaded machine.
            if gap >= LEASE + 2.5:
                mine.append("longest gap between answers %.0f ms (%+.0f..%+.0f ms from the "
                            "kill), not under the lease + 2.5 s" % (
                                gap * 1000, (a - t_kill) * 1000, (b - t_kill) * 1000))
            problems.extend("round %d (key %s via %s, owner %s): %s" % (
                rnd, key, via.instance, owner.instance, p) for p in mine)
            nodes.remove(owner)
            nodes.append(self.start_node(db))
        log("  kill -9 gaps (ms): %s" % ", ".join("%.1f" % (g * 1000) for g in gaps))
        self.fail_rounds(problems)


class PushAcrossInstances(ClusterCase):
    """A subscriber on any instance gets every message of its conversation,
    committed by the owner wherever it is, also after the owner moves."""

    SUBSCRIBE, PUSH_MESSAGE = 0x2A, 0x2C

    def subscribe(self, node, conv):
        sock = node.tcp()
        self.addCleanup(sock.close)
        sock.sendall(frame(self.SUBSCRIBE, 1, key_list([conv])))
        opcode, _, rid, status, _ = read_frame_with_flags(sock)
        self.assertEqual((opcode, rid, status), (self.SUBSCRIBE, 1, OK))
        return sock

    def pushed_seqs(self, sock, want, timeout=5.0):
        """Seqs pushed on `sock` until `want` of them arrived or the timeout."""
        seqs = []
        deadline = time.monotonic() + timeout
        while len(seqs) < want and time.monotonic() < deadline:
            sock.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                opcode, flags, rid, status, result = read_frame_with_flags(sock)
            except (socket.timeout, OSError):
                break
            self.assertEqual((opcode, flags, rid, status), (self.PUSH_MESSAGE, 3, 0, OK))
            _, pos = read_s16(result)
            seqs.append(struct.unpack_from(">q", result, pos)[0])
        return seqs

    def send(self, node, conv, i):
        body = {"sender_id": "u", "client_msg_id": "p%d" % i, "payload": "m%d" % i}
        status, answer, _ = node.request("POST", "/conversations/%s/messages" % conv, body)
        # 200 duplicate when a forward went unanswered and its retry found
        # the message the first forward stored (docs/cluster.md).
        self.assertIn(status, (200, 201), answer)
        self.assertEqual(json.loads(answer)["duplicate"], status == 200, answer)
        return json.loads(answer)["seq"]

    @dump_logs_on_failure
    def test_9_pushes_reach_subscribers_on_every_instance(self):
        db, nodes = self.cluster_of(3)
        owners = wait_stable(nodes)
        conv = "ck_push"
        owner = owner_of(nodes, owners, conv)
        subs = {n.instance: self.subscribe(n, conv) for n in nodes}
        time.sleep(1.0)  # the relays subscribe at the owner (slow on a loaded machine)
        seqs = [self.send(nodes[i % 3], conv, i) for i in range(10)]
        self.assertEqual(seqs, list(range(1, 11)))
        for n in nodes:
            self.assertEqual(self.pushed_seqs(subs[n.instance], 10), seqs,
                             "pushes to a subscriber on %r (owner %r)" % (n, owner))
        # The owner leaves: the other subscribers' relays follow the new owner.
        owner.stop()
        rest = [n for n in nodes if n is not owner]
        wait_stable(rest)
        time.sleep(1.0)
        more = [self.send(rest[i % 2], conv, 10 + i) for i in range(10)]
        self.assertEqual(more, list(range(11, 21)))
        for n in rest:
            self.assertEqual(self.pushed_seqs(subs[n.instance], 10), more,
                             "pushes to a subscriber on %r after the owner left" % n)


    def sse(self, node, conv, headers=()):
        """An event stream of `conv` on `node`, read by a raw socket on a
        thread: (socket, queue of message seqs). Returns once the stream's
        head and its `retry:` line arrived (the stream is subscribed)."""
        sock = socket.create_connection(("127.0.0.1", node.port), timeout=10)
        self.addCleanup(sock.close)
        req = "GET /conversations/%s/events?from=1 HTTP/1.1\r\nHost: x\r\n" % conv
        req += "".join("%s\r\n" % h for h in headers) + "\r\n"
        sock.sendall(req.encode())
        f = sock.makefile("rb")
        head = []
        while True:
            line = f.readline().decode().rstrip("\r\n")
            if not line:
                break
            head.append(line)
        self.assertIn(" 200 ", head[0] + " ", head)
        self.assertIn("content-type: text/event-stream", [h.lower() for h in head])
        self.assertTrue(f.readline().startswith(b"retry: "))
        seqs = queue.Queue()

        def read():
            ev = {}
            try:
                for raw in f:
                    line = raw.decode().rstrip("\r\n")
                    if line:
                        k, _, v = line.partition(":")
                        ev[k] = v[1:] if v.startswith(" ") else v
                        continue
                    if ev.get("event") == "message":
                        data = json.loads(ev["data"])
                        seqs.put((int(ev["id"]), data["seq"]))
                    ev = {}
            except (OSError, ValueError):
                pass
        threading.Thread(target=read, daemon=True).start()
        return sock, seqs

    def streamed(self, seqs, want, timeout=5.0):
        """Message seqs from `seqs` until `want` arrived, then 0.3 s more (a
        repeat or an extra would show); each event's id must be its seq."""
        got = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                eid, seq = seqs.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            self.assertEqual(eid, seq, "an event's id is its seq")
            got.append(seq)
            if len(got) == want:
                deadline = min(deadline, time.monotonic() + 0.3)
        return got

    @dump_logs_on_failure
    def test_9b_event_streams_on_the_owner_and_elsewhere_resume_by_last_event_id(self):
        db, nodes = self.cluster_of(3)
        owners = wait_stable(nodes)
        conv = "ck_sse"
        owner = owner_of(nodes, owners, conv)
        other, third = [n for n in nodes if n is not owner]
        far_sock, far = self.sse(other, conv)
        _, near = self.sse(owner, conv)
        # Through the third instance and the owner in turn: forwarded and local sends.
        seqs = [self.send((third, owner, other)[i % 3], conv, i) for i in range(20)]
        self.assertEqual(seqs, list(range(1, 21)))
        self.assertEqual(self.streamed(near, 20), seqs, "the stream on the owner %r" % owner)
        got = self.streamed(far, 20)
        self.assertEqual(got, seqs, "the stream on %r (owner %r)" % (other, owner))
        # The far stream reconnects as a browser does: its last id in Last-Event-ID.
        far_sock.shutdown(socket.SHUT_RDWR)  # its reader's file holds the fd open
        far_sock.close()
        more = [self.send((third, other)[i % 2], conv, 20 + i) for i in range(5)]
        _, far = self.sse(other, conv, ["Last-Event-ID: %d" % got[-1]])
        more += [self.send((third, owner)[i % 2], conv, 25 + i) for i in range(5)]
        self.assertEqual(more, list(range(21, 31)))
        self.assertEqual(self.streamed(far, 10), more,
                         "the stream resumed on %r after seq %d" % (other, got[-1]))
        self.assertEqual(self.streamed(near, 10), more, "the stream on the owner %r" % owner)


class StoppedOwner(ClusterCase):
    ROUNDS = 3

    @dump_logs_on_failure
    def test_7_sigstop_past_the_lease_then_the_woken_owner_answers_nothing_stale(self):
        db, nodes = self.cluster_of(3)
        gaps, all_problems = [], []
        for rnd in range(self.ROUNDS):
            owners = wait_stable(nodes)
            owner = nodes[rnd % 3]
            via = nodes[(rnd + 1) % 3]
            key = key_owned_by(owners, owner.instance, "ck_stop%d_" % rnd)
            # Connections to the owner made while it runs; requests go on
            # them while it is stopped, so it meets them the moment it wakes.
            pre_http = owner.conn()
            self.addCleanup(pre_http.close)
            self.assertEqual(owner.request("GET", "/healthz", conn=pre_http)[0], 200)
            pre_tcp = owner.tcp()
            self.addCleanup(pre_tcp.close)
            pre_tcp_nf = owner.tcp()
            self.addCleanup(pre_tcp_nf.close)
            pre_resp = owner.resp()
            self.addCleanup(pre_resp.close)
            asker = Asker(via, key)
            asker.start()
            try:
                asker.wait_for(100)
                t_stop = time.monotonic()
                owner.proc.send_signal(signal.SIGSTOP)
                self.addCleanup(lambda p=owner.proc: p.poll() is None and p.send_signal(
                    signal.SIGCONT))
                time.sleep(STOP_LEASES * LEASE)
                view = via.cluster()
            finally:
                asker.finish()
            t_cont_soon = time.monotonic()
            max_seen = asker.max_id()
            gap, a, b = asker.longest_gap()
            gaps.append(gap)
            resumed = [t for t, _ in asker.samples if t > t_stop + LEASE]
            log("\n  SIGSTOP round %d: key %s via %s, owner %s; longest gap %.1f ms "
                "(%+.0f..%+.0f ms from SIGSTOP); %d answers after the lease; "
                "%d retryable errors, %d other" % (
                    rnd, key, via.instance, owner.instance, gap * 1000, (a - t_stop) * 1000,
                    (b - t_stop) * 1000, len(resumed),
                    len(asker.errors) - len(asker.non_retryable()), len(asker.non_retryable())))
            new_owner = next(s["owner"] for s in view["shard_map"]
                             if s["shard"] == shard_of(key, SHARDS))
            stopped_member = next(m for m in view["members"] if m["instance"] == owner.instance)

            # What was waiting on the database while it was stopped (the
            # other instances' lease rounds should not be).
            waiting = db.sql("SELECT ID, TIME, STATE, LEFT(INFO, 100) FROM "
                             "information_schema.PROCESSLIST WHERE DB = '%s' AND INFO IS NOT NULL "
                             "AND INFO NOT LIKE '%%PROCESSLIST%%'" % db.name).strip()

            # Ask the stopped owner for the key over every protocol, then wake it.
            pre_http.request("GET", "/seq/%s?count=1" % key)
            pre_tcp.sendall(next_ids_frame(1, key, 1))
            pre_tcp_nf.sendall(next_ids_frame(2, key, 1, flags=NO_FORWARD))
            pre_resp.sendall(resp_command(["INCR", key]))
            owner.proc.send_signal(signal.SIGCONT)
            t_cont = time.monotonic()
            # A new connection, right after the wake.
            fresh_status, fresh_body, _ = owner.request("GET", "/seq/%s?count=1" % key)
            r = pre_http.getresponse()
            pre_http_body = r.read()
            _, _, rid, status, result = read_frame_with_flags(pre_tcp)
            _, _, rid_nf, status_nf, result_nf = read_frame_with_flags(pre_tcp_nf)
            resp_line = resp_read_line(pre_resp)
            t_answered = time.monotonic()
            log("  SIGSTOP round %d: stopped %.0f ms; the woken owner answered in %.0f ms; "
                "max ID before %d; fresh HTTP %s %s, pre-sent HTTP %s %s, binary %s %s, "
                "binary NO_FORWARD %s %s, RESP %r" % (
                    rnd, (t_cont - t_stop) * 1000, (t_answered - t_cont) * 1000, max_seen,
                    fresh_status, fresh_body[:100], r.status, pre_http_body[:100], status,
                    ids_of(result) if status == OK else error_text(result), status_nf,
                    ids_of(result_nf) if status_nf == OK else error_text(result_nf),
                    resp_line))

            # Every problem of the round, the correctness ones first.
            problems = []
            stale = "the woken former owner answered from its stale buffers"

            def http_first(status, body, what):
                if status != 200:
                    problems.append("%s: %s %s" % (what, status, body[:200]))
                    return
                first = json.loads(body)["ranges"][0]["first"]
                if first <= max_seen:
                    problems.append("%s (%s): ID %d, not above %d" % (stale, what, first, max_seen))

            http_first(fresh_status, fresh_body, "fresh HTTP request after SIGCONT")
            http_first(r.status, pre_http_body, "HTTP request sent while stopped")
            if (rid, status) != (1, OK):
                problems.append("binary NEXT_IDS sent while stopped: %s %s" % (
                    status, error_text(result)))
            elif ids_of(result)[0] <= max_seen:
                problems.append("%s (binary NEXT_IDS): %s" % (stale, ids_of(result)))
            if rid_nf != 2 or status_nf not in (OK, WRONG_OWNER):
                problems.append("binary NEXT_IDS NO_FORWARD sent while stopped: %s %s" % (
                    status_nf, error_text(result_nf)))
            elif status_nf == OK and ids_of(result_nf)[0] <= max_seen:
                problems.append("%s (binary NEXT_IDS, NO_FORWARD): %s" % (
                    stale, ids_of(result_nf)))
            if not resp_line.startswith(b":"):
                problems.append("RESP INCR sent while stopped: %r" % resp_line)
            elif int(resp_line[1:]) <= max_seen:
                problems.append("%s (RESP INCR): %r" % (stale, resp_line))
            if asker.non_retryable():
                problems.append("non-retryable errors: %s" % asker.non_retryable()[:5])
            flat = [i for _, ids in asker.samples for i in ids]
            if any(x >= y for x, y in zip(flat, flat[1:])):
                problems.append("IDs via %s went down or repeated" % via.instance)
            if not any(t > t_cont_soon - 0.5 for t in resumed):
                problems.append(
                    "answers did not resume while the owner was stopped (%d retryable errors, "
                    "last %s); queries running on the database at the end of the stop:\n%s"
                    % (len(asker.errors), asker.errors[-1:], waiting))
            if gap >= LEASE + STOPPED_EXTRA_S:
                problems.append("longest gap %.0f ms, not under the lease + %.1f s"
                                % (gap * 1000, STOPPED_EXTRA_S))
            if new_owner == owner.instance:
                problems.append("the map of %s still gives the stopped instance the key's shard"
                                % via.instance)
            if stopped_member["live"]:
                problems.append("%s still sees the stopped instance live" % via.instance)
            if problems:
                all_problems.append("round %d (key %s, stopped owner %s, asked via %s):\n  %s" % (
                    rnd, key, owner.instance, via.instance, "\n  ".join(problems)))
            for c in (pre_http, pre_tcp, pre_tcp_nf, pre_resp):
                c.close()
        log("  SIGSTOP gaps (ms): %s" % ", ".join("%.1f" % (g * 1000) for g in gaps))
        self.fail_rounds(all_problems)
        wait_stable(nodes)


MAX_IDS, GET_MIN_SEQS, SET_MIN_SEQS = 0x06, 0x07, 0x08
STORE_UNAVAILABLE = 4


def why(status, result):
    return error_text(result) if status != OK else ""


def binary_call(sock, request_id, opcode, payload, flags=0):
    sock.sendall(frame(opcode, request_id, payload, flags=flags))
    op, _, rid, status, result = read_frame_with_flags(sock)
    assert (op, rid) == (opcode, request_id), (op, rid)
    return status, result


class OpenImIdsInCluster(ClusterCase):
    """OpenIM's ID ops: MAX_IDS answered by each key's owner, SET_MIN_SEQS a keyed
    write routed to the owners and fenced by the shard lease."""

    @dump_logs_on_failure
    def test_10_max_ids_from_the_owner_min_seqs_routed_and_a_stopped_owner_fenced(self):
        db, nodes = self.cluster_of(3)
        owners = wait_stable(nodes)
        keys = [key_owned_by(owners, n.instance, "ck_oim_") for n in nodes]
        last = {}
        for n, k in zip(nodes, keys):  # IDs handed out by each key's owner itself
            s = n.tcp()
            self.addCleanup(s.close)
            for rid in range(1, 4):
                last[k] = binary_ids(s, rid, k, 7)[-1]
        for i, via in enumerate(nodes):
            s = via.tcp()
            self.addCleanup(s.close)
            # Two of the three keys are owned elsewhere: forwarded, answered exactly.
            status, result = binary_call(s, 1, MAX_IDS, key_list(keys + ["ck_oim_none"]))
            self.assertEqual(status, OK, why(status, result))
            self.assertEqual(int64_list(result), [last[k] for k in keys] + [0])
            status, _ = binary_call(s, 2, MAX_IDS, key_list(keys), flags=NO_FORWARD)
            self.assertEqual(status, WRONG_OWNER)
            status, result = binary_call(s, 3, MAX_IDS, key_list([keys[i]]),
                                         flags=NO_FORWARD)
            self.assertEqual((status, int64_list(result)), (OK, [last[keys[i]]]))
            # Min seqs: set through any instance (owners elsewhere), read anywhere.
            status, result = binary_call(s, 4, SET_MIN_SEQS,
                                         key_values([(k, 10 * i + j)
                                                           for j, k in enumerate(keys)]))
            self.assertEqual(status, OK, why(status, result))
            for other in nodes:
                o = other.tcp()
                self.addCleanup(o.close)
                status, result = binary_call(o, 5, GET_MIN_SEQS, key_list(keys))
                self.assertEqual(int64_list(result), [10 * i + j for j in range(3)])
        status, payload, _ = nodes[0].request("PUT", "/min_seqs", {"min_seqs": {keys[1]: 7}})
        self.assertEqual(status, 200, payload)
        self.assertEqual(nodes[2].get_json("/min_seqs?key=" + keys[1])[1],
                         {"min_seqs": {keys[1]: 7}})

        # A stopped owner past its lease: a write it reads when it wakes is
        # not applied (its lease is gone; the write would be fenced).
        owner, via = nodes[0], nodes[1]
        key = keys[0]
        stale = owner.tcp()
        self.addCleanup(stale.close)
        owner.proc.send_signal(signal.SIGSTOP)
        self.addCleanup(lambda p=owner.proc: p.poll() is None and p.send_signal(signal.SIGCONT))
        # Sent once every thread is stopped: a thread still running could
        # take the write under its valid lease (answered OK, seen once).
        wait_stopped(owner.proc.pid)
        stale.sendall(frame(SET_MIN_SEQS, 9, key_values([(key, 999)]), flags=NO_FORWARD))
        time.sleep(STOP_LEASES * LEASE)
        t0 = time.monotonic()
        v = via.tcp()
        self.addCleanup(v.close)
        deadline = time.monotonic() + STOPPED_EXTRA_S + 5
        while True:  # the new owner takes the write once the shard moved
            status, result = binary_call(v, 10, SET_MIN_SEQS, key_values([(key, 5)]))
            if status == OK or time.monotonic() > deadline:
                break
        self.assertEqual(status, OK, why(status, result))
        moved_s = time.monotonic() - t0
        owner.proc.send_signal(signal.SIGCONT)
        op, _, rid, stale_status, stale_result = read_frame_with_flags(stale)
        log("\n  min-seq write on the woken owner: status %d (%s); the new owner took "
            "its write %.0f ms after %.1f leases of stop" % (stale_status, error_text(stale_result)
                                                        if stale_status else "", moved_s * 1000, STOP_LEASES))
        self.assertEqual((op, rid), (SET_MIN_SEQS, 9))
        self.assertIn(stale_status, (WRONG_OWNER, STORE_UNAVAILABLE))
        time.sleep(0.5)
        for n in nodes:
            o = n.tcp()
            self.addCleanup(o.close)
            status, result = binary_call(o, 11, GET_MIN_SEQS, key_list([key]))
            self.assertEqual((status, int64_list(result)), (OK, [5]), n)


class DenseInCluster(ClusterCase):
    """Dense keys owned by two instances, asked through a third (forwarded
    with their tokens) by clients that send each request again, with its
    token, until it is answered, while one owner hands its shards off
    (SIGTERM) and the other is killed (kill -9). Every block seen must tile
    1..max, each client's blocks must grow (real-time order), and MAX_IDS
    must be max on every instance."""

    @staticmethod
    def once(sock, rid, key, count, token):
        sock.sendall(frame(0x09, rid, once_payload(key, count, token)))
        _, _, got_rid, status, result = read_frame_with_flags(sock)
        if got_rid != rid or status != OK:
            return None
        return struct.unpack(">qq", result)

    def client(self, via, keys, seen, stop, failures, rnd):
        """Records (key, (first, last), asked at, answered at) per block."""
        sock, rid = None, 0
        while not stop.is_set():
            key, count = rnd.choice(keys), rnd.randint(1, 4)
            token = "%x-%d" % (id(seen), rnd.getrandbits(48))
            asked = time.monotonic()
            while True:
                rid += 1
                try:
                    sock = sock or via.tcp()
                    got = self.once(sock, rid, key, count, token)
                except (OSError, EOFError, struct.error):
                    got = None
                    if sock:
                        sock.close()
                    sock = None
                if got:
                    break
                failures.append(key)
                time.sleep(0.02)
            seen.append((key, got, asked, time.monotonic()))
        if sock:
            sock.close()

    @dump_logs_on_failure
    def test_11_dense_keys_no_hole_through_handoff_and_kill9(self):
        db, nodes = self.cluster_of(3)
        owners = wait_stable(nodes)
        via, handed, killed = nodes
        keys = [key_owned_by(owners, handed.instance, "cd_h%d_" % i) for i in range(3)]
        keys += [key_owned_by(owners, killed.instance, "cd_k%d_" % i) for i in range(3)]
        stop = threading.Event()
        seen = [[] for _ in range(4)]
        failures = []
        threads = [threading.Thread(target=self.client, args=(via, keys, seen[i], stop, failures,
                                                              random.Random(i)), daemon=True)
                   for i in range(4)]
        for t in threads:
            t.start()
        try:
            time.sleep(0.5)
            t_handoff = time.monotonic()
            handed.stop(signal.SIGTERM)
            time.sleep(0.5)
            t_kill = time.monotonic()
            killed.stop(signal.SIGKILL)
            time.sleep(LEASE + 2.0)
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=30)
        self.assertFalse(any(t.is_alive() for t in threads), "a client never got its answer")
        problems = []
        # The faults met the load: each owner's keys were answered before its
        # fault and after it, by the instance that took them over; and the
        # kill made some request wait for the takeover.
        for group, t_fault in (("cd_h", t_handoff), ("cd_k", t_kill)):
            answered = [done for mine in seen for k, _, _, done in mine if k.startswith(group)]
            if not any(a < t_fault for a in answered) or not any(a > t_fault + 0.2
                                                                 for a in answered):
                problems.append("%s keys: no answers on both sides of their fault" % group)
        longest = max(done - asked for mine in seen for k, _, asked, done in mine)
        if longest < LEASE / 2:
            problems.append("no request waited for the kill's takeover (longest %.0f ms)" % (
                longest * 1000))
        for i, mine in enumerate(seen):
            for key in keys:
                firsts = [b[0] for k, b, _, _ in mine if k == key]
                if firsts != sorted(firsts):
                    problems.append("client %d: blocks of %s not in real-time order" % (i, key))
        status, body = via.get_json("/max_ids?" + "&".join("key=" + k for k in keys))
        self.assertEqual(status, 200, body)
        for key in keys:
            blocks = sorted(b for mine in seen for k, b, _, _ in mine if k == key)
            if not blocks:
                problems.append("%s: no block" % key)
                continue
            expect = 1
            for first, last in blocks:
                if first != expect:
                    problems.append("%s: block %d..%d where %d was next" % (key, first, last,
                                                                           expect))
                expect = last + 1
            if body["max_ids"][key] != expect - 1:
                problems.append("%s: MAX_IDS %d, last handed out %d" % (
                    key, body["max_ids"][key], expect - 1))
        log("\n  dense in cluster: %d blocks over %d keys, %d failed attempts, longest "
            "request %.0f ms" % (sum(len(m) for m in seen), len(keys), len(failures),
                                 longest * 1000))
        self.fail_rounds(problems)


class RefusesToStart(unittest.TestCase):
    def every_node(self):
        return []

    def run_seqd(self, *args):
        r = subprocess.run([SEQD, "--http-port", "0", "--log-level", "info", *args],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        return r.returncode, r.stdout.decode(errors="replace")

    def test_8_cluster_needs_mysql_and_the_binary_listener(self):
        with tempfile.TemporaryDirectory() as d:
            rc, out = self.run_seqd("--store", "sqlite:" + os.path.join(d, "seqd.db"),
                                    "--cluster", "--tcp-port", "0")
            self.assertEqual(rc, 2, out)
            self.assertIn("cluster", out)
            self.assertIn("mysql", out.lower())
        db = Database()
        self.addCleanup(db.drop)
        rc, out = self.run_seqd("--store", db.url, "--cluster", "--tcp-port", "-1")
        self.assertEqual(rc, 2, out)
        self.assertIn("cluster", out)
        self.assertIn("tcp_port", out.replace("-", "_"))
        # It refused before touching the database: no cluster tables.
        self.assertNotIn("seqd_cluster", db.sql("SHOW TABLES FROM %s" % db.name))


if __name__ == "__main__":
    unittest.main()
