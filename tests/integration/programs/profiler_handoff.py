"""A profiler enabled in one greenlet and disabled in another.

Greenlet `a` enables a cProfile.Profile and yields; greenlet `b` does its
own work and disables that profiler.  The profiler belongs to `a`, but it
counted `b`'s work as its own: attribution reports foreign calls of g(b)
in it, and nothing missed.
"""
import cProfile

import gevent

prof = cProfile.Profile()


def work_a():
    return sum(range(10))


def work_b():
    return sum(range(20))


def a():
    prof.enable()
    work_a()
    gevent.sleep(0)


def b():
    work_b()
    prof.disable()


gevent.joinall([gevent.spawn(a), gevent.spawn(b)])
prof.create_stats()
print("work_b seen=%d" % sum(v[1] for k, v in prof.stats.items() if k[2] == "work_b"))
