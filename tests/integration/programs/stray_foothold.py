"""A profile change from C on a thread the recorder does not follow (one
started with _thread.start_new_thread, which threading's profile hook never
sees) gives that thread a stray foothold, which waits for the thread's next
event.  When the recording stops first (the thread blocked in a C call,
with no Python event since the change), stop() must take the foothold away
too: no recorder function may stay in any trace slot after stop()
(greenreplay._greenreplay._footholds(), 3.9-3.11: cProfile's enable()
changes the profile slot from C; record --manual).  Then the thread runs
on, and a second start()/stop() (into argv[1]) must not find it either.
Prints the count after each stop()."""
import _thread
import cProfile
import operator
import sys

import greenreplay
from greenreplay import _greenreplay

prof = cProfile.Profile()
ready = _thread.allocate_lock()
ready.acquire()
blocker = _thread.allocate_lock()
blocker.acquire()
done = _thread.allocate_lock()
done.acquire()


def worker():
    # Three C calls with no Python event between them: the change, then
    # (still no event) the thread says it is there, then it blocks.
    # (methodcaller, not operator.call: that is new in 3.11.)
    list(map(operator.methodcaller("__call__"), [prof.enable, ready.release, blocker.acquire]))
    prof.disable()
    for _ in range(3):
        pass
    done.release()


greenreplay.start()
_thread.start_new_thread(worker, ())
ready.acquire()
greenreplay.stop()
print("footholds after stop:", _greenreplay._footholds())
greenreplay.start(sys.argv[1])
blocker.release()
done.acquire()
greenreplay.stop()
print("footholds after the second stop:", _greenreplay._footholds())
