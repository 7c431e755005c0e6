"""A blind spot buried in noise, for `greenreplay reduce`: twelve greenlets
of a small job queue call helpers, switch back and forth and mark their
progress (all of it seen by the profiler), and in the middle of it the
main greenlet switches into a new greenlet from inside a sys.settrace
function, as fixtures/switch_in_tracefunc.py does: that greenlet runs with
tracing suppressed, so the profiler sees none of its calls although its
marks prove they ran (a blind spot on every CPython).  The reduced script
must keep only what makes the blind spot.
"""
import sys

import greenlet

import greenreplay

N = 16


def parse(item):
    return validate(item) + 1


def validate(item):
    return len(str(item))


def store(results, item):
    results.append(parse(item))


def worker(k, results):
    parent = greenlet.getcurrent().parent
    for step in range(3):
        store(results, k * 10 + step)
        greenreplay.mark("worker %d step %d" % (k, step))
        parent.switch()


def hidden():
    greenreplay.mark("hidden, inside the switched-to greenlet")
    helper()


def helper():
    greenreplay.mark("helper of hidden")


blind = greenlet.greenlet(hidden)


def tracer(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "trigger" and not blind.dead:
        blind.switch()              # runs with tstate->tracing == 1
    return None


def trigger():
    greenreplay.mark("trigger")


def main():
    greenreplay.start()
    results = []
    jobs = [greenlet.greenlet(worker) for _ in range(N)]
    for k, g in enumerate(jobs):
        g.switch(k, results)
    for rnd in range(2):
        for g in jobs:
            g.switch()
        if rnd == 0:
            sys.settrace(tracer)
            trigger()
            sys.settrace(None)
    greenreplay.mark("done")
    greenreplay.stop()
    assert len(results) == 3 * N


main()
