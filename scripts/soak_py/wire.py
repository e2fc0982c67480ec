"""Minimal clients for the soak driver: binary protocol (docs/protocol.md),
HTTP/1.1 keep-alive and RESP2. Standard library only.

Each client object owns one socket and is used by one thread at a time (no
locking inside). Every call raises on a transport failure (OSError, EOFError)
so the caller counts it as an error.
"""
import http.client
import socket
import struct

PING, NEXT_IDS, AUTH = 0x01, 0x02, 0x03
SEND, SUBSCRIBE, UNSUBSCRIBE = 0x20, 0x2A, 0x2B
PUSH_MESSAGE, PUSH_DROPPED = 0x2C, 0x2D
OK = 0
TIMEOUT_S = 10


def s16(text):
    b = text.encode()
    return struct.pack(">H", len(b)) + b


def frame(opcode, request_id, payload=b""):
    return struct.pack(">IBBHI", 8 + len(payload), 1, opcode, 0, request_id) + payload


class Binary:
    """One binary-protocol connection, authenticated with `secret`."""

    def __init__(self, port, secret, timeout=TIMEOUT_S):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.next_id = 1
        status, _ = self.call(AUTH, secret.encode())
        if status != OK:
            raise RuntimeError("binary AUTH: status %d" % status)

    def close(self):
        self.sock.close()

    def _exact(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("binary connection closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_frame(self):
        """(opcode, request_id, status, rest) of the next frame."""
        length, _, opcode, _, request_id = struct.unpack(">IBBHI", self._exact(12))
        payload = self._exact(length - 8)
        return opcode, request_id, struct.unpack(">H", payload[:2])[0], payload[2:]

    def call(self, opcode, payload=b""):
        """Sends one request and returns (status, rest) of its answer; pushes
        that arrive first are skipped (callers that subscribe use read_frame)."""
        rid = self.next_id
        self.next_id += 1
        self.sock.sendall(frame(opcode, rid, payload))
        while True:
            op, got, status, rest = self.read_frame()
            if got == 0:  # a push
                continue
            if (op, got) != (opcode, rid):
                raise RuntimeError("binary: answer %#x/%d to %#x/%d" % (op, got, opcode, rid))
            return status, rest

    def next_ids(self, key, count=1):
        return self.call(NEXT_IDS, s16(key) + struct.pack(">I", count))

    def send(self, conv, sender, client_msg_id, payload):
        body = (s16(conv) + s16(sender) + s16(client_msg_id) + struct.pack(">i", 1) +
                struct.pack(">I", len(payload)) + payload)
        return self.call(SEND, body)

    def subscribe(self, convs):
        return self.call(SUBSCRIBE, struct.pack(">I", len(convs)) + b"".join(s16(c) for c in convs))


class Http:
    """One keep-alive HTTP connection with a bearer token."""

    def __init__(self, port, secret, timeout=TIMEOUT_S):
        self.port, self.timeout = port, timeout
        self.headers = {"Authorization": "Bearer " + secret}
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)

    def close(self):
        self.conn.close()

    def request(self, method, path, body=None, secret=None):
        """(status, body bytes). Reconnects once if the server closed an idle
        keep-alive connection (that is not an error of the server)."""
        headers = dict(self.headers)
        if secret is not None:
            headers["Authorization"] = "Bearer " + secret
        if body is not None:
            headers["Content-Type"] = "application/json"
        for attempt in (0, 1):
            try:
                self.conn.request(method, path, body=body, headers=headers)
                r = self.conn.getresponse()
                return r.status, r.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port,
                                                       timeout=self.timeout)
                if attempt:
                    raise
        raise AssertionError("unreachable")


class Resp:
    """One RESP2 connection, authenticated with `secret`."""

    def __init__(self, port, secret, timeout=TIMEOUT_S):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        line = self.command("AUTH", secret)
        if line != b"+OK":
            raise RuntimeError("RESP AUTH: %r" % line)

    def close(self):
        self.sock.close()

    def command(self, *args):
        """The reply's first line (without CRLF); INCR answers one line."""
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a.encode() if isinstance(a, str) else a
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise EOFError("RESP connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line
