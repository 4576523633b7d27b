#!/usr/bin/env python3
"""A TCP proxy that adds latency and a bandwidth limit, to show round trips that loopback hides.

    latency_proxy.py LISTEN_PORT TARGET_PORT [RTT_MS=60] [MBIT=50] [--shared [--queue BYTES] [--status FILE]]

Without --shared, each direction of each connection is a link of its own with half the round-trip
time as delay and the given bandwidth; at most one bandwidth-delay product (plus 64 KiB) is in
flight, so a sender sees back pressure as on a real path (the origin does not get to push a whole
file into our buffers). Connecting is free.

With --shared, the proxy is one bottleneck link between every client and the origin, as a user's
access line is:
  - one link per direction, shared by all connections: bytes of parallel transfers queue behind
    each other, so a parallel wave moves no faster than the line;
  - a new connection costs a round trip before its first request goes out (TCP's handshake);
  - the origin may have up to --queue bytes (default 4 MiB) of a response on the way that the
    client has not read yet, as a sender with an open window has on a real path; they are on the
    line whatever the client does, so when a client closes a connection it abandons (an
    open-ended request it no longer wants), those bytes still take their time on the link and
    delay whatever comes after them.
Loopback only.
"""
import argparse
import asyncio
import os
import time

parser = argparse.ArgumentParser()
parser.add_argument("listen", type=int)
parser.add_argument("target", type=int)
parser.add_argument("rtt", type=float, nargs="?", default=60.0, help="round-trip time, ms")
parser.add_argument("mbit", type=float, nargs="?", default=50.0, help="bandwidth, Mbit/s")
parser.add_argument("--shared", action="store_true", help="one bottleneck link for all connections")
parser.add_argument("--queue", type=int, default=4 << 20, help="bytes in flight per connection (--shared)")
parser.add_argument("--status", help="file kept holding the seconds until the links are idle (--shared)")
args = parser.parse_args()
RTT = args.rtt / 1000.0
RATE = args.mbit * 1e6 / 8  # bytes per second
WINDOW = int(RATE * RTT) + 65536


class Link:
    """One direction of the bottleneck: bytes take their turn at RATE, then arrive RTT/2 later."""

    def __init__(self):
        self.free_at = 0.0

    def arrival(self, size, not_before=0.0):
        start = max(time.monotonic(), self.free_at)
        self.free_at = start + size / RATE
        return max(self.free_at, not_before + size / RATE) + RTT / 2


async def pipe(reader, writer, link, window, not_before=0.0):
    """Carries one direction of one connection over `link` (a Link of its own, or the shared one).

    At most `window` bytes read from the sender wait for delivery. When the receiver is gone the
    sender is no longer read, but what was read keeps its place on the link."""
    queue = asyncio.Queue()
    in_flight = 0
    room = asyncio.Event()
    room.set()
    dead = False

    async def deliver():
        nonlocal in_flight, dead
        try:
            while True:
                due, data = await queue.get()
                if data is None:
                    break
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                writer.write(data)
                await writer.drain()
                in_flight -= len(data)
                if in_flight < window:
                    room.set()
        except (ConnectionError, OSError):
            pass
        dead = True  # the receiving side is gone: stop reading from the sender
        room.set()
        writer.close()

    task = asyncio.create_task(deliver())
    try:
        while True:
            await room.wait()
            if dead:
                break
            data = await reader.read(16384)
            if not data or dead:
                break
            in_flight += len(data)
            if in_flight >= window:
                room.clear()
            queue.put_nowait((link.arrival(len(data), not_before), data))
    except (ConnectionError, OSError):
        pass
    queue.put_nowait((0, None))
    try:
        await task
    except (ConnectionError, OSError):
        pass


UP, DOWN = Link(), Link()


async def handle(client_reader, client_writer):
    accepted = time.monotonic()
    try:
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", args.target)
    except OSError:
        client_writer.close()
        return
    if args.shared:
        # The handshake: the client's first bytes leave one round trip after it connected.
        await asyncio.gather(pipe(client_reader, server_writer, UP, args.queue, not_before=accepted + RTT),
                             pipe(server_reader, client_writer, DOWN, args.queue), return_exceptions=True)
    else:
        await asyncio.gather(pipe(client_reader, server_writer, Link(), WINDOW),
                             pipe(server_reader, client_writer, Link(), WINDOW), return_exceptions=True)


async def report_busy(path):
    """Keeps `path` holding how long the shared links stay busy: what clients abandoned is still
    on them, and a benchmark waits for 0 before its next run."""
    while True:
        busy = max(0.0, max(UP.free_at, DOWN.free_at) - time.monotonic())
        with open(path + ".tmp", "w") as f:
            f.write(f"{busy:.3f}\n")
        os.replace(path + ".tmp", path)
        await asyncio.sleep(0.05)


async def main():
    if args.status:
        asyncio.create_task(report_busy(args.status))
    server = await asyncio.start_server(handle, "127.0.0.1", args.listen)
    async with server:
        await server.serve_forever()


asyncio.run(main())
