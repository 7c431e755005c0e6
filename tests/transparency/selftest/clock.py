"""Prints the clock: two unrecorded runs never agree (the oracle must call
it not deterministic, not compare it)."""
# requires:
# runs: 2
import time

print(time.time_ns())
