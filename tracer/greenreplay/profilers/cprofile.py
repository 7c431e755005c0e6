"""cProfile (C, in every CPython): call counts per function.

cProfile profiles the thread that enabled it only.  On 3.9-3.11 it is a
profile function (PyEval_SetProfile); on 3.12+ it runs on sys.monitoring
(CPython issue 103533).  Counts are pstats' total calls (nc), which
include recursive calls and generator resumptions, as the recorder's CALL
records do.  C functions ("c_functions") are named as the trace names
them (module.name, Type.name); cProfile counts their calls from anywhere,
so the comparison only checks that it counts at least the calls the
program's own functions made."""
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


def _c_name(label):
    # cProfile's labels of C functions, as the trace names them:
    # "<built-in method builtins.len>" -> "builtins.len",
    # "<method 'pop' of 'dict' objects>" -> "dict.pop".
    if label.startswith("<built-in method ") and label.endswith(">"):
        return label[len("<built-in method "):-1]
    if label.startswith("<method '") and label.endswith("' objects>"):
        name, _, owner = label[len("<method '"):-len("' objects>")].partition("' of '")
        return "%s.%s" % (owner, name)
    return None


def results():
    _prof.create_stats()
    fns, cfns = [], []
    for (f, line, name), v in _prof.stats.items():
        if line:
            fns.append({"file": f, "line": line, "name": name, "calls": v[1]})
        elif _c_name(name):
            cfns.append({"name": _c_name(name), "calls": v[1]})
    return {"functions": fns, "c_functions": cfns, "threads": "starting"}
