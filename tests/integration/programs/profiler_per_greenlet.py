"""A correct per-greenlet profiler: switched with the greenlet.

Each request greenlet enables its own cProfile.Profile; a greenlet trace
callback (greenlet.settrace) disables the profiler of the greenlet
switched away from and enables the one of the greenlet switched to, so
each profiler is installed exactly while its greenlet runs.  Attribution
lists each profiler with its counts and finds nothing wrong; each request's
pstats count its own compute() once.
"""
import cProfile

import gevent
import greenlet

profs = {}
counts = {}


def tracer(event, args):
    if event in ("switch", "throw"):
        origin, target = args
        p = profs.get(origin)
        if p is not None:
            p.disable()
        p = profs.get(target)
        if p is not None:
            p.enable()


def compute(n):
    return sum(i * i for i in range(n))


def request(n):
    me = greenlet.getcurrent()
    p = cProfile.Profile()
    profs[me] = p
    p.enable()
    gevent.sleep(0)
    compute(50 + n)
    p.disable()
    del profs[me]
    p.create_stats()
    counts[n] = sum(v[1] for k, v in p.stats.items() if k[2] == "compute")


greenlet.settrace(tracer)
gevent.joinall([gevent.spawn(request, n) for n in range(4)])
greenlet.settrace(None)
for n in sorted(counts):
    print("request %d compute=%d" % (n, counts[n]))
