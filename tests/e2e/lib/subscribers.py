"""Push subscribers that ride through a chaos run, and the checker of what
they delivered (used by test_cluster_chaos.py, test_cluster_push.py and
test_galera.py).

Subscribers are started before the load and stopped after the final pulls:
  binary  `seqctl --tcp E1,E2,E3 --json msg subscribe CONV...` (one per
          endpoint, each starting at its own): the C++
          client's Subscribe with ClientOptions::resubscribe (re-subscribes
          on any endpoint after a loss, drops repeated pushes, pulls gaps,
          and asks MAX_SEQS every resync_every). One JSON line per message
          on stdout; one "re-subscribing" line on stderr per loss.
  sse     SseSubscriber, a small Server-Sent Events client: after any
          disconnect, a stall (no byte for STALL_S while heartbeats come
          every second), an `event: dropped` or a refusal, it reconnects to
          a random running instance and resumes, in one of three ways:
            lastid  GET /conversations/C/events?from=1, then the same URL
                    with Last-Event-ID: <last id> (the header wins), as a
                    browser's EventSource does;
            from    GET /conversations/C/events?from=<last seq + 1>;
            multi   GET /events?conv=C1&conv=C2...&from=<token, every conv
                    at 0>, then Last-Event-ID: <the last token received>.
Every subscriber starts at seq 0 of conversations that are empty when it
starts (the callers name fresh conversations and start it before the load).

The check (check_deliveries), per subscriber and conversation: the seqs
delivered are exactly the stored seqs above the start, each once, in
increasing order, each with the stored message (server message id, sender,
client_msg_id, payload); every acked message is among them. Failures:
missing, duplicates, out_of_order, wrong_content, unknown (delivered, not
stored), acked_undelivered. self_test() plants each.
"""
import collections
import json
import os
import random
import socket
import subprocess
import threading
import time
import urllib.parse

from harness import SEQD

SEQCTL = os.environ.get("SEQCTL_BINARY",
                        os.path.join(os.path.dirname(os.path.abspath(SEQD)), "client", "seqctl"))
SSE_MODES = ("lastid", "from", "multi")
HEARTBEAT_MS = 1000   # the --sse-heartbeat-ms the callers give seqd
STALL_S = 3.0         # no byte this long (3 heartbeats): the stream is dead
CONNECT_TIMEOUT_S = 2.0
RECONNECT_PAUSE_S = 0.05
SUBSCRIBE_TIMEOUT_S = 10.0
EXAMPLES = 5

# The verdict's fields that fail a run, with what they count.
SUB_FAILURES = (
    ("missing", "stored messages a subscriber never delivered"),
    ("duplicates", "messages a subscriber delivered more than once"),
    ("out_of_order", "messages a subscriber delivered after a higher seq"),
    ("wrong_content", "delivered messages that differ from the stored one"),
    ("unknown", "delivered messages that are not stored (or below the start)"),
    ("acked_undelivered", "acked messages a subscriber never delivered"),
)

Delivery = collections.namedtuple("Delivery", "seq msg_id sender cmid payload t")


def delivery_of(j, t):
    """A Delivery from a message's JSON (pull item, SSE data, seqctl --json)."""
    return Delivery(int(j["seq"]), int(j["server_msg_id"]), j["sender_id"], j["client_msg_id"],
                    j["payload"], t)


class Subscriber:
    """What one subscriber delivered, thread-safe: `delivered[conv]` in
    arrival order; `reconnects`; `notes` (what ended a connection)."""

    def __init__(self, name, convs):
        self.name, self.convs = name, list(convs)
        self.lock = threading.Lock()
        self.delivered = {c: [] for c in self.convs}
        self.reconnects = 0
        self.notes = collections.Counter()
        self.error = None

    def add(self, conv, d):
        with self.lock:
            self.delivered.setdefault(conv, []).append(d)

    def snapshot(self):
        with self.lock:
            return {c: list(v) for c, v in self.delivered.items()}

    def has_all(self, want):
        """True if every (conv, seq) of `want` was delivered."""
        with self.lock:
            got = {(c, d.seq) for c, v in self.delivered.items() for d in v}
        return all(w in got for w in want)


class BinarySubscriber(Subscriber):
    """`seqctl --tcp ENDPOINTS --json msg subscribe CONVS` and its output."""

    def __init__(self, name, endpoints, convs, log_path=None):
        super().__init__(name, convs)
        self.endpoints = list(endpoints)
        self.log_path = log_path
        self.proc = None
        self.stopped = False
        self.subscribed = threading.Event()  # seqctl said "subscribed"
        self.readers = []
        self.stderr = []

    def start(self):
        self.proc = subprocess.Popen(
            [SEQCTL, "--tcp", ",".join(self.endpoints), "--timeout", "1000", "--json", "msg",
             "subscribe", *self.convs], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.readers = [threading.Thread(target=self.read_out, daemon=True),
                        threading.Thread(target=self.read_err, daemon=True)]
        for r in self.readers:
            r.start()

    def read_out(self):
        for line in self.proc.stdout:
            t = time.monotonic()
            try:
                j = json.loads(line)
                self.add(j["conv_id"], delivery_of(j, t))
            except (ValueError, KeyError, TypeError):
                self.stderr.append("unparsable output: %r" % line[:200])

    def read_err(self):
        for line in self.proc.stderr:
            self.stderr.append(line.rstrip())
            if "subscribed to" in line:
                self.subscribed.set()
            if "re-subscribing" in line:
                with self.lock:
                    self.reconnects += 1
                    reason = line.split("stopped (", 1)[-1].split(")", 1)[0]
                    self.notes[reason[:60]] += 1

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        """Kills seqctl; an exit before this is recorded as `error`. Once."""
        if self.proc is None or self.stopped:
            return
        self.stopped = True
        if self.proc.poll() is not None and self.error is None:
            self.error = "%s exited by itself (%s): %s" % (self.name, self.proc.returncode,
                                                            self.stderr[-3:])
        self.proc.kill()
        self.proc.wait()
        for r in self.readers:
            r.join(5)
        if self.log_path:
            with open(self.log_path, "w") as f:
                f.write("\n".join(self.stderr) + "\n")


class SseSubscriber(Subscriber):
    """SSE streams (one per conversation, or one for all in mode multi) on
    their own threads; each reconnects to `pick()` (a running instance's
    HTTP port, or None) after any loss, resuming as its mode says."""

    def __init__(self, name, mode, convs, pick, stop):
        super().__init__(name, convs)
        assert mode in SSE_MODES
        self.mode, self.pick, self.stop_event = mode, pick, stop
        groups = [list(convs)] if mode == "multi" else [[c] for c in convs]
        self.threads = [threading.Thread(target=self.stream_loop, args=(g,), daemon=True)
                        for g in groups]
        self.refusals = collections.Counter()

    def start(self):
        for t in self.threads:
            t.start()

    def alive(self):
        return all(t.is_alive() for t in self.threads)

    def stop(self):
        self.stop_event.set()
        for t in self.threads:
            t.join(STALL_S + CONNECT_TIMEOUT_S + 2)
        if any(t.is_alive() for t in self.threads) and self.error is None:
            self.error = "%s: a stream thread did not stop" % self.name

    def target(self, group, last_id, last_seq):
        """(path, headers) of the next connection of `group`."""
        if self.mode == "multi":
            q = urllib.parse.urlencode([("conv", c) for c in group])
            token = ",".join("%s=0" % c for c in group)
            path = "/events?%s&from=%s" % (q, urllib.parse.quote(token, safe=","))
            return path, ({"Last-Event-ID": last_id} if last_id else {})
        conv = urllib.parse.quote(group[0], safe="")
        if self.mode == "from":
            return "/conversations/%s/events?from=%d" % (conv, last_seq + 1), {}
        return ("/conversations/%s/events?from=1" % conv,
                {"Last-Event-ID": last_id} if last_id else {})

    def stream_loop(self, group):
        state = {"last_id": None, "last_seq": 0, "connects": 0}
        try:
            while not self.stop_event.is_set():
                port = self.pick()
                if port is None:
                    time.sleep(0.05)
                    continue
                why = self.stream_once(group, port, state)
                with self.lock:
                    self.notes[why] += 1
                time.sleep(RECONNECT_PAUSE_S)
        except Exception as e:  # noqa: BLE001 - reported as a harness failure
            self.error = "%s: %r" % (self.name, e)

    def stream_once(self, group, port, state):
        """One connection: reads events until it ends; returns why."""
        path, headers = self.target(group, state["last_id"], state["last_seq"])
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=CONNECT_TIMEOUT_S)
        except OSError as e:
            return "connect: %s" % type(e).__name__
        try:
            sock.settimeout(0.25)
            req = "GET %s HTTP/1.1\r\nHost: seqd\r\nAccept: text/event-stream\r\n" % path
            req += "".join("%s: %s\r\n" % kv for kv in headers.items()) + "\r\n"
            sock.sendall(req.encode())
            buf, last_byte, head = b"", time.monotonic(), None
            event = {}
            while not self.stop_event.is_set():
                try:
                    chunk = sock.recv(65536)
                except socket.timeout:
                    if time.monotonic() - last_byte > STALL_S:
                        return "stalled"
                    continue
                if not chunk:
                    return "closed"
                last_byte = time.monotonic()
                buf += chunk
                if head is None:
                    if b"\r\n\r\n" not in buf:
                        continue
                    head, buf = buf.split(b"\r\n\r\n", 1)
                    status = int(head.split(b" ", 2)[1])
                    if status != 200:
                        with self.lock:
                            self.refusals[status] += 1
                        return "refused %d" % status
                    if state["connects"]:
                        with self.lock:
                            self.reconnects += 1
                    state["connects"] += 1
                while b"\n" in buf:
                    raw, buf = buf.split(b"\n", 1)
                    line = raw.decode(errors="replace").rstrip("\r")
                    if line:
                        if not line.startswith(":"):
                            field, _, value = line.partition(":")
                            event[field] = value[1:] if value.startswith(" ") else value
                        continue
                    if event.get("event") == "dropped":
                        return "dropped"
                    if event.get("event") == "message" and "data" in event:
                        j = json.loads(event["data"])
                        conv = j.get("conv_id", group[0])
                        d = delivery_of(j, last_byte)
                        self.add(conv, d)
                        state["last_id"], state["last_seq"] = event.get("id"), d.seq
                    event = {}
            return "stopped"
        except (OSError, ValueError, IndexError) as e:
            return "error: %s" % type(e).__name__
        finally:
            sock.close()


def start_subscribers(convs, binary_endpoints, pick_http_port, stop, log_dir=None):
    """One binary subscriber per endpoint, each given every endpoint but
    starting at its own (the client tries them in order: every instance
    then serves one, so each fault hits one), and one SSE subscriber per
    mode, all on `convs`, started; waits a second for them to subscribe."""
    eps = list(binary_endpoints)
    subs = [BinarySubscriber("binary%d" % (n + 1), eps[n:] + eps[:n], convs,
                             os.path.join(log_dir, "seqctl-subscribe-%d.log" % (n + 1))
                             if log_dir else None)
            for n in range(len(eps))]
    subs += [SseSubscriber("sse_" + m, m, convs, pick_http_port, stop) for m in SSE_MODES]
    for s in subs:
        s.start()
    # Subscribed before the first message: every seq from 1 on is due. seqctl
    # says when its start point is fixed; SSE streams start at 1 explicitly.
    deadline = time.monotonic() + SUBSCRIBE_TIMEOUT_S
    while time.monotonic() < deadline and not all(
            s.subscribed.is_set() for s in subs if isinstance(s, BinarySubscriber)):
        time.sleep(0.05)
    for s in subs:
        if isinstance(s, BinarySubscriber) and not s.subscribed.is_set():
            s.error = "%s did not subscribe within %.0f s: %s" % (s.name, SUBSCRIBE_TIMEOUT_S,
                                                                   s.stderr[-3:])
    time.sleep(0.5)
    return subs


def wait_delivered(subs, want, timeout):
    """Waits until every subscriber delivered every (conv, seq) of `want`, up
    to `timeout`; returns {subscriber: seconds it took, or None if not}."""
    t0, out = time.monotonic(), {}
    pending = list(subs)
    while True:
        now = time.monotonic()
        for s in list(pending):
            if s.has_all(want):
                out[s.name] = round(now - t0, 3)
                pending.remove(s)
        if not pending or now - t0 >= timeout:
            break
        time.sleep(0.05)
    for s in pending:
        out[s.name] = None
    return out


def check_deliveries(delivered, stored, acked, start=None):
    """The verdict on what subscribers delivered. `delivered`: {subscriber:
    {conv: [Delivery, ...] in arrival order}}; `stored`: {conv: [(seq,
    server_msg_id, sender, client_msg_id, payload, status), ...]} as pulled;
    `acked`: a set of (conv, seq) acked to senders; `start`: {conv: seq the
    subscribers start above} (default 0). Counts SUB_FAILURES's fields, with
    examples, and per subscriber its figures."""
    v = dict.fromkeys((f for f, _ in SUB_FAILURES), 0)
    examples = collections.defaultdict(list)
    start = start or {}

    def bad(field, text, n=1):
        v[field] += n
        if len(examples[field]) < EXAMPLES:
            examples[field].append(text)

    rows = {c: {r[0]: r for r in rs} for c, rs in stored.items()}
    per_sub = {}
    for name, convs in sorted(delivered.items()):
        fig = {"delivered": 0, "convs": {}}
        for conv in sorted(set(convs) | set(stored)):
            got = convs.get(conv, [])
            s0 = start.get(conv, 0)
            mine = rows.get(conv, {})
            seen, top = collections.Counter(), None
            for d in got:
                seen[d.seq] += 1
                if seen[d.seq] > 1:
                    bad("duplicates", "%s %s: seq %d delivered %d times" % (
                        name, conv, d.seq, seen[d.seq]))
                    continue
                if top is not None and d.seq < top:
                    bad("out_of_order", "%s %s: seq %d delivered after seq %d" % (
                        name, conv, d.seq, top))
                top = d.seq if top is None else max(top, d.seq)
                r = mine.get(d.seq)
                if r is None or d.seq <= s0:
                    bad("unknown", "%s %s: seq %d delivered (%s/%s), not stored above %d" % (
                        name, conv, d.seq, d.sender, d.cmid, s0))
                elif (d.msg_id, d.sender, d.cmid, d.payload) != tuple(r[1:5]):
                    bad("wrong_content", "%s %s: seq %d delivered as %r, stored as %r" % (
                        name, conv, d.seq, tuple(d[1:5]), tuple(r[1:5])))
            missing = sorted(q for q in mine if q > s0 and q not in seen)
            if missing:
                bad("missing", "%s %s: %d stored seqs never delivered, e.g. %s" % (
                    name, conv, len(missing), missing[:10]), len(missing))
            lost = sorted(q for (c, q) in acked if c == conv and q > s0 and q not in seen)
            if lost:
                bad("acked_undelivered", "%s %s: acked seqs never delivered: %s" % (
                    name, conv, lost[:10]), len(lost))
            fig["convs"][conv] = len(seen)
            fig["delivered"] += len(got)
        per_sub[name] = fig
    v["examples"] = dict(examples)
    v["per_subscriber"] = per_sub
    return v


def subscriber_figures(subs, verdict, waits):
    """Per subscriber: delivered, reconnects, what ended its connections,
    refusals, and the catch-up waits (`waits`: {phase: {name: s}})."""
    out = {}
    for s in subs:
        row = dict(verdict["per_subscriber"].get(s.name, {}))
        row.update({"reconnects": s.reconnects, "ends": dict(s.notes.most_common(8)),
                    "refusals": dict(getattr(s, "refusals", {})),
                    "waits": {p: w.get(s.name) for p, w in waits.items()}})
        out[s.name] = row
    return out


def failures_of(verdict, subs, waits):
    """The reasons the subscribers fail the run; empty if they pass."""
    out = ["%d %s" % (verdict[f], what) for f, what in SUB_FAILURES if verdict[f]]
    out += ["subscriber %s" % s.error for s in subs if s.error]
    for phase, w in waits.items():
        late = sorted(n for n, t in w.items() if t is None)
        if late:
            out.append("%s: not caught up (%s)" % (phase, ", ".join(late)))
    return out


def print_figures(fig, verdict, p=print):
    for name, row in sorted(fig.items()):
        p("  %-12s delivered %d %s; reconnects %d; waits %s; ends %s%s" % (
            name, row.get("delivered", 0), row.get("convs", {}), row["reconnects"],
            row["waits"], row["ends"], "; refusals %s" % row["refusals"] if row["refusals"]
            else ""))
    p("  missing %d, duplicates %d, out of order %d, wrong content %d, unknown %d, "
      "acked undelivered %d" % tuple(verdict[f] for f, _ in SUB_FAILURES))
    for field, texts in verdict["examples"].items():
        for t in texts:
            p("    %s: %s" % (field, t))


def self_test():
    """Plants each subscriber failure (a gap, a duplicate, out of order, a
    wrong payload, a message never stored, an acked message undelivered) and
    near misses that must pass (a start point, an empty conversation);
    raises AssertionError on a wrong verdict. Returns the count."""
    def row(seq, payload=None):
        return (seq, 100 + seq, "u", "c%d" % seq, payload or "p%d" % seq, "normal")

    def D(seq, payload=None, msg_id=None):
        return Delivery(seq, msg_id or 100 + seq, "u", "c%d" % seq, payload or "p%d" % seq, 0)

    stored = {"a": [row(q) for q in (1, 2, 3, 4)], "b": [row(1)]}
    acked = {("a", 1), ("a", 2), ("a", 4), ("b", 1)}
    ok = [D(1), D(2), D(3), D(4)]
    cases = [
        ("clean", {"a": ok, "b": [D(1)]}, {}, {}),
        ("a gap", {"a": [D(1), D(2), D(4)], "b": [D(1)]}, {}, {"missing": 1}),
        ("a gap at an acked seq", {"a": [D(1), D(3), D(4)], "b": [D(1)]}, {},
         {"missing": 1, "acked_undelivered": 1}),
        ("the last one lost", {"a": ok[:3], "b": [D(1)]}, {},
         {"missing": 1, "acked_undelivered": 1}),
        ("a duplicate", {"a": ok[:2] + [D(2)] + ok[2:], "b": [D(1)]}, {}, {"duplicates": 1}),
        ("a late repeat", {"a": ok + [D(1)], "b": [D(1)]}, {}, {"duplicates": 1}),
        ("out of order", {"a": [D(1), D(3), D(2), D(4)], "b": [D(1)]}, {},
         {"out_of_order": 1}),
        ("a wrong payload", {"a": [D(1), D(2, "x"), D(3), D(4)], "b": [D(1)]}, {},
         {"wrong_content": 1}),
        ("another server msg id", {"a": [D(1), D(2), D(3, msg_id=7), D(4)], "b": [D(1)]}, {},
         {"wrong_content": 1}),
        ("never stored", {"a": ok + [D(5)], "b": [D(1)]}, {}, {"unknown": 1}),
        ("a conversation never delivered", {"a": ok}, {}, {"missing": 1, "acked_undelivered": 1}),
        ("below the start", {"a": ok, "b": [D(1)]}, {"a": 2}, {"unknown": 2}),
        ("from a start point", {"a": ok[2:], "b": [D(1)]}, {"a": 2}, {}),
    ]
    for name, got, start, want in cases:
        v = check_deliveries({"s": got}, stored, acked, start)
        have = {f: v[f] for f, _ in SUB_FAILURES if v[f]}
        assert have == want, "subscriber self-test %r: got %r, want %r" % (name, have, want)
    v = check_deliveries({"s": {"a": ok, "b": [D(1)]}, "t": {"a": ok[:3], "b": [D(1)]}},
                         stored, acked)
    assert v["missing"] == 1 and v["per_subscriber"]["t"]["delivered"] == 4, \
        "subscriber self-test: subscribers are judged one by one"
    for field, _ in SUB_FAILURES:
        assert failures_of(dict(dict.fromkeys((f for f, _ in SUB_FAILURES), 0),
                                **{field: 1}), [], {}), \
            "subscriber self-test: %s must fail the run" % field
    assert failures_of(dict.fromkeys((f for f, _ in SUB_FAILURES), 0), [],
                       {"quiet": {"binary": None}}), \
        "subscriber self-test: a subscriber not caught up must fail the run"
    rng = random.Random(5)
    for _ in range(100):  # a random subset, shuffled or repeated, against the definitions
        n = rng.randint(0, 12)
        rs = [row(q) for q in range(1, n + 1)]
        got = [D(q) for q in range(1, n + 1) if rng.random() < 0.9]
        if got and rng.random() < 0.3:
            got.append(rng.choice(got))
        if rng.random() < 0.3:
            rng.shuffle(got)
        v = check_deliveries({"s": {"a": got}}, {"a": rs}, set())
        seqs = [d.seq for d in got]
        perfect = seqs == list(range(1, n + 1))
        assert (sum(v[f] for f, _ in SUB_FAILURES) == 0) == perfect, \
            "subscriber self-test: random case %r judged wrong" % seqs
    return len(cases) + 103
