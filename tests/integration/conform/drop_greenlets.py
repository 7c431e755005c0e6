"""A deliberately broken adapter (tests/integration/conform.sh): it counts
calls like a plain profile function but drops every call made outside its
thread's main greenlet.  `greenreplay conform` must exit 1 with a
blind_spot naming the function and the greenlet where the dropped calls
ran: the comparison can fail."""
import sys

import greenlet

_counts = {}


def _profile(frame, event, arg):
    if event == "call" and greenlet.getcurrent().parent is None:
        code = frame.f_code
        key = (code.co_filename, code.co_firstlineno, code.co_name)
        _counts[key] = _counts.get(key, 0) + 1


def available():
    return True, ""


def version():
    return "drop_greenlets (broken on purpose)"


def start():
    sys.setprofile(_profile)


def stop():
    sys.setprofile(None)


def results():
    return {"functions": [{"file": f, "line": line, "name": name, "calls": n}
                          for (f, line, name), n in _counts.items()],
            "threads": "starting"}
