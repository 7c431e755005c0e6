"""Mutant check (no recorder): is greenlet's trace callback guarded?

greenlet calls the callback set with greenlet.settrace() with tracing
suspended for the thread (PyThreadState_EnterTracing/LeaveTracing since
greenlet PR 268; before it, greenlet raised tstate->tracing and cleared
use_tracing by hand around the call), so a profile function never sees the
callback's own frames, and the program's callback can itself use
sys.setprofile-free tools.  Here a Python callback calls a helper; the
profile function must see neither.

usage: python callback_guard.py
Prints what was seen.  Exit 0 when greenlet behaves, 1 when the profile
function saw the callback's frames.
"""
import sys

import greenlet

seen = []


def prof(frame, event, arg):
    if event == "call":
        seen.append(frame.f_code.co_name)


def in_callback():
    pass


def callback(event, args):
    in_callback()


def child():
    pass


def main():
    greenlet.settrace(callback)
    sys.setprofile(prof)
    greenlet.greenlet(child).switch()
    sys.setprofile(None)
    greenlet.settrace(None)
    leaked = [n for n in seen if n in ("callback", "in_callback")]
    print("callback frames seen by the profile function: %d (expected 0)" % len(leaked))
    print("child seen: %s" % ("child" in seen))
    return 0 if not leaked and "child" in seen else 1


sys.exit(main())
