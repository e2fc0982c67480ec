"""The C++ client's subscriptions survive a server killed mid-stream.

`seqctl --tcp ... msg subscribe` (the client library with its default
ClientOptions::resubscribe) prints every pushed message. Senders post
messages over HTTP, re-sending the same client_msg_id until acked, while
seqd is killed with SIGKILL and restarted on the same ports and store, twice.
The subscriber must print every acked message of each conversation exactly
once, in seq order, with no hole: what it missed while the server was down
comes from its pulls after re-subscribing. The run must see the faults: the
subscriber reports each loss, and senders see failed sends.
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
from harness import Seqd, free_port, store_spec  # noqa: E402

BUILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build")
SEQCTL = os.environ.get("SEQCTL_BINARY", os.path.join(BUILD, "client", "seqctl"))
CONVS = ["sg_rs1", "sg_rs2"]
PER_CONV = 300
KILL_AT = (80, 180)  # messages acked per conversation before each kill


class Sender(threading.Thread):
    """Sends PER_CONV messages to one conversation; a send is retried with
    the same client_msg_id until the server acks it."""

    def __init__(self, server, conv):
        super().__init__(daemon=True)
        self.server, self.conv = server, conv
        self.acked = {}  # seq -> client_msg_id
        self.failures = 0
        self.duplicates = 0

    def run(self):
        for i in range(PER_CONV):
            cid = "%s-%d" % (self.conv, i)
            body = {"sender_id": "u", "client_msg_id": cid, "payload": cid}
            while True:
                try:
                    status, payload, _ = self.server().request(
                        "POST", "/conversations/%s/messages" % self.conv, body)
                except OSError:
                    status, payload = None, b""
                if status in (200, 201):
                    r = json.loads(payload)
                    if r["duplicate"]:
                        self.duplicates += 1
                    self.acked[r["seq"]] = cid
                    break
                self.failures += 1
                time.sleep(0.02)
            time.sleep(0.003)


class ResubscribeAcrossRestarts(unittest.TestCase):
    def test_kill_9_mid_stream_no_hole_no_duplicate(self):
        tmp = tempfile.TemporaryDirectory()
        http_port, tcp_port = free_port(), free_port()
        store = store_spec("sqlite", tmp.name)
        extra = ("--tcp-port", str(tcp_port))
        holder = {"seqd": Seqd(store, *extra, port=http_port)}
        sub = subprocess.Popen(
            [SEQCTL, "--tcp", "127.0.0.1:%d" % tcp_port, "--timeout", "1000", "--json", "msg",
             "subscribe", *CONVS], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines, errors = [], []
        readers = [threading.Thread(target=lambda: lines.extend(sub.stdout), daemon=True),
                   threading.Thread(target=lambda: errors.extend(sub.stderr), daemon=True)]
        for r in readers:
            r.start()
        try:
            time.sleep(1.0)  # subscribed before the first message: it must see seq 1 on
            self.assertIsNone(sub.poll(), "".join(errors))
            senders = [Sender(lambda: holder["seqd"], c) for c in CONVS]
            for s in senders:
                s.start()
            kills = 0
            for at in KILL_AT:
                while min(len(s.acked) for s in senders) < at:
                    time.sleep(0.01)
                holder["seqd"].stop(signal.SIGKILL)
                kills += 1
                time.sleep(0.7)  # senders fail meanwhile; the subscriber loses its pushes
                holder["seqd"].__exit__(None, None, None)
                holder["seqd"] = Seqd(store, *extra, port=http_port)
            for s in senders:
                s.join(timeout=60)
                self.assertFalse(s.is_alive(), "a sender is stuck")
            deadline = time.time() + 20
            while time.time() < deadline and len(lines) < len(CONVS) * PER_CONV:
                time.sleep(0.05)
            time.sleep(0.5)  # anything extra (a duplicate) shows up by now
        finally:
            sub.kill()
            sub.wait()
            holder["seqd"].__exit__(None, None, None)
            tmp.cleanup()
        for r in readers:
            r.join(timeout=5)

        # The faults happened and were seen.
        self.assertEqual(kills, 2)
        self.assertGreater(sum(s.failures for s in senders), 0, "no send ever failed")
        lost = [e for e in errors if "re-subscribing" in e]
        self.assertGreaterEqual(len(lost), 2, "".join(errors))

        delivered = {c: [] for c in CONVS}
        for line in lines:
            m = json.loads(line)
            delivered[m["conv_id"]].append((m["seq"], m["client_msg_id"]))
        for s in senders:
            got = delivered[s.conv]
            seqs = [seq for seq, _ in got]
            self.assertEqual(len(s.acked), PER_CONV)
            # Every acked message, once, in order, nothing else: 1..max.
            self.assertEqual(seqs, list(range(1, max(s.acked) + 1)),
                             "%s: holes, duplicates or disorder" % s.conv)
            self.assertEqual(sorted(s.acked), seqs)
            for seq, cid in got:
                self.assertEqual(cid, s.acked[seq], "%s seq %d is another message" % (s.conv, seq))
        print("delivered %d messages over %d kills; %d failed sends, %d lost-subscription notices"
              % (len(lines), kills, sum(s.failures for s in senders), len(lost)))


if __name__ == "__main__":
    unittest.main()
