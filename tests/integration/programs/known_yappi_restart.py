"""yappi 1.4 installs its profile function in yappi.start(), then
re-installs it from its own first event (the c_return of _yappi.start).
The program displaced the subject profiler: one displaced finding naming
the cause (not failing by default).  The HOOK of the first change names the C call it interrupted
(`during` _yappi.start), as for any other change, so the c_return the
subject never saw is not an imbalance.
"""
# requires: yappi
# expect: displaced
# note:
import yappi

import greenreplay


def work(n):
    return sum(range(n))


greenreplay.start()
yappi.start()
work(10)
yappi.stop()
greenreplay.stop()
