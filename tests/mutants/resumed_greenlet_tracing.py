"""Mutant check (no recorder): does a resumed greenlet follow the thread's
tracing state?

A switch must carry the tracing state from origin to target (greenlet 1.1.2,
PR 259, carries use_tracing on every switch; greenlet 1.1.0 kept each
greenlet's own stale flag, part of greenlet issue 256).  Here a greenlet is
suspended before the profile function is set and resumed after: its
`helper()` call must be seen.

usage: python resumed_greenlet_tracing.py [--callback]
Prints what was seen.  Exit 0 when greenlet behaves, 1 when a resumed
greenlet ran with a stale tracing state.  (The reverse, a profile
function cleared in one greenlet and the other resumed, cannot show: with
no profile function set, a stale use_tracing only costs time.)
"""
import sys

import greenlet

seen = []


def prof(frame, event, arg):
    if event == "call":
        seen.append(frame.f_code.co_name)


def helper():
    pass


def old():
    greenlet.getcurrent().parent.switch()
    helper()


def main():
    if "--callback" in sys.argv[1:]:
        greenlet.settrace(lambda event, args: None)
    g = greenlet.greenlet(old)
    g.switch()                      # suspended, tracing off
    sys.setprofile(prof)
    g.switch()                      # resumed, tracing on: helper() is seen
    sys.setprofile(None)
    ok = "helper" in seen
    print("resumed after the profiler was set: helper %s (expected seen)%s"
          % ("seen" if ok else "LOST", " with a greenlet callback" if "--callback" in sys.argv else ""))
    return 0 if ok else 1


sys.exit(main())
