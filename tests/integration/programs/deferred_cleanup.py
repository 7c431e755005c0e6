"""A greenlet dropped by another thread is cleaned up by greenlet only when
its own thread next calls greenlet's API (greenlet's deferred cleanup, the
issues 251/252 of its tracker).  The recorder must not be that call: passive
switch detection asks greenlet which greenlet runs only when the thread's
switch witness changed (tracer/compat.h), so a thread that does not switch is
never asked.  Prints the same line recorded and unrecorded
(tests/integration/observer.sh):

    finalized before the thread's own API call: 0, after: 1
"""
import threading

import greenlet

finalized = []


class Probe:
    def __del__(self):
        finalized.append(1)


def run():
    probe = Probe()  # noqa: F841 (kept alive by the suspended greenlet)
    greenlet.getcurrent().parent.switch()


holder = []
ready = threading.Event()
dropped = threading.Event()
seen = []


def background():
    g = greenlet.greenlet(run)
    g.switch()  # g is suspended, holding the probe
    holder.append(g)
    del g
    ready.set()
    dropped.wait(30)
    # Python code, many profile events, no greenlet API call.
    total = 0
    for i in range(1000):
        total += abs(-i)
    seen.append(len(finalized))
    greenlet.getcurrent()  # the thread's own API call runs the cleanup
    seen.append(len(finalized))


t = threading.Thread(target=background)
t.start()
ready.wait(30)
del holder[:]  # the last reference, dropped in another thread
dropped.set()
t.join(30)
print("finalized before the thread's own API call: %s, after: %s" % tuple(seen))
