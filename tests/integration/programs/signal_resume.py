"""A signal handler that runs where a function has not started yet.

Example: the handler marks at plain()'s first instruction.  CPython 3.13+
(and 3.11) check for pending signals in RESUME before the call event, so
the real stack there holds plain(), whose `call` comes only after the
handler returns.  The profile function did not miss it: clean.  The same
at a generator resumed after a yield (its `call` is PY_RESUME) and at the
first instruction of a new greenlet's run function.

With the argument `unseen`, the new greenlet is switched to inside a
trace function (tracing suppressed): the handler still marks at its first
instruction, and the greenlet's own mark later shows calls no profile
function saw: blind_spot.

The signal is made pending without a bytecode between: SIGALRM's C
handler writes to the wakeup fd, and os.read (restarted, SA_RESTART)
waits for that byte, all C calls run by map().
"""
import operator
import os
import signal
import sys
from collections import deque
from functools import partial

try:
    import greenlet
except ImportError:
    greenlet = None

import greenreplay


def handler(signum, frame):
    greenreplay.mark("handler")


def pending_at(fn, *args):
    """fn(*args), entered with SIGALRM's Python handler pending."""
    r, w = os.pipe()
    os.set_blocking(w, False)
    old_fd = signal.set_wakeup_fd(w)
    steps = [partial(signal.setitimer, signal.ITIMER_REAL, 0.0005), partial(os.read, r, 1),
             partial(fn, *args)]
    out = deque(map(operator.methodcaller("__call__"), steps), 1)
    signal.set_wakeup_fd(old_fd)
    os.close(r)
    os.close(w)
    return out[0]


def plain():
    return "plain done"


def counter():
    n = 0
    while True:
        n = yield n


def child():
    helper()
    return "child done"


def helper():
    greenreplay.mark("helper")


def scenario_seen():
    assert pending_at(plain) == "plain done"
    gen = counter()
    next(gen)
    assert pending_at(gen.send, 5) == 5
    gen.close()
    if greenlet is not None:
        g = greenlet.greenlet(child)
        assert pending_at(g.switch) == "child done"


def scenario_unseen():
    g = greenlet.greenlet(child)
    results = []

    def tracer(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "trigger" and not g.dead:
            results.append(pending_at(g.switch))  # runs with tracing suppressed
        return None

    def trigger():
        greenreplay.mark("trigger")

    sys.settrace(tracer)
    trigger()
    sys.settrace(None)
    assert results == ["child done"], results


def main():
    old = signal.signal(signal.SIGALRM, handler)
    signal.siginterrupt(signal.SIGALRM, False)
    greenreplay.start()
    if sys.argv[1:] == ["unseen"]:
        scenario_unseen()
    else:
        scenario_seen()
    greenreplay.mark("over")
    greenreplay.stop()
    signal.signal(signal.SIGALRM, old)


main()
