"""The soak driver (run it through scripts/soak, which starts the MariaDB).

Starts seqd on the given store with a tokens file and a short
key_idle_timeout_s, runs the mixed load of load.py at a fixed rate (--rate)
or at half of the peak it measures first with the same mix, samples seqd
every 10 s (RSS, fds, connections, requests, errors, p50/p99/p999 of the
window) into soak.csv, draws soak.svg, and checks the series (checks.py).
Exit 0 when every check passes, 1 when one fails, 2 on bad usage.
"""
import argparse
import csv
import hashlib
import http.client
import math
import os
import signal
import subprocess
import sys
import time

import checks
import load
import plot
from wire import Http

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEQD = os.environ.get("SEQD_BINARY", os.path.join(REPO, "build", "seqd"))
MAIN_SECRET = "sqd_soak-main-secret-0123456789"
MAIN_SCOPES = "admin,ids:*,snowflake,msg:send:*,msg:read:*,msg:admin:*,metrics"
ROTATING_SCOPES = "ids:soak_hot_"
FIELDS = ["t_s", "window_s", "rss_kb", "rss_anon_kb", "rss_file_kb", "fds", "connections", "keys_in_memory",
          "keys_evicted_total", "requests", "errors", "p50_ms", "p99_ms", "p999_ms", "max_ms",
          "load1"]


def tokens_text(rotating):
    def line(name, secret, scopes):
        return "%s %s %s" % (name, hashlib.sha256(secret.encode()).hexdigest(), scopes)
    return "# soak tokens (rewritten and reloaded with SIGHUP every minute)\n%s\n%s\n" % (
        line("soak", MAIN_SECRET, MAIN_SCOPES), line("rotating", rotating, ROTATING_SCOPES))


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(sorted_values, q):
    """Nearest rank; 0 for an empty list."""
    if not sorted_values:
        return 0.0
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


def proc_status(pid):
    """(VmRSS, RssAnon, RssFile in kB, open fds) of process `pid`."""
    kb = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(("VmRSS:", "RssAnon:", "RssFile:")):
                kb[line.split(":")[0]] = int(line.split()[1])
    return (kb.get("VmRSS", 0), kb.get("RssAnon", 0), kb.get("RssFile", 0),
            len(os.listdir("/proc/%d/fd" % pid)))


def scrape(http):
    """(connections, keys_in_memory, keys_evicted_total) from /metrics."""
    status, body = http.request("GET", "/metrics")
    if status != 200:
        raise RuntimeError("/metrics answered %d" % status)
    conns = keys = evicted = 0.0
    for line in body.decode().splitlines():
        if line.startswith("seqd_open_connections{"):
            conns += float(line.rsplit(" ", 1)[1])
        elif line.startswith("seqd_keys_in_memory "):
            keys = float(line.rsplit(" ", 1)[1])
        elif line.startswith("seqd_keys_evicted_total"):
            evicted += float(line.rsplit(" ", 1)[1])
    return int(conns), int(keys), int(evicted)


def start_seqd(args, out, ports):
    cmd = [SEQD, "--store", args.store, "--http-port", str(ports["http"]),
           "--tcp-port", str(ports["tcp"]), "--resp-port", str(ports["resp"]),
           "--threads", "2", "--tokens-file", os.path.join(out, "tokens"),
           "--key-idle-timeout-s", str(args.key_idle_timeout_s), "--auto-create-rate", "0",
           # n_ keys are segment keys, so idle ones are evicted; si_ keys
           # are dense, each block a durable write (load.py's new keys);
           # sg_soak_ serves load.py's conversations (the key rules apply
           # to them too).
           "--auto-keys", "n_:50:segment,si_:50:dense,sg_soak_:100",
           "--log-level", "warn"]
    log = open(os.path.join(out, "seqd.log"), "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 30
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("seqd exited with %s (see %s/seqd.log)" % (proc.returncode, out))
        try:
            c = http.client.HTTPConnection("127.0.0.1", ports["http"], timeout=2)
            # Ready, not only alive: on a fresh MariaDB the tables (the
            # message store's among them) are created just after start, and
            # the load measures the steady state, not the first second.
            c.request("GET", "/readyz")
            if c.getresponse().status == 200:
                return proc
        except OSError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError("seqd did not become ready (see %s/seqd.log)" % out)


def create_hot_keys(ports):
    http = Http(ports["http"], MAIN_SECRET)
    for key in load.HOT_KEYS:
        deadline = time.time() + 30
        while True:  # 503 until the store's tables exist on a fresh MariaDB
            status, body = http.request("POST", "/admin/keys",
                                        '{"key":"%s","step":1000,"description":"soak"}' % key)
            if status in (201, 409) or time.time() > deadline:
                break
            time.sleep(0.2)
        if status not in (201, 409):
            raise RuntimeError("creating %s: %d %r" % (key, status, body[:200]))
    http.close()


def new_context(proc, ports, out, run_id, rotating):
    ctx = load.Context(proc.pid, ports, MAIN_SECRET, os.path.join(out, "tokens"), tokens_text,
                       run_id)
    ctx.initial_rotating = rotating
    return ctx


def measure_peak(proc, ports, out, run_id, rotating, seconds):
    """Requests per second of the same mix, unpaced, for `seconds`."""
    ctx = new_context(proc, ports, out, run_id + "p", rotating)
    threads = load.start(ctx, None, subscribers=False, controller=False)
    ctx.stop.wait(2)  # connect and warm the hot keys first
    ctx.stats.take()
    t0 = time.monotonic()
    ctx.stop.wait(seconds)
    lat, err = ctx.stats.take()
    rate = (len(lat) + err) / (time.monotonic() - t0)
    ctx.stop.set()
    for t in threads:
        t.join(15)
    return rate, err


def run(args):
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    run_id = "%06x" % (int(time.time() * 1000) & 0xFFFFFF)
    rotating = load.rotating_secret(0)
    with open(os.path.join(out, "tokens"), "w") as f:
        f.write(tokens_text(rotating))
    ports = {"http": free_port(), "tcp": free_port(), "resp": free_port()}
    proc = start_seqd(args, out, ports)
    try:
        return soak(args, out, proc, ports, run_id, rotating)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def soak(args, out, proc, ports, run_id, rotating):
    create_hot_keys(ports)
    duration = args.minutes * 60.0
    peak = None
    extra_errors = 0
    if args.rate:
        rate = args.rate
    else:
        peak, perr = measure_peak(proc, ports, out, run_id, rotating, args.peak_seconds)
        extra_errors += perr
        rate = peak / 2
    print("soak: seqd pid %d, %s minutes at %.0f req/s%s; output in %s" %
          (proc.pid, args.minutes, rate, " (half of the measured peak %.0f)" % peak if peak
           else "", out), flush=True)

    ctx = new_context(proc, ports, out, run_id, rotating)
    threads = load.start(ctx, rate)
    scraper = Http(ports["http"], MAIN_SECRET)
    samples = []
    csv_file = open(os.path.join(out, "soak.csv"), "w", newline="")
    writer = csv.DictWriter(csv_file, fieldnames=FIELDS)
    writer.writeheader()
    t0 = time.monotonic()
    last = t0
    n = 0
    while True:
        n += 1
        target = t0 + n * args.sample_s
        if target > t0 + duration + 1e-6:
            break
        time.sleep(max(0.0, target - time.monotonic()))
        now = time.monotonic()
        lat, err = ctx.stats.take()
        lat.sort()
        try:
            rss, anon, filed, fds = proc_status(proc.pid)
            conns, keys, evicted = scrape(scraper)
        except Exception as e:  # noqa: BLE001 - seqd gone or /metrics failing
            ctx.stats.error("sample: %r" % e)
            rss = anon = filed = fds = conns = keys = evicted = 0
        with open("/proc/loadavg") as f:
            load1 = float(f.read().split()[0])
        row = {"t_s": round(now - t0, 1), "window_s": round(now - last, 2), "rss_kb": rss,
               "rss_anon_kb": anon, "rss_file_kb": filed, "fds": fds, "connections": conns, "keys_in_memory": keys,
               "keys_evicted_total": evicted, "requests": len(lat), "errors": err,
               "p50_ms": round(1000 * percentile(lat, 0.5), 3),
               "p99_ms": round(1000 * percentile(lat, 0.99), 3),
               "p999_ms": round(1000 * percentile(lat, 0.999), 3),
               "max_ms": round(1000 * (lat[-1] if lat else 0), 3), "load1": load1}
        last = now
        samples.append(row)
        writer.writerow(row)
        csv_file.flush()
        print("t=%5.0fs rss=%dkB (anon %d) fds=%d conns=%d keys=%d evicted=%d req=%d err=%d "
              "p50=%.2f p99=%.2f p999=%.2f ms load=%.2f" %
              (row["t_s"], rss, anon, fds, conns, keys, evicted, len(lat), err, row["p50_ms"],
               row["p99_ms"], row["p999_ms"], load1), flush=True)
    csv_file.close()
    ctx.stop.set()
    for t in threads:
        t.join(20)
    scraper.close()
    _, late_err = ctx.stats.take()  # requests between the last sample and the stop
    extra_errors += late_err
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(30)
    except subprocess.TimeoutExpired:
        code = "no exit 30 s after SIGTERM"
    if code != 0:
        extra_errors += 1
        ctx.stats.error("seqd exit status %s after SIGTERM" % code)

    results = checks.check(samples, duration, extra_errors)
    c = ctx.stats.counters
    expected_reloads = max(0, int((duration - 30) // 60) + 1) if duration > 30 else 0
    # The last reload may race with the stop: one fewer is fine.
    results.append(("load real", c.get("token_reloads", 0) >= expected_reloads - 1 and
                    c.get("pushes", 0) > 0 and
                    c.get("sse_events", 0) > 0 and samples[-1]["keys_evicted_total"] > 0,
                    "token reloads %d (expected %d), step changes %d, pushes %d, SSE events %d, "
                    "keys evicted %d" % (c.get("token_reloads", 0), expected_reloads,
                                         c.get("step_changes", 0), c.get("pushes", 0),
                                         c.get("sse_events", 0),
                                         samples[-1]["keys_evicted_total"] if samples else 0)))
    text = report(args, rate, peak, samples, ctx, results, duration)
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(out, "soak.svg"), "w") as f:
        f.write(plot.svg(samples, "seqd soak: %g min at %.0f req/s (MariaDB)" %
                         (args.minutes, rate), checks.warmup_s(duration)))
    print(text, flush=True)
    return 0 if checks.passed(results) else 1


def rng(samples, field, after_s=0.0):
    vals = [s[field] for s in samples if s["t_s"] >= after_s]
    return "%s..%s" % (min(vals), max(vals)) if vals else "-"


def report(args, rate, peak, samples, ctx, results, duration):
    w = checks.warmup_s(duration)
    c = ctx.stats.counters
    at_w = next((s for s in samples if s["t_s"] >= w - 1e-9), samples[-1] if samples else None)
    lines = ["", "=== soak summary ===",
             "duration %g min, target rate %.0f req/s%s, achieved %.0f req/s, warm-up %.0f s "
             "(%s)" %
             (args.minutes, rate, " (half of peak %.0f)" % peak if peak else " (--rate)",
              ctx.stats.total_requests / duration, w,
              "10 min" if w >= checks.WARMUP_MAX_S else "a sixth of the run"),
             "requests %d, errors %d; new keys %d, messages sent %d, pushes %d, "
             "subscriptions %d, SSE streams %d (events %d), step changes %d, token reloads %d, "
             "pacer backlog drops %d" %
             (ctx.stats.total_requests, ctx.stats.total_errors, c.get("new_keys", 0),
              c.get("messages_sent", 0), c.get("pushes", 0), c.get("subscriptions", 0),
              c.get("sse_streams", 0), c.get("sse_events", 0), c.get("step_changes", 0),
              c.get("token_reloads", 0), c.get("pacer_backlog_dropped", 0))]
    if samples and at_w:
        lines += ["RSS %d kB at %.0f s, %d kB at the end; fds %d -> %d; connections %s" %
                  (at_w["rss_kb"], at_w["t_s"], samples[-1]["rss_kb"], at_w["fds"],
                   samples[-1]["fds"], rng(samples, "connections")),
                  "after warm-up: p50 %s ms, p99 %s ms, p999 %s ms; load1 %s" %
                  (rng(samples, "p50_ms", w), rng(samples, "p99_ms", w),
                   rng(samples, "p999_ms", w), rng(samples, "load1"))]
    for e in ctx.stats.error_samples:
        lines.append("error: " + e)
    lines += [checks.summary(results), "RESULT: %s" % ("PASS" if checks.passed(results)
                                                       else "FAIL")]
    return "\n".join(lines)


def self_test():
    print(checks.self_test())
    import xml.dom.minidom
    text = plot.svg(checks._series(), "self-test", 100.0)
    xml.dom.minidom.parseString(text)  # well-formed
    assert text.count("<polyline") >= 9, "a panel lost its lines"
    print("self-test: the SVG of a synthetic series is well-formed (%d bytes)" % len(text))
    return 0


def recheck(directory, minutes):
    """The checks again over DIR/soak.csv (e.g. after the checks changed);
    errors seen outside the samples (summary.txt) are not in the CSV."""
    with open(os.path.join(directory, "soak.csv")) as f:
        samples = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]
    results = checks.check(samples, minutes * 60.0)
    print(checks.summary(results))
    print("RESULT: %s" % ("PASS" if checks.passed(results) else "FAIL"))
    return 0 if checks.passed(results) else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=60.0)
    p.add_argument("--rate", type=float, default=0.0,
                   help="requests per second of the paced mix; default: half of the peak "
                        "measured for --peak-seconds first")
    p.add_argument("--peak-seconds", type=float, default=15.0)
    p.add_argument("--out", default="soak-out", help="directory for soak.csv, soak.svg, "
                   "summary.txt, seqd.log (default ./soak-out)")
    p.add_argument("--store", help="seqd --store URL (scripts/soak passes its MariaDB's)")
    p.add_argument("--key-idle-timeout-s", type=int, default=5)
    p.add_argument("--sample-s", type=float, default=10.0)
    p.add_argument("--self-test", action="store_true",
                   help="check the checker on synthetic series; no seqd, no MariaDB")
    p.add_argument("--recheck", metavar="DIR",
                   help="run the checks again over DIR/soak.csv of a finished run (with its "
                        "--minutes); no seqd, no MariaDB")
    args = p.parse_args()
    if args.self_test:
        return self_test()
    if args.recheck:
        return recheck(args.recheck, args.minutes)
    if not args.store:
        p.error("--store is required (run scripts/soak)")
    if args.minutes <= 0 or args.rate < 0:
        p.error("--minutes must be > 0 and --rate >= 0")

    def on_term(signum, _frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, on_term)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
