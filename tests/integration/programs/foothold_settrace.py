"""A profile change made from C (cProfile's enable() on 3.9-3.11) followed
by the program's own sys.settrace before any traced event: the trace
change takes the trace slot from the recorder's foothold, which must then
resolve the profile change at once (greenreplay record --manual; argv[1]
the case).

  oneline  prof.enable(); sys.settrace(tr) on one line: the HOOK names
           enable() (`during`), and check's verdict is the profiler
           cProfile displaced.
  none     the program's trace function calls prof.enable(), then
           sys.settrace(None): a HOOK too, and after stop() no trace
           function of the recorder's is left in the thread's trace slot:
           a frame's own f_trace gets no event (the thread is not traced).

Prints the same lines recorded and unrecorded."""
import cProfile
import sys

import greenreplay

case = sys.argv[1]
prof = cProfile.Profile()


def leaf():
    return 1


def quiet(frame, event, arg):
    return None


def tr(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "target":
        prof.enable()
        sys.settrace(None)
    return None


def target():
    for _ in range(3):
        leaf()


greenreplay.start()
if case == "oneline":
    prof.enable(); sys.settrace(quiet)  # noqa: E702 (no event between them)
    for _ in range(3):
        leaf()
    sys.settrace(None)
else:
    sys.settrace(tr)
    target()
greenreplay.stop()
prof.disable()

hits = []


def framed():
    sys._getframe().f_trace = lambda frame, event, arg: hits.append(event)
    x = 1
    return x


framed()
print("case", case, "trace function", sys.gettrace(), "f_trace events after stop", hits)
