#!/usr/bin/env python3
"""Holds many connections open to an HTTP server, as idle players and slow clients do.

  hold.py PORT IDLE SLOW [PATH]

IDLE connections each make one request for /healthz, read the whole answer and stay open
(keep-alive players between segments). SLOW connections each ask for PATH (a large cached range,
given with its Range header after a '|': '/v1/stream?url=...|bytes=0-4194303') and read nothing
past the status line, so the server holds a response it cannot send (a stalled player). Prints
"held N" once all are open, the idle ones answered and the slow ones' answers begun, then waits for its standard input to close, and prints
"alive N": how many the server still held at the end (an idle one not closed on its side, a
stalled one answered 206 — a refused one gets its 503 and is closed).
Exits 1 when a connection could not be made or an idle one was not answered 200.
"""
import resource
import select
import socket
import sys


def main():
    port, idle, slow = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    path, _, byte_range = (sys.argv[4] if len(sys.argv) > 4 else "/healthz|").partition("|")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = idle + slow + 256
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(want, min(hard, want)), max(hard, want)))
    held = []
    for n in range(idle + slow):
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        if n < idle:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        else:
            # A small receive buffer, so that the server's response stays stuck on its side.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            extra = f"Range: {byte_range}\r\n" if byte_range else ""
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}\r\n".encode())
        held.append(s)
    for s in held[:idle]:
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.endswith(b"}\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            answer += chunk
        if not answer.startswith(b"HTTP/1.1 200"):
            print("not answered: " + answer[:200].decode(errors="replace"), flush=True)
            sys.exit(1)
    # The stalled ones count as held once the server has answered them (its first bytes are
    # waiting in their buffers), so that what follows measures a server holding them all.
    for s in held[idle:]:
        s.settimeout(60)
        try:
            if s.recv(12, socket.MSG_PEEK) != b"HTTP/1.1 206":
                print("a stalled connection was not answered 206", flush=True)
                sys.exit(1)
        except OSError as error:
            print(f"a stalled connection was not answered: {error}", flush=True)
            sys.exit(1)
    print(f"held {len(held)}", flush=True)
    sys.stdin.read()
    alive = 0
    for n, s in enumerate(held):
        if n >= idle:
            s.setblocking(False)
            try:
                alive += 1 if s.recv(12, socket.MSG_PEEK) == b"HTTP/1.1 206" else 0
            except OSError:
                pass
            continue
        # Open on the server's side: nothing to read, no EOF.
        poller = select.poll()
        poller.register(s, select.POLLIN)
        if not poller.poll(0):
            alive += 1
            continue
        s.setblocking(False)
        try:
            alive += 1 if s.recv(4096, socket.MSG_PEEK) else 0
        except BlockingIOError:
            alive += 1
        except OSError:
            pass
    print(f"alive {alive}", flush=True)


if __name__ == "__main__":
    main()
