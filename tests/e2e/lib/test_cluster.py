"""tests/e2e/lib/cluster.py against a stand-in seqd written here (it logs
seqd's listener and cluster lines and answers /healthz and /metrics): the
cluster must start members on its port slots, read their ports, follow
their states, tell a crash from a kill, put a replacement on the ports it
replaces, and a Workspace must stop what was started, last first.

Usage: python3 tests/e2e/lib/test_cluster.py [unittest args]
"""
import os
import signal
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lib import cluster  # noqa: E402

FAKE_SEQD = r"""#!/usr/bin/env python3
import argparse, http.server, socket, sys, uuid

p = argparse.ArgumentParser()
p.add_argument("--http-port", type=int)
p.add_argument("--tcp-port", type=int)
p.add_argument("--fail", action="store_true")
a, _ = p.parse_known_args()
if a.fail:
    sys.exit("refusing to start")
binary = socket.socket()
binary.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
binary.bind(("127.0.0.1", a.tcp_port))
binary.listen(1)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"# metrics\nseqd_up 1\nseqd_requests_total{x=\"y\"} 7\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", a.http_port), Handler)
print("binary protocol on 127.0.0.1:%d" % binary.getsockname()[1])
print("RESP (Redis protocol) on 127.0.0.1:%d" % (a.http_port + 1))
print("cluster mode: instance %s at 127.0.0.1" % uuid.uuid4().hex[:8], flush=True)
server.serve_forever()
"""


class Shards(unittest.TestCase):
    def test_fnv1a64(self):
        self.assertEqual(cluster.fnv1a64(b""), 0xcbf29ce484222325)
        self.assertEqual(cluster.fnv1a64(b"a"), 0xaf63dc4c8601ec8c)
        self.assertEqual(cluster.shard_of("a", 64), 0xaf63dc4c8601ec8c % 64)


class Members(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.base = tmp.name
        self.seqd = os.path.join(tmp.name, "seqd")
        with open(self.seqd, "w") as f:
            f.write(FAKE_SEQD)
        os.chmod(self.seqd, 0o755)

    def new(self, kind=cluster.Cluster, flags=()):
        c = kind("mysql://u@127.0.0.1/d", 1000, self.base, flags, size=2, seqd=self.seqd)
        self.addCleanup(c.kill_all)
        return c

    def test_members_their_ports_and_states(self):
        c = self.new()
        s1, s2 = c.start_instance(), c.start_instance()
        self.assertEqual((s1.name, s2.name), ("s1", "s2"))
        self.assertEqual(sorted([s1.binary_port, s2.binary_port]), sorted(c.binary_ports))
        self.assertEqual(s1.resp_port, s1.http_port + 1)
        self.assertIs(c.by_instance_id(s2.instance_id), s2)
        self.assertEqual(s1.metrics(), {"seqd_up": 1.0, 'seqd_requests_total{x="y"}': 7.0})
        c.set_state(s1, "frozen", signal.SIGSTOP)
        self.assertEqual(c.up(), [s2])
        self.assertEqual(c.reachable(frozen=False), [s2])
        self.assertEqual(c.reachable(frozen=True), [s1, s2])
        c.set_state(s1, "up", signal.SIGCONT)
        self.assertEqual(c.check_crashes(), [])

    def test_a_crash_is_not_a_kill(self):
        c = self.new()
        s1, s2 = c.start_instance(), c.start_instance()
        c.set_state(s1, "killed", signal.SIGKILL)
        s1.proc.wait()
        os.kill(s2.proc.pid, signal.SIGTERM)
        s2.proc.wait()
        crashes = c.check_crashes()
        self.assertEqual([(x["instance"], x["exit"]) for x in crashes], [("s2", -signal.SIGTERM)])
        self.assertEqual((s1.state, s2.state), ("killed", "crashed"))

    def test_a_replacement_takes_the_binary_port(self):
        c = self.new()
        s1, _ = c.start_instance(), c.start_instance()
        c.set_state(s1, "killed", signal.SIGKILL)
        s1.proc.wait()
        s3 = c.start_instance()
        self.assertEqual((s3.name, s3.binary_port), ("s3", s1.binary_port))
        self.assertNotEqual(s3.instance_id, s1.instance_id)

    def test_fixed_ports(self):
        c = self.new(cluster.FixedPortCluster)
        s1, s2 = c.start_instance(), c.start_instance()
        self.assertEqual(c.endpoints(), ["127.0.0.1:%d" % b for _, b in c.slots])
        self.assertEqual({(s.http_port, s.binary_port) for s in (s1, s2)}, set(c.slots))
        c.set_state(s2, "killed", signal.SIGKILL)
        s2.proc.wait()
        s3 = c.start_instance()
        self.assertEqual((s3.http_port, s3.binary_port), (s2.http_port, s2.binary_port))

    def test_a_member_that_cannot_start(self):
        c = self.new(flags=["--fail"])
        with mock.patch.object(cluster.Cluster, "RETRY_PAUSE_S", 0):
            with self.assertRaisesRegex(RuntimeError, "s1.2 exited with 1:\nrefusing to start"):
                c.start_instance()
        self.assertEqual(c.instances, [])


class Workspaces(unittest.TestCase):
    def test_stops_last_first_once_then_removes(self):
        with mock.patch.object(cluster.atexit, "register"), \
                mock.patch.object(cluster.signal, "signal"):
            ws = cluster.Workspace("seqd-lib-test-")
        stopped = []
        ws.on_cleanup(lambda: stopped.append("db"))
        ws.on_cleanup(lambda: stopped.append("cluster"))
        ws.cleanup()
        ws.cleanup()
        self.assertEqual(stopped, ["cluster", "db"])
        self.assertFalse(os.path.exists(ws.base))


if __name__ == "__main__":
    unittest.main()
