"""Writes to one shard's rows while it moves between store groups
(docs/cluster.md, "Moving a shard"), and the check that none of the
acknowledged ones was lost.

The kinds, each over HTTP: a message's recall or delete (`recall`), a new
member (`member`) and its read seq (`read_seq`), a conversation's min seq
(`conv_min_seq`), a user seq (`user_seq`), a new key (`key`, admin) and its
step (`key_step`), and a key's min seq (`min_seq`, the one of them a lease
fences: the others are served by any instance).
Every write goes to a row of its own (a message, member, conversation,
user or key no other write touches), so a later write can never hide an
earlier one that was lost. A write answered 503, or not at all, is sent
again with the same values (each kind is idempotent) until it is
acknowledged or the load stops; only acknowledged writes are recorded, and
any other answer is recorded as unexpected.

`check_lost(acked, rows)` is pure: the acknowledged writes against the rows
of the group that keeps the shard (`read_rows`), the writes it does not
hold.

Thread safety: `ShardWrites.start` starts one thread per kind and port;
read `acked`, `unexpected`, `refused` and `last_refused` after `stop`.
"""
import http.client
import itertools
import json
import threading
import time

from lib.cluster import shard_of

KINDS = ("recall", "member", "read_seq", "conv_min_seq", "user_seq", "key", "key_step",
         "min_seq")
HTTP_ERRORS = (OSError, http.client.HTTPException)


def names_in(shard, shards, prefix, n):
    """`n` names PREFIXi that hash to `shard` of `shards`."""
    out, i = [], 0
    while len(out) < n:
        name = "%s%d" % (prefix, i)
        if shard_of(name, shards) == shard:
            out.append(name)
        i += 1
    return out


def http_call(port, method, path, body=None, timeout=5):
    """(status, parsed JSON or None) of one request to 127.0.0.1:`port`;
    status None if the connection failed or timed out."""
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        c.request(method, path, body=json.dumps(body) if body is not None else None,
                  headers={"Content-Type": "application/json"} if body is not None else {})
        r = c.getresponse()
        data = r.read()
        c.close()
    except HTTP_ERRORS:
        return None, None
    try:
        return r.status, json.loads(data) if data else None
    except ValueError:
        return r.status, None


def check_lost(acked, rows):
    """The acknowledged writes the kept group does not hold, each with what
    it holds instead (None: no row). `acked`: (kind, row id, value, port)
    records; `rows`: read_rows' answer. A recall's value is the status
    ("recalled" or "deleted"); a member's is its min seq; the others' are
    the value written."""
    statuses = {"recalled": "1", "deleted": "2"}
    lost = []
    for kind, row, value, port in acked:
        have = rows[kind].get(row)
        want = statuses[value] if kind == "recall" else str(value)
        if have != want:
            lost.append((kind, row, value, port, have))
    return lost


def count_by_kind_and_port(records):
    """{kind: {port: n}} of acked or lost records."""
    out = {}
    for r in records:
        by_port = out.setdefault(r[0], {})
        by_port[r[3]] = by_port.get(r[3], 0) + 1
    return out


class Load:
    """Threads that run until `stop`, which sets `stopping` and joins them."""

    def __init__(self):
        self.stopping = threading.Event()
        self.threads = []

    def spawn(self, run, *args):
        t = threading.Thread(target=run, args=args, daemon=True)
        t.start()
        self.threads.append(t)

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join()


class ShardWrites(Load):
    """The writes of KINDS to `shard` (of `shards`): conversations and keys
    named PREFIX..., `messages` messages to recall and as many
    conversations of one message for their min seqs."""

    def __init__(self, shard, shards, prefix, messages=450, pace_s=0.025):
        super().__init__()
        self.pace_s = pace_s
        self.conv = names_in(shard, shards, "sg_%sr" % prefix, 1)[0]
        self.min_convs = names_in(shard, shards, "sg_%sm" % prefix, messages)
        self.keys = names_in(shard, shards, "seg_%sk" % prefix, 2 * messages)
        self.new_keys = names_in(shard, shards, "k%sn" % prefix, messages)
        self.messages = messages
        self.seqs = iter(range(1, messages + 1))
        self.free_convs = iter(self.min_convs)
        self.free_keys = iter(self.keys)
        self.free_new_keys = iter(self.new_keys)
        self.users = itertools.count()
        self.lock = threading.Lock()
        self.acked = []       # (kind, row id, value, port)
        self.unexpected = []  # (kind, port, status, body)
        self.refused = {}     # port -> 503s and failed connections
        self.last_refused = {}  # port -> time.monotonic() of its last 503

    def setup(self, port):
        """The messages to recall and the conversations to set min seqs of,
        sent through `port` (a 503 while a shard changes hands: sent again)."""
        sends = [(self.conv, "r%d" % i) for i in range(self.messages)]
        sends += [(c, "m") for c in self.min_convs]
        for conv, msg_id in sends:
            for _ in range(50):
                status, body = http_call(port, "POST", "/conversations/%s/messages" % conv,
                                         {"sender_id": "f", "client_msg_id": msg_id,
                                          "payload": "x"})
                if status in (200, 201):
                    break
                time.sleep(0.05)
            else:
                raise RuntimeError("setup send to %s failed: %s %s" % (conv, status, body))

    def start(self, ports):
        """One writer thread per kind pair and port."""
        for port in ports:
            for run in (self.recalls, self.members, self.conv_min_seqs, self.user_seqs,
                        self.new_keys_and_steps, self.min_seqs):
                self.spawn(run, port)

    def counts(self):
        """Acknowledged writes by kind."""
        out = dict.fromkeys(KINDS, 0)
        for kind, _, _, _ in self.acked:
            out[kind] += 1
        return out

    def write(self, kind, port, method, path, body, row, value):
        """Sends until acknowledged (True) or the load stops; records it."""
        while not self.stopping.is_set():
            status, answer = http_call(port, method, path, body)
            if status is not None and 200 <= status < 300:
                with self.lock:
                    self.acked.append((kind, row, value, port))
                return True
            if status is not None and status != 503:
                with self.lock:
                    self.unexpected.append((kind, port, status, answer))
                return False
            with self.lock:
                self.refused[port] = self.refused.get(port, 0) + 1
                self.last_refused[port] = time.monotonic()
            time.sleep(0.01)
        return False

    def next_of(self, it):
        with self.lock:
            return next(it, None)

    def paced(self, port, one):
        """Runs one(port) every pace_s until it says the pool ran out."""
        while not self.stopping.is_set():
            if one(port) is False:
                return
            time.sleep(self.pace_s)

    def recalls(self, port):
        def one(port):
            seq = self.next_of(self.seqs)
            if seq is None:
                return False
            path = "/conversations/%s/messages/%d" % (self.conv, seq)
            if seq % 2:
                self.write("recall", port, "POST", path + "/recall", None, seq, "recalled")
            else:
                self.write("recall", port, "DELETE", path, None, seq, "deleted")
            return True
        self.paced(port, one)

    def members(self, port):
        def one(port):
            n = next(self.users)
            user = "u%d-%d" % (port, n)
            path = "/conversations/%s/members/%s" % (self.conv, user)
            if self.write("member", port, "PUT", path, {"min_seq": 1}, user, 1):
                read = 1 + n % self.messages
                self.write("read_seq", port, "PUT", path + "/read_seq", {"read_seq": read},
                           user, read)
            return True
        self.paced(port, one)

    def conv_min_seqs(self, port):
        def one(port):
            conv = self.next_of(self.free_convs)
            if conv is None:
                return False
            self.write("conv_min_seq", port, "PUT", "/conversations/%s/min_seq" % conv,
                       {"min_seq": 2}, conv, 2)
            return True
        self.paced(port, one)

    def user_seqs(self, port):
        def one(port):
            n = next(self.users)
            user = "s%d-%d" % (port, n)
            self.write("user_seq", port, "PUT", "/user_seqs",
                       {"user": user, "field": "read", "seqs": {self.conv: n + 1}}, user, n + 1)
            return True
        self.paced(port, one)

    def new_keys_and_steps(self, port):
        def one(port):
            key = self.next_of(self.free_new_keys)
            if key is None:
                return False
            if self.write("key", port, "POST", "/admin/keys",
                          {"key": key, "step": 10, "description": "w"}, key, 1):
                step = 11 + len(key)
                self.write("key_step", port, "PUT", "/admin/keys/%s/step" % key, {"step": step},
                           key, step)
            return True
        self.paced(port, one)

    def min_seqs(self, port):
        def one(port):
            key = self.next_of(self.free_keys)
            if key is None:
                return False
            value = 1 + len(key)
            self.write("min_seq", port, "PUT", "/min_seqs", {"min_seqs": {key: value}}, key,
                       value)
            return True
        self.paced(port, one)

    def read_rows(self, query):
        """The rows the writes went to, in the database `query(sql)` reads
        (rows as lists of strings): for each kind, row id -> value."""
        conv = "'%s'" % self.conv
        convs = ",".join("'%s'" % c for c in self.min_convs)
        keys = ",".join("'%s'" % k for k in self.keys)
        new_keys = ",".join("'%s'" % k for k in self.new_keys)
        members = query("SELECT user_id, min_seq, read_seq FROM seqd_conv_member "
                        "WHERE conv_id = %s" % conv)
        created = query("SELECT biz_tag, step FROM leaf_alloc WHERE biz_tag IN (%s)" % new_keys)
        return {
            "recall": {int(r[0]): r[1] for r in query(
                "SELECT seq, status FROM seqd_message WHERE conv_id = %s" % conv)},
            "member": {r[0]: r[1] for r in members},
            "read_seq": {r[0]: r[2] for r in members},
            "conv_min_seq": {r[0]: r[1] for r in query(
                "SELECT conv_id, min_seq FROM seqd_conv WHERE conv_id IN (%s)" % convs)},
            "user_seq": {r[0]: r[1] for r in query(
                "SELECT user_id, read_seq FROM seqd_user_seq WHERE conv = %s" % conv)},
            "key": {r[0]: "1" for r in created},
            "key_step": {r[0]: r[1] for r in created},
            "min_seq": {r[0]: r[1] for r in query(
                "SELECT biz_tag, min_seq FROM seqd_min_seq WHERE biz_tag IN (%s)" % keys)},
        }
