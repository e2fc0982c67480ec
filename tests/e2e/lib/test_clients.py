"""tests/e2e/lib/clients.py against servers played here with answers
written out by hand: well-formed answers become IDs, seqs and rows;
malformed ones, errors the contract allows and errors it does not are
each named and judged; Connections turns all of it, and a refused
connection, into history records.

Usage: python3 tests/e2e/lib/test_clients.py [unittest args]
"""
import collections
import http.server
import json
import os
import socket
import struct
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lib import clients, wire  # noqa: E402
from lib.checkers import Msg  # noqa: E402
from lib.clients import ServerError  # noqa: E402

MSG = Msg("c", "u", "m1", "hi")
Instance = collections.namedtuple("Instance", "name http_port binary_port resp_port")


def serve(test, dialog):
    """A port on which one connection is accepted and handed to
    `dialog(sock)` on a thread; the thread is joined at cleanup."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)

    def run():
        peer, _ = server.accept()
        with peer:
            dialog(peer)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    test.addCleanup(server.close)
    test.addCleanup(t.join, 5)
    return server.getsockname()[1]


def binary_answers(*answers):
    """A binary dialog: each request frame read whole, then answered with
    (status, rest, flags) for its opcode and request id."""
    def dialog(sock):
        for status, rest, flags in answers:
            length, _, opcode, _, rid = wire.HEADER.unpack(wire.recv_exact(sock, 12))
            wire.recv_exact(sock, length - 8)
            body = struct.pack(">H", status) + rest
            sock.sendall(wire.header(8 + len(body), opcode, rid, flags) + body)
    return dialog


def resp_answers(*lines):
    """A RESP dialog: each command read whole, then answered with a line."""
    def dialog(sock):
        for line in lines:
            argc = int(wire.resp_read_line(sock)[1:])
            for _ in range(2 * argc):
                wire.resp_read_line(sock)
            sock.sendall(line + b"\r\n")
    return dialog


class Ranges(unittest.TestCase):
    def test_checked_ranges(self):
        self.assertEqual(clients.checked_ranges([(1, 2), (5, 5)], 3), ((1, 2), (5, 5)))
        for ranges, count in (([(1, 2)], 3), ([(3, 2)], 0), ([(5, 6), (1, 2)], 4),
                              ([(0, 1)], 2), ([(1, 2), (2, 3)], 4)):
            with self.assertRaises(ServerError) as e:
                clients.checked_ranges(ranges, count)
            self.assertFalse(e.exception.expected)
            self.assertTrue(e.exception.close)

    def test_transport_kind(self):
        self.assertEqual(clients.transport_kind(socket.timeout()), "transport:timeout")
        self.assertEqual(clients.transport_kind(ConnectionRefusedError()), "transport:refused")
        self.assertEqual(clients.transport_kind(BrokenPipeError()), "transport:reset")
        self.assertEqual(clients.transport_kind(EOFError()), "transport:closed")
        self.assertEqual(clients.transport_kind(OSError()), "transport:OSError")


class Binary(unittest.TestCase):
    def client(self, *answers):
        c = clients.BinaryClient(serve(self, binary_answers(*answers)))
        self.addCleanup(c.close)
        return c

    def test_next_ids(self):
        rest = struct.pack(">Iqqqq", 2, 1, 2, 7, 7)
        self.assertEqual(self.client((0, rest, 1)).next_ids("k", 3), ((1, 2), (7, 7)))

    def test_malformed_answers(self):
        c = self.client((0, struct.pack(">Iqq", 1, 1, 2), 0), (0, b"\x00\x00\x00\x02", 1))
        for want in ("malformed: binary header", "malformed: binary payload of 6 bytes"):
            with self.assertRaises(ServerError) as e:
                c.next_ids("k", 2)
            self.assertTrue(e.exception.kind.startswith(want), e.exception.kind)
            self.assertFalse(e.exception.expected)

    def test_statuses(self):
        c = self.client((4, b"", 1), (5, b"", 1), (1, b"", 1), (64, b"", 1))
        for kind, expected, close in (("STORE_UNAVAILABLE", True, False),
                                      ("SHUTTING_DOWN", True, True),
                                      ("INVALID_ARGUMENT", False, False),
                                      ("MALFORMED_FRAME", False, True)):
            with self.assertRaises(ServerError) as e:
                c.next_ids("k", 1)
            self.assertEqual((e.exception.kind, e.exception.expected, e.exception.close),
                             ("binary:" + kind, expected, close))

    def test_send_and_pull_range(self):
        message = (struct.pack(">qq", 1, 101) + wire.s16("u") + wire.s16("m1")
                   + struct.pack(">iBqI", 0, 1, 0, 2) + b"hi")
        c = self.client((0, struct.pack(">qqqB", 1, 101, 0, 1), 1),
                        (0, struct.pack(">BI", 1, 1) + message, 1))
        self.assertEqual(c.send_message(MSG), (1, 101, True))
        self.assertEqual(c.pull_range("c", 1), ([(1, 101, "u", "m1", "hi", "recalled")], True))


class Resp(unittest.TestCase):
    def test_replies(self):
        port = serve(self, resp_answers(b":5", b":9", b"-ERR store unavailable, retry later",
                                        b"-ERR unknown command", b"+OK"))
        c = clients.RespClient(port)
        self.addCleanup(c.close)
        self.assertEqual(c.incr("k"), ((5, 5),))
        self.assertEqual(c.incrby("k", 3), ((7, 9),))
        for kind, expected, close in (("resp:store_unavailable", True, False),
                                      ("resp:-ERR unknown command", False, False),
                                      ("resp:+OK", False, True)):
            with self.assertRaises(ServerError) as e:
                c.incr("k")
            self.assertEqual((e.exception.kind, e.exception.expected, e.exception.close),
                             (kind, expected, close))


class CannedHttp(http.server.BaseHTTPRequestHandler):
    """Answers every request with the next (status, body) of `answers`."""
    answers = []
    protocol_version = "HTTP/1.1"

    def answer(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        status, body = self.answers.pop(0)
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    do_GET = do_POST = answer

    def log_message(self, *args):
        pass


class Http(unittest.TestCase):
    def client(self, *answers):
        CannedHttp.answers = list(answers)
        server = http.server.HTTPServer(("127.0.0.1", 0), CannedHttp)
        t = threading.Thread(target=server.serve_forever, daemon=True)
        t.start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        c = clients.HttpClient(server.server_address[1])
        self.addCleanup(c.close)
        return c

    def test_seq_send_and_pull(self):
        c = self.client((200, {"key": "k", "id": 7}),
                        (200, {"key": "k", "ranges": [{"first": 8, "last": 9}]}),
                        (201, {"seq": 3, "server_msg_id": 30, "duplicate": False}),
                        (200, {"is_end": True, "messages": [
                            {"seq": 3, "server_msg_id": 30, "sender_id": "u",
                             "client_msg_id": "m1", "payload": "hi", "status": "normal"}]}))
        self.assertEqual(c.seq("k", None), ((7, 7),))
        self.assertEqual(c.seq("k", 2), ((8, 9),))
        self.assertEqual(c.send_message(MSG), (3, 30, False))
        self.assertEqual(c.pull("c", 1), ([(3, 30, "u", "m1", "hi", "normal")], True))

    def test_errors(self):
        c = self.client((503, {"error": {"code": "store_unavailable"}}),
                        (500, {"error": {"code": "internal"}}),
                        (200, {"key": "other", "id": 1}),
                        (200, {"seq": 3, "server_msg_id": 30, "duplicate": False}))
        for call, kind, expected in ((lambda: c.seq("k", None), "http:503 store_unavailable", True),
                                     (lambda: c.seq("k", None), "http:500 internal", False),
                                     (lambda: c.seq("k", None), "malformed: http body", False),
                                     (lambda: c.send_message(MSG), "malformed: http body", False)):
            with self.assertRaises(ServerError) as e:
                call()
            self.assertTrue(e.exception.kind.startswith(kind), e.exception.kind)
            self.assertEqual(e.exception.expected, expected)


class ConnectionsToInstances(unittest.TestCase):
    def test_records_answers_and_errors(self):
        port = serve(self, resp_answers(b":5", b"-ERR shutting down"))
        with socket.socket() as closed:
            closed.bind(("127.0.0.1", 0))
            refused = closed.getsockname()[1]
        inst = Instance("s1", refused, refused, port)
        conns = clients.Connections()
        self.addCleanup(conns.close)
        ok = conns.request(inst, "k", "resp_incr", 1)
        self.assertEqual((ok.ok, ok.ranges, ok.inst, ok.iface),
                         (True, ((5, 5),), "s1", "resp_incr"))
        self.assertLessEqual(ok.send, ok.recv)
        allowed = conns.request(inst, "k", "resp_incrby", 2)
        self.assertEqual((allowed.error, allowed.expected), ("resp:shutting_down", True))
        self.assertEqual(list(conns.by_slot), [("s1", "resp")])
        refused_answer = conns.request(inst, "k", "binary", 1)
        self.assertEqual((refused_answer.error, refused_answer.expected),
                         ("transport:refused", True))
        attempt = conns.send_message(inst, MSG, "http", "first")
        self.assertEqual((attempt.error, attempt.kind, attempt.seq),
                         ("transport:refused", "first", None))
        conns.keep_only(set())
        self.assertEqual(conns.by_slot, {})


if __name__ == "__main__":
    unittest.main()
