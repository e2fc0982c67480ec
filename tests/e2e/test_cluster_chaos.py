#!/usr/bin/env python3
"""Chaos test of cluster mode: per key, IDs are unique and linearizable
across the whole cluster while instances and MariaDB fail.

The promise under test: for every key, no ID is answered twice, and if
request A's answer came back before request B was sent, every ID in B is
above every ID in A, whichever instances A and B went to. And the message
store stays gap-free and stamps seqs in real-time order; every acked
message is present.

Setup (tests/e2e/lib/mariadb.py, lib/cluster.py): a MariaDB of the test's
own (scripts/mariadb.sh in a temp dir, so it can be frozen, killed and
restarted) and 3 seqd in cluster mode with small auto-created steps (ck*:
100, cz*: 1) and a small --max-step, so reservations, i.e. fenced
transactions, are frequent all along.

Load (lib/load.py, lib/clients.py): 6 client threads, each in a loop: a
random running instance (leaving ones included; frozen ones for one prober
thread only, the others resume sending to a thawed instance at once), one
of 8 keys, one of 5 interfaces (HTTP GET /seq/KEY, HTTP ?count=N, binary
NEXT_IDS, RESP INCR, RESP INCRBY). Every request is recorded with its send
and receive time (time.monotonic(), one process) and its IDs or its error.

Messages: 2 sender threads, each in a loop: a new message (a client_msg_id
unique in the run) to one of 4 conversations, sent to a random running
instance (one sender also to frozen ones) over HTTP POST
/conversations/CONV/messages or binary SEND. An error or a timeout leaves
the outcome unknown: the same message (same sender and client_msg_id) is
sent again to a random instance until one attempt is answered, for up to
30 s (then it is unresolved: allowed, but an acked message must never be
lost). Now and then an acked message is sent once more on purpose: the
answer must be its first one (duplicate). Every attempt is recorded with
its send and receive time and its seq, server message id and duplicate
flag, or its error.

Subscribers (tests/e2e/lib/subscribers.py), started before the load and
riding through every fault, on every conversation: `seqctl msg subscribe`
(the C++ client's resubscribing Subscribe) given the three slots' binary
ports (a replacement instance takes the port of the one it replaces), and
three SSE clients that reconnect to a random running instance after any
disconnect or stall, resuming by Last-Event-ID, by ?from=N, and on the
multi-conversation stream by its resume token. seqd runs with SSE
heartbeats every second.

Nemesis (lib/chaos.py; one fault at a time, a settling pause between,
the kinds in a seeded shuffled order, each cycle running every kind):
  kill_instance  kill -9 a random instance, start a fresh one ~1 s later
  stop_owner     SIGSTOP the owner of a random key (every second time of a
                 conversation; from seqd_shard_lease) for 2.5 leases, then
                 SIGCONT: it must not answer from its stale buffers. Late
                 probes: 0.3 s before the SIGCONT, one request per key and
                 interface and one new message per conversation and
                 interface are sent to the frozen instance, i.e. after
                 other instances answered for its keys; they are answered
                 once it is thawed (a message probe that fails is re-sent
                 as above).
  freeze_db      SIGSTOP mariadbd for 2 s, then SIGCONT
  kill_db        kill -9 mariadbd, restart it ~1 s later on the same port
  leave_join     SIGTERM a random instance (a clean leave), start a new one

Checks (lib/checkers.py; exit 1 if any fails):
  - per key, 0 IDs answered twice across all successful answers;
  - per key, 0 real-time order violations: for every pair A, B of answers
    with A.recv < B.send, min(B) > max(A);
  - every answer is well formed (the IDs asked for, ascending ranges) and
    every error is one the contract allows (503 store_unavailable /
    STORE_UNAVAILABLE, shutting down, a dropped or refused connection or a
    timeout, RESP INCRBY's "no contiguous block");
  - at least MIN_ANSWERS successful answers;
  - every fault kind ran;
  - no instance died unless the nemesis killed it;
  - after the nemesis stops and 2 leases of settling, one request per
    running instance, key and interface, and one message per running
    instance, conversation and interface, all succeed;
  - messages: every conversation is then pulled completely, over HTTP from
    one instance and over PULL_RANGE from another (the two must agree), and
    per conversation
      the stored seqs are exactly 1..n (no hole, no seq twice);
      every acked message is stored, at the seq it was acked with, with its
      server message id, sender, client_msg_id and payload;
      every answer for one message (first send, re-sends) carries the same
      seq and server message id, and every answer after the first one is a
      duplicate;
      each message is stored at most once, and nothing stored was never
      sent;
      real-time order: if message A's first ack was received before message
      B could be stamped, seq(B) > seq(A). B could be stamped from the send
      of the attempt whose answer was duplicate = false (that attempt
      stored it), or, if B's answers are all duplicates, from the send of
      B's first attempt (an earlier attempt with an unknown outcome stored
      it);
    every message error is one the contract allows, and at least
    MIN_MESSAGES messages are acked;
  - subscribers: once the senders stopped, each delivers every acked
    message within QUIET_WAIT_S with no message after it (a push lost
    around an owner move must still arrive), and after the final round
    every stored one within FINAL_WAIT_S; then per subscriber and
    conversation the delivered seqs are exactly the stored seqs (from 1),
    each once, in increasing order, with the stored server message id,
    sender, client_msg_id and payload.
Figures (answers per interface, errors by kind, per fault the longest time a
key and a conversation went without a successful answer, messages acked,
re-sent, unresolved and stored) are printed, and written with --json.

--self-test feeds the checker synthetic histories (with duplicates, order
violations and near misses, and random ones against a brute-force check;
message histories with a hole, a lost or misplaced ack, a seq that changed
on a re-send, a message stored twice, order violations and near misses;
subscriber deliveries with a gap, a duplicate, disorder, a wrong payload)
and exits; every run does it first, so a pass is never a checker that
cannot fail.

Usage: python3 tests/e2e/test_cluster_chaos.py [--seconds 60] [--seed S]
           [--lease-ms 2000] [--json PATH] [--history PATH] [--keep] [-v]
           [--self-test]
Environment: SEQD_BINARY (default build/seqd), SEQCTL_BINARY (default
client/seqctl next to it). Needs mariadbd (Debian's
mariadb-server; scripts/deps.sh --test installs it).
"""
import bisect
import collections
import json
import os
import random
import re
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import chaos, checkers, subscribers  # noqa: E402
from lib.chaos import FAULTS, Nemesis  # noqa: E402
from lib.checkers import EXAMPLES, MSG_FAILURES, Msg  # noqa: E402
from lib.checkers import by_key, check_history, check_messages  # noqa: E402
from lib.clients import SOCKET_TIMEOUT_S, TRANSPORT_ERRORS, Connections, ServerError  # noqa: E402
from lib.cluster import Cluster, Workspace  # noqa: E402
from lib.load import (CONVS, INTERFACES, KEYS, MSG_INTERFACES, MSG_RESOLVE_S,  # noqa: E402
                      SEQD_FLAGS, Client, Sender)
from lib.mariadb import MariaDB  # noqa: E402
from lib.moves import Mover  # noqa: E402
from lib.progress import log, rel  # noqa: E402

INSTANCES = 3
SEQCTL = os.environ.get("SEQCTL_BINARY", os.path.join(
    os.path.dirname(os.environ.get("SEQD_BINARY", "build/seqd")), "client", "seqctl"))
CLIENT_THREADS = 6
PROBERS = 1             # client threads that also send to frozen instances
MIN_ANSWERS = 2000
MSG_SENDERS = 2
MSG_PROBERS = 1         # sender threads that also send to frozen instances
WAIT_TAIL_S = 1.0  # a fault's "longest wait" counts requests sent up to this long after it
MIN_MESSAGES = 200
QUIET_WAIT_S = 10.0     # subscribers deliver every acked message this soon after the load
FINAL_WAIT_S = 15.0     # ... and every stored one this soon after the final round


# --- figures ---------------------------------------------------------------------

def availability(answers, faults, end, msg_attempts=()):
    """Per fault: the longest time any key went without a successful answer
    (by receive time) between the fault's start and the next fault's start
    (or `end`), counting from the fault's start; the same for conversations
    and answered message sends. Informative only."""
    recvs = {k: sorted(a.recv for a in v) for k, v in by_key(answers).items()}
    msg_recvs = collections.defaultdict(list)
    for a in msg_attempts:
        if a.ok:
            msg_recvs[a.msg.conv].append(a.recv)
    for times in msg_recvs.values():
        times.sort()
    # Answered requests by send time, for the slowest one sent during a fault
    # or within WAIT_TAIL_S after it:
    # how long a request waited for its key's shard (the gaps above also
    # count time when the clients sent nothing for a key).
    answered = sorted((a.send, a.recv - a.send) for a in answers if a.ok)
    answered += [(a.send, a.recv - a.send) for a in msg_attempts if a.ok]
    answered.sort()
    sends = [t for t, _ in answered]
    out = []
    for n, f in enumerate(faults):
        w0, w1 = f["start"], faults[n + 1]["start"] if n + 1 < len(faults) else end
        worst, worst_key = longest_gap(recvs, KEYS, w0, w1)
        msg_worst, msg_worst_conv = longest_gap(msg_recvs, CONVS, w0, w1)
        # Requests sent during the fault or in the second after it.
        lo = bisect.bisect_left(sends, w0)
        hi = bisect.bisect_right(sends, min(w1, f["end"] + WAIT_TAIL_S))
        wait = max((d for _, d in answered[lo:hi]), default=0.0)
        out.append({"kind": f["kind"], "start": rel(f["start"]), "end": rel(f["end"]),
                    "target": f["target"], "detail": f["detail"],
                    "max_gap_s": round(worst, 3), "gap_key": worst_key,
                    "msg_max_gap_s": round(msg_worst, 3), "msg_gap_conv": msg_worst_conv,
                    "max_wait_s": round(wait, 3)})
    return out


def gaps_by_kind(faults):
    """Per fault kind: count, and the median and max of the longest gap
    (IDs, messages) and of the longest answered request's wait."""
    out = {}
    for kind in sorted({f["kind"] for f in faults}):
        mine = [f for f in faults if f["kind"] == kind]
        row = {"faults": len(mine)}
        for field in ("max_gap_s", "msg_max_gap_s", "max_wait_s"):
            values = sorted(f[field] for f in mine)
            row[field] = {"median": values[len(values) // 2], "max": values[-1]}
        out[kind] = row
    return out


def longest_gap(recvs, names, w0, w1):
    """(gap, name): the longest time from `w0` to `w1` one of `names` went
    without a time in its sorted list `recvs[name]`."""
    worst, worst_name = 0.0, None
    for name in names:
        times = recvs.get(name, [])
        lo, hi = bisect.bisect_left(times, w0), bisect.bisect_right(times, w1)
        prev, gap = w0, 0.0
        for t in times[lo:hi] + [w1]:
            gap, prev = max(gap, t - prev), t
        if gap > worst:
            worst, worst_name = gap, name
    return worst, worst_name


# --- self-test ------------------------------------------------------------------

def self_test():
    """Proves the run can fail: the checkers' and the subscribers' self-tests
    (lib/checkers.py, lib/subscribers.py), then failures_of on a clean run
    and on each failure. Raises AssertionError on any mismatch; returns the
    number of histories judged."""
    n = checkers.self_test() + subscribers.self_test()
    clean_messages = dict(dict.fromkeys((f for f, _ in MSG_FAILURES), 0),
                          acked=MIN_MESSAGES, pull_problems=[])
    clean = {"duplicates": 0, "order_violations": 0, "unexpected_errors": 0,
             "unexpected_kinds": {}, "answers_ok": MIN_ANSWERS,
             "faults_by_kind": dict.fromkeys(FAULTS, 1),
             "final_round": {"requests": 1, "failed": []}, "messages": clean_messages}
    assert failures_of(clean, [], []) == [], "self-test: a clean run must pass"
    for field, value in (("duplicates", 1), ("order_violations", 1), ("unexpected_errors", 1),
                         ("answers_ok", MIN_ANSWERS - 1), ("faults_by_kind", {})):
        assert failures_of(dict(clean, **{field: value}), [], []), \
            "self-test: %s=%r must fail the run" % (field, value)
    for field, value in [(f, 1) for f, _ in MSG_FAILURES] + [
            ("acked", MIN_MESSAGES - 1), ("pull_problems", ["http pull failed"])]:
        assert failures_of(dict(clean, messages=dict(clean_messages, **{field: value})),
                           [], []), "self-test: messages %s=%r must fail the run" % (field, value)
    return n


# --- the run ---------------------------------------------------------------------

def final_round(cluster):
    """One request per running instance, key and interface, and one new
    message per running instance, conversation and interface (one attempt
    each), on fresh connections; returns (answers, message attempts)."""
    out, msgs = [], []
    for inst in cluster.up():
        conns = Connections()
        for key in KEYS:
            for iface in INTERFACES:
                out.append(conns.request(inst, key, iface, 3))
        for conv in CONVS:
            for iface in MSG_INTERFACES:
                cmid = "fin-%s-%s-%s" % (inst.name, conv, iface)
                msgs.append(conns.send_message(inst, Msg(conv, "fin", cmid, "final " + cmid),
                                               iface, "final"))
        conns.close()
    return out, msgs


def pull_conv(pull, conv):
    """Every message of `conv` by `pull(conv, from)` -> (rows, is_end), page
    after page."""
    rows, first = [], 1
    while True:
        page, is_end = pull(conv, first)
        rows.extend(page)
        if is_end:
            return rows
        if not page:
            raise ValueError("an empty page that is not the end, from %d" % first)
        first = page[-1][0] + 1


def pull_all(cluster):
    """Every conversation pulled completely, over HTTP from one running
    instance and over PULL_RANGE from another (the same one if only one
    runs), each tried 3 times. Returns ({conv: rows}, problems): the rows of
    the HTTP pull (the binary one's if that failed); a pull that failed or
    two pulls that disagree are problems."""
    insts = cluster.up()
    if not insts:
        return {}, ["no running instance to pull from"]
    pulls, problems = {}, []
    for iface, inst in (("http", insts[0]), ("binary", insts[1 % len(insts)])):
        conns = Connections()
        for conv in CONVS:
            for attempt in range(3):
                try:
                    c = conns.get(inst, iface)
                    pulls[(iface, conv)] = pull_conv(c.pull if iface == "http" else c.pull_range,
                                                     conv)
                    break
                except (ServerError, ValueError, KeyError, TypeError, struct.error,
                        *TRANSPORT_ERRORS) as e:
                    conns.drop(inst.name, iface)
                    if attempt == 2:
                        problems.append("pulling %s over %s from %s failed: %r" % (
                            conv, iface, inst.name, e))
                    time.sleep(0.5)
        conns.close()
    stored = {}
    for conv in CONVS:
        h, b = pulls.get(("http", conv)), pulls.get(("binary", conv))
        if h is not None and b is not None and h != b:
            diff = next((i for i, (x, y) in enumerate(zip(h, b)) if x != y), min(len(h), len(b)))
            problems.append("%s: the HTTP pull (%d rows) and PULL_RANGE (%d rows) disagree "
                            "from row %d: %r / %r" % (conv, len(h), len(b), diff, h[diff:diff + 1],
                                                      b[diff:diff + 1]))
        if h is not None or b is not None:
            stored[conv] = h if h is not None else b
    return stored, problems


def scan_logs(base):
    """WARN and ERROR lines of every seqd log, grouped with digits masked."""
    groups, count = collections.OrderedDict(), 0
    for name in sorted(os.listdir(base)):
        if not name.endswith(".log") or not name.startswith("s"):
            continue
        with open(os.path.join(base, name), errors="replace") as f:
            for line in f:
                if " WARN " in line or " ERROR " in line:
                    count += 1
                    text = line.split(" ", 1)[-1].strip()
                    pattern = re.sub(r"\d+", "N", text)
                    g = groups.setdefault(pattern, {"count": 0, "example": "%s: %s" % (
                        name[:-4], line.strip())})
                    g["count"] += 1
    ranked = sorted(groups.items(), key=lambda pg: -pg[1]["count"])
    return {"count": count, "groups": [dict(pattern=p, **g) for p, g in ranked]}


def cluster_metrics(cluster):
    """Cluster counters summed over the instances still running (killed
    ones took theirs with them). Informative only."""
    names = ("seqd_cluster_fenced_total", "seqd_cluster_takeovers_total",
             "seqd_cluster_handoffs_total", 'seqd_cluster_forwards_total{result="ok"}',
             'seqd_cluster_forwards_total{result="error"}', "seqd_cluster_owner_waits_total",
             "seqd_cluster_wrong_owner_total", 'seqd_cluster_rounds_total{result="error"}')
    totals = dict.fromkeys(names, 0)
    for inst in cluster.up():
        m = inst.metrics()
        for n in names:
            totals[n] += int(m.get(n, 0))
    return totals


def figures_of(args, answers, final, faults, end, started, messages=(), final_msgs=(),
               stored=None, pull_problems=()):
    """Every figure of the run, for the summary and --json. `messages`:
    every message attempt (the final round's included); `stored` the pulled
    conversations."""
    ok = [a for a in answers if a.ok]
    verdict = check_history(answers)
    msg_verdict = check_messages(messages, stored or {})
    msg_verdict["pull_problems"] = list(pull_problems)
    fault_figures = availability(answers, faults, end, messages)
    return {
        "seconds": args.seconds, "seed": args.seed, "lease_ms": args.lease_ms,
        "wall_s": round(time.monotonic() - started, 1),
        "answers_ok": len(ok), "answers_failed": len(answers) - len(ok),
        "ids": sum(l - f + 1 for a in ok for f, l in a.ranges),
        "by_interface": dict(collections.Counter(a.iface for a in ok)),
        "by_instance": dict(sorted(collections.Counter(a.inst for a in ok).items())),
        "errors": dict(collections.Counter(a.error for a in answers if not a.ok).most_common()),
        "faults": fault_figures,
        "faults_by_kind": dict(collections.Counter(f["kind"] for f in faults)),
        "gaps_by_kind": gaps_by_kind(fault_figures),
        "final_round": {"requests": len(final) + len(final_msgs),
                        "failed": [a.describe() for a in list(final) + list(final_msgs)
                                   if not a.ok]},
        **verdict,
        "messages": msg_verdict,
    }


def failures_of(fig, harness_errors, crashes):
    """The reasons the run fails; empty if it passes."""
    out = []
    if fig["duplicates"]:
        out.append("%d IDs answered twice" % fig["duplicates"])
    if fig["order_violations"]:
        out.append("%d real-time order violations" % fig["order_violations"])
    if fig["unexpected_errors"]:
        out.append("%d answers outside the contract: %s" % (fig["unexpected_errors"],
                                                            fig["unexpected_kinds"]))
    if fig["answers_ok"] < MIN_ANSWERS:
        out.append("only %d successful answers (want >= %d)" % (fig["answers_ok"], MIN_ANSWERS))
    missing = [k for k in FAULTS if k not in fig["faults_by_kind"]]
    if missing:
        out.append("faults that never ran: %s" % ", ".join(missing))
    m = fig["messages"]
    for field, what in MSG_FAILURES:
        if m[field]:
            out.append("%d %s" % (m[field], what))
    if m["acked"] < MIN_MESSAGES:
        out.append("only %d messages acked (want >= %d)" % (m["acked"], MIN_MESSAGES))
    out.extend("messages: %s" % p for p in m["pull_problems"])
    if fig["final_round"]["failed"]:
        out.append("%d of %d final-round requests failed" % (
            len(fig["final_round"]["failed"]), fig["final_round"]["requests"]))
    for c in crashes:
        out.append("%s exited by itself or with an error (code %s) at %.1f s" % (
            c["instance"], c["exit"], c["time"]))
    out.extend("harness error: %s" % e for e in harness_errors)
    return out


def write_history(path, answers, messages=()):
    """Every answer and message attempt as a JSON line (times in seconds
    since the start), in send order, for a closer look at a failed or slow
    run."""
    lines = [(a.send, {"key": a.key, "iface": a.iface, "inst": a.inst, "send": rel(a.send),
                       "recv": rel(a.recv), "ranges": a.ranges, "error": a.error})
             for a in answers]
    lines += [(a.send, {"conv": a.msg.conv, "sender": a.msg.sender, "cmid": a.msg.cmid,
                        "kind": a.kind, "iface": a.iface, "inst": a.inst, "send": rel(a.send),
                        "recv": rel(a.recv), "seq": a.seq, "server_msg_id": a.msg_id,
                        "duplicate": a.duplicate, "error": a.error})
              for a in messages]
    with open(path, "w") as f:
        for _, line in sorted(lines, key=lambda tl: tl[0]):
            f.write(json.dumps(line) + "\n")


def print_summary(fig, failures):
    p = print
    p("cluster chaos: %d s, seed %d, lease %d ms, wall %.1f s" % (
        fig["seconds"], fig["seed"], fig["lease_ms"], fig["wall_s"]))
    p("answers: %d ok (%d IDs), %d failed; by interface %s" % (
        fig["answers_ok"], fig["ids"], fig["answers_failed"], fig["by_interface"]))
    p("by instance: %s" % fig["by_instance"])
    p("errors: %s" % fig["errors"])
    p("faults run: %s" % fig["faults_by_kind"])
    for f in fig["faults"]:
        p("  %7.2f-%7.2f s %-13s %-14s longest gap %.3f s (%s), messages %.3f s (%s), "
          "longest wait %.3f s %s" % (
              f["start"], f["end"], f["kind"], f["target"], f["max_gap_s"], f["gap_key"],
              f["msg_max_gap_s"], f["msg_gap_conv"], f["max_wait_s"], f["detail"]))
    for kind, row in fig["gaps_by_kind"].items():
        p("  %-13s x%-3d gap median %.3f max %.3f s; messages median %.3f max %.3f s; "
          "wait median %.3f max %.3f s" % (
              kind, row["faults"], row["max_gap_s"]["median"], row["max_gap_s"]["max"],
              row["msg_max_gap_s"]["median"], row["msg_max_gap_s"]["max"],
              row["max_wait_s"]["median"], row["max_wait_s"]["max"]))
    p("duplicates: %d; order violations: %d; answers outside the contract: %d" % (
        fig["duplicates"], fig["order_violations"], fig["unexpected_errors"]))
    for e in fig["duplicate_examples"]:
        p("  duplicate %s %s:\n    %s\n    %s" % (e["key"], e["ids"], e["a"], e["b"]))
    for e in fig["order_examples"]:
        p("  order %s (sent %.3f s after):\n    earlier %s\n    later   %s" % (
            e["key"], e["gap_s"], e["earlier"], e["later"]))
    for e in fig["unexpected_examples"]:
        p("  outside the contract: %s" % e)
    m = fig["messages"]
    p("messages: %d sent, %d acked, %d unresolved (%d of them stored); %d attempts: %d answered "
      "(%d duplicates), %d re-sends after an unknown outcome, %d sent again on purpose; "
      "by interface %s" % (m["messages"], m["acked"], m["unresolved"], m["unresolved_stored"],
                           m["attempts"], m["answers"], m["duplicate_answers"], m["resends"],
                           m["sent_again"], m["by_interface"]))
    p("message errors: %s" % m["errors"])
    p("stored: %d messages, max seqs %s" % (m["stored"], m["max_seqs"]))
    p("holes: %d; seqs twice: %d; acked lost: %d; misplaced: %d; answers disagreeing: %d; "
      "stored twice: %d; never sent: %d; order violations: %d (%d ordered pairs checked); "
      "outside the contract: %d" % (
          m["holes"], m["seqs_twice"], m["lost"], m["misplaced"], m["disagreeing"],
          m["stored_twice"], m["unknown_stored"], m["order_violations"], m["order_pairs"],
          m["unexpected_errors"]))
    for field, texts in m["examples"].items():
        for t in texts:
            p("  %s: %s" % (field, t))
    for e in m["order_examples"]:
        p("  message order %s (stamped %.3f s after):\n    earlier %s\n    later   %s" % (
            e["conv"], e["gap_s"], e["earlier"], e["later"]))
    for e in m["pull_problems"]:
        p("  pull: %s" % e)
    p("final round: %d requests, %d failed" % (fig["final_round"]["requests"],
                                                len(fig["final_round"]["failed"])))
    for e in fig["final_round"]["failed"][:EXAMPLES]:
        p("  %s" % e)
    if "subscribers" in fig:
        p("subscribers (seconds to catch up after the load / after the final round):")
        subscribers.print_figures(fig["subscribers"], fig["subscriber_verdict"], p)
    p("cluster metrics (running instances): %s" % fig.get("cluster_metrics"))
    for mv in fig.get("moves", []):
        p("shard move: %s" % mv)
    logs = fig.get("seqd_logs", {})
    p("seqd WARN/ERROR lines: %d" % logs.get("count", 0))
    for g in logs.get("groups", [])[:12]:
        p("  %4d x %s" % (g["count"], g["example"][:220]))
    p("PASS" if not failures else "FAIL:\n  " + "\n  ".join(failures))


def store_groups(db, base, groups, ws):
    """With `groups` > 1: that many MariaDB servers (`db` the home group's,
    g1) and the seqd flags naming them; else ([db], SEQD_FLAGS)."""
    dbs = [db]
    for i in range(1, groups):
        sub = os.path.join(base, "g%d" % (i + 1))
        os.makedirs(sub)
        other = MariaDB(sub)
        ws.on_cleanup(other.stop)
        dbs.append(other)
    flags = list(SEQD_FLAGS)
    if groups > 1:
        for i, d in enumerate(dbs):
            flags += ["--store-group", "g%d=%s" % (i + 1, d.url)]
    return dbs, flags


def start_subscribers(cluster, rng, base):
    """The push subscribers of lib/subscribers.py on every conversation: the
    binary one over every slot's port, the SSE ones reconnecting to a
    random running instance; started before any message is sent."""
    def pick():
        insts = cluster.reachable(False)
        return rng.choice(insts).http_port if insts else None

    return subscribers.start_subscribers(
        CONVS, ["127.0.0.1:%d" % p for p in cluster.binary_ports], pick, threading.Event(),
        base)


def run(args):
    """Starts MariaDB and the cluster, runs load and nemesis, checks; returns
    the exit code. Everything started is stopped whatever happens."""
    started = time.monotonic()
    ws = Workspace("seqd-chaos-", keep=args.keep)
    base = ws.base
    stop = threading.Event()
    mover = None
    try:
        db = MariaDB(base)
        ws.on_cleanup(db.stop)
        log("MariaDB at %s (pid %s)" % (db.url.split("@")[-1], db.pid()))
        dbs, flags = store_groups(db, base, args.groups, ws)
        cluster = Cluster(db.url, args.lease_ms, base, flags, INSTANCES)
        ws.on_cleanup(cluster.kill_all)
        for _ in range(INSTANCES):
            cluster.start_instance()
        subs = start_subscribers(cluster, random.Random(args.seed ^ 0x5eed), base)
        ws.on_cleanup(lambda: [sub.stop() for sub in subs])
        rng = random.Random(args.seed)
        clients = [Client(cluster, rng.getrandbits(32), stop, prober=n < PROBERS)
                   for n in range(CLIENT_THREADS)]
        for c in clients:
            c.start()
        senders = [Sender(cluster, rng.getrandbits(32), stop, n, prober=n < MSG_PROBERS)
                   for n in range(MSG_SENDERS)]
        for t in senders:
            t.start()
        lease_s = args.lease_ms / 1000.0
        nemesis = Nemesis(cluster, db, random.Random(rng.getrandbits(32)), lease_s,
                          time.monotonic() + args.seconds, dbs=dbs)
        if len(dbs) > 2:
            mover = Mover(cluster, ["g%d" % (i + 1) for i in range(len(dbs))], dbs, KEYS[0],
                          CONVS[0], SEQCTL, args.seconds / 4, broken=args.break_move)
            mover.start()
        nemesis.play_out()
        if mover:
            mover.join(max(0.0, args.seconds))
            log("moves: %s" % mover.moves)
        end = time.monotonic()
        stop.set()
        for c in clients:
            c.join(SOCKET_TIMEOUT_S + 5)
        # A message being re-sent is resolved now, or given up.
        msg_threads = senders + nemesis.msg_probes
        for t in msg_threads:
            t.join(max(0.0, end + MSG_RESOLVE_S + SOCKET_TIMEOUT_S + 5 - time.monotonic()))
        crashes = cluster.check_crashes()
        # No message follows now: a push lost with nothing after it must
        # still arrive (the C++ client's periodic MAX_SEQS, SSE's heartbeat).
        acked = {(a.msg.conv, a.seq) for t in msg_threads for a in t.attempts if a.ok}
        waits = {"quiet": subscribers.wait_delivered(subs, acked, QUIET_WAIT_S)}
        log("subscribers after the load: %s" % waits["quiet"])
        final, final_msgs = final_round(cluster)
        stored, pull_problems = pull_all(cluster)
        log("pulled %d messages of %d conversations" % (
            sum(len(r) for r in stored.values()), len(stored)))
        waits["final"] = subscribers.wait_delivered(
            subs, {(c, r[0]) for c, rows in stored.items() for r in rows}, FINAL_WAIT_S)
        for sub in subs:
            sub.stop()
        answers = [a for c in clients for a in c.answers] + nemesis.answers + final
        messages = [a for t in msg_threads for a in t.attempts] + final_msgs
        harness_errors = [e for e in [nemesis.error] + [t.error for t in clients + msg_threads]
                          if e]
        harness_errors += ["a client thread did not stop" for c in clients if c.is_alive()]
        harness_errors += ["a message sender did not stop" for t in msg_threads if t.is_alive()]
        harness_errors += ["the nemesis did not stop"] if nemesis.is_alive() else []
        if mover:
            harness_errors += [e for e in [mover.error] if e]
            harness_errors += ["the mover did not stop"] if mover.is_alive() else []
        fig = figures_of(args, answers, final, nemesis.faults, end, started, messages,
                         final_msgs, stored, pull_problems)
        fig["cluster_metrics"] = cluster_metrics(cluster)
        fig["moves"] = mover.moves if mover else []
        fig["seqd_logs"] = scan_logs(base)
        fig["crashes"] = crashes
        acked |= {(a.msg.conv, a.seq) for a in final_msgs if a.ok}
        sub_verdict = subscribers.check_deliveries(
            {sub.name: sub.snapshot() for sub in subs}, stored, acked)
        fig["subscribers"] = subscribers.subscriber_figures(subs, sub_verdict, waits)
        fig["subscriber_verdict"] = sub_verdict
        failures = failures_of(fig, harness_errors, crashes)
        failures += ["subscribers: %s" % f for f in subscribers.failures_of(
            sub_verdict, subs, waits)]
        fig["failures"], fig["passed"] = failures, not failures
    finally:
        stop.set()
        ws.cleanup()
    fig["wall_s"] = round(time.monotonic() - started, 1)
    print_summary(fig, failures)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(fig, f, indent=2)
    if args.history:
        write_history(args.history, answers, messages)
    if args.break_move:
        return 0 if caught_broken_move(failures) else 1
    return 0 if not failures else 1


def caught_broken_move(failures):
    """--break-move's verdict: the checkers must have failed the run for
    what serving a shard from two groups breaks (IDs twice or out of order,
    acked messages lost or out of order), and for nothing of the harness."""
    caught = [f for f in failures if re.search(
        r"duplicate|order violation|acked messages not stored|seq twice|hole", f)]
    harness = [f for f in failures if f.startswith("harness error")]
    print("--break-move: the checkers %s (%s)" % (
        "caught it" if caught and not harness else "did NOT catch it", "; ".join(caught)))
    return bool(caught) and not harness


def main():
    p = chaos.parser(__doc__, seconds=60)
    p.add_argument("--history", help="write every answer here, one JSON object a line")
    p.add_argument("--groups", type=int, default=1,
                   help="store groups, each a MariaDB of its own; 3: two shard moves too")
    p.add_argument("--break-move", action="store_true",
                   help="the first move switches groups with no seal and no copy: must FAIL")
    return chaos.main(p.parse_args(), self_test, run)


if __name__ == "__main__":
    sys.exit(main())
