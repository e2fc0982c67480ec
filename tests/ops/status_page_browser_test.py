"""ctest status_page_browser: the status page at GET / rendered by a real browser.

Starts the real seqd binary on SQLite (SEQD_BINARY, like tests/e2e), takes IDs
on a registered key and an auto-created one, then runs headless Chromium:
--dump-dom (the rendered DOM must show both keys, the store up and the
version) and --screenshot (a real PNG, saved as status.png in
STATUS_PAGE_ARTIFACT_DIR, default a temporary directory; its path is printed).
Standard library only. Fails (never skips) when chromium is not installed:
scripts/deps.sh --test installs it.

Usage: python3 tests/ops/status_page_browser_test.py [unittest args]
"""
import html.parser
import os
import random
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
from harness import Seqd  # noqa: E402
from lib.browser import chromium  # noqa: E402

RUN = "%06x" % random.getrandbits(24)
USED_KEY = "status_order_" + RUN      # registered with POST /admin/keys, then used
AUTO_KEY = "sg_status_" + RUN         # auto-created by the sg_ rule: a dense key
SEG_AUTO_KEY = "seg_status_" + RUN    # auto-created by a segment rule
IDLE_KEY = "status_idle_" + RUN       # registered, never used: only in the store
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class TextById(html.parser.HTMLParser):
    """Collects the text content of every element with an id."""

    VOID = {"br", "img", "input", "meta", "link", "hr", "col", "source", "wbr"}

    def __init__(self):
        super().__init__()
        self.stack = []  # (tag, id or None)
        self.text = {}
        self.all_text = []

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return
        el_id = dict(attrs).get("id")
        self.stack.append((tag, el_id))
        if el_id:
            self.text.setdefault(el_id, "")

    def handle_endtag(self, tag):
        while self.stack:
            t, _ = self.stack.pop()
            if t == tag:
                break

    def handle_data(self, data):
        self.all_text.append(data)
        for _, el_id in self.stack:
            if el_id:
                self.text[el_id] += data


class StatusPageBrowserTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.browser = chromium()
        cls.tmp = tempfile.TemporaryDirectory(prefix="seqd-status-")
        cls.artifacts = os.environ.get("STATUS_PAGE_ARTIFACT_DIR") or cls.tmp.name
        os.makedirs(cls.artifacts, exist_ok=True)
        cls.seqd = Seqd("sqlite:" + os.path.join(cls.tmp.name, "seqd.db"),
                        "--auto-keys", "sg_:100:dense,seg_:10")
        try:
            cls.seqd.create_key(USED_KEY, 1000)
            cls.seqd.create_key(IDLE_KEY, 500)
            cls.used_ids = cls.seqd.ids(USED_KEY, 25)
            cls.auto_ids = cls.seqd.ids(AUTO_KEY, 7)
            cls.seg_auto_ids = cls.seqd.ids(SEG_AUTO_KEY, 3)
            status, health = cls.seqd.get_json("/healthz")
            assert status == 200, health
            cls.version = health["version"]
        except Exception:
            cls.seqd.__exit__(None, None, None)
            raise
        cls.url = "http://127.0.0.1:%d/" % cls.seqd.port

    @classmethod
    def tearDownClass(cls):
        cls.seqd.stop()
        cls.seqd.__exit__(None, None, None)
        cls.tmp.cleanup()

    def run_browser(self, *args):
        profile = tempfile.mkdtemp(prefix="chromium-", dir=self.tmp.name)
        cmd = [self.browser, "--headless", "--no-sandbox", "--disable-gpu",
               "--no-first-run", "--user-data-dir=" + profile, *args, self.url]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=180)
        self.assertEqual(proc.returncode, 0, "%s failed: %s" % (
            " ".join(cmd), proc.stderr.decode(errors="replace")[-3000:]))
        return proc.stdout.decode("utf-8", errors="replace")

    def test_page_is_html(self):
        status, body, res = self.seqd.request("GET", "/")
        self.assertEqual(status, 200)
        self.assertEqual(res.getheader("Content-Type"), "text/html; charset=utf-8")
        self.assertIn(b"<!DOCTYPE html>", body)
        # Self-contained: no external scripts, stylesheets or images.
        for needle in (b"<script src", b"<link rel=\"stylesheet\"", b"<img", b"http://",
                       b"https://"):
            self.assertNotIn(needle, body)
        status, _, res = self.seqd.request("POST", "/", headers={"Content-Type": "application/json"})
        self.assertEqual(status, 405)
        self.assertEqual(res.getheader("Allow"), "GET")

    def test_dump_dom(self):
        dom = self.run_browser("--dump-dom")
        parser = TextById()
        parser.feed(dom)
        text = " ".join(parser.all_text)
        self.assertIn(USED_KEY, text)
        self.assertIn(AUTO_KEY, text)
        self.assertIn(IDLE_KEY, text)  # registered, not yet in memory
        self.assertEqual(parser.text.get("store", "").strip(), "store up", dom[-2000:])
        self.assertEqual(parser.text.get("version", "").strip(), self.version)
        self.assertNotIn("store-down", parser.text)
        # The auto-created keys carry their tags; the used key shows its position.
        rows = [r for r in dom.split("<tr") if AUTO_KEY in r]
        self.assertEqual(len(rows), 1, rows)
        self.assertIn(">dense<", rows[0])
        self.assertIn("the max ID is the last one handed out", rows[0])
        # Leaf's max_id, one past the last ID handed out: no ID was skipped.
        self.assertIn(">%d<" % (self.auto_ids[-1] + 1), rows[0])
        rows = [r for r in dom.split("<tr") if SEG_AUTO_KEY in r]
        self.assertEqual(len(rows), 1, rows)
        self.assertIn(">auto<", rows[0])
        self.assertNotIn(">dense<", rows[0])
        used_rows = [r for r in dom.split("<tr") if USED_KEY in r]
        self.assertEqual(len(used_rows), 1, used_rows)
        self.assertIn(str(self.used_ids[-1] + 1), used_rows[0])  # the next ID to hand out
        idle_rows = [r for r in dom.split("<tr") if IDLE_KEY in r]
        self.assertEqual(len(idle_rows), 1, idle_rows)
        self.assertIn("not in memory", idle_rows[0])
        # Sorted by name.
        positions = sorted((dom.find(k), k) for k in (USED_KEY, AUTO_KEY, IDLE_KEY))
        self.assertEqual([k for _, k in positions], sorted([USED_KEY, AUTO_KEY, IDLE_KEY]))

    def test_screenshot(self):
        path = os.path.join(self.artifacts, "status.png")
        if os.path.exists(path):
            os.unlink(path)
        self.run_browser("--screenshot=" + path, "--window-size=1280,900",
                         "--hide-scrollbars")
        self.assertTrue(os.path.exists(path), "no screenshot at " + path)
        with open(path, "rb") as f:
            data = f.read()
        self.assertEqual(data[:8], PNG_SIGNATURE)
        self.assertGreater(len(data), 5 * 1024, "screenshot is only %d bytes" % len(data))
        print("status page screenshot: %s (%d bytes)" % (path, len(data)), flush=True)


if __name__ == "__main__":
    unittest.main()
