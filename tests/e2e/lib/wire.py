"""The wire formats the end-to-end suites speak, written from
docs/protocol.md and the RESP2 specification, not from the project's own
codecs (a test that used them would agree with any bug in them): binary
frames, the payloads the suites build and read, and RESP commands and
replies. Standard library only.

Thread safety: pure functions; a socket, and a BinaryConn, is one
thread's at a time.
"""
import socket
import struct

# A binary frame's header: u32 length (of what follows it), u8 version,
# u8 opcode, u16 flags, u32 request id. An answer's payload starts with its
# u16 status.
HEADER = struct.Struct(">IBBHI")
VERSION = 1
MAX_IDS, PUSH_MESSAGE = 0x06, 0x2C
ID_RANGE = struct.Struct(">qq")


def header(length, opcode, request_id, flags=0, version=VERSION):
    """A frame header announcing `length` bytes after the length field,
    whatever follows it (suites announce more than they send)."""
    return HEADER.pack(length, version, opcode, flags, request_id)


def frame(opcode, request_id, payload=b"", flags=0, version=VERSION):
    """One binary request frame."""
    return header(8 + len(payload), opcode, request_id, flags, version) + payload


def s16(text):
    """A `u16 length, bytes` string: `text` as UTF-8 (str) or as it is (bytes)."""
    raw = text if isinstance(text, bytes) else text.encode()
    return struct.pack(">H", len(raw)) + raw


def read_s16(buf, pos=0):
    """The `u16 length, bytes` string at `pos` of `buf` as text (bad UTF-8
    replaced) and the position after it."""
    (n,) = struct.unpack(">H", buf[pos:pos + 2])
    return buf[pos + 2:pos + 2 + n].decode(errors="replace"), pos + 2 + n


def recv_exact(sock, n):
    """Exactly `n` bytes from `sock`; EOFError if it closes first."""
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("connection closed after %d of %d bytes" % (len(buf), n))
        buf += chunk
    return buf


def read_frame_with_flags(sock):
    """(opcode, flags, request_id, status, rest) of the next frame on `sock`."""
    length, _, opcode, flags, request_id = HEADER.unpack(recv_exact(sock, HEADER.size))
    payload = recv_exact(sock, length - 8)
    return opcode, flags, request_id, struct.unpack(">H", payload[:2])[0], payload[2:]


def read_frame(sock):
    """(opcode, request_id, status, rest) of the next answer frame on `sock`."""
    opcode, _, request_id, status, rest = read_frame_with_flags(sock)
    return opcode, request_id, status, rest


def call(sock, opcode, request_id, payload=b""):
    """(status, rest) of the answer to one request on `sock`. A message push
    that comes first is skipped: a subscription may receive a message sent
    just before it was made (its publish can follow the SEND's answer)."""
    sock.sendall(frame(opcode, request_id, payload))
    op, rid, status, rest = read_frame(sock)
    while (op, rid) == (PUSH_MESSAGE, 0) and opcode != PUSH_MESSAGE:
        op, rid, status, rest = read_frame(sock)
    assert (op, rid) == (opcode, request_id), (op, rid, opcode, request_id)
    return status, rest


# --- payloads ----------------------------------------------------------------


def next_ids_payload(key, count=1):
    """NEXT_IDS' and NEXT_BLOCK's request: the key, u32 count."""
    return s16(key) + struct.pack(">I", count)


def once_payload(key, count, token):
    """NEXT_BLOCK_ONCE's request: the key, u32 count, u8-length token."""
    raw = token.encode()
    return s16(key) + struct.pack(">IB", count, len(raw)) + raw


def key_list(keys):
    """A u32 count and the keys (MAX_IDS, GET_MIN_SEQS, SUBSCRIBE, ...)."""
    return struct.pack(">I", len(keys)) + b"".join(s16(k) for k in keys)


def key_values(items):
    """A u32 count and (key, i64 value) pairs (SET_MIN_SEQS, ...)."""
    return struct.pack(">I", len(items)) + b"".join(s16(k) + struct.pack(">q", v)
                                                    for k, v in items)


def send_payload(conv, sender, client_msg_id, payload, content_type=0):
    """SEND's request: conversation, sender, client message id, i32 content
    type and the u32-length payload (str as UTF-8, or bytes)."""
    raw = payload.encode() if isinstance(payload, str) else payload
    return (s16(conv) + s16(sender) + s16(client_msg_id)
            + struct.pack(">iI", content_type, len(raw)) + raw)


def pull_range_payload(conv, first, last=0, limit=100, order=0, user=""):
    """PULL_RANGE's request: seqs `first`..`last` (0: up to the max) of
    `conv`, at most `limit`, order 0 ascending or 1 descending, as `user`
    ("" none)."""
    return s16(conv) + struct.pack(">qqIB", first, last, limit, order) + s16(user)


def int64_list(result):
    """The values of a u32 count and that many i64 (MAX_IDS' answer, ...)."""
    (n,) = struct.unpack(">I", result[:4])
    assert len(result) == 4 + 8 * n, result
    return list(struct.unpack(">%dq" % n, result[4:]))


def ranges_of(result):
    """The (first, last) ranges of a u32 count and that many i64 pairs
    (NEXT_IDS' answer)."""
    (n,) = struct.unpack(">I", result[:4])
    return [ID_RANGE.unpack_from(result, 4 + ID_RANGE.size * i) for i in range(n)]


def ids_of(result):
    """Every ID of NEXT_IDS' answer, in order."""
    return [i for first, last in ranges_of(result) for i in range(first, last + 1)]


# --- RESP ----------------------------------------------------------------------


def resp_command(words):
    """One RESP2 command: an array of bulk strings (str as UTF-8, or bytes)."""
    out = b"*%d\r\n" % len(words)
    for w in words:
        raw = w.encode() if isinstance(w, str) else w
        out += b"$%d\r\n%s\r\n" % (len(raw), raw)
    return out


def resp_read_line(sock):
    """The next reply line on `sock`, without its CRLF, read a byte at a
    time (nothing after it is taken from the socket); EOFError if it closes
    first."""
    buf = b""
    while not buf.endswith(b"\r\n"):
        c = sock.recv(1)
        if not c:
            raise EOFError("RESP connection closed")
        buf += c
    return buf[:-2]


def resp_call(sock, *words):
    """Sends one command on `sock`; returns its reply's first line, without CRLF."""
    sock.sendall(resp_command(words))
    return resp_read_line(sock)


def resp_pipelined(port, commands):
    """Sends `commands` (lists of words) pipelined on a new connection to
    127.0.0.1:`port`, then QUIT; returns the raw replies before the QUIT's."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.sendall(b"".join(resp_command(words) for words in commands) + resp_command(["QUIT"]))
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return out[:-len(b"+OK\r\n")]
            out += chunk
    finally:
        s.close()


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

    def max_ids(self, keys):
        """MAX_IDS of `keys`: the largest ID handed out per key."""
        status, result = self.call(MAX_IDS, key_list(keys))
        assert status == 0, (status, result)
        return int64_list(result)

    def close(self):
        self.s.close()
