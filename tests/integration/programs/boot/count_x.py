"""cProfile's count of x, called once directly and once as a new
greenlet's run.  Unrecorded, greenlet issue 256 class greenlets (the
mut256 mutant) count 1; so must a recording that does not disturb."""
import cProfile
import pstats

import greenlet


def x():
    return 1


profiler = cProfile.Profile()
profiler.enable()
x()
greenlet.greenlet(x).switch()
profiler.disable()
print("x calls:", sum(v[1] for k, v in pstats.Stats(profiler).stats.items() if k[2] == "x"))
