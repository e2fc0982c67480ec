"""The histories a chaos run records and the checkers that judge them.

A history is what the clients saw, each record with its send and receive
time (time.monotonic(), one process): `Answer`, one request for IDs;
`MsgAttempt`, one try at sending a chat message (`Msg`).

The checkers (each O(n log n)):
  check_history   per key, IDs answered twice (duplicates), answers whose
                  IDs are not above every ID of an answer received before
                  they were sent (real-time order), answers outside the
                  contract;
  check_messages  per conversation, holes and seqs stored twice, acked
                  messages lost or stored elsewhere, answers that disagree,
                  messages stored twice or never sent, seqs out of
                  real-time order, answers outside the contract.
self_test() feeds them synthetic histories (each failure planted, near
misses, random histories against O(n^2) brute forces) and raises
AssertionError on a wrong verdict, so a pass is never a checker that
cannot fail.

Thread safety: pure functions over lists a caller no longer appends to.
"""
import collections
import random

from lib.progress import rel

EXAMPLES = 5  # examples kept per kind of failure


# --- history -------------------------------------------------------------------

class Answer:
    """One request as a client saw it: `ranges` ((first, last), ...) when it
    succeeded, else `error` (a kind) and `expected` (the contract allows it)."""
    __slots__ = ("key", "iface", "inst", "send", "recv", "ranges", "error", "expected", "lo", "hi")

    def __init__(self, key, iface, inst, send, recv, ranges=None, error=None, expected=True):
        self.key, self.iface, self.inst = key, iface, inst
        self.send, self.recv = send, recv
        self.ranges, self.error, self.expected = ranges, error, expected
        self.lo = ranges[0][0] if ranges else None
        self.hi = ranges[-1][1] if ranges else None

    @property
    def ok(self):
        return self.error is None

    def describe(self):
        what = ("ids %s" % short_ranges(self.ranges)) if self.ok else ("error %s" % self.error)
        return "%s via %s on %s sent %.3f recv %.3f: %s" % (
            self.key, self.iface, self.inst, rel(self.send), rel(self.recv), what)


def short_ranges(ranges):
    text = ",".join("%d" % f if f == l else "%d-%d" % (f, l) for f, l in ranges[:4])
    return "[%s%s]" % (text, ",..." if len(ranges) > 4 else "")


Msg = collections.namedtuple("Msg", "conv sender cmid payload")
Msg.__doc__ = "One chat message; (conv, sender, cmid) names it, re-sends included."


class MsgAttempt:
    """One try at sending `msg` as a client saw it: `seq`, `msg_id` (the
    server message id) and `duplicate` when answered, else `error` and
    `expected`. `kind`: first, retry (after an unknown outcome), again (an
    acked message sent once more on purpose), probe (a late probe) or
    final (the final round)."""
    __slots__ = ("msg", "kind", "iface", "inst", "send", "recv", "seq", "msg_id", "duplicate",
                 "error", "expected")

    def __init__(self, msg, kind, iface, inst, send, recv, answer=None, error=None,
                 expected=True):
        self.msg, self.kind, self.iface, self.inst = msg, kind, iface, inst
        self.send, self.recv = send, recv
        self.seq, self.msg_id, self.duplicate = answer if answer else (None, None, None)
        self.error, self.expected = error, expected

    @property
    def ok(self):
        return self.error is None

    def describe(self):
        what = ("seq %d (server msg %d%s)" % (self.seq, self.msg_id,
                                              ", duplicate" if self.duplicate else "")
                if self.ok else "error %s" % self.error)
        return "%s %s/%s %s via %s on %s sent %.3f recv %.3f: %s" % (
            self.msg.conv, self.msg.sender, self.msg.cmid, self.kind, self.iface, self.inst,
            rel(self.send), rel(self.recv), what)


# --- the ID checker -------------------------------------------------------------

def by_key(answers):
    """Successful answers grouped by key."""
    out = collections.defaultdict(list)
    for a in answers:
        if a.ok:
            out[a.key].append(a)
    return out


def find_duplicates(answers):
    """Per key, IDs answered more than once (each extra copy counts one).
    Ranges sorted by first ID; each range's overlap with the furthest end
    reached so far is exactly its IDs already answered. O(n log n).
    Returns (count, examples)."""
    count, examples = 0, []
    for key, items in sorted(by_key(answers).items()):
        spans = sorted((f, l, i) for i, a in enumerate(items) for f, l in a.ranges)
        reach, reach_by = None, None
        for first, last, i in spans:
            if reach is not None and first <= reach:
                extra = min(last, reach) - first + 1
                count += extra
                if len(examples) < EXAMPLES:
                    examples.append({"key": key, "ids": [first, min(last, reach)],
                                     "a": items[reach_by].describe(), "b": items[i].describe()})
            if reach is None or last > reach:
                reach, reach_by = last, i
    return count, examples


def find_order_violations(answers):
    """Per key, answers B with an ID at or below the largest ID of an answer
    A received before B was sent (A.recv < B.send). Sweeps B by send time
    while the answers received before it feed a running maximum; each
    violating B counts once. O(n log n). Returns (count, examples)."""
    count, examples = 0, []
    for key, items in sorted(by_key(answers).items()):
        by_recv = sorted(items, key=lambda a: a.recv)
        i, best = 0, None
        for b in sorted(items, key=lambda a: a.send):
            while i < len(by_recv) and by_recv[i].recv < b.send:
                if best is None or by_recv[i].hi > best.hi:
                    best = by_recv[i]
                i += 1
            if best is not None and b.lo <= best.hi:
                count += 1
                if len(examples) < EXAMPLES:
                    examples.append({"key": key, "earlier": best.describe(),
                                     "later": b.describe(),
                                     "gap_s": round(b.send - best.recv, 3)})
    return count, examples


def unexpected_errors(answers):
    """Answers outside the contract (bad error codes, malformed answers)."""
    bad = [a for a in answers if not a.ok and not a.expected]
    kinds = collections.Counter(a.error for a in bad)
    return len(bad), dict(kinds), [a.describe() for a in bad[:EXAMPLES]]


def check_history(answers):
    """The safety verdict of a history: duplicates, order violations and
    answers outside the contract, with examples."""
    dups, dup_examples = find_duplicates(answers)
    order, order_examples = find_order_violations(answers)
    bad, bad_kinds, bad_examples = unexpected_errors(answers)
    return {"duplicates": dups, "duplicate_examples": dup_examples,
            "order_violations": order, "order_examples": order_examples,
            "unexpected_errors": bad, "unexpected_kinds": bad_kinds,
            "unexpected_examples": bad_examples}


# --- the message checker ----------------------------------------------------------

# The message verdict's fields that fail a run, with what they count.
MSG_FAILURES = (
    ("holes", "seqs missing from a conversation's 1..max (holes)"),
    ("seqs_twice", "seqs stored twice"),
    ("lost", "acked messages not stored"),
    ("misplaced", "acked messages stored at another seq or with other content"),
    ("disagreeing", "messages whose answers disagree (seq, server message id, duplicate)"),
    ("stored_twice", "extra copies of stored messages"),
    ("unknown_stored", "stored messages never sent"),
    ("order_violations", "message real-time order violations"),
    ("unexpected_errors", "message answers outside the contract"),
)


def message_acks(attempts):
    """Attempts grouped by message, in send order, and per message with an
    answer (first answer, stamp): `stamp` is the earliest send that can have
    stored it, the send of the attempt answered duplicate = false (that one
    stored it) or, if every answer is a duplicate, of the first attempt (one
    whose outcome the client never learned stored it). Returns (tries by
    message, acks by message)."""
    tries = collections.OrderedDict()
    for a in sorted(attempts, key=lambda a: a.send):
        tries.setdefault(a.msg[:3], []).append(a)
    acks = {}
    for name, ts in tries.items():
        answers = sorted((a for a in ts if a.ok), key=lambda a: a.recv)
        if answers:
            first = answers[0]
            acks[name] = (first, first.send if not first.duplicate else ts[0].send)
    return tries, acks


def find_message_order_violations(acks):
    """Per conversation, messages B with seq(B) <= seq(A) for a message A
    whose first ack was received before B's stamp (A.recv < stamp(B)): the
    sweep of find_order_violations, B by stamp while the acks received
    before it feed a running maximum. O(n log n). Returns (count, examples,
    pairs): `pairs` counts the (A, B) pairs so ordered, i.e. checked."""
    per_conv = collections.defaultdict(list)
    for (conv, _, _), ack in acks.items():
        per_conv[conv].append(ack)
    count, examples, pairs = 0, [], 0
    for conv, items in sorted(per_conv.items()):
        by_recv = sorted(items, key=lambda fs: fs[0].recv)
        i, best = 0, None
        for b, stamp in sorted(items, key=lambda fs: fs[1]):
            while i < len(by_recv) and by_recv[i][0].recv < stamp:
                if best is None or by_recv[i][0].seq > best.seq:
                    best = by_recv[i][0]
                i += 1
            pairs += i
            if best is not None and b.seq <= best.seq:
                count += 1
                if len(examples) < EXAMPLES:
                    examples.append({"conv": conv, "earlier": best.describe(),
                                     "later": b.describe(),
                                     "gap_s": round(stamp - best.recv, 3)})
    return count, examples, pairs


def check_messages(attempts, stored):
    """The verdict on a message history: `attempts` (MsgAttempt) and
    `stored`, {conv: [(seq, server_msg_id, sender, client_msg_id, payload,
    status), ...]} as pulled. Counts (MSG_FAILURES's fields fail a run, the
    others inform) and examples."""
    v = dict.fromkeys((f for f, _ in MSG_FAILURES), 0)
    examples = collections.defaultdict(list)

    def bad(field, text, n=1):
        v[field] += n
        if len(examples[field]) < EXAMPLES:
            examples[field].append(text)

    tries, acks = message_acks(attempts)
    for name, ts in tries.items():
        if name not in acks:
            continue
        first = acks[name][0]
        for a in ts:
            if a.ok and a is not first and ((a.seq, a.msg_id) != (first.seq, first.msg_id)
                                            or not a.duplicate):
                bad("disagreeing", "first answer %s; later %s" % (first.describe(),
                                                                  a.describe()))
                break
    rows_by_msg = collections.defaultdict(list)
    for conv, rows in sorted(stored.items()):
        seqs = collections.Counter(r[0] for r in rows)
        top = max(seqs, default=0)
        missing = [q for q in range(1, top + 1) if q not in seqs] + [q for q in seqs if q < 1]
        if missing:
            bad("holes", "%s: %d stored, max %d, missing %s" % (
                conv, len(rows), top, missing[:10]), len(missing))
        for q, c in sorted(seqs.items()):
            if c > 1:
                bad("seqs_twice", "%s: seq %d stored %d times" % (conv, q, c), c - 1)
        for r in rows:
            rows_by_msg[(conv, r[2], r[3])].append(r)
    for name, rows in sorted(rows_by_msg.items()):
        if len(rows) > 1:
            bad("stored_twice", "%s/%s/%s stored at seqs %s" % (
                name + ([r[0] for r in rows],)), len(rows) - 1)
        if name not in tries:
            bad("unknown_stored", "%s/%s/%s stored at seq %d, never sent" % (
                name + (rows[0][0],)))
    for name, (first, _) in sorted(acks.items()):
        rows = rows_by_msg.get(name)
        if not rows:
            bad("lost", "acked, not stored: %s" % first.describe())
        elif not any((r[0], r[1], r[4]) == (first.seq, first.msg_id, first.msg.payload)
                     for r in rows):
            bad("misplaced", "acked %s; stored as %s" % (first.describe(), rows[:2]))
    order, order_examples, pairs = find_message_order_violations(acks)
    v["order_violations"] = order
    for a in attempts:
        if not a.ok and not a.expected:
            bad("unexpected_errors", a.describe())
    answers = [a for a in attempts if a.ok]
    unresolved = [n for n in tries if n not in acks]
    v.update({
        "messages": len(tries), "acked": len(acks), "unresolved": len(unresolved),
        "unresolved_stored": sum(1 for n in unresolved if n in rows_by_msg),
        "attempts": len(attempts), "answers": len(answers),
        "resends": sum(1 for a in attempts if a.kind == "retry"),
        "sent_again": sum(1 for a in attempts if a.kind == "again"),
        "duplicate_answers": sum(1 for a in answers if a.duplicate),
        "stored": sum(len(rows) for rows in stored.values()),
        "max_seqs": {c: max((r[0] for r in rows), default=0) for c, rows in sorted(stored.items())},
        "order_pairs": pairs,
        "by_interface": dict(collections.Counter(a.iface for a in answers)),
        "errors": dict(collections.Counter(a.error for a in attempts if not a.ok).most_common()),
        "order_examples": order_examples, "examples": dict(examples),
    })
    return v


# --- self-test ------------------------------------------------------------------

def self_test():
    """Both checkers' self-tests; returns the number of histories judged."""
    return history_self_test() + message_self_test()


def history_self_test():
    """Proves the ID checker can fail: synthetic histories with a duplicate,
    an order violation (against the latest and against an older answer,
    with several ranges), near misses that must pass (concurrent
    inversions, a send at the very instant of a receive, separate keys,
    errors), and 300 random histories compared with an O(n^2) brute force.
    Raises AssertionError on any mismatch; returns the count."""
    def A(send, recv, *ranges, key="k", error=None, expected=True):
        return Answer(key, "http", "s1", send, recv, tuple(ranges) or None, error, expected)

    cases = [
        ("sequential", [A(0, 1, (1, 2)), A(2, 3, (3, 3)), A(4, 5, (4, 9))], 0, 0, 0),
        ("concurrent share an id", [A(0, 2, (1, 5)), A(1, 3, (5, 6))], 1, 0, 0),
        ("stale after an answer", [A(0, 1, (10, 10)), A(2, 3, (5, 5))], 0, 1, 0),
        ("equal id later", [A(0, 1, (10, 10)), A(2, 3, (10, 10))], 1, 1, 0),
        ("concurrent inversion", [A(0, 2, (10, 10)), A(1, 3, (5, 5))], 0, 0, 0),
        ("send at recv instant", [A(0, 1, (10, 10)), A(1, 2, (5, 5))], 0, 0, 0),
        ("older answer holds the max", [A(0, 1, (100, 100)), A(0.5, 2, (50, 50)),
                                        A(3, 4, (70, 70))], 0, 1, 0),
        ("gap inside a multi-range", [A(0, 1, (1, 5), (10, 12)), A(2, 3, (6, 9))], 0, 1, 0),
        ("keys are separate", [A(0, 1, (5, 5), key="a"), A(2, 3, (5, 5), key="b")], 0, 0, 0),
        ("errors carry no ids", [A(0, 1, (5, 5)), A(2, 3, error="transport:timeout"),
                                 A(2, 4, error="http:500 internal", expected=False)], 0, 0, 1),
        ("triple overlap", [A(0, 9, (1, 10)), A(0, 9, (5, 20)), A(0, 9, (8, 9))], 8, 0, 0),
    ]
    for name, history, dups, order, bad in cases:
        v = check_history(history)
        got = (v["duplicates"], v["order_violations"], v["unexpected_errors"])
        assert got == (dups, order, bad), "self-test %r: got %r, want %r" % (
            name, got, (dups, order, bad))
    rng = random.Random(7)
    for _ in range(300):
        history = []
        for _ in range(rng.randint(1, 40)):
            send = rng.uniform(0, 10)
            first = rng.randint(1, 60)
            history.append(A(send, send + rng.uniform(0, 2), (first, first + rng.randint(0, 3)),
                             key=rng.choice("ab")))
        v = check_history(history)
        assert (v["duplicates"], v["order_violations"]) == brute_force(history), \
            "self-test: random history disagrees with the brute force"
    return len(cases) + 300


def message_self_test():
    """Proves the message checker can fail: histories with a hole, a lost or
    misplaced ack, a re-send answered with another seq or as new, a message
    stored twice or never sent, order violations (one against an older ack,
    one by a re-send that stored the message after another was acked), and
    near misses that must pass (concurrent inversions, a send at the very
    instant of an ack, a re-send answered duplicate after an unknown outcome,
    unresolved messages stored or not, separate conversations); then 200
    random histories against an O(n^2) order check. Returns the count."""
    def M(cmid, conv="c"):
        return Msg(conv, "u", cmid, "payload " + cmid)

    def T(m, send, recv, seq=None, dup=False, kind="first", error="transport:timeout",
          expected=True):
        if seq is None:
            return MsgAttempt(m, kind, "http", "s1", send, recv, error=error, expected=expected)
        return MsgAttempt(m, kind, "http", "s1", send, recv, (seq, 1000 + seq, dup))

    def R(m, seq, msg_id=None):
        return (seq, msg_id or 1000 + seq, m.sender, m.cmid, m.payload, "normal")

    a, b, c, d, x = M("a"), M("b"), M("c"), M("d"), M("x")
    seq3 = [T(a, 0, 1, 1), T(b, 2, 3, 2), T(c, 4, 5, 3)]
    rows3 = [R(a, 1), R(b, 2), R(c, 3)]
    cases = [
        ("clean", seq3, {"c": rows3}, {}),
        ("a hole", [T(a, 0, 1, 1), T(b, 2, 3), T(c, 4, 5, 3)], {"c": [R(a, 1), R(c, 3)]},
         {"holes": 1}),
        ("lost ack at the end", seq3, {"c": rows3[:2]}, {"lost": 1}),
        ("lost ack in the middle", seq3, {"c": [R(a, 1), R(c, 3)]}, {"lost": 1, "holes": 1}),
        ("conversation never stored", seq3, {}, {"lost": 3}),
        ("stored at other seqs", seq3, {"c": [R(a, 1), R(c, 2), R(b, 3)]}, {"misplaced": 2}),
        ("stored with another server msg id", seq3, {"c": [R(a, 1), R(b, 2, 7), R(c, 3)]},
         {"misplaced": 1}),
        ("a seq stored twice", seq3, {"c": rows3 + [R(x, 3)]},
         {"seqs_twice": 1, "unknown_stored": 1}),
        ("stored twice", seq3, {"c": rows3 + [R(a, 4)]}, {"stored_twice": 1}),
        ("never sent", seq3, {"c": rows3 + [R(x, 4)]}, {"unknown_stored": 1}),
        ("re-send got another seq", seq3 + [T(a, 6, 7, 2, dup=True, kind="again")],
         {"c": rows3}, {"disagreeing": 1}),
        ("re-send answered as new", seq3 + [T(a, 6, 7, 1, kind="again")], {"c": rows3},
         {"disagreeing": 1}),
        ("re-send answered its first seq", seq3 + [T(a, 6, 7, 1, dup=True, kind="again")],
         {"c": rows3}, {}),
        ("stale after an ack", [T(a, 0, 1, 2), T(b, 2, 3, 1)], {"c": [R(b, 1), R(a, 2)]},
         {"order_violations": 1}),
        ("older ack holds the max", [T(a, 0, 1, 3), T(b, 0.5, 2, 1), T(c, 3, 4, 2)],
         {"c": [R(b, 1), R(c, 2), R(a, 3)]}, {"order_violations": 1}),
        ("concurrent inversion", [T(a, 0, 2, 2), T(b, 1, 3, 1)], {"c": [R(b, 1), R(a, 2)]}, {}),
        ("send at the ack's instant", [T(a, 0, 1, 2), T(b, 1, 2, 1)],
         {"c": [R(b, 1), R(a, 2)]}, {}),
        ("re-send answered duplicate after an unknown outcome",
         [T(b, 0, 1), T(a, 1.5, 2, 2), T(b, 3, 4, 1, dup=True, kind="retry")],
         {"c": [R(b, 1), R(a, 2)]}, {}),
        ("re-send stored after another ack got a lower seq",
         [T(b, 0, 1), T(a, 1.5, 2, 2), T(b, 3, 4, 1, kind="retry")],
         {"c": [R(b, 1), R(a, 2)]}, {"order_violations": 1}),
        ("unresolved, not stored", seq3 + [T(d, 6, 7), T(d, 8, 9, kind="retry")],
         {"c": rows3}, {}),
        ("unresolved, stored", seq3 + [T(d, 6, 7)], {"c": rows3 + [R(d, 4)]}, {}),
        ("error outside the contract", seq3 + [T(d, 6, 7, error="http:500 internal",
                                                 expected=False)],
         {"c": rows3}, {"unexpected_errors": 1}),
        ("conversations are separate", [T(a, 0, 1, 1), T(M("b", "e"), 2, 3, 1)],
         {"c": [R(a, 1)], "e": [R(M("b", "e"), 1)]}, {}),
    ]
    for name, attempts, stored, want in cases:
        v = check_messages(attempts, stored)
        got = {f: v[f] for f, _ in MSG_FAILURES if v[f]}
        assert got == want, "message self-test %r: got %r, want %r" % (name, got, want)
    rng = random.Random(11)
    for _ in range(200):
        attempts = []
        for n in range(rng.randint(1, 30)):
            m = M("m%d" % n, conv=rng.choice("ef"))
            send = rng.uniform(0, 10)
            if rng.random() < 0.3:
                attempts.append(T(m, send, send + rng.uniform(0, 2)))
                send += rng.uniform(0, 3)
            attempts.append(T(m, send, send + rng.uniform(0, 2), rng.randint(1, 40),
                              dup=rng.random() < 0.3))
        v = check_messages(attempts, {})
        assert v["order_violations"] == message_brute_force(attempts), \
            "message self-test: random history disagrees with the brute force"
    return len(cases) + 200


def message_brute_force(attempts):
    """Messages B with seq(B) <= seq(A) for some A acked before B's stamp, by
    the definitions, O(n^2)."""
    names = {a.msg for a in attempts}
    acks = {}
    for m in names:
        ts = sorted((a for a in attempts if a.msg == m), key=lambda a: a.send)
        answered = [a for a in ts if a.ok]
        first = min(answered, key=lambda a: a.recv)
        acks[m] = (first, first.send if not first.duplicate else ts[0].send)
    return sum(1 for mb, (b, stamp) in acks.items() if any(
        ma.conv == mb.conv and a.recv < stamp and b.seq <= a.seq
        for ma, (a, _) in acks.items()))


def brute_force(history):
    """(extra copies of IDs, violating answers) by the definitions, O(n^2)."""
    ids = collections.Counter((a.key, i) for a in history if a.ok
                              for f, l in a.ranges for i in range(f, l + 1))
    dups = sum(c - 1 for c in ids.values())
    order = sum(1 for b in history if b.ok and any(
        a.ok and a.key == b.key and a.recv < b.send and b.lo <= a.hi for a in history))
    return dups, order
