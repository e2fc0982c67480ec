"""The checker of tests/e2e/test_client_chaos.py: driver output parsed
into calls, the verdict (failed and late calls, malformed answers, and,
through lib/checkers.py's ID checker, duplicates and real-time order
violations across all client processes), latency figures, and its
self-test on synthetic driver output (see test_client_chaos.py)."""
import collections
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib.checkers import Answer, find_duplicates, find_order_violations, short_ranges  # noqa: E402
from lib.clients import ServerError, checked_ranges  # noqa: E402
from lib.progress import rel  # noqa: E402

CLIENTS = ("cpp", "go")
FAULTS = ("kill_owner", "stop_owner", "freeze_db", "kill_db", "leave_join")
OWNER_FAULTS = ("kill_owner", "stop_owner")
DEADLINE_S = 5.0
DEADLINE_SLACK_S = 0.2
MIN_CALLS = 500
EXAMPLES = 5


# --- the checker ---------------------------------------------------------------

class Call:
    """One driver line: its call's key, count, send and receive time, and
    its ranges, error code and message, or what was malformed."""
    __slots__ = ("client", "thread", "key", "count", "send", "recv", "ranges", "code", "message",
                 "malformed")

    @property
    def latency(self):
        return self.recv - self.send

    @property
    def ok(self):
        return self.code is None and self.malformed is None

    def describe(self):
        if self.code is not None:
            what = "error %s %s" % (self.code, self.message)
        elif self.malformed is not None:
            what = "malformed: %s" % self.malformed
        else:
            what = "ids %s" % short_ranges(self.ranges)
        return "%s/%s %s count %d sent %.3f recv %.3f (%.3f s): %s" % (
            self.client, self.thread, self.key, self.count, rel(self.send),
            rel(self.recv), self.latency, what)


def parse_line(client, line):
    """A Call from one driver line, or None if the line is not one."""
    parts = line.rstrip("\n").split(" ", 6)
    if len(parts) < 6 or parts[5] not in ("ok", "err"):
        return None
    c = Call()
    c.client, c.thread, c.key = client, parts[0], parts[1]
    try:
        c.count, send_ns, recv_ns = int(parts[2]), int(parts[3]), int(parts[4])
    except ValueError:
        return None
    c.send, c.recv = send_ns / 1e9, recv_ns / 1e9
    c.ranges, c.code, c.message, c.malformed = None, None, "", None
    rest = parts[6] if len(parts) > 6 else ""
    if parts[5] == "err":
        code, _, message = rest.partition(" ")
        c.code, c.message = code or "?", message
        return c
    try:
        ranges = [tuple(int(x) for x in r.split("-", 1)) for r in rest.split(",")]
        c.ranges = checked_ranges(ranges, c.count)
    except (ValueError, TypeError) as e:
        c.malformed = "unparsable ranges %r (%s)" % (rest[:80], e)
    except ServerError as e:
        c.malformed = e.kind
    return c


def parse_output(client, text):
    """(calls, bad lines) of a driver's whole output."""
    calls, bad = [], []
    for line in text.splitlines():
        c = parse_line(client, line)
        if c is None:
            bad.append(line[:120])
        else:
            calls.append(c)
    return calls, bad


DB_FAULTS = ("freeze_db", "kill_db")
# After the database is back, the instances renew or take their leases at
# their next round (a quarter lease) and reconnect: 1 s at lease 2 s.
DB_RECOVERY_S = 1.0


def beyond_bound(call, faults, deadline_s=DEADLINE_S):
    """True if `call` could not succeed by the bound: its deadline ran out
    while the database was still away or within DB_RECOVERY_S of its
    return (a freeze or a kill and restart longer than the deadline, e.g.
    MariaDB slow to start on a loaded machine)."""
    end = call.send + deadline_s
    return any(f["kind"] in DB_FAULTS and f["start"] <= end <= f["end"] + DB_RECOVERY_S
               for f in faults)


def verdict(calls, deadline_s=DEADLINE_S, faults=()):
    """Failed calls (errors, late answers), malformed answers, duplicates
    and real-time order violations over `calls` of every client."""
    errors = [c for c in calls if c.code is not None]
    excused = [c for c in errors if beyond_bound(c, faults, deadline_s)]
    failed = [c for c in errors if not beyond_bound(c, faults, deadline_s)]
    late = [c for c in calls if c.code is None and c.latency > deadline_s + DEADLINE_SLACK_S]
    malformed = [c for c in calls if c.malformed is not None]
    answers = [Answer(c.key, c.client, "%s/%s" % (c.client, c.thread), c.send, c.recv,
                      c.ranges) for c in calls if c.ok]
    dups, dup_examples = find_duplicates(answers)
    order, order_examples = find_order_violations(answers)
    return {"failed": len(failed), "failed_examples": [c.describe() for c in failed[:EXAMPLES]],
            "beyond_bound": len(excused),
            "beyond_bound_examples": [c.describe() for c in excused[:EXAMPLES]],
            "failed_codes": dict(collections.Counter(c.code for c in failed)),
            "late": len(late), "late_examples": [c.describe() for c in late[:EXAMPLES]],
            "malformed": len(malformed),
            "malformed_examples": [c.describe() for c in malformed[:EXAMPLES]],
            "duplicates": dups, "duplicate_examples": dup_examples,
            "order_violations": order, "order_examples": order_examples}


def quantiles(values):
    """{n, p50, p99, max} of `values` (seconds), in milliseconds."""
    if not values:
        return {"n": 0, "p50_ms": None, "p99_ms": None, "max_ms": None}
    v = sorted(values)

    def q(p):
        return round(1000 * v[min(len(v) - 1, int(p * len(v)))], 1)
    return {"n": len(v), "p50_ms": q(0.5), "p99_ms": q(0.99), "max_ms": round(1000 * v[-1], 1)}


def crossing(calls, fault):
    """The calls that crossed `fault`. Owner faults (a takeover): per key of
    the victim, the calls in flight at some time between the fault's start
    and the key's first answer to a call sent after it (the key served
    again, by the new owner). Other faults: the calls in flight while the
    fault ran. An owner fault's `taken` is when the victim was surely dead
    or stopped (after `start`, when the signal was sent): only a call sent
    after it is surely answered by another owner."""
    keys = set(fault["keys"])
    if fault["kind"] not in OWNER_FAULTS:
        return [c for c in calls
                if c.key in keys and c.send <= fault["end"] and c.recv >= fault["start"]]
    taken = fault.get("taken", fault["start"])
    served = {}
    for c in calls:
        if c.key in keys and c.ok and c.send > taken:
            served[c.key] = min(served.get(c.key, c.recv), c.recv)
    return [c for c in calls
            if c.key in keys and c.recv >= fault["start"]
            and c.send <= served.get(c.key, fault["end"])]


def latency_figures(calls, faults):
    """Per client: all calls, calls that crossed any fault, and per fault
    kind the calls that crossed one of that kind (latency quantiles)."""
    out = {}
    for client in sorted({c.client for c in calls}):
        mine = [c for c in calls if c.client == client and c.code is None]
        row = {"all": quantiles([c.latency for c in mine])}
        crossed_any = {}
        per_kind = collections.defaultdict(dict)
        for f in faults:
            for c in crossing(mine, f):
                crossed_any[id(c)] = c
                per_kind[f["kind"]][id(c)] = c
        row["crossed_fault"] = quantiles([c.latency for c in crossed_any.values()])
        row["crossed_takeover"] = quantiles([c.latency for k, v in per_kind.items()
                                             if k in OWNER_FAULTS for c in v.values()])
        row["by_fault"] = {k: quantiles([c.latency for c in v.values()])
                           for k, v in sorted(per_kind.items())}
        out[client] = row
    return out


def missed_faults(calls, faults, lease_s):
    """Owner faults no call of the victim's keys felt (none waited a
    quarter lease): the fault did not reach the clients."""
    out = []
    for f in faults:
        if f["kind"] not in OWNER_FAULTS:
            continue
        slowest = max((c.latency for c in crossing(calls, f)), default=0.0)
        if slowest < lease_s / 4:
            out.append("%s of %s at %.1f s: slowest call %.3f s" % (
                f["kind"], f["target"], rel(f["start"]), slowest))
    return out


def failures_of(v, calls, faults, lease_s):
    out = []
    if v["failed"]:
        out.append("%d failed calls %s" % (v["failed"], v["failed_codes"]))
    if v["late"]:
        out.append("%d calls answered after the %.0f s deadline" % (v["late"], DEADLINE_S))
    if v["malformed"]:
        out.append("%d malformed answers" % v["malformed"])
    if v["duplicates"]:
        out.append("%d IDs answered twice" % v["duplicates"])
    if v["order_violations"]:
        out.append("%d real-time order violations" % v["order_violations"])
    for client in CLIENTS:
        n = sum(c.client == client for c in calls)
        if n < MIN_CALLS:
            out.append("only %d calls of the %s client (want >= %d)" % (n, client, MIN_CALLS))
    ran = {f["kind"] for f in faults}
    missing = [k for k in FAULTS if k not in ran]
    if missing:
        out.append("faults that never ran: %s" % ", ".join(missing))
    out.extend("a fault no call felt: %s" % m for m in missed_faults(calls, faults, lease_s))
    return out


# --- self-test -----------------------------------------------------------------

def self_test():
    """Checks the checker on synthetic driver output; returns the number of
    histories judged. Raises AssertionError on a wrong verdict."""
    t0 = 10 ** 12

    def line(thread, key, count, send_ms, recv_ms, result):
        return "%d %s %d %d %d %s" % (thread, key, count, t0 + send_ms * 10 ** 6,
                                      t0 + recv_ms * 10 ** 6, result)

    clean_cpp = [line(0, "k", 2, 0, 10, "ok 1-2"), line(1, "k", 1, 5, 20, "ok 3-3"),
                 line(0, "j", 3, 0, 4000, "ok 1-1,5-6")]
    # go's k call is sent after cpp's k calls came back; its j call is sent
    # after cpp's j call came back: larger IDs both.
    clean_go = [line(0, "k", 2, 30, 40, "ok 4-5"), line(1, "j", 1, 4001, 4002, "ok 7-7")]

    faults = []

    def judge(cpp, go):
        calls = []
        for client, lines in (("cpp", cpp), ("go", go)):
            cs, bad = parse_output(client, "\n".join(lines) + "\n")
            assert not bad, bad
            calls += cs
        return verdict(calls, faults=faults)

    n = 0

    def expect(cpp, go, **want):
        nonlocal n
        v = judge(cpp, go)
        for field in ("failed", "late", "malformed", "duplicates", "order_violations"):
            assert v[field] == want.get(field, 0), (field, v[field], want, cpp, go)
        n += 1

    expect(clean_cpp, clean_go)
    # A duplicate across the processes (cpp got 1-2, go gets 2).
    expect(clean_cpp, clean_go + [line(3, "k", 1, 0, 1, "ok 2-2")], duplicates=1)
    # Real-time order across the processes: sent (4001 ms) after cpp's j
    # call came back (4000 ms), an unused ID below its 6.
    expect(clean_cpp, clean_go + [line(3, "j", 1, 4001, 4003, "ok 2-2")], order_violations=1)
    # Near misses: sent (3999 ms) before that answer came back, a smaller
    # ID is allowed; so is a larger one sent just after.
    expect(clean_cpp, clean_go + [line(3, "j", 1, 3999, 4003, "ok 2-2"),
                                  line(2, "k", 1, 41, 42, "ok 100-100")])
    expect(clean_cpp, clean_go + [line(2, "k", 1, 19, 25, "ok 0-0")], malformed=1)
    # A failed call; a late answer (5.3 s) and one within the slack; wrong
    # counts and ranges.
    expect(clean_cpp + [line(2, "k", 1, 0, 5000, "err TIMEOUT no answer within call_deadline")],
           clean_go, failed=1)
    expect(clean_cpp, clean_go + [line(2, "z", 1, 0, 5300, "ok 1-1")], late=1)
    # A call whose deadline ran out while the database was away is beyond
    # the bound, not failed; one whose deadline ran out after it was back
    # is failed.
    faults.append({"kind": "kill_db", "start": (t0 + 1000 * 10 ** 6) / 1e9,
                   "end": (t0 + 6500 * 10 ** 6) / 1e9})
    timeout = "err TIMEOUT no answer within call_deadline"
    v = judge(clean_cpp + [line(2, "z", 1, 500, 5500, timeout)], clean_go)
    assert (v["failed"], v["beyond_bound"]) == (0, 1), v
    v = judge(clean_cpp + [line(2, "z", 1, 2600, 7600, timeout)], clean_go)
    assert (v["failed"], v["beyond_bound"]) == (1, 0), v
    faults.clear()
    n += 2
    expect(clean_cpp, clean_go + [line(2, "z", 1, 0, 5150, "ok 1-1")])
    expect(clean_cpp + [line(2, "z", 3, 0, 1, "ok 1-2")], clean_go, malformed=1)
    expect(clean_cpp + [line(2, "z", 3, 0, 1, "ok 5-6,1-1")], clean_go, malformed=1)
    # Random histories: IDs handed out in send order by one counter per key
    # (with gaps) never fail; the same with one later answer given the
    # key's first IDs again (1..count) fails.
    rng = random.Random(7)
    for trial in range(40):
        counters, lines = collections.defaultdict(int), {"cpp": [], "go": []}
        later = []
        t = 0
        for i in range(60):
            key, count = rng.choice("ab"), rng.randint(1, 3)
            first = counters[key] + 1
            counters[key] += count + rng.randint(0, 2)
            t += rng.randint(1, 5)
            client = rng.choice(CLIENTS)
            lines[client].append(line(i % 3, key, count, t, t + rng.randint(0, 3),
                                      "ok %d-%d" % (first, first + count - 1)))
            if first > 1:
                later.append((client, len(lines[client]) - 1, key, count, t))
        expect(lines["cpp"], lines["go"])
        client, index, key, count, t = rng.choice(later)
        planted = {c: list(v) for c, v in lines.items()}
        planted[client][index] = line(9, key, count, t, t + 1, "ok 1-%d" % count)
        v = judge(planted["cpp"], planted["go"])
        assert v["duplicates"] > 0, (trial, planted[client][index])
        n += 1
    # Crossing figures and the missed-fault check.
    calls, _ = parse_output("cpp", "\n".join(clean_cpp))
    f = {"kind": "kill_owner", "start": (t0 + 3000 * 10 ** 6) / 1e9,
         "end": (t0 + 3500 * 10 ** 6) / 1e9, "target": "s1", "keys": ["j"]}
    assert [c.key for c in crossing(calls, f)] == ["j"]
    assert missed_faults(calls, [f], 2.0) == []
    f["keys"] = ["k"]
    assert len(missed_faults(calls, [f], 2.0)) == 1
    # A call sent just after the kill was ordered but answered by the victim
    # before it died is not the key served again: the call sent after the
    # victim was surely dead (`taken`) waited for the takeover.
    calls, _ = parse_output("cpp", "\n".join([
        line(0, "m", 1, 2999.0, 3000.3, "ok 1-1"), line(1, "m", 1, 3000.2, 3000.4, "ok 2-2"),
        line(0, "m", 1, 3001.0, 5200.0, "ok 3-3")]))
    f = {"kind": "kill_owner", "start": (t0 + 3000 * 10 ** 6) / 1e9,
         "taken": (t0 + 3000.6 * 10 ** 6) / 1e9, "end": (t0 + 4000 * 10 ** 6) / 1e9,
         "target": "s1", "keys": ["m"]}
    assert missed_faults(calls, [f], 2.0) == []
    del f["taken"]
    assert len(missed_faults(calls, [f], 2.0)) == 1
    n += 1
    return n
