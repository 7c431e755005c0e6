"""Prints the name of its parent process: the runner's Python unrecorded,
`greenreplay` recorded.  A difference the oracle must always report
(tests/transparency/selftest.sh)."""
# requires:
import os

with open("/proc/%d/comm" % os.getppid()) as f:
    print("parent:", "greenreplay" if f.read().strip() == "greenreplay" else "other")
