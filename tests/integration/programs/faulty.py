"""Program for tests/integration/faults.sh.

usage: faulty.py MODE [READY_FILE]
  busy    make about 200,000 calls, then print "program done" (disk full)
  wait    install SIGINT/SIGTERM handlers that print "handler SIGNAME" and
          exit with status 3 (SIGINT) or 4 (SIGTERM); create READY_FILE;
          then call functions until a signal comes (at most 60 s)
  spin    create READY_FILE, then call functions for at most 60 s
          (SIGKILL, the flush signal)
  raise   print whether sys.excepthook is still sys.__excepthook__ (it must
          be: the recorder does not replace it), make a few calls, then
          raise ValueError (exit status 1)
"""
import os
import signal
import sys
import time


def work(i):
    return i * 2


def handler(signum, frame):
    print("handler %s" % signal.Signals(signum).name, flush=True)
    sys.exit(3 if signum == signal.SIGINT else 4)


def ready():
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            f.write("ready\n")


def spin():
    end = time.monotonic() + 60
    i = 0
    while time.monotonic() < end:
        work(i)
        i += 1
        if i % 1000 == 0:
            time.sleep(0.001)


mode = sys.argv[1]
if mode == "busy":
    for i in range(200000):
        work(i)
    print("program done", flush=True)
elif mode == "wait":
    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    ready()
    spin()
    sys.exit(9)
elif mode == "spin":
    ready()
    spin()
elif mode == "raise":
    print("excepthook untouched: %s" % (sys.excepthook is sys.__excepthook__), flush=True)
    work(1)
    raise ValueError("faulty.py raises")
else:
    sys.exit("unknown mode %s" % mode)
