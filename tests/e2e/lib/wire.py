"""The wire formats the end-to-end suites speak, written from
docs/protocol.md and the RESP2 specification, not from the project's own
codecs (a test that used them would agree with any bug in them): binary
frames and RESP commands. Standard library only.

Thread safety: pure functions; a socket is the caller's.
"""
import socket
import struct

# A binary frame's header: u32 length (of what follows it), u8 version,
# u8 opcode, u16 flags, u32 request id. An answer's payload starts with its
# u16 status.
HEADER = struct.Struct(">IBBHI")
VERSION = 1


def frame(opcode, request_id, payload=b"", flags=0):
    """One binary request frame."""
    return HEADER.pack(8 + len(payload), VERSION, opcode, flags, request_id) + payload


def s16(text):
    """A `u16 length, bytes` string: `text` as UTF-8 (str) or as it is (bytes)."""
    raw = text if isinstance(text, bytes) else text.encode()
    return struct.pack(">H", len(raw)) + raw


def recv_exact(sock, n):
    """Exactly `n` bytes from `sock`; EOFError if it closes first."""
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("connection closed")
        buf += chunk
    return buf


def read_frame(sock):
    """(opcode, request_id, status, rest) of the next answer frame on `sock`."""
    length, _, opcode, _, request_id = HEADER.unpack(recv_exact(sock, HEADER.size))
    payload = recv_exact(sock, length - 8)
    return opcode, request_id, struct.unpack(">H", payload[:2])[0], payload[2:]


def resp_command(words):
    """One RESP2 command: an array of bulk strings (str as UTF-8, or bytes)."""
    out = b"*%d\r\n" % len(words)
    for w in words:
        raw = w.encode() if isinstance(w, str) else w
        out += b"$%d\r\n%s\r\n" % (len(raw), raw)
    return out


class BinaryConn:
    """One binary-protocol connection to 127.0.0.1:`port`, one call at a
    time; suites subclass it with their ops."""

    def __init__(self, port, timeout=10):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.rid = 0

    def call(self, opcode, payload=b""):
        """(status, rest) of the answer to one request."""
        self.rid += 1
        self.s.sendall(frame(opcode, self.rid, payload))
        op, rid, status, result = read_frame(self.s)
        assert (op, rid) == (opcode, self.rid), (op, rid)
        return status, result

    def close(self):
        self.s.close()
