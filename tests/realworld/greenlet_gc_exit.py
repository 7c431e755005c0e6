# realworld: a suspended greenlet collected: GreenletExit thrown into it
# report: greenlet documentation and gevent issue 1909 (a greenlet freed
#   while suspended runs its finally blocks under GreenletExit).
#   https://github.com/gevent/gevent/issues/1909
# semantics: the last reference to a suspended greenlet goes away; greenlet
#   throws GreenletExit into it, its finally block runs and it dies. The
#   profiler sees the frames unwind: clean.
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
import gc

import greenlet
import greenreplay

cleaned = []


def holder(tag):
    try:
        greenlet.getcurrent().parent.switch()
    finally:
        greenreplay.mark("cleanup " + tag)
        cleaned.append(tag)


def main():
    greenreplay.start()
    for tag in ("a", "b", "c"):
        g = greenlet.greenlet(holder)
        g.switch(tag)
        del g
    gc.collect()
    assert cleaned == ["a", "b", "c"], cleaned
    greenreplay.stop()


main()
