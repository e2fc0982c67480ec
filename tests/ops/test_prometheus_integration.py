"""ctest prometheus_integration: a real Prometheus server scrapes the real seqd
binary under load; the series of docs/metrics.md arrive and move.

Starts seqd on SQLite (SEQD_BINARY, like tests/e2e) and Debian's `prometheus`
(scrape interval 1s, the alert rules of config/prometheus loaded), sends
GET /seq/<key> and POST /conversations/<conv>/messages, and asks Prometheus's
HTTP API (/api/v1/query). Standard library only. Fails (never skips) when
prometheus is not installed: scripts/deps.sh --test installs it.

Usage: python3 tests/ops/test_prometheus_integration.py [unittest args]
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
from harness import Seqd, free_port, http_get, wait_ready  # noqa: E402

RULES = os.path.join(REPO, "config", "prometheus", "seqd-alerts.yml")
RUN = "%06x" % random.getrandbits(24)
KEY = "ops_order"
CONV = "sg_ops_" + RUN


class Prometheus:
    """One prometheus server scraping `target` every second."""

    def __init__(self, target, tmpdir):
        exe = shutil.which("prometheus")
        if not exe:
            raise RuntimeError("prometheus is not installed (apt-get install prometheus; "
                               "scripts/deps.sh --test installs it)")
        self.port = free_port()
        cfg = os.path.join(tmpdir, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("""global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - %s
scrape_configs:
  - job_name: seqd
    metrics_path: /metrics
    scrape_interval: 1s
    scrape_timeout: 1s
    static_configs:
      - targets: ["%s"]
""" % (json.dumps(RULES), target))
        self.log = open(os.path.join(tmpdir, "prometheus.log"), "w+")
        self.proc = subprocess.Popen(
            [exe, "--config.file=" + cfg, "--storage.tsdb.path=" + os.path.join(tmpdir, "tsdb"),
             "--web.listen-address=127.0.0.1:%d" % self.port, "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT)
        wait_ready(self.proc, lambda: self.get("/-/ready")[0] == 200, "prometheus", self.logs,
                   pause=0.1)

    def logs(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()[-4000:]

    def get(self, path):
        return http_get(self.port, path)

    def api(self, path, **params):
        status, body = self.get("/api/v1/" + path + "?" + urllib.parse.urlencode(params))
        data = json.loads(body)
        if status != 200 or data.get("status") != "success":
            raise AssertionError("%s %s: %s %s" % (path, params, status, body[:500]))
        return data["data"]

    def query(self, q):
        """The instant vector of q: a list of (labels, float value)."""
        data = self.api("query", query=q)
        assert data["resultType"] == "vector", data
        return [(r["metric"], float(r["value"][1])) for r in data["result"]]

    def wait_for(self, q, timeout=15, what=None):
        """Polls q until it has a result; returns it or fails with the last answer."""
        deadline = time.time() + timeout
        while True:
            res = self.query(q)
            if res:
                return res
            if time.time() > deadline:
                raise AssertionError("no result for %s within %ds%s\nprometheus targets: %s"
                                     % (q, timeout, " (" + what + ")" if what else "",
                                        json.dumps(self.api("targets")["activeTargets"])[:1500]))
            time.sleep(0.5)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class Load(threading.Thread):
    """IDs and message sends on one keep-alive connection until stopped."""

    def __init__(self, seqd):
        super().__init__(daemon=True)
        self.seqd = seqd
        self.halt = threading.Event()
        self.sent = 0
        self.ids = 0
        self.error = None

    def run(self):
        conn = self.seqd.conn()
        n = 0
        try:
            while not self.halt.is_set():
                n += 1
                for key in (KEY, "si_ops_%s_%d" % (RUN, n % 7)):
                    st, body, _ = self.seqd.request("GET", "/seq/%s?count=3" % key, conn=conn)
                    assert st == 200, (key, st, body)
                    self.ids += 3
                st, body, _ = self.seqd.request(
                    "POST", "/conversations/%s/messages" % CONV,
                    {"sender_id": "ops", "client_msg_id": "c-%d" % n, "payload": "load %d" % n},
                    conn=conn)
                assert st == 201, (st, body)
                self.sent += 1
                time.sleep(0.005)
        except Exception as e:  # reported by the test
            self.error = e
        finally:
            conn.close()

    def stop(self):
        self.halt.set()
        self.join(15)


def total(res):
    return sum(v for _, v in res)


class PrometheusIntegration(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="seqd-prom-")
        cls.seqd = Seqd("sqlite:" + os.path.join(cls.tmp.name, "seqd.db"))
        cls.seqd.create_key(KEY, 1000)
        try:
            cls.prom = Prometheus("127.0.0.1:%d" % cls.seqd.port, cls.tmp.name)
        except Exception:
            cls.seqd.__exit__(None, None, None)
            cls.tmp.cleanup()
            raise
        cls.load = Load(cls.seqd)
        cls.load.start()

    @classmethod
    def tearDownClass(cls):
        cls.load.stop()
        cls.prom.stop()
        cls.seqd.__exit__(None, None, None)
        cls.tmp.cleanup()

    target_up = None  # set by the first test that waits for it

    def setUp(self):
        self.assertIsNone(self.load.error, "load generator failed")
        cls = type(self)
        if cls.target_up is None:
            cls.target_up = False
            res = self.prom.wait_for('up{job="seqd"} == 1', timeout=20,
                                     what="the seqd target is scraped")
            self.assertEqual(len(res), 1, res)
            cls.target_up = True
        # Every test needs the scrape: fail fast instead of waiting again.
        self.assertTrue(cls.target_up, "the seqd target is not up (see the first failure)")

    def test_1_target_up(self):
        self.assertEqual(total(self.prom.query('up{job="seqd"}')), 1.0)

    def test_2_series_arrive(self):
        res = self.prom.wait_for('seqd_requests_total{job="seqd"}')
        ifaces = {m.get("interface") for m, _ in res}
        self.assertIn("http", ifaces, res)
        ops = {m.get("op") for m, _ in res if m.get("interface") == "http"}
        self.assertTrue({"seq", "msg_send"} <= ops, ops)
        for name in ("seqd_build_info", "seqd_store_up", "seqd_ids_issued_total",
                     "seqd_request_duration_seconds_bucket", "seqd_messages_stored_total"):
            self.prom.wait_for('%s{job="seqd"}' % name)
        self.assertEqual(total(self.prom.wait_for('seqd_store_up{job="seqd"}')), 1.0)

    def test_3_rates_move_under_load(self):
        res = self.prom.wait_for('rate(seqd_requests_total{job="seqd"}[5s]) > 0', timeout=15,
                                 what="requests counted while the load runs")
        self.assertGreater(total(res), 0)
        self.prom.wait_for('sum(rate(seqd_ids_issued_total{job="seqd"}[5s])) > 0')
        before = total(self.prom.wait_for('seqd_messages_stored_total{job="seqd"}'))
        deadline = time.time() + 15
        while True:
            self.assertIsNone(self.load.error, "load generator failed")
            now = total(self.prom.query('seqd_messages_stored_total{job="seqd"}'))
            if now > before:
                break
            self.assertLess(time.time(), deadline,
                            "seqd_messages_stored_total stayed at %s (%d sent)" % (now, self.load.sent))
            time.sleep(0.5)
        self.assertLessEqual(now, self.load.sent + 0.0)

    def test_4_no_conversation_ids_in_labels(self):
        # docs/metrics.md: key is a registered key or auto:<prefix>, never a conversation id.
        res = self.prom.wait_for('count by (key) ({job="seqd", key!=""})')
        keys = {m["key"] for m, _ in res}
        self.assertIn(KEY, keys)
        bad = [k for k in keys if k != KEY and not k.startswith("auto:")]
        self.assertEqual(bad, [], "conversation ids in the key label")
        self.assertIn("auto:si_", keys)

    def test_5_alert_rules_loaded(self):
        groups = self.prom.api("rules")["groups"]
        names = {r["name"] for g in groups for r in g["rules"]}
        self.assertIn("SeqdStoreDown", names)
        for g in groups:
            for r in g["rules"]:
                self.assertNotEqual(r.get("health"), "err", r)
        # The store is up and nothing is failing: no alert fires.
        firing = self.prom.query('ALERTS{alertstate="firing", alertname=~"SeqdStoreDown|SeqdTargetDown"}')
        self.assertEqual(firing, [])


if __name__ == "__main__":
    unittest.main(defaultTest="PrometheusIntegration")
