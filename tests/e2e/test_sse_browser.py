"""ctest e2e_sse_browser: a real browser's EventSource receives seqd's pushes.

seqd sends no CORS headers, so the page and the stream share one origin, as
behind a reverse proxy in production: a small server in this test serves the
page at / and passes every other request through to seqd, byte for byte and
unbuffered. The page (headless Chromium) opens
`new EventSource('/conversations/CONV/events?from=1&access_token=...')` (the
query token: browsers cannot set headers on an EventSource), lists every
event in the DOM and posts what it has to /report after each one (and every
500 ms).

Checks: messages sent before the page opened (replayed) and after (pushed)
arrive in seq order, once each, with `lastEventId` equal to the seq; the
proxy then cuts the stream and Chromium reconnects by itself with
Last-Event-ID, and what was sent meanwhile arrives with no repeat.
Fails (never skips) when chromium is not installed.
"""
import json
import os
import signal
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Seqd, store_spec  # noqa: E402
from lib.browser import chromium  # noqa: E402
from lib.sockets import read_head  # noqa: E402
from lib.tokens import token_line, tokens_file  # noqa: E402

CONV = "sg_browser"
READ_SECRET = "sqd_browser-reader-0123456789"
SEND_SECRET = "sqd_browser-sender-0123456789"
PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>0</title></head>
<body><ol id="events"></ol><script>
const got = [];
let opens = 0, errors = 0;
function report() {
  fetch('/report', {method: 'POST', headers: {'Content-Type': 'text/plain'},
                    body: JSON.stringify({opens, errors, state: es.readyState, got})});
}
const es = new EventSource('/conversations/%(conv)s/events?from=1&access_token=%(token)s');
es.onopen = () => { opens++; report(); };
es.onerror = () => { errors++; report(); };
es.addEventListener('message', (e) => {
  const m = JSON.parse(e.data);
  got.push({seq: m.seq, id: e.lastEventId, payload: m.payload});
  const li = document.createElement('li');
  li.textContent = m.seq + ' ' + m.payload;
  document.getElementById('events').appendChild(li);
  document.title = String(got.length);
  report();
});
// A report lost on its way (the browser caps connections per host) is made
// good by the next tick: the test waits on what the page has, not on one POST.
setInterval(report, 500);
</script></body></html>
"""


class SameOriginProxy(socketserver.ThreadingTCPServer):
    """Serves the page and /report; pipes any other connection to seqd.

    The first request of a connection decides: / and /report (and anything
    else but the event stream) are answered here with Connection: close; the
    stream's request makes the connection a transparent TCP pipe to seqd for
    its whole life. cut() closes every pipe (the browser
    sees its stream end, as when a server dies)."""

    daemon_threads = True
    allow_reuse_address = True
    # A report per event comes in bursts of new connections: socketserver's
    # default backlog of 5 drops SYNs, which the browser retries only after
    # seconds.
    request_queue_size = 256

    def __init__(self, upstream_port, page):
        super().__init__(("127.0.0.1", 0), ProxyHandler)
        self.upstream_port, self.page = upstream_port, page.encode()
        self.reports, self.pipes = [], []
        self.lock = threading.Lock()

    def cut(self):
        with self.lock:
            pipes, self.pipes = self.pipes, []
        for s in pipes:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def last_report(self):
        with self.lock:
            return self.reports[-1] if self.reports else None


class ProxyHandler(socketserver.BaseRequestHandler):
    def handle(self):
        client, srv = self.request, self.server
        head = read_head(client)
        if b"\r\n\r\n" not in head:
            return
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        method, target = line.split(" ")[:2]
        if target == "/":
            return self.answer(200, srv.page, "text/html; charset=utf-8")
        if target == "/report" and method == "POST":
            header, body = head.split(b"\r\n\r\n", 1)
            length = 0
            for h in header.split(b"\r\n")[1:]:
                k, _, v = h.partition(b":")
                if k.strip().lower() == b"content-length":
                    length = int(v)
            while len(body) < length:
                body += client.recv(65536)
            report = json.loads(body[:length])
            with srv.lock:
                # Reports may arrive out of order: keep the one that saw most.
                if not srv.reports or (len(report["got"]), report["opens"], report["errors"]) >= (
                        len(srv.reports[-1]["got"]), srv.reports[-1]["opens"],
                        srv.reports[-1]["errors"]):
                    srv.reports.append(report)
            return self.answer(204, b"", None)
        if not target.startswith("/conversations/"):
            # Anything else (the browser's /favicon.ico) is answered here
            # with a close: a keep-alive answer from seqd would leave the
            # browser a pooled connection piped to seqd, and it would send
            # its next /report there.
            return self.answer(404, b"", None)
        upstream = socket.create_connection(("127.0.0.1", srv.upstream_port))
        with srv.lock:
            srv.pipes += [client, upstream]
        upstream.sendall(head)
        back = threading.Thread(target=self.pump, args=(upstream, client), daemon=True)
        back.start()
        self.pump(client, upstream)
        back.join()
        upstream.close()

    @staticmethod
    def pump(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def answer(self, status, body, ctype):
        reason = {200: "OK", 204: "No Content", 404: "Not Found"}[status]
        head = "HTTP/1.1 %d %s\r\nConnection: close\r\nContent-Length: %d\r\n" % (
            status, reason, len(body))
        if ctype:
            head += "Content-Type: %s\r\n" % ctype
        self.request.sendall(head.encode() + b"\r\n" + body)


class BrowserEventSource(unittest.TestCase):
    def setUp(self):
        self.browser = chromium()
        self.tmp = tempfile.TemporaryDirectory(prefix="seqd-sse-browser-")
        tokens = tokens_file(self.tmp.name,
                             token_line("reader", READ_SECRET, "msg:read:" + CONV) + "\n"
                             + token_line("sender", SEND_SECRET, "msg:send:" + CONV) + "\n")
        self.seqd = Seqd(store_spec("sqlite", self.tmp.name), "--tokens-file", tokens)
        self.proxy = SameOriginProxy(self.seqd.port, PAGE % {"conv": CONV, "token": READ_SECRET})
        threading.Thread(target=self.proxy.serve_forever, daemon=True).start()
        self.chrome = None
        self.sent = {}  # seq -> payload

    def tearDown(self):
        if self.chrome and self.chrome.poll() is None:
            os.killpg(self.chrome.pid, signal.SIGKILL)
            self.chrome.wait()
        self.proxy.shutdown()
        self.proxy.server_close()
        self.seqd.__exit__(None, None, None)
        self.tmp.cleanup()

    def send(self, i):
        payload = "browser message %d" % i
        status, body, _ = self.seqd.request(
            "POST", "/conversations/%s/messages" % CONV,
            {"sender_id": "py", "client_msg_id": "b-%d" % i, "payload": payload},
            headers={"Authorization": "Bearer " + SEND_SECRET})
        self.assertIn(status, (200, 201), body)
        self.sent[json.loads(body)["seq"]] = payload

    def wait_report(self, what, ok, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            r = self.proxy.last_report()
            if r and ok(r):
                return r
            if self.chrome.poll() is not None:
                self.fail("chromium exited (%s) while waiting for %s" % (self.chrome.returncode, what))
            time.sleep(0.05)
        self.fail("timed out waiting for %s; last report: %s" % (what, self.proxy.last_report()))

    def test_event_source_receives_in_order_and_resumes(self):
        for i in range(1, 6):  # before the page: replayed from ?from=1
            self.send(i)
        profile = tempfile.mkdtemp(prefix="chromium-", dir=self.tmp.name)
        url = "http://127.0.0.1:%d/" % self.proxy.server_address[1]
        self.chrome = subprocess.Popen(
            [self.browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--user-data-dir=" + profile, url],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self.wait_report("the replayed messages", lambda r: len(r["got"]) >= 5, timeout=40)
        for i in range(6, 16):  # live pushes
            self.send(i)
        self.wait_report("the pushed messages", lambda r: len(r["got"]) >= 15)
        self.proxy.cut()  # the stream ends; the browser reconnects with Last-Event-ID
        self.wait_report("an error event after the cut", lambda r: r["errors"] >= 1)
        for i in range(16, 26):
            self.send(i)
        self.wait_report("the messages after the reconnect",
                         lambda r: len(r["got"]) >= 25 and r["opens"] >= 2)
        time.sleep(0.5)  # a repeat would arrive by now
        report = self.proxy.last_report()
        got = report["got"]
        self.assertEqual([m["seq"] for m in got], sorted(self.sent),
                         "not every message once, in seq order")
        for m in got:
            self.assertEqual(m["id"], str(m["seq"]), "lastEventId is not the seq")
            self.assertEqual(m["payload"], self.sent[m["seq"]])
        self.assertEqual(report["opens"], 2, report)
        print("chromium received %d messages in order over %d connections"
              % (len(got), report["opens"]), flush=True)


if __name__ == "__main__":
    unittest.main()
