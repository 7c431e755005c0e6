"""cProfile (C, in every CPython): call counts per function.

cProfile profiles the thread that enabled it only.  On 3.9-3.11 it is a
profile function (PyEval_SetProfile); on 3.12+ it runs on sys.monitoring
(CPython issue 103533).  Counts are pstats' total calls (nc), which
include recursive calls and generator resumptions, as the recorder's CALL
records do; also its primitive calls (cc: calls not made while the function
was already running) and its callers (the calls on each caller->callee
edge between Python functions).  C functions ("c_functions") are named as the trace names
them (module.name, Type.name); cProfile counts their calls from anywhere,
so the comparison only checks that it counts at least the calls the
program's own functions made.

A program that enables cProfile profilers of its own (per-request
middleware) displaces this adapter's profiler on 3.9-3.11.  The adapter
asks the recorder to keep every cProfile object the program installs
alive (greenreplay.conform.keep_profilers: the same objects, under the same ids,
as the trace's PROFILER definitions) and reads each one's counts back at
exit ("program_profilers"), without disabling it: conform compares them
with what the recording delivered to each (docs/conform.md)."""
import cProfile

_prof = None


def available():
    return True, ""


def version():
    import sys
    return "cProfile (CPython %s)" % sys.version.split()[0]


def start():
    global _prof
    from greenreplay import conform
    conform.keep_profilers()
    _prof = cProfile.Profile()
    _prof.enable()


def _entries(obj):
    # The counts of one of the program's cProfile objects, read through
    # _lsprof.Profiler.getstats itself (a subclass's override of the
    # program's is not called, and nothing is disabled: the program's
    # profiler stays as the program left it).  getstats() lists the calls
    # the profiler has counted (at their return, or at disable()).
    import _lsprof
    fns = []
    for e in _lsprof.Profiler.getstats(obj):
        code = e.code
        if isinstance(code, str):
            continue
        fns.append({"file": code.co_filename, "line": code.co_firstlineno, "name": code.co_name,
                    "calls": e.callcount, "primitive": e.callcount - e.reccallcount})
    return fns


def stop():
    _prof.disable()


def _c_name(label):
    # cProfile's label of a C function (its normalizeUserObj) as the trace
    # names it (the recorder: a method by the type that defines it, else by
    # the type of the object it is bound to; a function by its module):
    #   "<built-in method builtins.len>"             -> "builtins.len"
    #   "<method 'append' of 'list' objects>"        -> "list.append"
    #   "<built-in method fromkeys>": bound to a class (dict.fromkeys,
    #     int.from_bytes: cProfile finds no such attribute on the class's
    #     type and has no module to name)            -> "type.fromkeys"
    #   "<built-in method __new__ of type object at 0x...>" (object.__new__:
    #     cProfile shows the repr of type's __new__) -> "type.__new__"
    # The address is dropped: the name is the same in every run.
    if label.startswith("<built-in method ") and label.endswith(">"):
        name = label[len("<built-in method "):-1]
        method, sep, rest = name.partition(" of ")
        if sep:
            owner, sep, _addr = rest.partition(" object at ")
            return "%s.%s" % (owner, method) if sep and owner and " " not in owner else None
        return name if "." in name else "type." + name
    if label.startswith("<method '") and label.endswith("' objects>"):
        name, _, owner = label[len("<method '"):-len("' objects>")].partition("' of '")
        return "%s.%s" % (owner, name)
    return None


def _callers(callers):
    # pstats' callers of a function: {(file, line, name): (nc, cc, tt, ct)}
    # (cProfile; the profile module keeps a count alone); Python callers
    # only (a C function's line is 0): their total calls on that edge.
    return [{"file": f, "line": line, "name": name, "calls": v[0] if isinstance(v, tuple) else v}
            for (f, line, name), v in callers.items() if line]


def results():
    _prof.create_stats()
    fns, cfns = [], []
    for (f, line, name), v in _prof.stats.items():
        if line:
            # pstats: (primitive calls, total calls, tt, ct, callers)
            fns.append({"file": f, "line": line, "name": name, "calls": v[1], "primitive": v[0],
                        "callers": _callers(v[4])})
        elif _c_name(name):
            cfns.append({"name": _c_name(name), "calls": v[1]})
    res = {"functions": fns, "c_functions": cfns, "threads": "starting"}
    import _lsprof
    from greenreplay import conform
    progs, own_id = conform.program_profilers(_prof, _lsprof.Profiler, _entries)
    if progs:
        res["program_profilers"] = progs
        res["adapter_profiler"] = own_id
    return res
