"""Reads of one shard's rows through one instance, each made right after a
write of the row through another instance was acknowledged, while the
shard moves between store groups (docs/cluster.md, "Moving a shard"); and
the check that every read saw the write before it.

Each round writes through the writer's port, then reads through the
reader's (an instance whose placement may be stale, still naming the group
the shard left):
- a message sent, then `max_seq` (POST /conversations/max_seqs: at least
  its seq) and `pull` (GET /conversations/C/messages?from=SEQ: that
  message);
- a new member, then `member` (GET the member: 200);
- a user seq, then `user_seq` (GET /user_seqs: that value);
- a new key, then `key` (GET /admin/keys/K: 200).
One more thread reads `max_seq` without pause and without waiting for a
write: at least the highest seq acknowledged when the read was sent (so
reads go on through the move's pause, when the writes wait).
A read started after the write's acknowledgement must see it, whichever
group answers. A request answered 503, or not at all, is sent again with
the same values (each write is idempotent) until it is answered or the
load stops.

`verdict(kind, wanted, status, body)` is pure: None if a read's answer saw
the write, RETRY, or what it saw instead.

Thread safety: `ShardReads.start` starts one thread per round kind; read
`rounds`, `stale`, `unexpected` and `refused` after `stop`.
"""
import threading
import time

from lib.shard_writes import Load, http_call, names_in

KINDS = ("max_seq", "pull", "member", "user_seq", "key")
RETRY = "retry"


def verdict(kind, wanted, status, body):
    """None if the answer (`status`, parsed `body`) of a read of `kind`
    saw the write of `wanted` (a seq, a user seq's value, or True) made
    before it; RETRY for a 503 or no answer; else what the read saw, as a
    short string."""
    if status is None or status == 503:
        return RETRY
    if kind in ("member", "key"):
        return None if status == 200 else "status %d" % status
    if status != 200 or not isinstance(body, dict):
        return "status %s" % status
    if kind == "max_seq":
        got = next(iter(body.get("max_seqs", {}).values()), None)
        return None if isinstance(got, int) and got >= wanted else "max seq %s" % got
    if kind == "pull":
        seqs = [m.get("seq") for m in body.get("messages", [])]
        return None if wanted in seqs else "seqs %s" % seqs[:3]
    if kind == "user_seq":
        got = next(iter(body.get("seqs", {}).values()), None)
        return None if got == wanted else "user seq %s" % got
    raise ValueError("unknown kind %r" % kind)


class ShardReads(Load):
    """Rounds of write-then-read for `shard` (of `shards`), names PREFIX...,
    writes through `writer` and reads through `reader` (HTTP ports)."""

    def __init__(self, shard, shards, prefix, writer, reader, pace_s=0.01):
        super().__init__()
        self.writer, self.reader, self.pace_s = writer, reader, pace_s
        self.conv = names_in(shard, shards, "sg_%sr" % prefix, 1)[0]
        self.keys = iter(names_in(shard, shards, "k%sn" % prefix, 2000))
        self.lock = threading.Lock()
        self.rounds = dict.fromkeys(KINDS, 0)  # reads that saw their write
        self.stale = []       # (kind, row, wanted, what the read saw)
        self.unexpected = []  # (what, status, body): a write or read answer of no kind above
        self.refused = 0      # reads answered 503 or not at all
        self.acked_max = 0    # the highest seq acknowledged so far

    def start(self):
        for run in (self.messages, self.max_seqs, self.members, self.user_seqs, self.new_keys):
            self.spawn(run)

    def write(self, what, method, path, body):
        """The acknowledged answer's body, sent again after a 503 or no
        answer; None if refused otherwise (recorded) or the load stopped."""
        while not self.stopping.is_set():
            status, answer = http_call(self.writer, method, path, body)
            if status is not None and 200 <= status < 300:
                return answer if answer is not None else {}
            if status is not None and status != 503:
                with self.lock:
                    self.unexpected.append((what, status, answer))
                return None
            time.sleep(0.01)
        return None

    def read(self, kind, row, wanted, method, path, body=None):
        """Reads until answered; records whether the answer saw `wanted`."""
        while not self.stopping.is_set():
            status, answer = http_call(self.reader, method, path, body)
            seen = verdict(kind, wanted, status, answer)
            with self.lock:
                if seen == RETRY:
                    self.refused += 1
                elif seen is None:
                    self.rounds[kind] += 1
                else:
                    self.stale.append((kind, row, wanted, seen))
            if seen != RETRY:
                return
            time.sleep(0.01)

    def paced(self, one):
        n = 0
        while not self.stopping.is_set():
            if one(n) is False:
                return
            n += 1
            time.sleep(self.pace_s)

    def messages(self):
        def one(n):
            sent = self.write("send", "POST", "/conversations/%s/messages" % self.conv,
                              {"sender_id": "r", "client_msg_id": "r%d" % n, "payload": "x"})
            if not sent or "seq" not in sent:
                return not self.stopping.is_set()
            seq = sent["seq"]
            with self.lock:
                self.acked_max = max(self.acked_max, seq)
            self.read("max_seq", self.conv, seq, "POST", "/conversations/max_seqs",
                      {"conv_ids": [self.conv]})
            self.read("pull", self.conv, seq, "GET",
                      "/conversations/%s/messages?from=%d&limit=1" % (self.conv, seq))
            return True
        self.paced(one)

    def max_seqs(self):
        def one(n):
            with self.lock:
                wanted = self.acked_max
            self.read("max_seq", self.conv, wanted, "POST", "/conversations/max_seqs",
                      {"conv_ids": [self.conv]})
            return True
        while not self.stopping.is_set():
            one(0)
            time.sleep(0.002)

    def members(self):
        def one(n):
            path = "/conversations/%s/members/rm%d" % (self.conv, n)
            if self.write("member", "PUT", path, {"min_seq": 1}) is not None:
                self.read("member", "rm%d" % n, True, "GET", path)
            return True
        self.paced(one)

    def user_seqs(self):
        def one(n):
            user = "ru%d" % n
            if self.write("user_seq", "PUT", "/user_seqs",
                          {"user": user, "field": "read", "seqs": {self.conv: n + 1}}) is not None:
                self.read("user_seq", user, n + 1, "GET",
                          "/user_seqs?user=%s&field=read&conv=%s" % (user, self.conv))
            return True
        self.paced(one)

    def new_keys(self):
        def one(n):
            with self.lock:
                key = next(self.keys, None)
            if key is None:
                return False
            if self.write("key", "POST", "/admin/keys",
                          {"key": key, "step": 10, "description": "r"}) is not None:
                self.read("key", key, True, "GET", "/admin/keys/%s" % key)
            return True
        self.paced(one)
