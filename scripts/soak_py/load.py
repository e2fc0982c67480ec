"""The soak's mixed load (scripts/soak): paced worker threads over the binary
protocol, HTTP and RESP, subscribers joining and leaving, and the
once-a-minute control actions (a step change and a SIGHUP tokens reload).

Thread safety: `Stats` is the only shared mutable state; every worker records
into it under its lock. Workers stop when `Context.stop` is set.
"""
import hashlib
import os
import random
import signal
import socket
import sys
import threading
import time
from pathlib import Path

from wire import PUSH_DROPPED, PUSH_MESSAGE, OK, Binary, Http, Resp

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "e2e"))
from lib.sockets import read_head  # noqa: E402

HOT_KEYS = ["soak_hot_%d" % i for i in range(8)]
CONVS = ["sg_soak_%d" % i for i in range(8)]
MAX_ERROR_SAMPLES = 20
# Share of the paced rate each worker sends: (name, share).
MIX = [("binary_ids", 0.25), ("binary_ids", 0.25), ("http_ids", 0.20), ("resp_incr", 0.10),
       ("binary_send", 0.20)]
NEW_KEY_SHARE = 0.1  # of the binary ID requests: a key never seen (auto-created)


class Stats:
    """Per-window request latencies and errors; `take()` starts a new window."""

    def __init__(self):
        self.lock = threading.Lock()
        self.lat = []
        self.errors = 0
        self.total_requests = 0
        self.total_errors = 0
        self.error_samples = []
        self.counters = {}

    def ok(self, seconds):
        with self.lock:
            self.lat.append(seconds)

    def error(self, what):
        with self.lock:
            self.errors += 1
            if len(self.error_samples) < MAX_ERROR_SAMPLES:
                self.error_samples.append("%s: %s" % (time.strftime("%H:%M:%S"), what))

    def count(self, name, n=1):
        with self.lock:
            self.counters[name] = self.counters.get(name, 0) + n

    def take(self):
        """(latencies, errors) since the last take."""
        with self.lock:
            lat, err = self.lat, self.errors
            self.lat, self.errors = [], 0
            self.total_requests += len(lat) + err
            self.total_errors += err
            return lat, err


class Context:
    def __init__(self, pid, ports, secret, tokens_path, tokens_text, run_id):
        self.pid = pid
        self.ports = ports  # {"http", "tcp", "resp"}
        self.secret = secret
        self.tokens_path = tokens_path
        self.tokens_text = tokens_text  # fn(rotating_secret) -> file text
        self.run_id = run_id
        self.stop = threading.Event()
        self.stats = Stats()


class Pacer:
    """Spaces calls `1/rate` apart (open loop); rate None = as fast as possible.
    A backlog over one second is dropped (and counted) rather than burst."""

    def __init__(self, rate, stats):
        self.interval = 1.0 / rate if rate else 0.0
        self.next = time.monotonic()
        self.stats = stats

    def wait(self, stop):
        if not self.interval:
            return
        now = time.monotonic()
        if self.next > now:
            stop.wait(self.next - now)
        elif now - self.next > 1.0:
            self.stats.count("pacer_backlog_dropped")
            self.next = now
        self.next += self.interval


def timed(stats, what, fn, expect):
    """Runs fn(); records its latency if expect(result), else an error."""
    t0 = time.perf_counter()
    result = fn()
    dt = time.perf_counter() - t0
    if expect(result):
        stats.ok(dt)
    else:
        stats.error("%s -> %r" % (what, result if not isinstance(result, tuple) else result[0]))
    return result


def _loop(ctx, rate, connect, step):
    """Connects, then calls step(client, i) paced at `rate` until stop; a
    transport failure is an error, followed by a reconnect half a second later."""
    pacer = Pacer(rate, ctx.stats)
    i = 0
    while not ctx.stop.is_set():
        try:
            client = connect()
        except Exception as e:  # noqa: BLE001 - every failure is a soak error
            ctx.stats.error("connect: %r" % e)
            ctx.stop.wait(0.5)
            continue
        try:
            while not ctx.stop.is_set():
                pacer.wait(ctx.stop)
                if ctx.stop.is_set():
                    break
                step(client, i)
                i += 1
        except Exception as e:  # noqa: BLE001
            ctx.stats.error("%s: %r" % (step.__name__, e))
            ctx.stop.wait(0.5)
        finally:
            client.close()


def binary_ids(ctx, rate, worker):
    rng = random.Random(worker)
    st = ctx.stats

    def ids_step(c, i):
        if rng.random() < NEW_KEY_SHARE:
            prefix = "si_" if i % 2 else "n_"  # dense or segment (soak.py's rules)
            key = "%ssoak_%s_%d_%d" % (prefix, ctx.run_id, worker, i)
            st.count("new_keys")
        else:
            key = rng.choice(HOT_KEYS)
        timed(st, "NEXT_IDS " + key, lambda: c.next_ids(key), lambda r: r[0] == OK)

    _loop(ctx, rate, lambda: Binary(ctx.ports["tcp"], ctx.secret), ids_step)


def http_ids(ctx, rate, worker):
    rng = random.Random(worker)

    def http_step(c, i):
        key = rng.choice(HOT_KEYS)
        timed(ctx.stats, "GET /seq/" + key, lambda: c.request("GET", "/seq/%s?count=1" % key),
              lambda r: r[0] == 200)

    _loop(ctx, rate, lambda: Http(ctx.ports["http"], ctx.secret), http_step)


def resp_incr(ctx, rate, worker):
    rng = random.Random(worker)

    def resp_step(c, i):
        key = rng.choice(HOT_KEYS)
        timed(ctx.stats, "INCR " + key, lambda: c.command("INCR", key),
              lambda r: r.startswith(b":"))

    _loop(ctx, rate, lambda: Resp(ctx.ports["resp"], ctx.secret), resp_step)


def binary_send(ctx, rate, worker):
    payload = b"x" * 64

    def send_step(c, i):
        conv = CONVS[i % len(CONVS)]
        cmid = "c_%s_%d_%d" % (ctx.run_id, worker, i)
        timed(ctx.stats, "SEND " + conv, lambda: c.send(conv, "soak_user", cmid, payload),
              lambda r: r[0] == OK)
        ctx.stats.count("messages_sent")

    _loop(ctx, rate, lambda: Binary(ctx.ports["tcp"], ctx.secret), send_step)


WORKERS = {"binary_ids": binary_ids, "http_ids": http_ids, "resp_incr": resp_incr,
           "binary_send": binary_send}


def _read_for(ctx, sock, seconds, read_one):
    """Calls read_one() while it returns True, for at most `seconds` (each
    read waiting for what is left of them) or until the soak stops; a read
    that times out ends it."""
    deadline = time.monotonic() + seconds
    while not ctx.stop.is_set():
        left = deadline - time.monotonic()
        if left <= 0:
            return
        sock.settimeout(left)
        try:
            if not read_one():
                return
        except socket.timeout:
            return


def _push(ctx, c):
    """Reads one frame on subscribed connection `c`: a push is counted,
    PUSH_DROPPED is an error and ends the subscription (False)."""
    op, _, status, _ = c.read_frame()
    if op == PUSH_MESSAGE:
        ctx.stats.count("pushes")
    elif op == PUSH_DROPPED:
        ctx.stats.error("PUSH_DROPPED status %d" % status)
        return False
    return True


def binary_subscriber(ctx, worker):
    """Joins (SUBSCRIBE two conversations), reads pushes for 2-6 s, leaves
    (closes the connection); over and over. PUSH_DROPPED is an error."""
    rng = random.Random(1000 + worker)
    while not ctx.stop.is_set():
        hold = rng.uniform(2, 6)
        convs = rng.sample(CONVS, 2)
        try:
            c = Binary(ctx.ports["tcp"], ctx.secret)
        except Exception as e:  # noqa: BLE001
            ctx.stats.error("subscriber connect: %r" % e)
            ctx.stop.wait(0.5)
            continue
        try:
            r = timed(ctx.stats, "SUBSCRIBE", lambda: c.subscribe(convs), lambda r: r[0] == OK)
            if r[0] == OK:
                ctx.stats.count("subscriptions")
                _read_for(ctx, c.sock, hold, lambda: _push(ctx, c))
        except Exception as e:  # noqa: BLE001
            ctx.stats.error("subscriber: %r" % e)
        finally:
            c.close()


def sse_subscriber(ctx, worker):
    """Opens an SSE stream of one conversation, reads it for 2-6 s, closes;
    over and over. The time to the response headers is its latency; a
    non-200 or `event: dropped` is an error."""
    rng = random.Random(2000 + worker)
    while not ctx.stop.is_set():
        hold = rng.uniform(2, 6)
        conv = rng.choice(CONVS)
        s = None
        try:
            t0 = time.perf_counter()
            s = socket.create_connection(("127.0.0.1", ctx.ports["http"]), timeout=10)
            s.sendall(("GET /conversations/%s/events HTTP/1.1\r\nHost: soak\r\n"
                       "Authorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n"
                       % (conv, ctx.secret)).encode())
            buf = read_head(s)
            if b"\r\n\r\n" not in buf:
                raise EOFError("SSE closed before headers")
            status_line = buf.split(b"\r\n", 1)[0]
            if b" 200 " not in status_line + b" ":
                ctx.stats.error("SSE %s" % status_line[:60])
                ctx.stop.wait(0.5)
                continue
            ctx.stats.ok(time.perf_counter() - t0)
            ctx.stats.count("sse_streams")

            def events():
                """One read of the stream: events counted, a close or a drop ends it."""
                nonlocal buf
                chunk = s.recv(65536)
                if not chunk:
                    ctx.stats.error("SSE stream closed by the server")
                    return False
                buf += chunk
                ctx.stats.count("sse_events", chunk.count(b"event: message"))
                if b"event: dropped" in buf:
                    ctx.stats.error("SSE event: dropped")
                    return False
                buf = buf[-64:]
                return True

            _read_for(ctx, s, hold, events)
        except Exception as e:  # noqa: BLE001
            ctx.stats.error("sse: %r" % e)
            ctx.stop.wait(0.5)
        finally:
            if s is not None:
                s.close()


def rotating_secret(n):
    return "sqd_soak-rotating-%d-%s" % (n, hashlib.sha256(os.urandom(16)).hexdigest()[:16])


def write_tokens(ctx, rot):
    tmp = ctx.tokens_path + ".tmp"
    with open(tmp, "w") as f:
        f.write(ctx.tokens_text(rot))
    os.replace(tmp, ctx.tokens_path)


def control(ctx, interval_s=60.0, first_s=30.0):
    """Every `interval_s` (first after `first_s`): a step change of one hot key
    (admin route, alternating 2000/1000), then a tokens reload: a new rotating
    token is written, seqd gets SIGHUP, the new secret must work within 5 s
    and the old one must be refused (401)."""
    st = ctx.stats
    http = Http(ctx.ports["http"], ctx.secret)
    old = ctx.initial_rotating
    n = 0
    if ctx.stop.wait(first_s):
        return
    while True:
        n += 1
        step = 2000 if n % 2 else 1000  # created with 1000
        try:
            timed(st, "PUT step", lambda: http.request("PUT", "/admin/keys/%s/step" % HOT_KEYS[0],
                                                      '{"step":%d}' % step),
                  lambda r: r[0] == 200)
            st.count("step_changes")
            new = rotating_secret(n)
            write_tokens(ctx, new)
            os.kill(ctx.pid, signal.SIGHUP)
            deadline = time.monotonic() + 5
            while True:
                status, _ = http.request("GET", "/seq/%s" % HOT_KEYS[1], secret=new)
                if status == 200:
                    break
                if time.monotonic() > deadline:
                    st.error("tokens reload: the new token is still %d after 5 s" % status)
                    break
                time.sleep(0.05)
            status, _ = http.request("GET", "/seq/%s" % HOT_KEYS[1], secret=old)
            if status != 401:
                st.error("tokens reload: the removed token answered %d, not 401" % status)
            else:
                st.count("token_reloads")
            old = new
        except Exception as e:  # noqa: BLE001
            st.error("control: %r" % e)
            http.close()
            http = Http(ctx.ports["http"], ctx.secret)
        if ctx.stop.wait(interval_s):
            break
    http.close()


def start(ctx, rate, subscribers=True, controller=True):
    """Starts the paced workers (rate None: unpaced) and, if asked, the
    subscribers and the control thread. Returns the threads."""
    threads = []
    for w, (name, share) in enumerate(MIX):
        r = rate * share if rate else None
        threads.append(threading.Thread(target=WORKERS[name], args=(ctx, r, w), daemon=True))
    if subscribers:
        for w in range(2):
            threads.append(threading.Thread(target=binary_subscriber, args=(ctx, w), daemon=True))
        threads.append(threading.Thread(target=sse_subscriber, args=(ctx, 0), daemon=True))
    if controller:
        threads.append(threading.Thread(target=control, args=(ctx,), daemon=True))
    for t in threads:
        t.start()
    return threads
