#!/usr/bin/env python3
"""A TCP proxy that adds latency and a bandwidth limit, to show round trips that loopback hides.

    latency_proxy.py LISTEN_PORT TARGET_PORT [RTT_MS=60] [MBIT=50]

Each direction of each connection is a link with half the round-trip time as delay and the given
bandwidth; at most one bandwidth-delay product (plus 64 KiB) is in flight, so a sender sees back
pressure as on a real path (the origin does not get to push a whole file into our buffers).
Loopback only.
"""
import asyncio
import sys
import time

LISTEN, TARGET = int(sys.argv[1]), int(sys.argv[2])
RTT = (float(sys.argv[3]) if len(sys.argv) > 3 else 60.0) / 1000.0
RATE = (float(sys.argv[4]) if len(sys.argv) > 4 else 50.0) * 1e6 / 8  # bytes per second
WINDOW = int(RATE * RTT) + 65536


async def pipe(reader, writer):
    queue = asyncio.Queue()
    in_flight = 0
    free_at = time.monotonic()
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
                if in_flight < WINDOW:
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
            now = time.monotonic()
            free_at = max(free_at, now) + len(data) / RATE
            in_flight += len(data)
            if in_flight >= WINDOW:
                room.clear()
            queue.put_nowait((free_at + RTT / 2, data))
    except (ConnectionError, OSError):
        pass
    queue.put_nowait((0, None))
    try:
        await task
    except (ConnectionError, OSError):
        pass


async def handle(client_reader, client_writer):
    try:
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", TARGET)
    except OSError:
        client_writer.close()
        return
    await asyncio.gather(pipe(client_reader, server_writer), pipe(server_reader, client_writer),
                         return_exceptions=True)


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", LISTEN)
    async with server:
        await server.serve_forever()


asyncio.run(main())
