"""tests/e2e/lib/sockets.py on socket pairs and a loopback connection
played here: data up to a close, a reset or silence; a close within a time
or not; an HTTP head arriving in pieces, or cut short.

Usage: python3 tests/e2e/lib/test_sockets.py [unittest args]
"""
import os
import socket
import struct
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lib import sockets  # noqa: E402


def pair(test):
    a, b = socket.socketpair()
    test.addCleanup(a.close)
    test.addCleanup(b.close)
    return a, b


def reset_pair(test):
    """(client, server) over loopback TCP; closing the server resets."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    client = socket.create_connection(listener.getsockname())
    server, _ = listener.accept()
    listener.close()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    test.addCleanup(client.close)
    return client, server


class ReadAll(unittest.TestCase):
    def test_until_closed(self):
        a, b = pair(self)
        a.sendall(b"abc")
        a.close()
        self.assertEqual(sockets.read_all(b, 2), (b"abc", True))

    def test_until_silence(self):
        a, b = pair(self)
        a.sendall(b"abc")
        self.assertEqual(sockets.read_all(b, 0.1), (b"abc", False))

    def test_until_reset(self):
        client, server = reset_pair(self)
        server.close()
        self.assertEqual(sockets.read_all(client, 2), (b"", True))


class ClosedWithin(unittest.TestCase):
    def test_closed_later(self):
        a, b = pair(self)
        a.sendall(b"dropped")
        threading.Timer(0.1, a.close).start()
        self.assertTrue(sockets.closed_within(b, 3))

    def test_never_closed(self):
        a, b = pair(self)
        started = time.time()
        self.assertFalse(sockets.closed_within(b, 0.3))
        self.assertGreaterEqual(time.time() - started, 0.3)


class ReadHead(unittest.TestCase):
    def test_in_pieces_with_what_follows(self):
        a, b = pair(self)
        response = b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 2\r\n\r\nno"
        sender = threading.Thread(target=lambda: [a.sendall(response[i:i + 5]) or time.sleep(0.01)
                                                  for i in range(0, len(response), 5)])
        sender.start()
        head = sockets.read_head(b, 2)
        sender.join()
        self.assertTrue(head.startswith(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 2\r\n\r\n"))

    def test_cut_short(self):
        a, b = pair(self)
        a.sendall(b"HTTP/1.1 200")
        a.close()
        self.assertEqual(sockets.read_head(b, 2), b"HTTP/1.1 200")


if __name__ == "__main__":
    unittest.main()
