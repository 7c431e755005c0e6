"""A thread-wide profiler (threading.setprofile) with greenlets on several
threads.

threading.setprofile(counter) gives every thread started after it the same
Python profile function; each of 3 threads runs 3 greenlets that switch
among themselves.  The profiler is thread-wide: every greenlet of each of
those threads is its owner, so nothing is foreign, and nothing is missed.
"""
import sys
import threading

import greenlet

calls = [0]


def counter(frame, event, arg):
    if event == "call":
        calls[0] += 1


def step(n):
    return n * 2


def worker(k):
    main = greenlet.getcurrent()
    gls = []

    def run(i):
        for r in range(3):
            step(i + r)
            main.switch()

    gls = [greenlet.greenlet(run) for i in range(3)]
    for r in range(3):
        for i, g in enumerate(gls):
            g.switch(i)
    sys.setprofile(None)


threading.setprofile(counter)
threads = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
threading.setprofile(None)
print("threads done")
