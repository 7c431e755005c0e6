"""Per-request cProfile middleware under gevent, on loopback.

A gevent StreamServer on 127.0.0.1 handles line requests; around each
request's handling a middleware enables a fresh cProfile.Profile and
disables it after.  8 client greenlets send 5 requests each, one at a
time.  With `interleave` (the default) the handler waits inside the
profiled region (a backend call, here gevent.sleep(0)), so another
request's enable() replaces this request's profiler on the thread: the
profiles of the program are wrong, and `check`'s attribution rule says
how.  With `sequential` nothing switches inside the profiled region: every
profile is right.

Prints one line per request, in the order the profilers were enabled:
`request K seen=N` where N is what the request's own pstats count for
compute() (calls of compute its profiler saw, whichever request made
them).
"""
import cProfile
import sys

import gevent
from gevent import socket
from gevent.server import StreamServer

CLIENTS, REQUESTS = 8, 5
MODE = sys.argv[1] if len(sys.argv) > 1 else "interleave"
enabled = [0]
counts = {}


def compute(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def backend():
    if MODE == "interleave":
        gevent.sleep(0)


def profiled(fn, line):
    """The middleware: one profiler per request."""
    prof = cProfile.Profile()
    k = enabled[0]
    enabled[0] += 1
    prof.enable()
    try:
        return fn(line)
    finally:
        prof.disable()
        prof.create_stats()
        counts[k] = sum(v[1] for key, v in prof.stats.items() if key[2] == "compute")


def app(line):
    backend()
    return str(compute(int(line))).encode()


def handle(sock, addr):
    f = sock.makefile("rb")
    try:
        for line in f:
            sock.sendall(profiled(app, line) + b"\n")
    finally:
        f.close()
        sock.close()


def client(port, n):
    s = socket.create_connection(("127.0.0.1", port))
    f = s.makefile("rb")
    for r in range(REQUESTS):
        s.sendall(b"%d\n" % (100 + n * 10 + r))
        f.readline()
    f.close()
    s.close()


def main():
    server = StreamServer(("127.0.0.1", 0), handle)
    server.start()
    gevent.joinall([gevent.spawn(client, server.server_port, n) for n in range(CLIENTS)],
                   timeout=60, raise_error=True)
    server.stop()
    for k in sorted(counts):
        print("request %d seen=%d" % (k, counts[k]))


main()
