"""A pyinstrument-style profiler started and stopped inside one request
greenlet with sys.setprofile.

Request `a` installs its profile function, waits for a backend
(gevent.sleep), does its work and removes it; request `b` runs while `a`
waits.  The profile function belongs to the thread, so it records `b`'s
frames as `a`'s: attribution reports them as foreign calls of the
profiler that `a` owns, as many as the profiler itself recorded.
"""
import sys

import gevent

frames = []


def sampler(frame, event, arg):
    if event == "call":
        frames.append(frame.f_code.co_name)


def work_a():
    return 1


def work_b():
    return 2


def handle_a():
    sys.setprofile(sampler)
    gevent.sleep(0)
    work_a()
    sys.setprofile(None)


def handle_b():
    work_b()


gevent.joinall([gevent.spawn(handle_a), gevent.spawn(handle_b)])
print("work_b in sampler=%d" % frames.count("work_b"))
