"""A greenreplay conform adapter: count the calls of every Python function
with a plain profile function (sys.setprofile) on the starting thread."""
import sys

_counts = {}


def _profile(frame, event, arg):
    if event == "call":
        code = frame.f_code
        key = (code.co_filename, code.co_firstlineno, code.co_name)
        _counts[key] = _counts.get(key, 0) + 1


def available():
    return True, ""


def version():
    return "callcount 1.0"


def start():
    sys.setprofile(_profile)


def stop():
    sys.setprofile(None)


def results():
    functions = [{"file": f, "line": line, "name": name, "calls": n}
                 for (f, line, name), n in _counts.items()]
    return {"functions": functions, "threads": "starting"}
