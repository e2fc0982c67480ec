"""End-to-end tests of `seqctl openim-import` and `openim-export` (OpenIM's
Mongo `seq` and `seq_user` collections, as mongoexport writes them, into
seqd and back; docs/openim.md, "Migration") on the real binaries (SQLite, or
MariaDB with the argument `mariadb`).

What is attacked: a dry run writes nothing; an import sets every max seq
exactly (one conversation past the largest block, so several blocks), min
seqs and user seqs; it is idempotent (run again, nothing moves; a read seq
that OpenIM raised since is not lowered); an import cut short by a kill -9 of
seqd is finished by running it again, with no seq handed out twice or
skipped (the next Malloc is max_seq + 1); the export gives back what was
imported; bad files fail with the file and line named.

Usage: python3 tests/e2e/test_openim_migrate.py [sqlite|mariadb] [unittest args]
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Seqd, free_port, store_from_argv, store_spec  # noqa: E402
from lib.wire import call, int64_list, key_list, key_values, s16  # noqa: E402

STORE = "sqlite"
USER_SEQS, SET_USER_SEQS = 0x0B, 0x0C
SEQCTL = os.environ.get("SEQCTL_BINARY", "")
RUN = uuid.uuid4().hex[:8]


def long_(n):
    """mongoexport's canonical form of an int64."""
    return {"$numberLong": str(n)}


class OpenImMigrate(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not SEQCTL:
            raise RuntimeError("SEQCTL_BINARY is not set")
        cls.tmp = tempfile.TemporaryDirectory()
        cls.store = store_spec(STORE, cls.tmp.name)
        cls.http_port, cls.tcp_port = free_port(), free_port()
        cls.seqd = cls.start()

    @classmethod
    def start(cls):
        return Seqd(cls.store, "--tcp-port", str(cls.tcp_port), port=cls.http_port)

    @classmethod
    def tearDownClass(cls):
        cls.seqd.__exit__()
        cls.tmp.cleanup()

    def seqctl(self, *args, expect=0):
        r = subprocess.run([SEQCTL, "--http", "127.0.0.1:%d" % self.http_port,
                            "--tcp", "127.0.0.1:%d" % self.tcp_port, *args],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, expect, (args, r.stdout, r.stderr))
        return r.stdout + r.stderr

    def write(self, name, docs, array=False):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            if array:
                json.dump(docs, f)
            else:
                f.write("".join(json.dumps(d) + "\n" for d in docs))
        return path

    def values(self, cmd, keys):
        out = self.seqctl("--json", cmd, *keys)
        return json.loads(out)["max_ids" if cmd == "max-ids" else "min_seqs"]

    def test_import_export_resume(self):
        p = "mig%s_" % RUN
        convs = {"si_%sa_b" % p: (250_007, 11),   # past the largest block (100,000)
                 "sg_%steam" % p: (7, 0),
                 "n_%snever" % p: (0, 0)}
        for i in range(1200):                      # more than one batch of 1000
            convs["g_%s%04d" % (p, i)] = (i % 50 + 1, i % 3)
        seq_docs = []
        for i, (c, (mx, mn)) in enumerate(sorted(convs.items())):
            doc = {"_id": {"$oid": "%024x" % i}, "conversation_id": c}
            doc.update({"max_seq": long_(mx), "min_seq": long_(mn)} if i % 2 else
                       {"max_seq": mx, "min_seq": mn})  # canonical and relaxed forms
            seq_docs.append(doc)
        users = {("u_%s1" % RUN, "si_%sa_b" % p): (3, 0, 250_000),
                 ("u_%s2" % RUN, "si_%sa_b" % p): (0, 0, 12),
                 ("u_%s2" % RUN, "sg_%steam" % p): (0, 5, 5)}
        user_docs = [{"user_id": u, "conversation_id": c, "min_seq": long_(a), "max_seq": b,
                      "read_seq": long_(r)} for (u, c), (a, b, r) in sorted(users.items())]
        seq_path = self.write("seq.json", seq_docs)
        user_path = self.write("seq_user.json", user_docs, array=True)
        keys = sorted(convs)

        # A dry run: the plan printed, nothing written.
        out = self.seqctl("--dry-run", "openim-import", "seq", seq_path)
        self.assertIn("1202 to advance", out)
        self.assertIn("si_%sa_b: max seq 0 -> 250007" % p, out)
        self.assertEqual(set(self.values("max-ids", keys[:1000]).values()), {0})
        self.seqctl("--dry-run", "openim-import", "seq-user", user_path)
        self.assertEqual(self.user_seqs("u_%s1" % RUN, 3, ["si_%sa_b" % p]), [0])

        # Cut short: half the file imported, then seqd killed with SIGKILL
        # and restarted; the whole import run again finishes the job.
        half = self.write("seq-half.json", seq_docs[:600])
        self.seqctl("openim-import", "seq", half)
        self.seqd.stop(signal.SIGKILL)
        self.seqd.__exit__()
        self.__class__.seqd = self.start()
        out = self.seqctl("openim-import", "seq", seq_path)
        self.assertIn("601 already there", out)  # the half, and the one at 0
        self.seqctl("openim-import", "seq-user", user_path)
        self.check_imported(convs, users)

        # Idempotent: again, nothing moves; a read seq OpenIM raised since
        # is not lowered.
        raised = self.set_user_seq("u_%s2" % RUN, 3, "si_%sa_b" % p, 40)
        out = self.seqctl("openim-import", "seq", seq_path)
        self.assertIn("0 advanced", out)
        self.seqctl("openim-import", "seq-user", user_path)
        users[("u_%s2" % RUN, "si_%sa_b" % p)] = (0, 0, raised)
        self.check_imported(convs, users)

        # The next Malloc of a migrated conversation is max_seq + 1.
        out = self.seqctl("block", "si_%sa_b" % p, "2").split()
        self.assertEqual(out, ["250008", "250009"])
        convs["si_%sa_b" % p] = (250_009, 11)

        # The export gives it back: the conversations seqd has, and the
        # users' seqs.
        exp = os.path.join(self.tmp.name, "out-seq.json")
        self.seqctl("openim-export", "seq", exp, "si_" + p, "sg_" + p, "g_" + p, "n_" + p)
        with open(exp) as f:
            got = {d["conversation_id"]: (d["max_seq"], d["min_seq"]) for d in map(json.loads, f)}
        want = {c: v for c, v in convs.items() if v != (0, 0)}
        self.assertEqual(got, want)
        users_file = os.path.join(self.tmp.name, "users.txt")
        with open(users_file, "w") as f:
            f.write("u_%s1\nu_%s2\n" % (RUN, RUN))
        exp_users = os.path.join(self.tmp.name, "out-user.json")
        self.seqctl("openim-export", "seq-user", users_file, exp_users)
        with open(exp_users) as f:
            got = {(d["user_id"], d["conversation_id"]): (d["min_seq"], d["max_seq"], d["read_seq"])
                   for d in map(json.loads, f)}
        self.assertEqual(got, users)

    def test_bad_files(self):
        bad = os.path.join(self.tmp.name, "bad.json")
        with open(bad, "w") as f:
            f.write('{"conversation_id":"si_ok_%s","max_seq":1}\nnot json\n' % RUN)
        self.assertIn("bad.json:2", self.seqctl("openim-import", "seq", bad, expect=1))
        bad2 = self.write("bad2.json", [{"conversation_id": "si_x_%s" % RUN, "max_seq": "ten"}])
        self.assertIn("max_seq", self.seqctl("openim-import", "seq", bad2, expect=1))
        missing = self.write("bad3.json", [{"max_seq": 3}])
        self.assertIn("conversation_id", self.seqctl("openim-import", "seq", missing, expect=1))
        self.seqctl("openim-import", "seq", os.path.join(self.tmp.name, "none.json"), expect=1)
        self.seqctl("openim-import", "nothing", bad, expect=2)
        self.seqctl("--dry-run", "openim-export", "seq", bad, expect=2)
        r = subprocess.run([SEQCTL, "openim-import", "seq", bad], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2, r.stderr)  # no --tcp
        self.assertIn("--tcp", r.stderr)

    # --- USER_SEQS and SET_USER_SEQS, framed here from docs/protocol.md ---------------

    def user_seqs(self, user, field, convs):
        """USER_SEQS of `user`'s `field` (1 min, 2 max, 3 read) in `convs`."""
        with socket.create_connection(("127.0.0.1", self.tcp_port), timeout=10) as s:
            status, rest = call(s, USER_SEQS, 1, s16(user) + bytes([field]) + key_list(convs))
        self.assertEqual(status, 0, rest)
        return int64_list(rest)

    def set_user_seq(self, user, field, conv, value):
        """SET_USER_SEQS of one conversation, raise only; returns `value`."""
        with socket.create_connection(("127.0.0.1", self.tcp_port), timeout=10) as s:
            status, rest = call(s, SET_USER_SEQS, 1,
                                s16(user) + bytes([field, 1]) + key_values([(conv, value)]))
        self.assertEqual((status, rest), (0, b""))
        return value

    def check_imported(self, convs, users):
        keys = sorted(convs)
        for at in range(0, len(keys), 1000):
            part = keys[at:at + 1000]
            self.assertEqual(self.values("max-ids", part), {k: convs[k][0] for k in part})
            self.assertEqual(self.values("min-seqs", part), {k: convs[k][1] for k in part})
        for (u, c), (mn, mx, rd) in users.items():
            self.assertEqual([self.user_seqs(u, f, [c])[0] for f in (1, 2, 3)], [mn, mx, rd],
                             (u, c))


if __name__ == "__main__":
    STORE = store_from_argv()
    unittest.main()
