# realworld: a cProfile.Profile per request under gevent
# report: pyinstrument issue 84 ("only one setprofile receiver
#   per-thread" under flask+gunicorn+gevent) and yappi issue 47; a
#   per-request cProfile middleware is the common form.
#   https://github.com/joerick/pyinstrument/issues/84
# semantics: each request greenlet enables its own cProfile.Profile,
#   yields to the hub, and disables it; a lock keeps one request profiled
#   at a time (from 3.12 a second enabled cProfile raises ValueError). Before 3.12 enable() calls
#   PyEval_SetProfile: the program replaces the subject profiler on the
#   thread (displaced class). While the request holding the lock sleeps,
#   the others run up to the lock: its profiler counts their calls as its
#   own (attribution class, foreign calls). From 3.12 cProfile uses
#   sys.monitoring (CPython issue 103533) and leaves the profile function
#   alone: clean.
# modes: whole manual
# needs: gevent
# quick: yes
# expect: displaced attribution
# expect py>=3.12: clean
import cProfile

import gevent
import gevent.lock
import greenreplay

one_at_a_time = gevent.lock.BoundedSemaphore(1)


def render(n):
    return "page %d" % n


def handle(n):
    with one_at_a_time:
        pr = cProfile.Profile()
        pr.enable()
        gevent.sleep(0)
        body = render(n)
        pr.disable()
    return body


def main():
    greenreplay.start()
    jobs = [gevent.spawn(handle, n) for n in range(3)]
    gevent.joinall(jobs)
    assert [j.value for j in jobs] == ["page 0", "page 1", "page 2"]
    greenreplay.stop()


main()
