"""1,000 threads, each leaving a greenlet suspended: half of the threads
have ended by stop() (their greenlets are abandoned, kept referenced), half
are still waiting (their greenlets are suspended on a live thread).  The
checker must report no violation (issue: final stacks of other threads'
greenlets).  Used by tests/integration/observer.sh; argv[1] = threads."""
import sys
import threading

import greenlet

import greenreplay

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
kept = []
lock = threading.Lock()
release = threading.Event()


def leaf():
    greenlet.getcurrent().parent.switch()


def worker(wait):
    g = greenlet.greenlet(leaf)
    g.switch()
    with lock:
        kept.append(g)
    if wait:
        release.wait()


greenreplay.start()
threads = []
for i in range(N):
    t = threading.Thread(target=worker, args=(i % 2 == 0,))
    t.start()
    threads.append(t)
    if i % 2:
        t.join()
while True:
    with lock:
        if len(kept) == N:
            break
greenreplay.stop()
release.set()
for t in threads:
    t.join()
print("threads:", N)
