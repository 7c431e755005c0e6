# realworld: a greenlet parked deep after the program turned profiling off
# report: greenlet issue 388 / PR 393 (tools that walk a suspended
#   greenlet's gr_frame chain, such as gevent's run-info dump, gevent issue
#   1969) with the library habit of gevent issue 1670 (a worker that calls
#   sys.setprofile(None) on its way).
#   https://github.com/python-greenlet/greenlet/issues/388
# semantics: the greenlet descends three calls deep and parks there; on the
#   way, level2 removes the thread's profile function, so level3's call and
#   everything after it run unseen by any profiler. The program removed the
#   profiler (displaced); the parked greenlet's frames, whatever greenlet
#   reports of its chain, add no finding of their own.
#   On the mutant mut256 (greenlet 1.1.0's issue-256 bug, passive mode) the
#   new greenlet starts with tracing off, so the calls of level1 and level2
#   run unseen while the profiler is still installed: a blind spot before
#   the program removes it; a greenlet trace callback heals it.
# modes: whole manual
# needs: greenlet
# quick: yes
# expect: displaced
# expect mutant=mut256 switches=passive: blind_spot displaced
import sys

import greenlet
import greenreplay


def level3():
    greenlet.getcurrent().parent.switch("parked")


def level2():
    sys.setprofile(None)
    level3()


def level1():
    level2()


def main():
    greenreplay.start()
    g = greenlet.greenlet(level1)
    assert g.switch() == "parked"
    greenreplay.stop()
    return g


kept = main()
