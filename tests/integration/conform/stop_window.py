"""A test adapter (tests/integration/conform.sh): the built-in yappi
adapter (every thread profiled), except that stop() first lets the
program's daemon thread run: it sets the program's WINDOW event and waits
for its DONE event (late_thread.py), then stops yappi.  This makes
deterministic what can happen by chance with any profiler of every
thread: another thread running between the harness's finish MARK and the
profiler's stop."""
import sys

import greenreplay.conform

_base = greenreplay.conform.load("yappi")
available, version, start, results = _base.available, _base.version, _base.start, _base.results


def stop():
    main = sys.modules.get("__main__")
    names = main.__dict__ if main is not None else {}
    if "WINDOW" in names and "DONE" in names:
        names["WINDOW"].set()
        names["DONE"].wait(60)  # a bound against a hang, not a timing the test needs
    _base.stop()
