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
