"""crash.py segv|abort|segv-chunks: three marks, 10 ms, then a crash of the
kind asked for: a SIGSEGV (a NULL read through ctypes) or a SIGABRT
(os.abort), as a failed assertion in a debug build of CPython or greenlet
gives.  segv-chunks records in 4 KiB chunks and makes 20,000 calls before
its marks, so that compressed chunks precede the one the fatal-signal
handler writes (uncompressed)."""
import ctypes
import os
import sys
import time

import greenreplay


def work(n):
    greenreplay.mark("before the crash %d" % n)


def leaf(i):
    return i + 1


chunks = sys.argv[1] == "segv-chunks"
greenreplay.start(chunk=4096 if chunks else 0)
if chunks:
    for i in range(20000):
        leaf(i)
for i in range(3):
    work(i)
time.sleep(0.01)
if sys.argv[1] in ("segv", "segv-chunks"):
    ctypes.string_at(0)
else:
    os.abort()
