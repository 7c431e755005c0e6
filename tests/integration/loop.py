"""Helper of tests/integration/run.sh (not a fixture): a recording made of
many small 4 KiB chunks.

    loop.py                     record 3000 iterations, then stop()
    loop.py --forever PIDFILE   write the pid to PIDFILE and loop until
                                killed (the SIGKILL test)

Each iteration calls a few functions and, when greenlet is importable,
switches into a greenlet and back, so every chunk holds calls, returns,
switches and marks.
"""
import os
import sys

try:
    import greenlet
except ImportError:
    greenlet = None

import greenreplay


def leaf(i):
    return i * 2


def body(i):
    greenreplay.mark("iteration")
    return leaf(i) + 1


def step(i):
    if greenlet is not None:
        return greenlet.greenlet(body).switch(i)
    return body(i)


def main():
    forever = len(sys.argv) == 3 and sys.argv[1] == "--forever"
    greenreplay.start(chunk=4096)
    if forever:
        with open(sys.argv[2] + ".tmp", "w") as f:
            f.write("%d\n" % os.getpid())
        os.rename(sys.argv[2] + ".tmp", sys.argv[2])
        i = 0
        while True:
            step(i)
            i += 1
    for i in range(3000):
        step(i)
    greenreplay.stop()


main()
