"""Minimal clients for the soak driver: binary protocol (docs/protocol.md),
HTTP/1.1 keep-alive and RESP2. Frames, payloads and RESP commands are the
end-to-end suites' (tests/e2e/lib/wire.py). Standard library only.

Each client object owns one socket and is used by one thread at a time (no
locking inside). Every call raises on a transport failure (OSError, EOFError)
so the caller counts it as an error.
"""
import http.client
import socket
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "e2e"))
from lib import wire  # noqa: E402

PING, NEXT_IDS, AUTH = 0x01, 0x02, 0x03
SEND, SUBSCRIBE, UNSUBSCRIBE = 0x20, 0x2A, 0x2B
PUSH_MESSAGE, PUSH_DROPPED = 0x2C, 0x2D
OK = 0
TIMEOUT_S = 10


class Binary:
    """One binary-protocol connection, authenticated with `secret`."""

    def __init__(self, port, secret, timeout=TIMEOUT_S):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.next_id = 1
        status, _ = self.call(AUTH, secret.encode())
        if status != OK:
            raise RuntimeError("binary AUTH: status %d" % status)

    def close(self):
        self.sock.close()

    def read_frame(self):
        """(opcode, request_id, status, rest) of the next frame."""
        return wire.read_frame(self.sock)

    def call(self, opcode, payload=b""):
        """Sends one request and returns (status, rest) of its answer; pushes
        that arrive first are skipped (callers that subscribe use read_frame)."""
        rid = self.next_id
        self.next_id += 1
        self.sock.sendall(wire.frame(opcode, rid, payload))
        while True:
            op, got, status, rest = self.read_frame()
            if got == 0:  # a push
                continue
            if (op, got) != (opcode, rid):
                raise RuntimeError("binary: answer %#x/%d to %#x/%d" % (op, got, opcode, rid))
            return status, rest

    def next_ids(self, key, count=1):
        return self.call(NEXT_IDS, wire.next_ids_payload(key, count))

    def send(self, conv, sender, client_msg_id, payload):
        return self.call(SEND, wire.send_payload(conv, sender, client_msg_id, payload,
                                                 content_type=1))

    def subscribe(self, convs):
        return self.call(SUBSCRIBE, wire.key_list(convs))


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
        line = self.command("AUTH", secret)
        if line != b"+OK":
            raise RuntimeError("RESP AUTH: %r" % line)

    def close(self):
        self.sock.close()

    def command(self, *args):
        """The reply's first line (without CRLF); INCR answers one line."""
        return wire.resp_call(self.sock, *args)
