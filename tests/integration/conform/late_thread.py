"""A program whose daemon thread calls `tick` while the harness is
stopping a profiler of every thread (tests/integration/conform.sh, with
the adapter stop_window.py beside this file): the thread waits for WINDOW,
which the adapter's stop() sets after the finish MARK and before it stops
the profiler, calls tick twice and sets DONE.  The profiler counts those
calls, the comparison does not count them as the program's (they ran
after the finish MARK): a note, not a miscount."""
import threading

WINDOW = threading.Event()
DONE = threading.Event()


def tick(n):
    return n + 1


def late():
    WINDOW.wait()
    tick(1)
    tick(2)
    DONE.set()


threading.Thread(target=late, daemon=True).start()
tick(0)
