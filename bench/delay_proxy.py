#!/usr/bin/env python3
"""A TCP proxy that adds a fixed delay to every byte in both directions, in
order: a slow network between seqd and its database, for benchmarks.

    bench/delay_proxy.py --listen 127.0.0.1:0 --to 127.0.0.1:3306 --delay-ms 50

Prints the port it listens on (one line), then serves until killed. A delay
of D ms each way adds 2*D ms to every round trip."""
import argparse
import asyncio
import sys
import time


async def pump(reader, writer, delay_s):
    """Copies reader to writer, each chunk delivered `delay_s` after it was
    read; chunks keep their order, and reading goes on while they wait."""
    queue = asyncio.Queue()

    async def deliver():
        while True:
            due, data = await queue.get()
            if data is None:
                break
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        writer.close()

    sender = asyncio.ensure_future(deliver())
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            queue.put_nowait((time.monotonic() + delay_s, data))
    except (ConnectionError, OSError):
        pass
    queue.put_nowait((0, None))
    try:
        await sender
    except (ConnectionError, OSError):
        pass


async def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--listen", default="127.0.0.1:0", help="HOST:PORT to listen on")
    p.add_argument("--to", required=True, help="HOST:PORT to forward to")
    p.add_argument("--delay-ms", type=float, default=50, help="delay each way, in ms")
    args = p.parse_args()
    to_host, to_port = args.to.rsplit(":", 1)
    delay_s = args.delay_ms / 1000.0

    async def handle(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection(to_host, int(to_port))
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pump(client_reader, server_writer, delay_s),
                             pump(server_reader, client_writer, delay_s))

    host, port = args.listen.rsplit(":", 1)
    server = await asyncio.start_server(handle, host, int(port))
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
