"""A chaos run's clock and progress lines: `rel` turns a time.monotonic()
reading into seconds since this module was imported (the run's start, for
reports and histories); `log` prints a line stamped so, when `VERBOSE` is
set (the suites' -v).

Thread safety: log may be called from any thread (one print per line).
"""
import time

VERBOSE = False
T0 = time.monotonic()


def log(msg):
    """Prints a progress line with the time since the start (with -v)."""
    if VERBOSE:
        print("[%7.3fs] %s" % (time.monotonic() - T0, msg), flush=True)


def rel(t):
    """A monotonic time as seconds since the start, rounded for reports."""
    return round(t - T0, 3)
