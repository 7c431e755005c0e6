# Continued switches with two threads that switch greenlets, and a
# greenlet of one thread whose last reference goes on the other thread
# (greenlet kills it on its own thread later) (tests/integration/
# continued_adversary.sh).  Only one thread can run at a time (each waits on an
# event while the other runs, and the switch interval is long enough that
# the interpreter never takes the GIL from a running thread), so that both
# recordings interleave the threads the same way.
import sys
import threading

import greenlet

sys.setswitchinterval(100)
box = {}
begin, a_done_1, b_done_1 = threading.Event(), threading.Event(), threading.Event()


def ping(n):
    me = greenlet.getcurrent()
    for i in range(n):
        me.parent.switch(i)


def suspended():
    greenlet.getcurrent().parent.switch()


def thread_a():
    begin.wait()
    p = greenlet.greenlet(ping)
    p.switch(30)
    s = greenlet.greenlet(suspended)
    s.switch()
    box["s"] = s
    del s
    for _ in range(5):
        p.switch()
    a_done_1.set()
    b_done_1.wait()                            # b drops the last reference to s
    for _ in range(5):
        p.switch()                            # greenlet kills s on this thread


def thread_b():
    a_done_1.wait()
    p = greenlet.greenlet(ping)
    p.switch(10)
    box.clear()
    for _ in range(5):
        p.switch()
    b_done_1.set()
    ta.join()                                  # a ends before b goes on
    for _ in range(3):
        p.switch()


ta = threading.Thread(target=thread_a)
tb = threading.Thread(target=thread_b)
ta.start()
tb.start()
begin.set()
tb.join()                                      # (b joins a)
print("end")
