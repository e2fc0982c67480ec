"""Reading raw sockets the way the hostile-client suites and probes do:
everything until the server closes, whether it closes within a time, an
HTTP response's head. Standard library only.

Thread safety: a socket is one thread's; these change its timeout.
"""
import socket
import time


def read_all(sock, timeout=None):
    """Everything the server sends until it closes or resets `sock`, or
    `timeout` seconds of silence (the socket's own timeout if None);
    (data, closed)."""
    if timeout is not None:
        sock.settimeout(timeout)
    out = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            return out, False
        except ConnectionResetError:
            return out, True
        if not chunk:
            return out, True
        out += chunk


def closed_within(sock, seconds):
    """True if the server closes or resets `sock` within `seconds` (what it
    sends meanwhile is read and dropped)."""
    sock.settimeout(0.2)
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            if sock.recv(65536) == b"":
                return True
        except socket.timeout:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return True
    return False


def read_head(sock, timeout=None):
    """What `sock` gives until an HTTP head's blank line has come (all of it,
    so bytes after the head too) or the server closes (then less)."""
    if timeout is not None:
        sock.settimeout(timeout)
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            break
        buf += chunk
    return buf
