"""End-to-end tests of the binary protocol and the RESP listener of the real
seqd binary (SQLite store). Frames are built here from docs/protocol.md, not
with the project's codec, so the two are checked against each other.

Usage: python3 tests/e2e/test_protocols.py [unittest args]
"""
import os
import struct
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib.seqd_case import SeqdCase  # noqa: E402
from lib.wire import frame, ids_of, next_ids_payload, read_frame_with_flags  # noqa: E402

PING, NEXT_IDS = 0x01, 0x02
RESPONSE = 0x0001


def next_ids(request_id, key, count):
    return frame(NEXT_IDS, request_id, next_ids_payload(key, count))


class Protocols(SeqdCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.seqd.create_key("proto", 100)

    def resp_call(self, s, data):
        s.sendall(data)
        return s.recv(65536)

    def test_binary_ping_and_pipelined_next_ids(self):
        s = self.tcp()
        s.sendall(frame(PING, 1, b"hi"))
        self.assertEqual(read_frame_with_flags(s), (PING, RESPONSE, 1, 0, b"hi"))
        s.sendall(b"".join(next_ids(1000 + i, "proto", 1 + i % 3) for i in range(500)))
        seen_ids, answered = [], set()
        for _ in range(500):
            opcode, flags, rid, status, result = read_frame_with_flags(s)
            self.assertEqual((opcode, flags, status), (NEXT_IDS, RESPONSE, 0))
            answered.add(rid)
            seen_ids.extend(ids_of(result))
        self.assertEqual(answered, set(range(1000, 1500)))
        self.assertEqual(len(seen_ids), len(set(seen_ids)))
        self.assertEqual(len(seen_ids), sum(1 + i % 3 for i in range(500)))

    def test_binary_errors_keep_or_close_the_connection(self):
        s = self.tcp()
        s.sendall(next_ids(5, "no_such_key_proto", 1))
        self.assertEqual(read_frame_with_flags(s)[3], 2)  # UNKNOWN_KEY, connection stays
        s.sendall(next_ids(6, "proto", 0))
        self.assertEqual(read_frame_with_flags(s)[3], 1)  # INVALID_ARGUMENT
        s.sendall(frame(0x7F, 7))
        self.assertEqual(read_frame_with_flags(s)[3], 7)  # UNKNOWN_OPCODE
        s.sendall(next_ids(8, "proto", 1))
        self.assertEqual(read_frame_with_flags(s)[3], 0)
        s.sendall(frame(PING, 9, version=2))
        opcode, flags, rid, status, _ = read_frame_with_flags(s)
        self.assertEqual((opcode, rid, status), (0, 0, 65))  # UNSUPPORTED_VERSION, then close
        self.assertEqual(s.recv(16), b"")

    def test_binary_garbage_and_oversized_frames(self):
        s = self.tcp()
        s.sendall(struct.pack(">I", 0x7FFFFFFF))
        self.assertEqual(read_frame_with_flags(s)[3], 66)  # FRAME_TOO_LARGE
        self.assertEqual(s.recv(16), b"")
        s = self.tcp()
        s.sendall(b"GET / HTTP/1.1\r\n\r\n")
        self.assertIn(read_frame_with_flags(s)[3], (64, 65, 66))
        self.assertIsNone(self.seqd.proc.poll())

    def test_resp_commands(self):
        s = self.resp()
        self.assertEqual(self.resp_call(s, b"PING\r\n"), b"+PONG\r\n")
        first = int(self.resp_call(s, b"*2\r\n$4\r\nINCR\r\n$5\r\nproto\r\n")[1:-2])
        second = int(self.resp_call(s, b"*2\r\n$4\r\nincr\r\n$5\r\nproto\r\n")[1:-2])
        self.assertGreater(second, first)
        last = int(self.resp_call(s, b"*3\r\n$6\r\nINCRBY\r\n$5\r\nproto\r\n$2\r\n10\r\n")[1:-2])
        self.assertGreaterEqual(last, second + 10)
        self.assertTrue(self.resp_call(s, b"*1\r\n$7\r\nFLUSHDB\r\n").startswith(b"-ERR unknown command"))
        self.assertTrue(self.resp_call(s, b"*2\r\n$4\r\nINCR\r\n$3\r\nnah\r\n").startswith(b"-ERR"))
        self.assertEqual(self.resp_call(s, b"*1\r\n$7\r\nCOMMAND\r\n"), b"*0\r\n")
        self.assertEqual(self.resp_call(s, b"QUIT\r\n"), b"+OK\r\n")
        self.assertEqual(s.recv(16), b"")

    def test_resp_pipelined_in_order(self):
        s = self.resp()
        s.sendall(b"*2\r\n$4\r\nINCR\r\n$5\r\nproto\r\n" * 1000)
        buf = b""
        while buf.count(b"\r\n") < 1000:
            chunk = s.recv(65536)
            self.assertTrue(chunk, "closed early")
            buf += chunk
        values = [int(line[1:]) for line in buf.split(b"\r\n")[:1000]]
        self.assertEqual(values, sorted(values))
        self.assertEqual(len(set(values)), 1000)

    def test_resp_protocol_error_closes(self):
        s = self.resp()
        reply = self.resp_call(s, b"*2\r\n$-5\r\n")
        self.assertTrue(reply.startswith(b"-ERR Protocol error"), reply)
        self.assertEqual(s.recv(16), b"")

    def test_ids_unique_across_http_binary_and_resp(self):
        got = list(self.seqd.ids("proto", 50))
        s = self.tcp()
        s.sendall(next_ids(1, "proto", 50))
        got.extend(ids_of(read_frame_with_flags(s)[4]))
        r = self.resp()
        for _ in range(50):
            got.append(int(self.resp_call(r, b"*2\r\n$4\r\nINCR\r\n$5\r\nproto\r\n")[1:-2]))
        self.assertEqual(len(got), len(set(got)))


if __name__ == "__main__":
    unittest.main()
