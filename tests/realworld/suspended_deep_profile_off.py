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
# modes: whole manual
# needs: greenlet
# quick: yes
# expect: displaced
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
