"""tests/e2e/lib/wire.py against the byte layouts of docs/protocol.md and
RESP2, written out by hand here.

Usage: python3 tests/e2e/lib/test_wire.py [unittest args]
"""
import os
import socket
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lib import wire  # noqa: E402


class Wire(unittest.TestCase):
    def test_frame_header(self):
        self.assertEqual(wire.frame(0x02, 7, b"ab"),
                         b"\x00\x00\x00\x0a" b"\x01" b"\x02" b"\x00\x00" b"\x00\x00\x00\x07" b"ab")
        self.assertEqual(wire.frame(0x05, 1, flags=4)[:12],
                         b"\x00\x00\x00\x08\x01\x05\x00\x04\x00\x00\x00\x01")

    def test_s16_counts_bytes_not_characters(self):
        self.assertEqual(wire.s16("é"), b"\x00\x02\xc3\xa9")
        self.assertEqual(wire.s16(b"a\x00"), b"\x00\x02a\x00")
        self.assertEqual(wire.s16(""), b"\x00\x00")

    def test_header_announces_any_length(self):
        self.assertEqual(wire.header(0xFFFFFFFF, 0x02, 2),
                         b"\xff\xff\xff\xff\x01\x02\x00\x00\x00\x00\x00\x02")
        self.assertEqual(wire.frame(0x01, 1, version=2)[4:5], b"\x02")

    def test_read_s16(self):
        self.assertEqual(wire.read_s16(b"\x00\x02\xc3\xa9rest"), ("é", 4))
        self.assertEqual(wire.read_s16(b"xx\x00\x01\xff", 2), ("\ufffd", 5))

    def test_payloads(self):
        self.assertEqual(wire.next_ids_payload("k", 3), b"\x00\x01k\x00\x00\x00\x03")
        self.assertEqual(wire.once_payload("k", 2, "tok"),
                         b"\x00\x01k\x00\x00\x00\x02\x03tok")
        self.assertEqual(wire.key_list(["a", "bc"]),
                         b"\x00\x00\x00\x02\x00\x01a\x00\x02bc")
        self.assertEqual(wire.key_values([("a", -1)]),
                         b"\x00\x00\x00\x01\x00\x01a" + b"\xff" * 8)
        self.assertEqual(wire.send_payload("c", "u", "m", "hé", content_type=1),
                         b"\x00\x01c\x00\x01u\x00\x01m\x00\x00\x00\x01\x00\x00\x00\x03h\xc3\xa9")
        self.assertEqual(wire.pull_range_payload("c", 1, limit=100),
                         b"\x00\x01c" + b"\x00" * 7 + b"\x01" + b"\x00" * 8
                         + b"\x00\x00\x00\x64\x00\x00\x00")
        self.assertEqual(wire.send_payload("c", "u", "m", b"x")[-9:],
                         b"\x00\x00\x00\x00\x00\x00\x00\x01x")

    def test_answers(self):
        two_ranges = (b"\x00\x00\x00\x02" + b"\x00" * 7 + b"\x01" + b"\x00" * 7 + b"\x02"
                      + b"\x00" * 7 + b"\x05" + b"\x00" * 7 + b"\x05")
        self.assertEqual(wire.ranges_of(two_ranges), [(1, 2), (5, 5)])
        self.assertEqual(wire.ids_of(two_ranges), [1, 2, 5])
        self.assertEqual(wire.int64_list(b"\x00\x00\x00\x01" + b"\xff" * 8), [-1])
        with self.assertRaises(AssertionError):
            wire.int64_list(b"\x00\x00\x00\x02" + b"\x00" * 8)

    def test_resp_command(self):
        self.assertEqual(wire.resp_command(["INCRBY", "k é", b"\x00", "3"]),
                         b"*4\r\n$6\r\nINCRBY\r\n$4\r\nk \xc3\xa9\r\n$1\r\n\x00\r\n$1\r\n3\r\n")

    def test_read_frame_across_split_writes(self):
        a, b = socket.socketpair()
        self.addCleanup(a.close)
        self.addCleanup(b.close)
        answer = b"\x00\x00\x00\x0c\x01\x06\x00\x00\x00\x00\x00\x09" + b"\x00\x01" + b"xy"
        sender = threading.Thread(target=lambda: [a.sendall(answer[i:i + 3])
                                                  for i in range(0, len(answer), 3)])
        sender.start()
        self.assertEqual(wire.read_frame(b), (0x06, 9, 1, b"xy"))
        sender.join()
        a.close()
        with self.assertRaises(EOFError):
            wire.recv_exact(b, 1)

    def test_call_skips_a_message_push(self):
        a, b = socket.socketpair()
        self.addCleanup(a.close)
        self.addCleanup(b.close)
        push = b"\x00\x00\x00\x0a\x01\x2c\x00\x03\x00\x00\x00\x00\x00\x00"
        answer = b"\x00\x00\x00\x0b\x01\x02\x00\x01\x00\x00\x00\x07\x00\x04x"
        a.sendall(push + answer)
        self.assertEqual(wire.call(b, 0x02, 7), (4, b"x"))
        self.assertEqual(wire.recv_exact(a, 12), wire.frame(0x02, 7))
        a.sendall(push)
        self.assertEqual(wire.read_frame_with_flags(b), (0x2C, 3, 0, 0, b""))

    def test_resp_lines(self):
        a, b = socket.socketpair()
        self.addCleanup(a.close)
        self.addCleanup(b.close)
        a.sendall(b":12\r\n-ERR x\r\n")
        self.assertEqual(wire.resp_call(b, "INCR", "k"), b":12")
        self.assertEqual(wire.resp_read_line(b), b"-ERR x")
        self.assertEqual(a.recv(100), b"*2\r\n$4\r\nINCR\r\n$1\r\nk\r\n")
        a.close()
        with self.assertRaises(EOFError):
            wire.resp_read_line(b)

    def test_resp_pipelined(self):
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        self.addCleanup(server.close)
        got = []

        def answer():
            peer, _ = server.accept()
            with peer:
                want = wire.resp_command(["INCR", "k"]) + wire.resp_command(["QUIT"])
                got.append(wire.recv_exact(peer, len(want)) == want)
                peer.sendall(b":1\r\n+OK\r\n")

        t = threading.Thread(target=answer)
        t.start()
        self.assertEqual(wire.resp_pipelined(server.getsockname()[1], [["INCR", "k"]]), b":1\r\n")
        t.join()
        self.assertEqual(got, [True])

    def test_binary_conn_matches_its_answer(self):
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        self.addCleanup(server.close)

        def answer():
            peer, _ = server.accept()
            with peer:
                request = wire.recv_exact(peer, 12)
                self.assertEqual(request[:12], wire.frame(0x06, 1)[:12])
                peer.sendall(b"\x00\x00\x00\x0b\x01\x06\x00\x00\x00\x00\x00\x01\x00\x02z")

        t = threading.Thread(target=answer)
        t.start()
        conn = wire.BinaryConn(server.getsockname()[1])
        self.addCleanup(conn.close)
        self.assertEqual(conn.call(0x06), (2, b"z"))
        t.join()


if __name__ == "__main__":
    unittest.main()
