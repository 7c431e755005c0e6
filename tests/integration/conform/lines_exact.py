"""A conform adapter (tests/integration/conform_exact.sh): executed lines
per file from a trace function that keeps no stack, on every thread.  It
sees the lines after a resumed await in a greenlet bridge, so `greenreplay
conform` must pass it where coverage's default tracer fails."""
import sys
import threading

_lines = {}


def _trace(frame, event, arg):
    if event == "line":
        _lines.setdefault(frame.f_code.co_filename, set()).add(frame.f_lineno)
    return _trace


def available():
    return True, ""


def version():
    return "lines_exact 1.0"


def start():
    threading.settrace(_trace)
    sys.settrace(_trace)


def stop():
    sys.settrace(None)
    threading.settrace(None)


def results():
    return {"lines": {f: sorted(ls) for f, ls in _lines.items()}, "threads": "all"}
