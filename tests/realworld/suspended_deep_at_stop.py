# realworld: a greenlet suspended deep in calls when recording stops
# report: greenlet issue 388 / PR 393 (with greenlet 3.0.0-3.0.2 on CPython
#   3.12 a suspended greenlet's gr_frame.f_back is None: tools that walk
#   gr_frame see one frame) and gevent issue 1969.
#   https://github.com/python-greenlet/greenlet/issues/388
# semantics: the greenlet is suspended three calls deep at stop and never
#   resumed. Its frames are open, which is not a fault (reported as
#   abandoned/open at stop, informational). Whatever greenlet reports of its
#   frame chain, the profiler saw every call: clean.
#   On the mutant mut256 (greenlet 1.1.0's issue-256 bug, passive mode) a
#   new greenlet starts with tracing off: the mark inside it shows frames
#   the profiler never saw (blind_spot) and it runs without tracing under
#   a set profile function (propagation); a greenlet trace callback
#   (--switches callback) heals it.
# modes: whole manual
# needs: greenlet
# quick: yes
# expect: clean
# expect mutant=mut256 switches=passive: blind_spot propagation
import greenlet
import greenreplay


def level3():
    greenreplay.mark("level3")
    greenlet.getcurrent().parent.switch("parked")


def level2():
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
