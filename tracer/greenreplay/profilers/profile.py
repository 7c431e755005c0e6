"""profile (the pure-Python profiler of the standard library): call counts.

It has no enable(): its dispatcher is installed with sys.setprofile on the
starting thread only, after set_cmd() pushed the fake outermost frame that
create_stats() expects (as Profile.run does) and then the call of the
program's <module> frame, which is already running when the profiler
starts (as Profile.runcall's function would have been seen called): without
it, the return of <module> is one the profiler never saw called, and its
dispatcher raises AssertionError ('Bad return') there, at the end of every
program.  Its dispatcher asserts that
a returning frame is the one it saw called last or that one's caller; a
greenlet switch breaks that order, and CPython then removes the profile
function and raises the AssertionError into the program."""
import profile
import sys

_prof = None


def available():
    return True, ""


def version():
    return "profile (CPython %s)" % sys.version.split()[0]


def start(ctx):
    global _prof
    _prof = profile.Profile()
    _prof.set_cmd("greenreplay conform")
    if ctx.get("frame") is not None:
        # the call event of <module>, with the profiler's own handler
        _prof.dispatch["call"](_prof, ctx["frame"], 0)
    sys.setprofile(_prof.dispatcher)


def stop():
    sys.setprofile(None)


def results():
    _prof.create_stats()
    # pstats: (primitive calls, total calls, tt, ct, callers {caller: calls})
    fns = [{"file": f, "line": line, "name": name, "calls": v[1], "primitive": v[0],
            "callers": [{"file": cf, "line": cl, "name": cn, "calls": n[0] if isinstance(n, tuple) else n}
                        for (cf, cl, cn), n in v[4].items() if cl]}
           for (f, line, name), v in _prof.stats.items() if line]
    return {"functions": fns, "threads": "starting"}
