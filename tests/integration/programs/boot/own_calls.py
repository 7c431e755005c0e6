"""A program written for --manual, recorded whole-program: its own
greenreplay.start() and stop() change nothing there, and no frame of
greenreplay's may be in the trace (their calls, the C calls they make, the
final STACK), so that the trace round-trips through `greenreplay script`
and `greenreplay diff --c-names script`."""
import greenlet

import greenreplay


def x():
    greenreplay.mark("in x")


greenreplay.start()
x()
greenlet.greenlet(x).switch()
greenreplay.stop()
