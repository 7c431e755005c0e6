"""Fixture-to-be aimed at the mutguard mutant (ci/mutants/mutguard.patch):
a mark() inside the program's own greenlet trace callback.

greenlet runs that callback inside PyThreadState_EnterTracing (tracing
suspended): a profile function must not see the callback's frames, and the
MARK is written with its flag in_callback (tracing > 0).  With the guard
missing (mutguard) the profile function sees `call callback`, `call helper`
inside every switch.

Measured with the passive recorder (commit 9e3b69a) on pyenv 3.10.13 with
greenlet 2.0.2 built from Debian's sources:
  unmodified greenlet: blind_spot x4 ("profiler missed call of callback") -
      a false positive: the profiler is right not to see a guarded callback;
  mutguard: clean - the mutant survives.
It becomes a fixture (`# expect: clean`, aimed at mutguard) once the checker
treats a MARK with in_callback as "the profile must NOT show this frame":
then unmodified greenlet is clean and mutguard is flagged.
"""
# requires: greenlet
# expect: clean
import greenlet

import greenreplay


def helper():
    return 1


def callback(event, args):
    helper()
    greenreplay.mark("in greenlet callback")


def child():
    greenreplay.mark("child")
    greenlet.getcurrent().parent.switch()
    greenreplay.mark("child resumed")


def main():
    greenlet.settrace(callback)
    greenreplay.start()
    g = greenlet.greenlet(child)
    g.switch()
    g.switch()
    greenreplay.stop()
    greenlet.settrace(None)


main()
