"""greenreplay's whole-program boot: `greenreplay record` without --manual.

`greenreplay record` puts this directory first on PYTHONPATH and sets
GREENREPLAY_PROGRAM=1, so that the interpreter's `site` imports this file as
`sitecustomize` before the program runs.  The interpreter then runs the
program itself, exactly as without the recorder (script, -m MODULE, -c CODE,
stdin, interpreter options): no runner of greenreplay's sits below it.

Here, before the program:
  - this directory leaves sys.path and PYTHONPATH (child processes are not
    recorded into the same file), GREENREPLAY_PROGRAM leaves the
    environment, and the interpreter's own sitecustomize, if any, runs;
  - a one-shot profile function waits for the call of the program's first
    frame (the `<module>` frame whose __name__ is "__main__") and starts
    recording from inside it: the trace's seed stack is the frames below it
    (none for a script or -c; runpy's and its exec for -m), its first
    record is the CALL of that `<module>`;
  - recording stops before an uncaught exception's traceback is printed
    (when no other thread is running; else recording ends at exit as
    usual), at sys.excepthook's audit event: sys.excepthook itself stays
    what the program sees without the recorder.
Recording otherwise stops at interpreter exit (greenreplay's atexit hook,
after the non-daemon threads ended; trailer reason exit).

Nothing here raises into the program: if the recorder cannot start, one
line goes to stderr and the program runs unrecorded.
"""
import os
import sys


def _leave():
    # Take this directory out of sys.path and PYTHONPATH, then import the
    # sitecustomize this one shadows, as site would have.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if not p or os.path.abspath(p) != here]
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
             if p and os.path.abspath(p) != here]
    if parts:
        os.environ["PYTHONPATH"] = os.pathsep.join(parts)
    else:
        os.environ.pop("PYTHONPATH", None)
    try:
        import importlib.machinery
        import importlib.util
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path)
        if spec is None:
            return
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[__name__] = module  # the import statement returns it
    except Exception as e:
        sys.stderr.write("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n"
                         "%s: %s\n" % (type(e).__name__, e))


def _boot():
    if os.environ.pop("GREENREPLAY_PROGRAM", None) != "1":
        return
    try:
        import greenreplay
    except ImportError as e:
        sys.stderr.write("greenreplay: the recorder is not built for %s (Python %d.%d): %s; "
                         "run `make PYTHON=%s`; the program runs unrecorded\n"
                         % (sys.executable, sys.version_info[0], sys.version_info[1], e, sys.executable))
        return
    import _thread

    count = getattr(_thread, "_count", None)

    def uncaught():
        # The program ended with an uncaught exception: stop before the
        # traceback is printed (3.13+ prints it with Python code), unless
        # another thread may still run (_thread._count: threads alive
        # besides the main one).
        if count is not None and count() == 0:
            try:
                greenreplay.stop(2)
            except Exception as e:
                greenreplay._stop_failed(e)

    pending = []  # (frame, C function) of the C calls in progress

    def arm(frame, event, arg):
        if event == "c_call":
            pending.append((frame, arg))
            return
        if event in ("c_return", "c_exception"):
            if pending and pending[-1][0] is frame:
                pending.pop()
            return
        if event != "call" or frame.f_code.co_name != "<module>" or \
                frame.f_globals.get("__name__") != "__main__":
            return
        sys.setprofile(None)
        # The C function that runs the module (exec, under runpy for -m)
        # belongs to the seed stack below it.
        caller = pending[-1][1] if pending and pending[-1][0] is frame.f_back else None
        del pending[:]
        # greenreplay conform (greenreplay/conform.py): the profiler under
        # test starts here, after the recorder (or alone, without recording).
        if os.environ.get("GREENREPLAY_CONFORM_NORECORD") != "1":
            try:
                greenreplay.start(_entry=frame, _entry_c=caller)
            except Exception as e:
                sys.stderr.write("greenreplay: recording not started: %s; the program runs unrecorded\n" % e)
                return
            try:
                from greenreplay import _greenreplay
                _greenreplay._on_uncaught(uncaught)
            except (ImportError, AttributeError):
                pass
        if os.environ.get("GREENREPLAY_CONFORM"):
            from greenreplay import conform
            conform.begin(frame)

    sys.setprofile(arm)


_leave()
_boot()
