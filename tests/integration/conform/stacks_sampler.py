"""A sampling adapter for the tests of the sampled-stack comparison
(results "stacks", docs/conform.md): a thread that reads the starting
thread's current frame chain (sys._current_frames) every 200 us, as an
out-of-process sampler reads it from memory: it sees the running greenlet's
stack only, so it is right.  GR_STACKS_FAULT=parent breaks it on purpose:
a sample taken inside a greenlet other than the main one is put on top of
the last main-greenlet stack sampled (the switching frame), as a profiler
that keeps one stack per thread would; the comparison must then report
wrong_stack.  GR_STACKS_FAULT=ghost adds to every sample a frame of a
function of the program that never ran (never_ran)."""
import os
import sys
import threading
import time

_stop = threading.Event()
_samples = []
_thread = None
_target = None


def available():
    return True, ""


def version():
    return "stacks_sampler%s" % (" (fault %s, broken on purpose)" % os.environ["GR_STACKS_FAULT"]
                                 if os.environ.get("GR_STACKS_FAULT") else "")


def _frames(frame):
    out = []
    while frame is not None:
        c = frame.f_code
        out.append({"file": c.co_filename, "line": frame.f_lineno, "name": c.co_name,
                    "first": c.co_firstlineno})
        frame = frame.f_back
    out.reverse()
    return out


def _run():
    fault = os.environ.get("GR_STACKS_FAULT", "")
    last_main = []
    while not _stop.is_set():
        f = sys._current_frames().get(_target)
        if f is not None:
            fl = _frames(f)
            if fl:
                if fl[0]["name"] == "<module>":
                    last_main = fl
                elif fault == "parent" and last_main:
                    fl = last_main + fl
                if fault == "ghost":
                    fl = fl + [dict(fl[-1], name="never_called", first=fl[-1]["first"] + 1000)]
                _samples.append(fl)
        time.sleep(0.0002)


def start():
    global _thread, _target
    _target = threading.get_ident()
    _thread = threading.Thread(target=_run, daemon=True)
    _thread.start()


def stop():
    _stop.set()
    _thread.join()


def results():
    return {"stacks": [{"frames": s, "count": 1} for s in _samples], "threads": "all"}
