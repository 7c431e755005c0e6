"""A worker thread leaves one of its greenlets suspended and ends; the
program then drops the greenlet, and greenlet frees it unfinished (at once
on greenlet 3.x, on 2.0 once its cleanup of that thread ran).  Its frames never return,
as the program intends (greenlet's own tests do this by the thousand).
The recorder writes a STACK "thread ended" for it at stop, so `check`
lists it as abandoned, not as an imbalance.  The flagged neighbour, open
frames of a live greenlet with no STACK record, is
test_open_frames_without_stack_record in tests/unit/test_check.c.
"""
# requires: greenlet
# expect: clean
# note:
# abandoned: job (tests/integration/programs/known_freed_after_thread_end.py:26) > greenlet.greenlet.switch
import gc
import threading
import time
import weakref

import greenlet

import greenreplay

parked = []


def job():
    greenreplay.mark("job parks itself")
    greenlet.getcurrent().parent.switch()


def worker():
    g = greenlet.greenlet(job)
    g.switch()
    parked.append(g)


greenreplay.start()
t = threading.Thread(target=worker)
t.start()
t.join()
ref = weakref.ref(parked[0])
parked.clear()
# greenlet 2.0 frees it once its cleanup of the ended thread ran, which
# may come a little after join() returns; 3.x at once
for _ in range(500):
    gc.collect()
    if ref() is None:
        break
    time.sleep(0.01)
print("freed before stop:", ref() is None)
greenreplay.mark("after the parked greenlet was freed")
greenreplay.stop()
