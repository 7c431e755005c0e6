"""python -m mpkg: the schedule at module level (whole-program recording)."""
from mpkg import sched

sched.run()
