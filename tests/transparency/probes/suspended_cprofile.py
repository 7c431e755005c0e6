"""cProfile enabled while a greenlet is suspended in the middle of a
Python function, then the greenlet resumed: what cProfile counts must be
the same recorded and unrecorded.  On 3.12+ cProfile is a sys.monitoring
tool of its own: enabling it instruments the code of the frames running
then, and the resumed frame's code only at its next entry.  Unrecorded
that code has no instrumented instruction; recorded it has the
recorder's, behind the interpreter's version, and a debug build checks
it when the greenlet resumes (a known difference there).
"""
# requires: greenlet
# manual: start
import cProfile
import pstats
import sys

import greenlet

if "--start" in sys.argv:
    import greenreplay
    greenreplay.start()


def worker(n):
    greenlet.getcurrent().parent.switch()
    len("a" * n)
    return abs(-n)


def again(n):
    return worker(n)


g1 = greenlet.greenlet(worker)
g1.switch(1)
p = cProfile.Profile()
p.enable()
g1.switch()
g2 = greenlet.greenlet(again)
g2.switch(2)
g2.switch()
p.disable()
stats = pstats.Stats(p).stats
counts = sorted((func[2], nc) for func, (cc, nc, tt, ct, callers) in stats.items()
                if func[2] in ("worker", "again", "<built-in method builtins.len>",
                               "<built-in method builtins.abs>"))
print("cprofile:", counts)
if "--start" in sys.argv:
    greenreplay.stop()
