"""seqbench's load modes against a real seqd on SQLite: the open loop keeps
its schedule (--rate) and counts the warmup apart (--warmup); --new-keys asks
for a fresh key on every request, and each one reaches the server as a new
key; --resp drives the RESP listener with INCR / INCRBY, counting IDs and
error replies; the report's quantiles come in order up to p9999."""
import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib.seqd_case import SeqdCase  # noqa: E402

BUILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build")
SEQBENCH = os.environ.get("SEQBENCH_BINARY", os.path.join(BUILD, "bench", "seqbench", "seqbench"))


class SeqbenchModes(SeqdCase):
    @classmethod
    def seqd_flags(cls):
        return ("--auto-keys", "sb_:10", "--auto-create-rate", "0")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        status, _, _ = cls.seqd.request("POST", "/admin/keys", {"key": "bench_k", "step": 1000})
        assert status == 201, status

    def bench(self, *args, target=None, status=0):
        target = target or ["--tcp", "127.0.0.1:%d" % self.tcp_port]
        p = subprocess.run([SEQBENCH, *target, "--json", *args],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, status, p.stdout + p.stderr)
        return json.loads(p.stdout)

    def test_resp_counts_ids_and_error_replies(self):
        resp = ["--resp", "127.0.0.1:%d" % self.resp_port]
        r = self.bench("--key", "sb_resp", "--requests", "500", "--connections", "2",
                       "--pipeline", "8", target=resp)
        self.assertEqual((r["protocol"], r["requests"], r["ids"], r["errors"]),
                         ("resp", 500, 500, 0), r)
        lat = r["latency_us"]
        self.assertTrue(0 < lat["p50"] <= lat["p99"] <= lat["p999"] <= lat["p9999"] <= lat["max"],
                        lat)
        r = self.bench("--key", "sb_resp", "--requests", "100", "--count", "3", target=resp)
        self.assertEqual((r["requests"], r["ids"], r["errors"]), (100, 300, 0), r)
        # Over the server's max_count: every reply an error, counted by its text.
        r = self.bench("--key", "sb_resp", "--requests", "50", "--count", "50000", target=resp,
                       status=1)
        self.assertEqual((r["requests"], r["ids"], r["errors"]), (50, 0, 50), r)
        [(kind, n)] = r["error_kinds"].items()
        self.assertIn("max_count", kind)
        self.assertEqual(n, 50)

    def test_open_loop_keeps_its_rate_and_counts_warmup_apart(self):
        r = self.bench("--key", "bench_k", "--rate", "400", "--duration", "1.5",
                       "--warmup", "0.5", "--connections", "2")
        answered = r["requests"]  # the warmup's included
        # 400/s for 1.5 s, whatever the pipeline: about 600 scheduled.
        self.assertGreater(answered, 450, r)
        self.assertLess(answered, 700, r)
        self.assertGreater(r["warmup_requests"], 120, r)  # ~200 in the first 0.5 s
        self.assertLess(r["warmup_requests"], 280, r)
        self.assertEqual(r["errors"], 0, r)
        self.assertEqual(r["rate"], 400)

    def test_also_resp_drives_both_protocols_on_one_clock(self):
        resp = "127.0.0.1:%d" % self.resp_port
        r = self.bench("--key", "bench_k", "--rate", "400", "--duration", "1.5", "--warmup", "0.5",
                       "--connections", "2", "--also-resp", resp)
        also = r["also_resp"]
        self.assertEqual((r["protocol"], also["endpoint"]), ("tcp", resp), r)
        # Each side keeps the whole rate: about 600 scheduled in 1.5 s.
        for side in (r, also):
            self.assertGreater(side["requests"], 450, r)
            self.assertLess(side["requests"], 700, r)
            self.assertEqual((side["ids"], side["errors"]), (side["requests"], 0), r)
            self.assertGreater(side["warmup_requests"], 120, r)
            lat = side["latency_us"]
            self.assertTrue(0 < lat["p50"] <= lat["p999"] <= lat["max"], lat)
        # The RESP side counts apart: pointed at the binary listener, only it fails.
        r = self.bench("--key", "bench_k", "--rate", "200", "--duration", "0.5",
                       "--also-resp", "127.0.0.1:%d" % self.tcp_port, status=1)
        self.assertEqual(r["errors"], 0, r)
        self.assertGreater(r["requests"], 0, r)
        self.assertEqual(r["also_resp"]["requests"], 0, r)
        self.assertGreater(r["also_resp"]["errors"], 0, r)
        for args in (["--new-keys", "sb_"], ["--key", "k", "--requests", "10"]):
            p = subprocess.run([SEQBENCH, "--tcp", "127.0.0.1:1", "--also-resp", resp, *args],
                               capture_output=True, text=True, timeout=10)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertIn("--also-resp goes with", p.stderr)
        p = subprocess.run([SEQBENCH, "--resp", resp, "--also-resp", resp, "--key", "k"],
                           capture_output=True, text=True, timeout=10)
        self.assertEqual(p.returncode, 2, p.stderr)

    def test_new_keys_are_each_new_to_the_server(self):
        def cached():
            status, body = self.seqd.get("/metrics")
            self.assertEqual(status, 200)
            text = body if isinstance(body, str) else body.decode()
            for line in text.splitlines():
                if line.startswith("seqd_keys_in_memory "):
                    return float(line.split()[1])
            self.fail("no seqd_keys_in_memory")
        before = cached()
        r = self.bench("--new-keys", "sb_", "--duration", "0.5", "--connections", "2",
                       "--pipeline", "4")
        self.assertGreater(r["requests"], 20, r)
        self.assertEqual(r["errors"], 0, r)
        self.assertEqual(r["mode"], "new_keys")
        # Every answered request brought a key of its own into memory.
        self.assertGreaterEqual(cached() - before, r["requests"])

    def max_seq(self, conv):
        status, body, _ = self.seqd.request("POST", "/conversations/max_seqs", {"conv_ids": [conv]})
        self.assertEqual(status, 200, body)
        return json.loads(body)["max_seqs"][conv]

    def test_messages_are_stored_and_pushed_to_every_subscriber(self):
        # A burst of 600 sends over 3 conversations, 2 subscribers on all three.
        r = self.bench("--messages", "sb_m", "--convs", "3", "--requests", "600",
                       "--connections", "2", "--pipeline", "8", "--subscribe", "2")
        self.assertEqual(r["mode"], "messages")
        self.assertEqual((r["requests"], r["ids"], r["errors"]), (600, 600, 0), r)
        self.assertEqual(sum(self.max_seq("sb_m_%d" % i) for i in range(3)), 600)
        push = r["push"]
        self.assertEqual(push["errors"], 0, r)
        self.assertEqual(push["pushes"], push["expected"], r)  # a burst: none in flight at the end
        self.assertEqual(push["expected"], 1200, r)
        self.assertGreater(push["latency_us"]["max"], 0, r)
        # Over HTTP too (201 counts as success); seqs go on where they were.
        before = self.max_seq("sb_m_http")
        p = subprocess.run([SEQBENCH, "--http", "127.0.0.1:%d" % self.seqd.port, "--json",
                            "--messages", "sb_m_http", "--requests", "50"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(json.loads(p.stdout)["ids"], 50)
        self.assertEqual(self.max_seq("sb_m_http"), before + 50)

    def test_bad_flags_are_usage_errors(self):
        for args in (["--key", "k", "--new-keys", "p_"], ["--new-keys", ""],
                     ["--key", "k", "--rate", "0"], ["--key", "k", "--warmup", "-1"],
                     ["--key", "k", "--subscribe", "1"], ["--messages", "c", "--key", "k"],
                     ["--messages", "c", "--payload", "3"], ["--messages", "c", "--convs", "0"]):
            p = subprocess.run([SEQBENCH, "--tcp", "127.0.0.1:1", *args], capture_output=True,
                               text=True, timeout=10)
            self.assertEqual(p.returncode, 2, (args, p.stderr))


if __name__ == "__main__":
    unittest.main()
