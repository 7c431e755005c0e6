"""A cProfile profiler held only by the profile slot (enabled on a
temporary object), replaced by another profiler's enable(): the first is
freed, and _lsprof's finalizer clears the slot while it is enabled.  Under
recording the recorder held the first one as its chained profile object
and released it between its two writes of the slot: the next event called
cProfile's function with no object (SIGSEGV).  For
tests/integration/program_hooks.sh.  Prints how many calls of f() the
second profiler counted (None: it has no stats)."""
import cProfile
import pstats


def f():
    pass


cProfile.Profile().enable()
p = cProfile.Profile()
p.enable()
for _ in range(5):
    f()
p.disable()
try:
    st = pstats.Stats(p)
    print("f calls:", sum(v[1] for k, v in st.stats.items() if k[2] == "f"))
except TypeError:
    print("f calls: None")
