"""`SeqdCase`: one seqd for a whole unittest TestCase class, with its HTTP,
binary and RESP listeners on ports of its own, which the suites that talk
to one server over several protocols share.

Thread safety: the class's seqd is its tests'; they run one at a time.
"""
import socket
import tempfile
import unittest

from harness import Seqd, free_port, store_spec


class SeqdCase(unittest.TestCase):
    """Starts `seqd` (harness.Seqd) before the class's first test and stops
    it after its last: its store is `STORE` ("sqlite", in `tmp`, a
    temporary directory of the class's, or "mariadb", SEQD_TEST_MYSQL_URL),
    its listeners `http_port`, `tcp_port` and `resp_port`, its other flags
    `seqd_flags()`. `restart(sig)` stops it with `sig` and starts it again
    on the same store and ports."""

    STORE = "sqlite"

    @classmethod
    def seqd_flags(cls):
        """The flags besides store and ports (it may write files into `tmp`)."""
        return ()

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.store = store_spec(cls.STORE, cls.tmp.name)
        cls.http_port, cls.tcp_port, cls.resp_port = free_port(), free_port(), free_port()
        cls.start()

    @classmethod
    def start(cls):
        cls.seqd = Seqd(cls.store, "--tcp-port", str(cls.tcp_port), "--resp-port",
                        str(cls.resp_port), *cls.seqd_flags(), port=cls.http_port)

    @classmethod
    def tearDownClass(cls):
        cls.seqd.__exit__()
        cls.tmp.cleanup()

    def restart(self, sig):
        self.seqd.stop(sig)
        self.seqd.__exit__()
        type(self).start()

    def tcp(self):
        """A connection to the binary listener, closed after the test."""
        return self.connect(self.tcp_port)

    def resp(self):
        """A connection to the RESP listener, closed after the test."""
        return self.connect(self.resp_port)

    def connect(self, port):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.addCleanup(s.close)
        return s
