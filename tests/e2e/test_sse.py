"""Server-Sent Events and long-poll on the real seqd (docs/http-api.md), read
with real `curl -N` (a client nobody here wrote): live events in order with
their ids, resume by Last-Event-ID and ?from= without gap or repeat,
several conversations on one stream, heartbeats, a slow reader's
`event: dropped` and close, ?access_token= (accepted on these routes only,
never in the log), the streams' limits (429), long-poll wakes and deadlines,
a clean end at SIGTERM."""
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Seqd  # noqa: E402
from lib.tokens import token_line, tokens_file  # noqa: E402

SECRETS = {
    "alice": "sqd_alice-secret-0123456789",
    "bob": "sqd_bob-secret-0123456789",
    "other": "sqd_other-secret-0123456789",
}
SCOPES = {
    "alice": "msg:read:sg_,msg:send:sg_",
    "bob": "msg:read:sg_,msg:send:sg_",
    "other": "msg:read:elsewhere",
}


class Curl:
    """`curl -sN` on an event stream; its events parsed on a thread."""

    def __init__(self, port, path, headers=()):
        args = ["curl", "-sN", "--no-buffer", "-D", "-"]
        for h in headers:
            args += ["-H", h]
        args.append("http://127.0.0.1:%d%s" % (port, path))
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.events = queue.Queue()  # dicts: id, event, data, comment, retry
        self.head = []
        self.done = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        in_head = True
        ev = {}
        for raw in self.proc.stdout:
            line = raw.decode().rstrip("\r\n")
            if in_head:
                if line == "":
                    in_head = False
                else:
                    self.head.append(line)
                continue
            if line == "":
                if ev:
                    self.events.put(ev)
                ev = {}
            elif line.startswith(":"):
                ev["comment"] = line[1:].strip()
            else:
                field, _, value = line.partition(":")
                ev[field] = value[1:] if value.startswith(" ") else value
        self.done.set()

    def status(self):
        return int(self.head[0].split()[1]) if self.head else None

    def header(self, name):
        for h in self.head[1:]:
            k, _, v = h.partition(":")
            if k.strip().lower() == name.lower():
                return v.strip()
        return None

    def next(self, timeout=10, kind="message"):
        """The next event of `kind` ("message", "comment", "retry", "dropped")."""
        deadline = time.time() + timeout
        while True:
            left = deadline - time.time()
            if left <= 0:
                raise AssertionError("no %s event within %ss" % (kind, timeout))
            try:
                ev = self.events.get(timeout=left)
            except queue.Empty:
                continue
            if kind == "comment" and "comment" in ev:
                return ev
            if kind == "retry" and "retry" in ev:
                return ev
            if kind in ("message", "dropped") and ev.get("event") == kind:
                return ev

    def messages(self, n, timeout=10):
        return [self.next(timeout) for _ in range(n)]

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def send(seqd, conv, i, payload=None):
    status, body, _ = seqd.request("POST", "/conversations/%s/messages" % conv,
                                   {"sender_id": "u", "client_msg_id": "m%d" % i,
                                    "payload": payload if payload is not None else "p%d" % i})
    assert status in (200, 201), (status, body)
    return json.loads(body)["seq"]


def pulled(seqd, conv, frm, limit=1000):
    status, body = seqd.get_json("/conversations/%s/messages?from=%d&limit=%d" %
                                 (conv, frm, limit))
    assert status == 200, body
    return body["messages"]


class Sse(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.seqd = Seqd("sqlite:" + os.path.join(cls.tmp.name, "a.db"), "--sse-heartbeat-ms", "300",
                        "--sse-retry-ms", "1500")

    @classmethod
    def tearDownClass(cls):
        cls.seqd.__exit__(None, None, None)
        cls.tmp.cleanup()

    def stream(self, path, headers=()):
        c = Curl(self.seqd.port, path, headers)
        self.addCleanup(c.close)
        c.next(kind="retry")  # its start is fixed: what is sent from now on arrives
        return c

    def test_live_events_then_resume_by_last_event_id(self):
        c = self.stream("/conversations/sg_sse_live/events")
        self.assertEqual(c.status(), 200)
        self.assertEqual(c.header("Content-Type"), "text/event-stream")
        self.assertEqual(c.header("Cache-Control"), "no-store")
        self.assertEqual(c.header("X-Accel-Buffering"), "no")
        for i in range(1, 6):
            send(self.seqd, "sg_sse_live", i)
        events = c.messages(5)
        self.assertEqual([e["id"] for e in events], ["1", "2", "3", "4", "5"])
        # The data is the pull API's item, byte for byte in JSON terms.
        self.assertEqual([json.loads(e["data"]) for e in events], pulled(self.seqd, "sg_sse_live", 1))
        c.close()
        for i in range(6, 9):
            send(self.seqd, "sg_sse_live", i)
        # Reconnect as a browser does: the same URL, Last-Event-ID added.
        r = self.stream("/conversations/sg_sse_live/events?from=1", ["Last-Event-ID: 5"])
        got = r.messages(3)
        send(self.seqd, "sg_sse_live", 9)
        got += r.messages(1)
        self.assertEqual([e["id"] for e in got], ["6", "7", "8", "9"])
        with self.assertRaises(AssertionError):  # nothing repeated after
            r.next(timeout=1)

    def test_from_replays_from_that_seq(self):
        for i in range(1, 5):
            send(self.seqd, "sg_sse_from", i)
        c = self.stream("/conversations/sg_sse_from/events?from=2")
        self.assertEqual([e["id"] for e in c.messages(3)], ["2", "3", "4"])
        send(self.seqd, "sg_sse_from", 5)
        self.assertEqual(c.next()["id"], "5")

    def test_resume_under_concurrent_sends_has_no_gap_or_repeat(self):
        stop = threading.Event()
        sent = []

        def sender():
            i = 0
            while not stop.is_set() and i < 300:
                i += 1
                sent.append(send(self.seqd, "sg_sse_race", i))
        t = threading.Thread(target=sender)
        t.start()
        seen = []
        last = 0
        try:
            for _ in range(4):  # reconnect four times while sends go on
                c = self.stream("/conversations/sg_sse_race/events",
                                ["Last-Event-ID: %d" % last])
                for ev in c.messages(20, timeout=20):
                    seen.append(int(ev["id"]))
                c.close()
                last = seen[-1]
        finally:
            stop.set()
            t.join()
        self.assertEqual(seen, list(range(1, len(seen) + 1)))

    def test_several_conversations_on_one_stream(self):
        send(self.seqd, "sg_sse_m1", 1)
        c = self.stream("/events?conv=sg_sse_m1&conv=sg_sse_m2&from=sg_sse_m1%3D0")
        first = c.next()
        self.assertEqual(first["id"], "sg_sse_m1=1,sg_sse_m2=0")
        self.assertEqual(json.loads(first["data"])["conv_id"], "sg_sse_m1")
        send(self.seqd, "sg_sse_m2", 1)
        ev = c.next()
        self.assertEqual(ev["id"], "sg_sse_m1=1,sg_sse_m2=1")
        self.assertEqual(json.loads(ev["data"])["conv_id"], "sg_sse_m2")
        c.close()
        send(self.seqd, "sg_sse_m1", 2)
        send(self.seqd, "sg_sse_m2", 2)
        r = self.stream("/events?conv=sg_sse_m1&conv=sg_sse_m2", ["Last-Event-ID: " + ev["id"]])
        evs = r.messages(2)
        got = sorted((json.loads(e["data"])["conv_id"], json.loads(e["data"])["seq"])
                     for e in evs)
        self.assertEqual(got, [("sg_sse_m1", 2), ("sg_sse_m2", 2)])
        # Each conversation resumes after its own seq; which one replays
        # first is not promised (docs/http-api.md), the token after both is.
        self.assertIn(evs[0]["id"], ("sg_sse_m1=2,sg_sse_m2=1", "sg_sse_m1=1,sg_sse_m2=2"))
        self.assertEqual(evs[1]["id"], "sg_sse_m1=2,sg_sse_m2=2")
        status, body = self.seqd.get_json("/events")
        self.assertEqual((status, body["error"]["code"]), (400, "invalid_argument"))
        many = "&".join("conv=c%d" % i for i in range(101))
        self.assertEqual(self.seqd.get("/events?" + many)[0], 400)
        self.assertEqual(self.seqd.get("/events?conv=a&from=nonsense")[0], 400)

    def test_retry_and_heartbeat(self):
        c = Curl(self.seqd.port, "/conversations/sg_sse_hb/events")
        self.addCleanup(c.close)
        self.assertEqual(c.next(kind="retry")["retry"], "1500")
        t0 = time.time()
        c.next(kind="comment", timeout=3)
        self.assertEqual(c.next(kind="comment", timeout=3)["comment"], "hb")
        self.assertLess(time.time() - t0, 3)

    def test_bad_requests(self):
        for path, want in [("/conversations/sg_sse_x/events?from=0", 400),
                           ("/conversations/sg_sse_x/events?from=abc", 400),
                           ("/conversations/bad%09id/events", 400)]:
            self.assertEqual(self.seqd.get(path)[0], want, path)
        status, _ = self.seqd.get("/conversations/sg_sse_x/events",
                                  headers={"Last-Event-ID": "x"})
        self.assertEqual(status, 400)
        status, _, r = self.seqd.request("POST", "/conversations/sg_sse_x/events", {})
        self.assertEqual(status, 405)
        self.assertEqual(r.getheader("Allow"), "GET")

    def test_long_poll(self):
        conv = "sg_sse_lp"
        t0 = time.time()
        status, body = self.seqd.get_json("/conversations/%s/messages?from=1&wait_ms=1000" % conv)
        self.assertEqual((status, body["messages"]), (200, []))
        self.assertGreaterEqual(time.time() - t0, 0.9)
        threading.Timer(0.5, lambda: send(self.seqd, conv, 1)).start()
        t0 = time.time()
        status, body = self.seqd.get_json("/conversations/%s/messages?from=1&wait_ms=20000" % conv)
        self.assertEqual(status, 200)
        self.assertEqual([m["seq"] for m in body["messages"]], [1])
        self.assertLess(time.time() - t0, 5)
        # Present already: at once.
        t0 = time.time()
        status, body = self.seqd.get_json("/conversations/%s/messages?from=1&wait_ms=20000" % conv)
        self.assertEqual(len(body["messages"]), 1)
        self.assertLess(time.time() - t0, 1)
        for bad in ("30001", "-1", "abc"):
            status, body = self.seqd.get_json("/conversations/%s/messages?from=2&wait_ms=%s" %
                                              (conv, bad))
            self.assertEqual((status, body["error"]["code"]), (400, "invalid_argument"))
        self.assertEqual(self.seqd.get("/conversations/%s/messages?seqs=1&wait_ms=10" % conv)[0],
                         400)

    def test_metrics(self):
        c = self.stream("/conversations/sg_sse_metrics/events")
        send(self.seqd, "sg_sse_metrics", 1)
        c.next()
        _, text = self.seqd.get("/metrics")
        text = text.decode()
        for name in ("seqd_sse_streams ", "seqd_sse_events_total ",
                     "seqd_sse_slow_reader_closes_total ", "seqd_long_polls_waiting ",
                     'seqd_stream_refusals_total{reason="token_limit"}',
                     'op="msg_events",status="ok"'):
            self.assertIn(name, text)


class SlowReader(unittest.TestCase):
    def test_full_buffer_ends_with_dropped_and_resume_loses_nothing(self):
        with tempfile.TemporaryDirectory() as tmp, \
                Seqd("sqlite:" + os.path.join(tmp, "s.db"), "--sse-max-buffer-bytes", "65536",
                     "--sse-heartbeat-ms", "0") as seqd:
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(("127.0.0.1", seqd.port))
            s.sendall(b"GET /conversations/sg_sse_slow/events HTTP/1.1\r\nHost: x\r\n\r\n")
            time.sleep(0.3)
            n = 0
            payload = "x" * 20000
            # Never read while sending: the kernel's buffers fill, then ours.
            while n < 800:
                n += 1
                send(seqd, "sg_sse_slow", n, payload)
                if n % 100 == 0 and b"dropped" in self.peek(s):
                    break
            data = b""
            s.settimeout(10)
            while True:
                chunk = s.recv(1 << 16)
                if not chunk:
                    break  # closed by the server
                data += chunk
            s.close()
            text = data.decode()
            self.assertIn("\r\n\r\nretry: ", text)
            tail = text.rsplit("\n\n", 2)
            self.assertTrue(tail[-2].startswith("event: dropped\ndata: "), tail[-2][:200])
            info = json.loads(tail[-2].split("data: ", 1)[1])
            self.assertEqual(info["reason"], "slow_reader")
            ids = [int(line[4:]) for line in text.split("\n") if line.startswith("id: ")]
            self.assertEqual(ids, list(range(1, len(ids) + 1)))
            self.assertEqual(info["last_event_id"], str(ids[-1]))
            self.assertLess(ids[-1], n)
            # Reconnect with that id: the rest, nothing lost or repeated.
            c = Curl(seqd.port, "/conversations/sg_sse_slow/events",
                     ["Last-Event-ID: " + info["last_event_id"]])
            try:
                rest = [int(e["id"]) for e in c.messages(n - ids[-1], timeout=30)]
            finally:
                c.close()
            self.assertEqual(rest, list(range(ids[-1] + 1, n + 1)))
            _, metrics = seqd.get("/metrics")
            self.assertIn(b"seqd_sse_slow_reader_closes_total 1", metrics)

    @staticmethod
    def peek(s):
        s.setblocking(False)
        try:
            return s.recv(1 << 20, socket.MSG_PEEK)
        except BlockingIOError:
            return b""
        finally:
            s.setblocking(True)


class Tokens(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        tokens = tokens_file(cls.tmp.name, "".join(token_line(n, SECRETS[n], SCOPES[n]) + "\n"
                                                   for n in SECRETS))
        cls.seqd = Seqd("sqlite:" + os.path.join(cls.tmp.name, "t.db"), "--tokens-file", tokens,
                        "--sse-max-streams", "3", "--sse-max-streams-per-token", "2",
                        "--log-level", "debug")

    @classmethod
    def tearDownClass(cls):
        cls.seqd.__exit__(None, None, None)
        cls.tmp.cleanup()

    def auth(self, who):
        return {"Authorization": "Bearer " + SECRETS[who]}

    def test_access_token_in_the_query_on_event_routes_only(self):
        alice = SECRETS["alice"]
        c = Curl(self.seqd.port, "/conversations/sg_q/events?access_token=" + alice)
        self.addCleanup(c.close)
        c.next(kind="retry")
        self.assertEqual(c.status(), 200)
        self.seqd.request("POST", "/conversations/sg_q/messages",
                          {"sender_id": "u", "client_msg_id": "m1", "payload": "hi"},
                          headers=self.auth("alice"))
        self.assertEqual(c.next()["id"], "1")
        c.close()
        multi = Curl(self.seqd.port, "/events?conv=sg_q&from=sg_q%3D0&access_token=" + alice)
        self.addCleanup(multi.close)
        self.assertEqual(multi.next()["id"], "sg_q=1")
        multi.close()
        # Not on other routes; no token: 401; a token without the scope: 403.
        self.assertEqual(
            self.seqd.get("/conversations/sg_q/messages?access_token=" + alice)[0], 401)
        self.assertEqual(self.seqd.get("/conversations/sg_q/events")[0], 401)
        self.assertEqual(self.seqd.get("/conversations/sg_q/events?access_token=nope")[0], 401)
        self.assertEqual(self.seqd.get("/conversations/sg_q/events?access_token=" +
                                       SECRETS["other"])[0], 403)
        self.assertEqual(self.seqd.get("/events?conv=sg_q&conv=elsewhere",
                                       headers=self.auth("alice"))[0], 403)
        # Never in the log (debug level: every error answer is logged).
        self.assertNotIn(alice, self.seqd.logs())
        with open(self.seqd.log.name, errors="replace") as f:
            self.assertNotIn(alice, f.read())

    def test_limits_per_token_and_in_all(self):
        open_streams = []

        def open_stream(who):
            c = Curl(self.seqd.port, "/conversations/sg_lim/events",
                     ["Authorization: Bearer " + SECRETS[who]])
            self.addCleanup(c.close)
            c.next(kind="retry")
            open_streams.append(c)

        open_stream("alice")
        open_stream("alice")
        status, body = self.seqd.get_json("/conversations/sg_lim/events", headers=self.auth("alice"))
        self.assertEqual((status, body["error"]["code"]), (429, "resource_exhausted"))
        open_stream("bob")  # three in all
        status, body = self.seqd.get_json("/conversations/sg_lim/events", headers=self.auth("bob"))
        self.assertEqual((status, body["error"]["code"]), (429, "resource_exhausted"))
        # Long-polls count too.
        status, _ = self.seqd.get_json("/conversations/sg_lim/messages?from=1&wait_ms=100",
                                       headers=self.auth("bob"))
        self.assertEqual(status, 429)
        for c in open_streams:
            c.close()
        deadline = time.time() + 5
        while time.time() < deadline:  # released once the server sees the close
            status, _ = self.seqd.get_json("/conversations/sg_lim/messages?from=1&wait_ms=10",
                                           headers=self.auth("bob"))
            if status == 200:
                break
            time.sleep(0.1)
        self.assertEqual(status, 200)


class Shutdown(unittest.TestCase):
    def test_sigterm_ends_streams_and_long_polls(self):
        with tempfile.TemporaryDirectory() as tmp, \
                Seqd("sqlite:" + os.path.join(tmp, "d.db")) as seqd:
            c = Curl(seqd.port, "/conversations/sg_sse_down/events")
            self.addCleanup(c.close)
            c.next(kind="retry")
            answer = {}

            def long_poll():
                answer["r"] = seqd.get_json(
                    "/conversations/sg_sse_down/messages?from=1&wait_ms=30000")
            t = threading.Thread(target=long_poll)
            t.start()
            time.sleep(0.5)
            t0 = time.time()
            self.assertEqual(seqd.stop(signal.SIGTERM, timeout=10), 0)
            self.assertLess(time.time() - t0, 5)
            self.assertTrue(c.done.wait(5))  # curl saw the end
            t.join(5)
            self.assertEqual(answer["r"][0], 200)


if __name__ == "__main__":
    unittest.main()
