# realworld: two root frames on one thread
# report: pyinstrument issue 134, "Multiple root frame can exists with
#   greenlet" (an AssertionError in pyinstrument's session).
#   https://github.com/joerick/pyinstrument/issues/134
# semantics: y() runs in main, then as the run function of a new greenlet,
#   whose stack has y as its only frame (a second root). Both are seen with
#   call and return: clean.
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
import time

import greenlet
import greenreplay


def y(seconds):
    time.sleep(seconds)
    greenreplay.mark("in y")


greenreplay.start()
y(0.001)
greenlet.greenlet(y).switch(0.001)
greenreplay.stop()
