# realworld: a profiler set outside a new greenlet sees the calls inside it
# report: greenlet issue 256, "Change in profiler behaviour in CPython 3.10"
#   https://github.com/python-greenlet/greenlet/issues/256 (fixed by greenlet PR 259)
# semantics: x() runs in main, then in a new greenlet. Every greenlet
#   version since 1.1.2 carries the thread's tracing state into the new
#   greenlet, so the profiler sees call x / return x both times: clean.
#   The mutant mut256 (ci/mutants/mut256.patch, greenlet 1.1.0's bug) starts
#   the new greenlet with tracing off: the profiler misses x inside it, the
#   mark there shows a frame it never saw (blind_spot) and the greenlet
#   resumes without tracing although a profile function is set
#   (propagation). Any greenlet trace callback (--switches callback) heals
#   the mutant, so there the run is clean.
# modes: whole manual
# needs: greenlet
# quick: yes
# expect: clean
# expect mutant=mut256 switches=passive: blind_spot propagation
import greenlet
import greenreplay


def x(where):
    greenreplay.mark("x in " + where)
    return where


def main():
    greenreplay.start()
    x("main")
    greenlet.greenlet(x).switch("new greenlet")
    greenreplay.stop()


main()
