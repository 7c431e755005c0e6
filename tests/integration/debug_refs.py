"""Helper of tests/integration/debug.sh (not a fixture): references the
recorder keeps after stop(), under a debug interpreter (Py_DEBUG).

    python3.Xd debug_refs.py DIR [ROUNDS]

Records ROUNDS (default 6) short traces into DIR, one start()/stop() each
(every other one with the reference sampler "two-phase", whose unwinder
reads frames without the GIL), exercising what the recorder takes
references to: greenlets new, suspended, thrown into and dying, code
objects called and marked in, a mark label, a C call raising, a thread
started while recording, and a greenlet trace callback of the program's own
that the recorder chains to.  Around each round it reads sys.getrefcount()
of those objects: after stop() every count must be back where it was
(the recorder holds greenlets through weak references and its own tables
only while recording).  Prints one line per round and exits 1 when an
object keeps a reference, 2 on bad usage or a non-debug interpreter.

Totals (sys.gettotalrefcount) are not used: greenlet is built for the
release ABI, so its Py_INCREF/Py_DECREF do not count into the debug
build's total, which then drifts with every reference greenlet hands over.
A reference count error (a negative count, a freed object used) or an API
call without the GIL makes the debug interpreter abort instead; the caller
sees the signal.
"""
import gc
import os
import sys
import threading

import greenlet

import greenreplay


class Label:
    def __str__(self):
        return "label object"


def leaf(i):
    greenreplay.mark("leaf")
    return i + 1


def child(n):
    total = 0
    for i in range(n):
        total = leaf(total)
        greenlet.getcurrent().parent.switch(total)
    return total


def failing():
    try:
        greenlet.getcurrent().parent.switch("ready")
    except KeyError:
        return "caught"


def worker():
    leaf(0)


def user_callback(event, args):
    pass


def one_round(path, sampler, label, exc, done):
    if sampler:
        greenreplay.start(path, sampler=sampler, interval_us=200)
    else:
        greenreplay.start(path)
    g = greenlet.greenlet(child)
    g.switch(3)
    while not g.dead:
        g.switch()
    t = greenlet.greenlet(failing)
    t.switch()
    t.throw(exc)
    greenreplay.mark(label)
    try:
        len(5)
    except TypeError:
        pass
    th = threading.Thread(target=worker)
    th.start()
    th.join()
    greenreplay.stop()
    done.extend((g, t))


def main(argv):
    if len(argv) < 2 or not hasattr(sys, "gettotalrefcount"):
        sys.stderr.write("usage: python3.Xd debug_refs.py DIR [ROUNDS] (a debug interpreter)\n")
        return 2
    out, rounds = argv[1], int(argv[2]) if len(argv) > 2 else 6
    greenlet.settrace(user_callback)
    # A greenlet suspended before start(): seen as a suspended seed, switched
    # into while recording, still suspended at stop.
    waiting = greenlet.greenlet(child)
    waiting.switch(1000)
    label, exc = Label(), KeyError("thrown")
    watched = {"label": label, "exception": exc, "suspended greenlet": waiting,
               "user greenlet callback": user_callback, "leaf code": leaf.__code__,
               "child code": child.__code__, "main greenlet": greenlet.getcurrent(),
               "module greenreplay": greenreplay}
    bad = 0
    for i in range(rounds):
        sampler = "two-phase" if i % 2 else None
        done = []
        gc.collect()
        before = {k: sys.getrefcount(v) for k, v in watched.items()}
        one_round(os.path.join(out, "refs-%d.grt" % (i % 2)), sampler, label, exc, done)
        waiting.switch()
        gc.collect()
        # The greenlets of this round: only `done` refers to them now (and,
        # while reading, the loop variable and getrefcount's argument).
        dead = [sys.getrefcount(g) - 3 for g in done]
        ndone = len(done)
        del done[:]
        gc.collect()
        after = {k: sys.getrefcount(v) for k, v in watched.items()}
        kept = ["%s %+d" % (k, after[k] - before[k]) for k in watched if after[k] != before[k]]
        kept += ["greenlet of the round %+d" % n for n in dead if n]
        print("round %d (%s): %s" % (i + 1, sampler or "no sampler",
                                     "references kept: " + ", ".join(kept) if kept else
                                     "every count back (%d objects)" % (len(watched) + ndone)))
        bad += bool(kept)
    greenlet.settrace(None)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
