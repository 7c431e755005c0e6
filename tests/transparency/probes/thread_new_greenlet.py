"""A thread's own profile function and a new greenlet: the thread (started
by threading) sets it with sys.setprofile and switches into a new greenlet.
With greenlet 1.1.0 on 3.10 (greenlet issue 256) the new greenlet starts on
the thread's root CFrame, whose tracing flag sys.setprofile inside the
thread leaves at 0: the function misses the greenlet's call.  The recorder,
which goes into the thread before its first frame, must not change that.
"""
# requires: greenlet
import sys
import threading

import greenlet

seen = []


def prof(frame, event, arg):
    if event == "call":
        seen.append(frame.f_code.co_name)


def parked():
    greenlet.getcurrent().parent.switch()


def worker():
    sys.setprofile(prof)
    greenlet.greenlet(parked).switch()
    sys.setprofile(None)


t = threading.Thread(target=worker)
t.start()
t.join()
print("the thread's profile function saw the new greenlet's call:", "parked" in seen)
