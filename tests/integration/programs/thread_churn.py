"""Thread churn: N threads, one after another in waves of 50, each running a
greenlet; every tenth thread leaves its greenlet suspended and kept alive by
the program (abandoned when its thread ends).  Under recording it prints the
largest count of per-thread entries the recorder held (greenreplay's
_tracked()), so a test can assert that the recorder's memory follows the
live threads, not every thread ever seen.

usage: thread_churn.py N
"""
import sys
import threading

import greenlet

try:
    from greenreplay import _greenreplay
except ImportError:
    _greenreplay = None

kept = []


def body(i):
    def run():
        greenlet.getcurrent().parent.switch(i)
        return i
    g = greenlet.greenlet(run)
    g.switch()
    if i % 10:
        g.switch()
    else:
        kept.append(g)


def main():
    n = int(sys.argv[1])
    most = 0
    for start in range(0, n, 50):
        wave = [threading.Thread(target=body, args=(i,)) for i in range(start, min(n, start + 50))]
        for t in wave:
            t.start()
        for t in wave:
            t.join()
        state = _greenreplay._tracked() if hasattr(_greenreplay, "_tracked") else None
        if state:
            most = max(most, state["threads"])
    print("threads run: %d; abandoned greenlets kept: %d" % (n, len(kept)))
    print("most per-thread entries held by the recorder: %d" % most)


main()
