#!/usr/bin/env python3
"""A MySQL-protocol TCP relay that injects faults at COMMIT.

It forwards bytes between clients and a MySQL/MariaDB server and reads the
client's packets. For each COM_QUERY "COMMIT" it rolls a die and, with the
configured probabilities, does one of:

  drop      swallow the COMMIT and close both sides: the server rolls back,
            the client loses its connection (it cannot know which happened);
  cut       forward the COMMIT and close both sides before the answer comes
            back: an unknown outcome, usually committed;
  hold      forward the COMMIT and hold the answer for --hold-seconds (past
            the client's read timeout), then close both sides;
  conflict  send ROLLBACK to the server instead and answer the client with
            error 1213 (SQLSTATE 40001), as Galera reports a certification
            conflict at COMMIT; the connection stays usable.

Anything else passes through untouched. TLS and compression are not
supported (the test servers use neither).

Usage:
  mysql_fault_relay.py --target 127.0.0.1:3306 [--drop P] [--cut P] [--hold P]
      [--conflict P] [--hold-seconds S] [--seed N] [--stats FILE]
      [--exec [--] CMD ARGS...]

Prints the port it listens on (127.0.0.1) as the first stdout line. SIGUSR1
turns faults off, SIGUSR2 on again. --stats FILE keeps a JSON object of the
counts up to date (commits seen, faults by kind, connections). With
--start-off the faults start off; "--drop 1 --start-off" and the signals
give blackouts: every COMMIT fails while they are on.

With --exec, the relay runs CMD with SEQD_TEST_MYSQL_URL pointed at itself
(the target is taken from that variable when --target is not given; its
query becomes --url-query) and SEQD_TEST_MYSQL_DIRECT set to the target's
HOST:PORT (for the test's own connections, which set up and look at the
database outside the store: no fault is meant for them), and exits
with CMD's status, or 1 if CMD passed but a configured fault never fired (a
run that saw no faults proves nothing).
"""
import argparse
import asyncio
import json
import os
import random
import signal
import struct
import sys
import urllib.parse

COM_QUERY = 0x03
KINDS = ("drop", "cut", "hold", "conflict")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--target", help="HOST:PORT of the MySQL server")
    for k in KINDS:
        p.add_argument("--" + k, type=float, default=0.0, help="probability per COMMIT")
    p.add_argument("--hold-seconds", type=float, default=8.0)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--stats", help="keep a JSON file of counts up to date")
    p.add_argument("--start-off", action="store_true", help="faults off until SIGUSR2")
    p.add_argument("--url-query", default="",
                   help="with --exec: the query to put on the URL (e.g. retry_budget_ms=5000)")
    cmd = []
    if "--exec" in argv:
        at = argv.index("--exec")
        argv, cmd = argv[:at], argv[at + 1:]
        if cmd and cmd[0] == "--":
            cmd = cmd[1:]
        if not cmd:
            p.error("--exec needs a command")
    a = p.parse_args(argv)
    a.cmd = cmd
    if sum(getattr(a, k) for k in KINDS) > 1.0:
        p.error("the fault probabilities add up to more than 1")
    if not a.target:
        url = os.environ.get("SEQD_TEST_MYSQL_URL")
        if not url:
            p.error("--target or SEQD_TEST_MYSQL_URL is required")
        u = urllib.parse.urlparse(url)
        a.target = "%s:%d" % (u.hostname, u.port or 3306)
    return a


def packet(seq, payload):
    return struct.pack("<I", len(payload))[:3] + bytes([seq & 0xFF]) + payload


def err_packet(seq, code, state, message):
    return packet(seq, b"\xff" + struct.pack("<H", code) + b"#" + state + message)


async def read_packet(reader):
    """(seq, payload, raw bytes) of the next packet; raises on EOF."""
    head = await reader.readexactly(4)
    n = head[0] | head[1] << 8 | head[2] << 16
    payload = await reader.readexactly(n)
    return head[3], payload, head + payload


def is_commit(seq, payload):
    if seq != 0 or not payload or payload[0] != COM_QUERY:
        return False
    return payload[1:].strip().rstrip(b";").strip().upper() == b"COMMIT"


class Relay:
    def __init__(self, args):
        self.host, port = args.target.rsplit(":", 1)
        self.port = int(port)
        self.probs = {k: getattr(args, k) for k in KINDS}
        self.hold_seconds = args.hold_seconds
        self.rng = random.Random(args.seed)
        self.enabled = not args.start_off
        # "holding": answers held now (a hold decided while the faults were
        # on still ends in a cut connection after they are turned off).
        self.stats = {"connections": 0, "commits": 0, "holding": 0, **{k: 0 for k in KINDS}}
        self.stats_file = args.stats

    def choose(self):
        if not self.enabled:
            return None
        x = self.rng.random()
        for k in KINDS:
            x -= self.probs[k]
            if x < 0:
                return k
        return None

    def write_stats(self):
        if self.stats_file:
            tmp = self.stats_file + ".tmp"
            with open(tmp, "w") as f:
                json.dump(dict(self.stats, enabled=self.enabled), f)
            os.replace(tmp, self.stats_file)

    async def handle(self, c_reader, c_writer):
        try:
            await self.relay(c_reader, c_writer)
        except asyncio.CancelledError:
            pass  # the relay is shutting down

    async def relay(self, c_reader, c_writer):
        self.stats["connections"] += 1
        try:
            s_reader, s_writer = await asyncio.open_connection(self.host, self.port)
        except OSError:
            c_writer.close()
            return
        # What the server's next answer is for: None (forward), "hold" or
        # "conflict" (replace the ROLLBACK's OK with an error).
        state = {"next_answer": None}
        done = asyncio.Event()

        def close_all():
            for w in (c_writer, s_writer):
                try:
                    w.transport.abort()
                except Exception:
                    pass
            done.set()

        async def client_to_server():
            while True:
                seq, payload, raw = await read_packet(c_reader)
                commit = is_commit(seq, payload)
                fault = self.choose() if commit else None
                if commit:
                    self.stats["commits"] += 1
                if fault:
                    self.stats[fault] += 1
                if fault == "drop":
                    return close_all()
                if fault == "conflict":
                    state["next_answer"] = "conflict"
                    s_writer.write(packet(0, bytes([COM_QUERY]) + b"ROLLBACK"))
                    await s_writer.drain()
                    continue
                if fault in ("hold", "cut"):
                    state["next_answer"] = fault
                s_writer.write(raw)
                await s_writer.drain()

        async def server_to_client():
            while True:
                seq, payload, raw = await read_packet(s_reader)
                answer, state["next_answer"] = state["next_answer"], None
                if answer == "cut":
                    return close_all()  # the server has answered: the client never learns
                if answer == "hold":
                    self.stats["holding"] += 1
                    try:
                        await asyncio.sleep(self.hold_seconds)
                    finally:
                        self.stats["holding"] -= 1
                    return close_all()
                if answer == "conflict":
                    raw = err_packet(seq, 1213, b"40001",
                                     b"Deadlock found when trying to get lock; "
                                     b"try restarting transaction (injected by the relay)")
                c_writer.write(raw)
                await c_writer.drain()

        tasks = [asyncio.ensure_future(client_to_server()),
                 asyncio.ensure_future(server_to_client()),
                 asyncio.ensure_future(done.wait())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            close_all()

    async def keep_stats(self):
        while True:
            self.write_stats()
            await asyncio.sleep(0.2)


async def main(args):
    relay = Relay(args)
    server = await asyncio.start_server(relay.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    loop = asyncio.get_running_loop()

    def toggle(on):
        relay.enabled = on
        relay.write_stats()

    loop.add_signal_handler(signal.SIGUSR1, toggle, False)
    loop.add_signal_handler(signal.SIGUSR2, toggle, True)
    stopped = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stopped.set)
    loop.add_signal_handler(signal.SIGINT, stopped.set)
    stats_task = asyncio.ensure_future(relay.keep_stats())
    rc = 0
    if args.cmd:
        env = dict(os.environ)
        url = urllib.parse.urlparse(env.get("SEQD_TEST_MYSQL_URL", ""))
        netloc = url.netloc.rsplit("@", 1)
        creds = netloc[0] + "@" if len(netloc) == 2 else ""
        env["SEQD_TEST_MYSQL_URL"] = urllib.parse.urlunparse(
            url._replace(netloc="%s127.0.0.1:%d" % (creds, port), query=args.url_query))
        env["SEQD_TEST_MYSQL_DIRECT"] = args.target
        print("relay: running %s through 127.0.0.1:%d -> %s" % (args.cmd[0], port, args.target),
              flush=True)
        proc = await asyncio.create_subprocess_exec(*args.cmd, env=env)
        rc = await proc.wait()
        quiet = [k for k in KINDS if relay.probs[k] > 0 and relay.stats[k] == 0]
        print("relay: " + json.dumps(relay.stats), flush=True)
        if rc == 0 and quiet:
            print("relay: FAIL: no %s fault fired; the run proves nothing" % ", ".join(quiet),
                  flush=True)
            rc = 1
    else:
        print(port, flush=True)
        await stopped.wait()
    stats_task.cancel()
    relay.write_stats()
    server.close()
    return rc


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse_args(sys.argv[1:]))))
