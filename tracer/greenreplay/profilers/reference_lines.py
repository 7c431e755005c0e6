"""The reference line tracer of `greenreplay conform` (not a profiler
under test): executed lines per file and call events per function.

conform runs a program a second time under it, unrecorded, when the
profiler under test reports executed lines (coverage): its lines are the
ground truth of the exact line comparison, and its call counts show that
both runs ran the same functions as often.  It keeps no stack: a trace
function that adds (file, line) to a set at each "line" event and counts
each "call" event, for every frame (it returns itself as the frame's local
trace function).  The trace function is per thread, not per greenlet, and
the tracer remembers nothing between events, so a greenlet switch cannot
mislead it.  Every thread: sys.settrace here, threading.settrace for the
threads started later."""
import sys
import threading

_lines = {}
_calls = {}


def _trace(frame, event, arg):
    code = frame.f_code
    if event == "line":
        f = code.co_filename
        s = _lines.get(f)
        if s is None:
            s = _lines[f] = set()
        s.add(frame.f_lineno)
    elif event == "call":
        key = (code.co_filename, code.co_firstlineno, getattr(code, "co_qualname", code.co_name))
        _calls[key] = _calls.get(key, 0) + 1
    return _trace


def available():
    return True, ""


def version():
    return "reference line tracer (sys.settrace, CPython %s)" % sys.version.split()[0]


def start():
    threading.settrace(_trace)
    sys.settrace(_trace)


def stop():
    sys.settrace(None)
    threading.settrace(None)


def results():
    lines = {f: sorted(ls) for f, ls in list(_lines.items())}
    fns = [{"file": f, "line": line, "name": name, "calls": n}
           for (f, line, name), n in list(_calls.items())]
    return {"lines": lines, "functions": fns, "threads": "all"}
