"""A program without greenlets that ends by an uncaught exception
(tests/integration/conform.sh).  The recorder stops at sys.excepthook's
audit event, before the traceback, while the profiler under test still
runs: its stop (which asks _thread._count whether another thread runs)
must stay out of the profiler's view, so that the results recorded and
unrecorded (--no-record) are identical.  cProfile counted
_thread._count in the recorded run only (3.11 and 3.12)."""


def step(n):
    return n * 2


def run():
    total = 0
    for i in range(3):
        total += step(i)
    return total


run()
raise ValueError("uncaught at the end: %d" % run())
