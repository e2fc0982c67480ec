"""Cluster mode: a push lost around a takeover, with no message after it,
still reaches subscribers on a non-owner instance.

Three instances A, B, C; a conversation owned by B whose successor, once B
is gone, is C (rendezvous hashing, computed here as seqd does). A binary
subscriber (`seqctl --tcp A msg subscribe`, the C++ client's resubscribing
Subscribe) and an SSE stream both sit on A, which relays B's pushes
(PushRelay). Message 1 is pushed through B. Then B is killed with kill -9
and message 2 is sent to C until acked: C commits it as it takes the shard
over, before A's relay has moved to C (A learns the new map at its next
lease round), so its push never reaches A, and no message follows to show
the gap. Both subscribers must still deliver it: the client by its periodic
MAX_SEQS (ClientOptions::resync_every, 3 s), the stream by its heartbeat's
max-seq check. Without those, message 2 never arrives.

Usage: SEQD_TEST_MYSQL_URL=mysql://... python3 tests/e2e/test_cluster_push.py
Environment: SEQD_BINARY, SEQCTL_BINARY.
"""
import itertools
import json
import os
import signal
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import subscribers  # noqa: E402
from lib.cluster import fnv1a64, shard_of  # noqa: E402
from lib.cluster_case import SHARDS, ClusterCase, dump_logs_on_failure, wait_stable  # noqa: E402

DELIVER_S = 8.0  # resync_every (3 s) plus the takeover's lease and slack


def splitmix64(z):
    z = (z + 0x9e3779b97f4a7c15) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & 0xFFFFFFFFFFFFFFFF
    return z ^ (z >> 31)


def owner_among(shard, members):
    """The member rendezvous hashing gives `shard` (server/cluster/shard_map.cc)."""
    def weight(m):
        return splitmix64(fnv1a64(m.encode() + b"\0" + str(shard).encode()))
    return max(sorted(members), key=weight)


class LostPushAfterTakeover(ClusterCase):
    @dump_logs_on_failure
    def test_a_push_lost_in_a_takeover_still_arrives(self):
        _, nodes = self.cluster_of(3)
        owners = wait_stable(nodes)
        a, b, c = nodes
        ids = [n.instance for n in nodes]
        conv = next(k for k in ("ck_lost%d" % i for i in itertools.count())
                    if owners[shard_of(k, SHARDS)] == b.instance
                    and owner_among(shard_of(k, SHARDS), ids) == b.instance
                    and owner_among(shard_of(k, SHARDS), [a.instance, c.instance]) == c.instance)
        self.assertLess(shard_of(conv, SHARDS), SHARDS)
        sub = subscribers.BinarySubscriber("binary", ["127.0.0.1:%d" % a.tcp_port], [conv])
        sse = subscribers.SseSubscriber("sse", "lastid", [conv], lambda: a.port,
                                              threading.Event())
        sub.start()
        sse.start()
        self.addCleanup(sub.stop)
        self.addCleanup(sse.stop)
        time.sleep(1.0)  # subscribed (and relayed from B) before message 1

        def send(node, i):
            body = {"sender_id": "u", "client_msg_id": "lost%d" % i, "payload": "m%d" % i}
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                try:
                    status, answer, _ = node.request(
                        "POST", "/conversations/%s/messages" % conv, body)
                except OSError:
                    status = None
                if status in (200, 201):
                    return json.loads(answer)["seq"]
                time.sleep(0.02)
            self.fail("message %d was never acked" % i)

        self.assertEqual(send(a, 1), 1)
        for s in (sub, sse):
            self.assertEqual(subscribers.wait_delivered([s], {(conv, 1)}, 5.0)[s.name]
                             is not None, True, "%s did not deliver message 1" % s.name)
        # A clean leave: B releases the shard and wakes C, which takes it at
        # once; A learns that B left at its next lease round.
        t_leave = time.monotonic()
        b.proc.send_signal(signal.SIGTERM)
        self.assertEqual(send(c, 2), 2)
        acked_after = time.monotonic() - t_leave
        self.assertEqual(b.proc.wait(15), 0)
        waits = subscribers.wait_delivered([sub, sse], {(conv, 2)}, DELIVER_S)
        got = {s.name: [d.seq for d in s.snapshot()[conv]] for s in (sub, sse)}
        print("message 2 acked %.2f s after the SIGTERM; delivered after %s s; seqs %s; "
              "subscriber stderr %s" % (acked_after, waits, got, sub.stderr[-3:]))
        for s in (sub, sse):
            self.assertIsNotNone(waits[s.name], "%s never delivered message 2 (got %s)" % (
                s.name, got[s.name]))
            self.assertEqual(got[s.name], [1, 2])
        self.assertTrue(sub.alive(), "seqctl exited: %s" % sub.stderr[-3:])


if __name__ == "__main__":
    unittest.main()
