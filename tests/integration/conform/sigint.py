"""A program killed by SIGINT sent to itself (tests/integration/conform.sh):
Python raises KeyboardInterrupt, runs its atexit hooks (the adapter's
results are written) and then kills itself with SIGINT, so its status is
130 as with exit130.py's sys.exit(130); conform's --json must tell the two
apart by program_signal."""
import os
import signal


def work(n):
    return n + 1


work(1)
# A shell runs a background job with SIGINT ignored, and Python keeps
# that: take Python's own handler, as in a foreground run.
signal.signal(signal.SIGINT, signal.default_int_handler)
os.kill(os.getpid(), signal.SIGINT)
