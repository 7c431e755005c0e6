"""twice.py READY: a program that stops gracefully on its first SIGTERM
(exit 0) and forcibly on a second one (exit 1), as services do.  Writes
READY once its handler is in place."""
import os
import signal
import sys
import time

n = [0]


def on_term(signum, frame):
    n[0] += 1
    if n[0] >= 2:
        os._exit(1)


signal.signal(signal.SIGTERM, on_term)
open(sys.argv[1], "w").close()
while n[0] == 0:
    time.sleep(0.01)
time.sleep(0.5)  # a second SIGTERM, if any, arrives now
sys.exit(0)
