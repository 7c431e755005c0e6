"""A small long-running-service stand-in for the recording-mode tests: many
short greenlets; halfway it sends itself the flush signal (if one is
given) and checks that the trace file on disk grew.

usage: service.py [TRACE SIGNAL [ring]]   (SIGNAL as in USR1: the
`greenreplay record -o TRACE --flush-signal SIGNAL` it runs under; the
recorder leaves no GREENREPLAY_* variable for the program to read)"""
import os
import signal
import sys

import greenlet


def work(i):
    return sum(range(i % 7))


def main(n=3000):
    args = sys.argv[1:] + [None] * 3
    out, sig, ring = args[0] or "", args[1], args[2]
    for i in range(n):
        greenlet.greenlet(work).switch(i)
        if sig and i == n // 2:
            before = os.path.getsize(out) if os.path.exists(out) else 0
            os.kill(os.getpid(), getattr(signal, "SIG" + sig))
            after = os.path.getsize(out)
            # Ring mode writes the whole file (it was empty); otherwise the
            # buffered chunk goes out.
            if after <= max(before, 16):
                raise SystemExit("flush signal did not write the trace (%d -> %d bytes)" % (before, after))
            print("flushed: %d -> %d bytes%s" % (before, after, " (ring)" if ring else ""))


main()
