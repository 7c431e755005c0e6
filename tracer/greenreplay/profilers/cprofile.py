"""cProfile (C, in every CPython): call counts per function.

cProfile profiles the thread that enabled it only.  On 3.9-3.11 it is a
profile function (PyEval_SetProfile); on 3.12+ it runs on sys.monitoring
(CPython issue 103533).  Counts are pstats' total calls (nc), which
include recursive calls and generator resumptions, as the recorder's CALL
records do."""
import cProfile

_prof = None


def available():
    return True, ""


def version():
    import sys
    return "cProfile (CPython %s)" % sys.version.split()[0]


def start():
    global _prof
    _prof = cProfile.Profile()
    _prof.enable()


def stop():
    _prof.disable()


def results():
    _prof.create_stats()
    fns = [{"file": f, "line": line, "name": name, "calls": v[1]}
           for (f, line, name), v in _prof.stats.items() if line]
    return {"functions": fns, "threads": "starting"}
