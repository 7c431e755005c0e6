"""A thread that runs its code inside Context.run (as every thread does on
3.14+) and ends with a suspended greenlet that another thread dropped: the
greenlet is in the ending thread's list of greenlets to clean up, which
greenlet only processes when the thread next asks it something.  Without
such a call the greenlet's frame is never cleaned up (greenlet issue 252);
a recorder that asks greenlet where the Context is left makes it clean up.
Prints whether the object on the greenlet's stack was finalized.
"""
# requires: greenlet
import contextvars
import gc
import threading

import greenlet

finalized = []


class OnStack:
    def __del__(self):
        finalized.append(True)


background = []
running = threading.Event()
dropped = threading.Event()


def glet_body():
    keep = OnStack()  # noqa: F841 (lives on the greenlet's frame)
    greenlet.getcurrent().parent.switch()


def target():
    g = greenlet.greenlet(glet_body)
    background.append(g)
    g.switch()
    del g
    running.set()
    dropped.wait(10)


def thread_body():
    contextvars.copy_context().run(target)


t = threading.Thread(target=thread_body)
t.start()
running.wait(10)
del background[:]  # the last reference, dropped from another thread
dropped.set()
t.join(10)
for _ in range(3):
    gc.collect()
print("finalized:", bool(finalized))
