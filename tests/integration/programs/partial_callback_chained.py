"""A functools.partial set as greenlet's trace callback before start()
(`greenreplay record --manual`): in callback mode the recorder's callback
chains to it, and the HOOK of slot greenlet written at start() names it
(`chained`) by the code it runs; then a builtin callback set while
recording is named by its C identity.  Prints what the builtin saw."""
import functools

import greenlet

import greenreplay


def callback(tag, event, args):
    greenreplay.mark("in chained partial callback " + tag)


def child():
    greenlet.getcurrent().parent.switch()


greenlet.settrace(functools.partial(callback, "x"))
greenreplay.start()
g = greenlet.greenlet(child)
g.switch()
seen = {}
greenlet.settrace(seen.setdefault)
g.switch()
greenreplay.stop()
greenlet.settrace(None)
print("builtin callback saw", sorted(seen))
