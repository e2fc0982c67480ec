"""The chaos suites' protocol clients: IDs over HTTP (GET /seq), the binary
protocol (NEXT_IDS) and RESP (INCR, INCRBY), messages over HTTP and the
binary protocol (send, pull), each answer checked to be well formed and
each error named and judged against the contract (ServerError); and
`Connections`, one thread's connections to a cluster's instances, which
turns every request into a history record (lib/checkers.py).

Thread safety: a client, and a Connections, is one thread's.
"""
import http.client
import json
import socket
import struct
import time

from lib import wire
from lib.checkers import Answer, MsgAttempt

SOCKET_TIMEOUT_S = 3.0
PULL_LIMIT = 1000  # messages per pull

NEXT_IDS, SEND, PULL_RANGE = 0x02, 0x20, 0x21
MESSAGE_STATUS = {0: "normal", 1: "recalled", 2: "deleted"}
BINARY_STATUS = {0: "OK", 1: "INVALID_ARGUMENT", 2: "UNKNOWN_KEY", 3: "KEY_EXISTS",
                 4: "STORE_UNAVAILABLE", 5: "SHUTTING_DOWN", 6: "INTERNAL", 7: "UNKNOWN_OPCODE",
                 8: "NOT_FOUND", 9: "FAILED_PRECONDITION", 10: "TOO_LARGE", 11: "NOT_SERVING",
                 12: "WRONG_OWNER", 13: "UNAUTHENTICATED", 14: "PERMISSION_DENIED",
                 15: "RESOURCE_EXHAUSTED", 16: "MESSAGE_ID_CONFLICT", 64: "MALFORMED_FRAME",
                 65: "UNSUPPORTED_VERSION", 66: "FRAME_TOO_LARGE"}
BINARY_EXPECTED = {"STORE_UNAVAILABLE", "SHUTTING_DOWN"}
HTTP_EXPECTED = {(503, "store_unavailable"), (503, "shutting_down")}
# RESP error texts the contract allows, by the part that names them.
RESP_EXPECTED = {"store unavailable": "store_unavailable",
                 "shutting down": "shutting_down",
                 "could not take a contiguous block": "not_contiguous"}
# What a dropped, refused or timed-out connection raises.
TRANSPORT_ERRORS = (OSError, EOFError, http.client.HTTPException)


class ServerError(Exception):
    """An answer that is not IDs: `kind` names it, `expected` says whether
    the contract allows it."""

    def __init__(self, kind, expected, close=False):
        super().__init__(kind)
        self.kind, self.expected, self.close = kind, expected, close


def checked_ranges(ranges, count):
    """`ranges` as a tuple if they hold exactly `count` IDs in ascending,
    disjoint ranges; else ServerError (malformed, never expected)."""
    out, total, prev = [], 0, None
    for first, last in ranges:
        if first > last or (prev is not None and first <= prev) or first < 1:
            raise ServerError("malformed: ranges %r" % (ranges,), False, close=True)
        out.append((first, last))
        total += last - first + 1
        prev = last
    if total != count:
        raise ServerError("malformed: %d IDs for count %d" % (total, count), False, close=True)
    return tuple(out)


def transport_kind(e):
    """A name for a dropped, refused or timed-out connection."""
    if isinstance(e, (socket.timeout, TimeoutError)):
        return "transport:timeout"
    if isinstance(e, ConnectionRefusedError):
        return "transport:refused"
    if isinstance(e, (ConnectionResetError, BrokenPipeError)):
        return "transport:reset"
    if isinstance(e, (EOFError, http.client.RemoteDisconnected, http.client.IncompleteRead)):
        return "transport:closed"
    return "transport:%s" % type(e).__name__


def error_code(body):
    """The `code` of an HTTP error body, or '?'."""
    try:
        return json.loads(body)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return "?"


class HttpClient:
    """GET /seq and messages on one kept-alive HTTP connection."""

    def __init__(self, port, timeout=SOCKET_TIMEOUT_S):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)

    def seq(self, key, count):
        """IDs of GET /seq/KEY (count None) or GET /seq/KEY?count=N."""
        path = "/seq/%s" % key if count is None else "/seq/%s?count=%d" % (key, count)
        self.conn.request("GET", path)
        r = self.conn.getresponse()
        body = r.read()
        if r.status != 200:
            code = error_code(body)
            raise ServerError("http:%d %s" % (r.status, code), (r.status, code) in HTTP_EXPECTED)
        try:
            j = json.loads(body)
            if j.get("key") != key:
                raise ValueError("key %r" % j.get("key"))
            if count is None:
                return checked_ranges([(int(j["id"]), int(j["id"]))], 1)
            return checked_ranges([(int(x["first"]), int(x["last"])) for x in j["ranges"]], count)
        except (ValueError, KeyError, TypeError) as e:
            raise ServerError("malformed: http body %r (%s)" % (body[:120], e), False, close=True)

    def send_message(self, msg):
        """(seq, server_msg_id, duplicate) of POST /conversations/CONV/messages."""
        body = json.dumps({"sender_id": msg.sender, "client_msg_id": msg.cmid,
                           "payload": msg.payload})
        self.conn.request("POST", "/conversations/%s/messages" % msg.conv, body=body,
                          headers={"Content-Type": "application/json"})
        r = self.conn.getresponse()
        body = r.read()
        if r.status not in (200, 201):
            code = error_code(body)
            raise ServerError("http:%d %s" % (r.status, code), (r.status, code) in HTTP_EXPECTED)
        try:
            j = json.loads(body)
            seq, msg_id, dup = int(j["seq"]), int(j["server_msg_id"]), j["duplicate"]
            if seq < 1 or dup is not (r.status == 200):
                raise ValueError("seq %d, duplicate %r with status %d" % (seq, dup, r.status))
            return seq, msg_id, dup
        except (ValueError, KeyError, TypeError) as e:
            raise ServerError("malformed: http body %r (%s)" % (body[:120], e), False, close=True)

    def pull(self, conv, first):
        """(rows, is_end) of GET /conversations/CONV/messages?from=FIRST; a row
        is (seq, server_msg_id, sender, client_msg_id, payload, status)."""
        self.conn.request("GET", "/conversations/%s/messages?from=%d&limit=%d" % (
            conv, first, PULL_LIMIT))
        r = self.conn.getresponse()
        body = r.read()
        if r.status != 200:
            raise ServerError("http:%d %s" % (r.status, error_code(body)), False)
        j = json.loads(body)
        return [(int(m["seq"]), int(m["server_msg_id"]), m["sender_id"], m["client_msg_id"],
                 m["payload"], m["status"]) for m in j["messages"]], bool(j["is_end"])

    def close(self):
        self.conn.close()


class BinaryClient:
    """NEXT_IDS and messages on one binary-protocol connection, one request
    at a time."""

    def __init__(self, port, timeout=SOCKET_TIMEOUT_S):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.next_id = 1

    def call(self, op, payload):
        """The payload after the status of the OK answer to one request, or
        ServerError."""
        rid, self.next_id = self.next_id, self.next_id + 1
        self.sock.sendall(wire.frame(op, rid, payload))
        opcode, flags, got_rid, status, rest = wire.read_frame_with_flags(self.sock)
        if status != 0:
            name = BINARY_STATUS.get(status, str(status))
            raise ServerError("binary:%s" % name, name in BINARY_EXPECTED,
                              close=status >= 64 or name == "SHUTTING_DOWN")
        if (opcode, flags, got_rid) != (op, 1, rid):
            raise ServerError("malformed: binary header %r" % ((opcode, flags, got_rid, rid),),
                              False, close=True)
        return rest

    def next_ids(self, key, count):
        rest = self.call(NEXT_IDS, wire.next_ids_payload(key, count))
        (n,) = struct.unpack(">I", rest[:4])
        if len(rest) != 4 + 16 * n:
            raise ServerError("malformed: binary payload of %d bytes" % (2 + len(rest)), False,
                              close=True)
        return checked_ranges(wire.ranges_of(rest), count)

    def send_message(self, msg):
        """(seq, server_msg_id, duplicate) of SEND (content type 0)."""
        rest = self.call(SEND, wire.send_payload(msg.conv, msg.sender, msg.cmid, msg.payload))
        if len(rest) != 25:
            raise ServerError("malformed: SEND answer of %d bytes" % (2 + len(rest)), False,
                              close=True)
        seq, msg_id, _, dup = struct.unpack(">qqqB", rest)
        if seq < 1 or dup > 1:
            raise ServerError("malformed: SEND seq %d duplicate %d" % (seq, dup), False,
                              close=True)
        return seq, msg_id, dup == 1

    def pull_range(self, conv, first):
        """(rows, is_end) of PULL_RANGE from FIRST to the max, ascending; rows
        as HttpClient.pull's."""
        rest = self.call(PULL_RANGE, wire.pull_range_payload(conv, first, limit=PULL_LIMIT))
        is_end, n = struct.unpack(">BI", rest[:5])
        pos, rows = 5, []
        for _ in range(n):
            seq, msg_id = struct.unpack(">qq", rest[pos:pos + 16])
            sender, pos = wire.read_s16(rest, pos + 16)
            cmid, pos = wire.read_s16(rest, pos)
            _, status, _, size = struct.unpack(">iBqI", rest[pos:pos + 17])
            pos += 17
            payload = rest[pos:pos + size].decode(errors="replace")
            pos += size
            rows.append((seq, msg_id, sender, cmid, payload, MESSAGE_STATUS.get(status, status)))
        if pos != len(rest):
            raise ValueError("PULL_RANGE answer: %d bytes left over" % (len(rest) - pos))
        return rows, bool(is_end)

    def close(self):
        self.sock.close()


class RespClient:
    """INCR and INCRBY on one RESP connection, one command at a time."""

    def __init__(self, port, timeout=SOCKET_TIMEOUT_S):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)

    def call(self, *args):
        """The integer reply of one command, or ServerError."""
        line = wire.resp_call(self.sock, *args)
        if line.startswith(b":"):
            return int(line[1:])
        text = line.decode(errors="replace")
        for part, name in RESP_EXPECTED.items():
            if part in text:
                raise ServerError("resp:%s" % name, True)
        raise ServerError("resp:%s" % text[:80], False, close=not text.startswith("-"))

    def incr(self, key):
        n = self.call("INCR", key)
        return checked_ranges([(n, n)], 1)

    def incrby(self, key, count):
        """INCRBY answers the last ID of a contiguous block of `count`."""
        last = self.call("INCRBY", key, str(count))
        return checked_ranges([(last - count + 1, last)], count)

    def close(self):
        self.sock.close()


# A client of an instance (with http_port, binary_port, resp_port) by protocol.
CLIENTS = {"http": lambda inst: HttpClient(inst.http_port),
           "binary": lambda inst: BinaryClient(inst.binary_port),
           "resp": lambda inst: RespClient(inst.resp_port)}
# The IDs of one request by interface: (client, key, count) -> ranges.
ASK = {"http": lambda c, key, count: c.seq(key, None),
       "http_count": lambda c, key, count: c.seq(key, count),
       "binary": lambda c, key, count: c.next_ids(key, count),
       "resp_incr": lambda c, key, count: c.incr(key),
       "resp_incrby": lambda c, key, count: c.incrby(key, count)}


class Connections:
    """One thread's connections to a cluster's instances (anything with
    `name` and the ports CLIENTS reads), one per instance and protocol:
    made on first use, dropped after a transport error or an answer that
    closes it. `request` and `send_message` never raise for what the
    server or the network does; they return its history record."""

    def __init__(self):
        self.by_slot = {}

    def get(self, inst, proto):
        """The connection to `inst` for `proto`, made if missing."""
        slot = (inst.name, proto)
        if slot not in self.by_slot:
            self.by_slot[slot] = CLIENTS[proto](inst)
        return self.by_slot[slot]

    def drop(self, name, proto):
        c = self.by_slot.pop((name, proto), None)
        if c is not None:
            try:
                c.close()
            except OSError:
                pass

    def keep_only(self, names):
        """Drops the connections to instances not named in `names`."""
        for name, proto in [s for s in self.by_slot if s[0] not in names]:
            self.drop(name, proto)

    def close(self):
        for name, proto in list(self.by_slot):
            self.drop(name, proto)

    def attempt(self, inst, proto, op):
        """Runs op(connection) once: (send, recv, result, error, expected);
        result None after an error, which `error` names."""
        send = time.monotonic()
        try:
            result = op(self.get(inst, proto))
            return send, time.monotonic(), result, None, True
        except ServerError as e:
            recv = time.monotonic()
            if e.close:
                self.drop(inst.name, proto)
            return send, recv, None, e.kind, e.expected
        except TRANSPORT_ERRORS as e:
            recv = time.monotonic()
            self.drop(inst.name, proto)
            return send, recv, None, transport_kind(e), True

    def request(self, inst, key, iface, count):
        """One request for IDs of `key` to `inst` over `iface` (a key of
        ASK); its Answer."""
        send, recv, ranges, error, expected = self.attempt(
            inst, iface.split("_")[0], lambda c: ASK[iface](c, key, count))
        return Answer(key, iface, inst.name, send, recv, ranges, error, expected)

    def send_message(self, inst, msg, iface, kind):
        """One attempt at sending `msg` to `inst` over `iface` (http or
        binary); its MsgAttempt of `kind`."""
        send, recv, answer, error, expected = self.attempt(
            inst, iface, lambda c: c.send_message(msg))
        return MsgAttempt(msg, kind, iface, inst.name, send, recv, answer, error, expected)
