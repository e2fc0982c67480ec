"""The chaos suites' load on a cluster (lib/cluster.py) and what it
records (lib/checkers.py): client threads asking KEYS for IDs over every
interface, senders delivering new messages to CONVS until each is answered
(the same message again after every unknown outcome), and the late probes
a nemesis sends to an instance it froze. The instances run with
SEQD_FLAGS, which make every key of KEYS reserve often.

Thread safety: each thread keeps its own connections and history; read
`answers` and `attempts` once it has stopped.
"""
import random
import threading
import time
import traceback

from lib import subscribers
from lib.checkers import Msg
from lib.clients import Connections

KEYS = ("ck0", "ck1", "ck2", "ck3", "ck4", "ck5", "cz0", "cz1")
# Every instance's flags besides store, lease and ports: small auto-created
# steps for KEYS (ck*: 100, cz*: 1), a rule CONVS match too (a conversation
# is served as a key is); the dynamic step would reach 1,000,000
# within seconds, so capped at 20: every key keeps reserving (each
# reservation a fenced transaction) all along. SSE heartbeats as the
# subscribers expect them.
SEQD_FLAGS = ("--snowflake", "off", "--sse-heartbeat-ms", str(subscribers.HEARTBEAT_MS),
              "--resp-port", "0", "--threads", "2", "--auto-keys", "ck:100,cz:1",
              "--max-step", "20", "--log-level", "info")
INTERFACES = ("http", "http_count", "binary", "resp_incr", "resp_incrby")
MAX_COUNT = 10          # counts asked for are 1..MAX_COUNT
CONVS = ("ck_conv0", "ck_conv1", "ck_conv2", "ck_conv3")
MSG_INTERFACES = ("http", "binary")
MSG_RESOLVE_S = 30.0    # a message unanswered this long after its first try is unresolved
MSG_RETRY_PAUSE_S = 0.05
MSG_SEND_AGAIN = 0.05   # share of acked messages sent once more on purpose


def deliver(cluster, rng, conns, msg, attempts, kind="first", frozen=False, first=None):
    """Sends `msg` until an attempt is answered: first to `first` over its
    interface (an (instance, iface) pair) if given, then, after every error
    or timeout (the outcome is unknown), the same message again to a random
    reachable instance (frozen ones too if `frozen`) over a random
    interface. Gives up MSG_RESOLVE_S after the first try, or after an
    error outside the contract. Every attempt is appended to `attempts`;
    returns True if one was answered."""
    deadline = time.monotonic() + MSG_RESOLVE_S
    while True:
        if first is not None:
            (inst, iface), first = first, None
        else:
            insts = cluster.reachable(frozen)
            if not insts:
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.01)
                continue
            inst, iface = rng.choice(insts), rng.choice(MSG_INTERFACES)
        a = conns.send_message(inst, msg, iface, kind)
        attempts.append(a)
        if a.ok:
            return True
        if not a.expected or time.monotonic() >= deadline:
            return False
        kind = "retry"
        time.sleep(MSG_RETRY_PAUSE_S)


class Client(threading.Thread):
    """A loop of random requests (instance, key, interface, count) until
    `stop` is set; `answers` holds what it saw. Only a prober sends to a
    frozen instance (and then waits up to its socket timeout); the others
    keep the rest of the cluster busy meanwhile, and send to the instance
    again as soon as it is thawed."""

    def __init__(self, cluster, seed, stop, prober):
        super().__init__(daemon=True)
        self.cluster, self.rng, self.stop = cluster, random.Random(seed), stop
        self.prober = prober
        self.answers = []
        self.error = None

    def run(self):
        conns = Connections()
        try:
            while not self.stop.is_set():
                insts = self.cluster.reachable(frozen=self.prober)
                if not insts:
                    time.sleep(0.01)
                    continue
                live = {i.name for i in insts}
                conns.keep_only(live)
                inst = self.rng.choice(insts)
                a = conns.request(inst, self.rng.choice(KEYS), self.rng.choice(INTERFACES),
                                  self.rng.randint(1, MAX_COUNT))
                self.answers.append(a)
                if not a.ok:
                    time.sleep(0.01)  # no busy loop against a dead port
        except Exception:  # noqa: BLE001 - reported as a harness failure
            self.error = traceback.format_exc()
        finally:
            conns.close()


class Probe(threading.Thread):
    """One request (`key`, `iface`, count 2) to `inst` on a connection of its
    own; `answers` holds its Answer."""

    def __init__(self, inst, key, iface):
        super().__init__(daemon=True)
        self.inst, self.key, self.iface = inst, key, iface
        self.answers = []

    def run(self):
        conns = Connections()
        self.answers.append(conns.request(self.inst, self.key, self.iface, 2))
        conns.close()


class Sender(threading.Thread):
    """A loop of new messages (sender w<n>, a random conversation), each
    delivered (see `deliver`) until `stop` is set; now and then an acked
    one is sent once more. `attempts` holds every try. Only a prober sends
    to frozen instances."""

    def __init__(self, cluster, seed, stop, n, prober):
        super().__init__(daemon=True)
        self.cluster, self.rng, self.stop = cluster, random.Random(seed), stop
        self.sender, self.prober = "w%d" % n, prober
        self.attempts = []
        self.error = None

    def run(self):
        conns = Connections()
        try:
            n = 0
            while not self.stop.is_set():
                n += 1
                cmid = "%s-%d" % (self.sender, n)
                msg = Msg(self.rng.choice(CONVS), self.sender, cmid, "payload of " + cmid)
                acked = deliver(self.cluster, self.rng, conns, msg, self.attempts,
                                frozen=self.prober)
                if acked and self.rng.random() < MSG_SEND_AGAIN:
                    deliver(self.cluster, self.rng, conns, msg, self.attempts, kind="again",
                            frozen=self.prober)
        except Exception:  # noqa: BLE001 - reported as a harness failure
            self.error = traceback.format_exc()
        finally:
            conns.close()


class MessageProbe(threading.Thread):
    """A new message `msg` sent to `inst` over `iface`, re-sent to the
    running instances until answered (see `deliver`); `attempts` holds
    every try."""

    def __init__(self, cluster, seed, inst, iface, msg):
        super().__init__(daemon=True)
        self.cluster, self.rng, self.msg = cluster, random.Random(seed), msg
        self.first = (inst, iface)
        self.attempts = []
        self.error = None

    def run(self):
        conns = Connections()
        try:
            deliver(self.cluster, self.rng, conns, self.msg, self.attempts, kind="probe",
                    first=self.first)
        except Exception:  # noqa: BLE001 - reported as a harness failure
            self.error = traceback.format_exc()
        finally:
            conns.close()
