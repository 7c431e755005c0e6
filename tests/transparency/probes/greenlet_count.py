"""cProfile's count of a function called once directly and once as a new
greenlet's run (greenlet issue 256: a profiler that does not see inside the
new greenlet counts 1).  The recorder must not change the count.
"""
# requires: greenlet
# manual: start
import cProfile
import sys

import greenlet

if "--start" in sys.argv:
    import greenreplay
    greenreplay.start()


def x():
    return 1


profiler = cProfile.Profile()
profiler.enable()
x()
greenlet.greenlet(x).switch()
profiler.disable()
profiler.create_stats()
print("cProfile calls of x:", sum(v[1] for k, v in profiler.stats.items() if k[2] == "x"))
if "--start" in sys.argv:
    greenreplay.stop()
