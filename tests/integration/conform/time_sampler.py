"""A synthetic time sampler for the tests of time per function (results
"time_samples", docs/conform.md, "Time per function").

A profile function on the starting thread notes, at each event, the
clock and the stack that runs from then on (the frame's chain: in a
greenlet it ends at the greenlet's first frame).  At the end the adapter
draws GR_TIME_N (default 400) instants uniformly over the time some frame
of the program's files was on that stack, and gives the stack running at
each as one sample.  Those instants depend on nothing the program does, so
the samples meet the test's null hypothesis by construction: this adapter
must pass.  GR_TIME_SEED fixes the draw (default: a fresh one per run).

GR_TIME_FAULT breaks it on purpose, one way per verdict:
  share        every second sample taken in a greenlet other than the main
               one is put on the main greenlet's last stack before it (the
               switching frame), so the greenlets' functions get about half
               their share: time_share;
  unsampled    every such sample is put there: the greenlets' functions
               are never sampled (time_unsampled);
  not_running  every fourth sample gets on top a frame of `side`, which
               the program runs in another thread only (time_not_running),
               above a frame outside the program (so that no pair of
               adjacent frames is wrong: the time test alone flags it).
"""
import bisect
import os
import random
import sys
import time

_clock = time.perf_counter_ns
_starts = []    # the clock when each interval began
_stacks = []    # the stack that ran in it (codes, outermost first)
_ctx = {}


def available():
    return True, ""


def version():
    fault = os.environ.get("GR_TIME_FAULT")
    return "time_sampler 1.0%s" % (" (fault %s, broken on purpose)" % fault if fault else "")


def _chain(frame):
    codes = []
    while frame is not None:
        codes.append(frame.f_code)
        frame = frame.f_back
    codes.reverse()
    return tuple(codes)


def _profile(frame, event, arg):
    now = _clock()
    stack = _chain(frame.f_back if event == "return" else frame)
    if stack != _stacks[-1]:
        _starts.append(now)
        _stacks.append(stack)


def start(ctx):
    _ctx.update(ctx)
    _starts.append(_clock())
    _stacks.append(_chain(ctx["frame"]))
    sys.setprofile(_profile)


def stop():
    sys.setprofile(None)
    _starts.append(_clock())
    _stacks.append(())


def _ours(code):
    f = code.co_filename
    return not f.startswith("<") and os.path.abspath(f).startswith(_ctx["root"].rstrip("/") + "/") \
        and os.path.abspath(f) != os.path.abspath(__file__)


_OTHER = "<another thread>"  # a frame outside the program's files: side is adjacent to none


def _frame(code):
    if code is _OTHER:
        return {"file": _OTHER, "line": 0, "name": ""}
    return {"file": code.co_filename, "line": code.co_firstlineno,
            "name": getattr(code, "co_qualname", code.co_name), "first": code.co_firstlineno}


def results():
    fault = os.environ.get("GR_TIME_FAULT", "")
    seed = os.environ.get("GR_TIME_SEED")
    rng = random.Random(int(seed)) if seed else random.Random()
    n = int(os.environ.get("GR_TIME_N", "400"))
    main_code = _ctx["main_code"]
    side = next((c for c in main_code.co_consts if getattr(c, "co_name", None) == "side"), None)
    # the intervals with a frame of the program's files, their running
    # stack and the main greenlet's last stack before them
    weights, stacks, switching = [], [], []
    last_main = ()
    for begin, end, st in zip(_starts, _starts[1:], _stacks):
        if main_code in st:
            last_main = st
        if end > begin and any(_ours(c) for c in st):
            weights.append(end - begin)
            stacks.append(st)
            switching.append(last_main)
    total = sum(weights)
    cum, acc = [], 0
    for w in weights:
        acc += w
        cum.append(acc)
    samples = {}
    outside = 0
    for x in sorted(rng.uniform(0, total) for _ in range(n if total else 0)):
        i = min(bisect.bisect_right(cum, x), len(cum) - 1)
        st = stacks[i]
        if main_code not in st and switching[i]:
            outside += 1
            if fault == "unsampled" or (fault == "share" and outside % 2 == 0):
                st = switching[i]
        if fault == "not_running" and side is not None and (sum(samples.values()) % 4 == 3):
            st = st + (_OTHER, side)
        samples[st] = samples.get(st, 0) + 1
    out = [{"frames": [_frame(c) for c in st], "count": k} for st, k in samples.items()]
    return {"stacks": out, "threads": "starting", "time_samples": True}
