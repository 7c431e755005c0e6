# realworld: a greenlet re-parented, its result going to the new parent
# report: greenlet issue 129 (what a tracer sees around a greenlet's first
#   switch) and gevent's hub re-parenting spawned greenlets.
#   https://github.com/python-greenlet/greenlet/issues/129
# semantics: child is created under a, re-parented to main while suspended,
#   and its return value goes to main. Every switch is seen: clean.
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


def child():
    greenlet.getcurrent().parent.switch("parked")
    greenreplay.mark("child resumed")
    return "child result"


def a_run():
    c = greenlet.greenlet(child)
    assert c.switch() == "parked"
    return c


def main():
    greenreplay.start()
    a = greenlet.greenlet(a_run)
    c = a.switch()
    c.parent = greenlet.getcurrent()
    assert c.switch() == "child result"
    greenreplay.stop()


main()
