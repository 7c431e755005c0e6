# realworld: greenlets left suspended in threads that ended
# report: greenlet's own test suite (test_threading_local, test_leaks:
#   greenlets of a finished thread are freed later, greenlet 3.x frees them
#   where 2.0.2 often does not); see greenlet issue 251 on deallocating
#   greenlets of dead threads. https://github.com/python-greenlet/greenlet/issues/251
# semantics: each worker thread starts two greenlets that switch back to
#   the thread's main greenlet mid-call and are never resumed; the thread
#   ends. greenlet may free them (without running them: their thread is
#   gone) or keep them until exit. Nothing the profiler saw is wrong, and
#   greenlet's tests assert that this is fine: clean.
#   On the mutant mut256 (greenlet 1.1.0's issue-256 bug, passive mode) the
#   new greenlets run with tracing off under a set profile function
#   (propagation; no mark inside them to show a blind spot); a greenlet
#   trace callback (--switches callback) heals it.
# modes: whole manual
# needs: greenlet
# quick: yes
# expect: clean
# expect mutant=mut256 switches=passive: propagation
import gc
import threading

import greenlet
import greenreplay


def parked(n):
    def deeper():
        greenlet.getcurrent().parent.switch(n)
        return n
    return deeper()


def worker(out):
    for n in range(2):
        g = greenlet.greenlet(parked)
        out.append(g.switch(n))
    greenreplay.mark("worker done")


def main():
    greenreplay.start()
    out = []
    for _ in range(3):
        t = threading.Thread(target=worker, args=(out,))
        t.start()
        t.join()
    gc.collect()
    assert sorted(out) == [0, 0, 0, 1, 1, 1], out
    greenreplay.stop()


main()
