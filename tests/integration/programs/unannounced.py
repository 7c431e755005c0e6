"""A profile slot taken over without the audit event (as a C extension that
writes the thread state directly does): for tests/integration/observer.sh.

usage: unannounced.py swap|announced
  swap       greenreplay's _test_swap_profile() replaces the slot's function
             directly; calls of leaf() run before the next mark
  announced  the same with sys.setprofile(), which raises the audit event
"""
import sys

import greenreplay
from greenreplay import _greenreplay


def leaf(i):
    return i


def noop(frame, event, arg):
    pass


greenreplay.mark("before")
if sys.argv[1] == "swap":
    _greenreplay._test_swap_profile()
else:
    sys.setprofile(noop)
for i in range(3):
    leaf(i)
greenreplay.mark("after")
for i in range(2):
    leaf(i)
print("done")
