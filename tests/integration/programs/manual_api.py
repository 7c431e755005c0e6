"""A program written for `greenreplay record --manual`: it brackets its own
recording with greenreplay.start() and stop(), and a raw thread (started
with _thread, so no profile function reaches it) that ends before the
program does.

Recorded without --manual (the whole program), its start() and stop()
change nothing: it must run to the end, print the lines below, and its
marks before, inside and after its own start()/stop() must all be in the
trace.  The raw thread's mark is a blind spot (no profile function there);
its frame, which returned unseen, is a note, not an imbalance.
"""
import _thread
import time

import greenlet

import greenreplay

greenreplay.mark("before start")
print("start returned", greenreplay.start())
done = []


def raw():
    greenreplay.mark("in raw thread")
    done.append(1)


_thread.start_new_thread(raw, ())
while not done:
    time.sleep(0.01)
time.sleep(0.05)  # the raw thread has returned
g = greenlet.greenlet(lambda: greenreplay.mark("in greenlet"))
g.switch()
print("stop returned", greenreplay.stop())
print("recording after stop:", greenreplay.is_recording())
greenreplay.mark("after stop")
