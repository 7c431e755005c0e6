"""Hostile names for tests/hostile/run.sh: a program that records every
kind of string a trace from someone else may hold, in function names,
mark labels and code file names.

Each string tries to end a literal or a comment of a generated script and
run `open(CANARY, 'w')`; run.sh checks that no CANARY file appears.  With
TAME=1 in the environment the same program runs with plain names, so that
both recordings must get the same verdicts.
"""
import os
import sys

import greenreplay

TAME = os.environ.get("TAME") == "1"
PAYLOAD = "open('CANARY', 'w').write('ran')"

HOSTILE = [
    "'); " + PAYLOAD + "; ('",
    '"); ' + PAYLOAD + '; ("',
    "'''); " + PAYLOAD + "; ('''",
    '"""); ' + PAYLOAD + '; ("""',
    "\\'); " + PAYLOAD + "; (\\'",
    "x\n" + PAYLOAD + "\n#",
    "x\r" + PAYLOAD + "\r#",
    "x\r\n" + PAYLOAD + "\r\n#",
    "x\u2028" + PAYLOAD + "\u2029#",
    "x\x0c" + PAYLOAD,
    "x\x00" + PAYLOAD,
    "x\udce9\ud800" + PAYLOAD,
    "\u202e" + PAYLOAD + "\u2066\u2069\u200f",
    "\x1b]0;title\x07\x1b[2J\x9b31m\x85",
    "# -*- coding: unicode_escape -*-\n# coding=utf-7\n+ACc-); " + PAYLOAD,
    "\\x27); " + PAYLOAD + "; (\\x27",
    "\\N{APOSTROPHE}); " + PAYLOAD + "; (\\N{APOSTROPHE}",
]


def name(i, s):
    return "tame%d" % i if TAME else s


def hostile_function(i, s):
    def f():
        greenreplay.mark(name(i, s))
        return i

    qual = name(i, s)
    kw = {"co_name": qual}
    if hasattr(f.__code__, "co_qualname"):
        kw["co_qualname"] = qual
    f.__code__ = f.__code__.replace(**kw)
    return f


def hostile_file(i, s):
    # a code object whose file name is the hostile string
    def g():
        greenreplay.mark("g")

    g.__code__ = g.__code__.replace(co_filename="tame%d.py" % i if TAME else s + ".py")
    return g


def main():
    fs = [hostile_function(i, s) for i, s in enumerate(HOSTILE)]
    gs = [hostile_file(i, s) for i, s in enumerate(HOSTILE)]
    greenreplay.start()
    for f in fs:
        f()
    for g in gs:
        g()
    greenreplay.stop()


if __name__ == "__main__":
    sys.exit(main())
