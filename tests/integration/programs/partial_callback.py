"""Greenlet trace callbacks the program sets while recording that are not
Python functions: a functools.partial of a Python function (with a mark()
inside, which greenlet runs in its TracingGuard), a subclass of partial
wrapping a partial of a bound method, and a builtin method
(dict.setdefault), then none.  The recorder names each in the HOOK record
of slot greenlet: the partials by the code greenlet's call of them runs
(the function's), the builtin by its C identity; the marks inside the
partial are then excused as the callback's (no blind_spot).  Prints the
events the builtin callback saw, the same recorded and unrecorded.
"""
import functools

import greenlet

import greenreplay


def callback(tag, event, args):
    greenreplay.mark("in partial callback " + tag)


class Sink:
    def note(self, tag, event, args):
        greenreplay.mark("in bound partial callback " + tag)


class Partial(functools.partial):
    pass


def child():
    greenreplay.mark("child")
    for _ in range(3):
        greenlet.getcurrent().parent.switch()
    greenreplay.mark("child done")


g = greenlet.greenlet(child)
greenlet.settrace(functools.partial(callback, "x"))
g.switch()
greenlet.settrace(Partial(functools.partial(Sink().note), "y"))
g.switch()
seen = {}
greenlet.settrace(seen.setdefault)
g.switch()
greenlet.settrace(None)
g.switch()
print("builtin callback saw", sorted(seen))
