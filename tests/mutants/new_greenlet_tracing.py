"""Mutant check (no recorder): does a new greenlet start with tracing on?

The greenlet issue 256 class (greenlet 1.1.0 on CPython 3.10: a new
greenlet ran on tstate->root_cframe, whose use_tracing was stale, so a
profile function set outside it saw no `call` inside it; fixed in 1.1.2 by
greenlet PR 259).  A plain sys.setprofile profile function records events
in Python; x() runs once in the main greenlet and once as a new greenlet's
run.  It must be seen called twice.

The same is then done with an empty greenlet trace callback installed:
greenlet runs the callback inside PyThreadState_EnterTracing/LeaveTracing,
and LeaveTracing recomputes use_tracing in the new greenlet, which heals
the bug (see docs/matrix.md, "Mutants").  Each run is a fresh interpreter.

usage: python new_greenlet_tracing.py [--callback]
Prints "calls of x: N (expected 2)".  Exit 0 when both calls were seen
(greenlet behaves), 1 when the call inside the new greenlet was lost.
"""
import sys

import greenlet

seen = []


def prof(frame, event, arg):
    if event == "call":
        seen.append(frame.f_code.co_name)


def x():
    pass


def main():
    if "--callback" in sys.argv[1:]:
        greenlet.settrace(lambda event, args: None)
    sys.setprofile(prof)
    x()
    greenlet.greenlet(x).switch()
    sys.setprofile(None)
    n = seen.count("x")
    print("calls of x: %d (expected 2)%s" % (n, " with a greenlet callback" if "--callback" in sys.argv else ""))
    return 0 if n == 2 else 1


sys.exit(main())
