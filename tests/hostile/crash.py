"""crash.py segv|abort: three marks, 10 ms, then a crash of the kind
asked for: a SIGSEGV (a NULL read through ctypes) or a SIGABRT (os.abort),
as a failed assertion in a debug build of CPython or greenlet gives."""
import ctypes
import os
import sys
import time

import greenreplay


def work(n):
    greenreplay.mark("before the crash %d" % n)


greenreplay.start()
for i in range(3):
    work(i)
time.sleep(0.01)
if sys.argv[1] == "segv":
    ctypes.string_at(0)
else:
    os.abort()
