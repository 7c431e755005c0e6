"""greenreplay's whole-program boot: `greenreplay record` without --manual.

`greenreplay record` puts this directory first on PYTHONPATH (not the
package's directory: this module imports from it directly, so that a site
directory holding the package keeps its own place on sys.path) and sets
GREENREPLAY_PROGRAM=1, so that the
interpreter's `site` imports this file as `sitecustomize` before the program
runs.  The interpreter then runs the program itself, exactly as without the
recorder (script, -m MODULE, -c CODE, stdin, interpreter options): no runner
of greenreplay's sits below it.

The program must find the interpreter as it would unrecorded
(docs/recorder-start.md).  Here, while site runs:
  - the C extension is imported (the package's __init__ imports nothing
    else), then this directory leaves sys.path and PYTHONPATH, the
    package leaves sys.modules, and the interpreter's own sitecustomize, if
    any, runs;
  - _greenreplay._arm installs a one-shot C profile function that waits for
    the call of the program's first frame (the `<module>` frame whose
    __name__ is "__main__").  There it removes itself, leaves the tracing
    flags of the frames below as a profiler started in that frame would
    (tracer/boot.c), and calls _fire, which starts recording: the trace's
    seed stack is the frames below (none for a script or -c; runpy's and
    its exec for -m), its first record is the CALL of that `<module>`.
    _fire then takes every GREENREPLAY_* variable out of the environment
    (children are not recorded), and this module leaves sys.modules unless
    it stands for the interpreter's own sitecustomize.
  - recording stops before an uncaught exception's traceback is printed
    (when no other thread is running; else recording ends at exit as
    usual), at sys.excepthook's audit event: sys.excepthook itself stays
    what the program sees without the recorder.
Recording otherwise stops at interpreter exit (greenreplay's atexit hook,
after the non-daemon threads ended; trailer reason exit).

A program that imports greenreplay itself (to call start() and stop(),
which change nothing here) gets it from its own sys.path, or else from the
finder left last on sys.meta_path, which knows only that name.

With `record --start-on SIG` (GREENREPLAY_WINDOW_FD set) nothing is armed:
the program runs unrecorded, and _window (below) records one window of it,
opened and closed from record through a pipe (tracer/window.c).

`greenreplay record --manual` boots here too, with GREENREPLAY_PROGRAM=manual:
nothing is armed; the recorder's settings move from the environment into the
extension (where the start() the program calls finds them), this directory
leaves sys.path and PYTHONPATH, the finder goes last on sys.meta_path, and this
module leaves sys.modules by raising an ImportError naming sitecustomize,
which site ignores (docs/recorder-start.md, "--manual").

Nothing here raises into the program: if the recorder cannot start, one
line goes to stderr and the program runs unrecorded.  Only os and sys are
used, which site has imported already.
"""
import os
import sys


# The variables `greenreplay record` sets or the recorder reads (not those
# of the user's own that merely share the prefix, such as GREENREPLAY_CACHE).
RECORDER_VARIABLES = (
    "GREENREPLAY_PROGRAM", "GREENREPLAY_OUTPUT", "GREENREPLAY_ROOT", "GREENREPLAY_TIMES",
    "GREENREPLAY_SWITCHES", "GREENREPLAY_SWITCH_STACKS", "GREENREPLAY_MAX_SIZE",
    "GREENREPLAY_RING", "GREENREPLAY_FLUSH_SIGNAL", "GREENREPLAY_SAMPLER",
    "GREENREPLAY_VERIFY_CONTINUED", "GREENREPLAY_PYTHONPATH", "GREENREPLAY_CONFORM",
    "GREENREPLAY_CONFORM_RESULTS", "GREENREPLAY_CONFORM_NORECORD", "GREENREPLAY_WINDOW_FD",
    "GREENREPLAY_COMPRESS")


def _strip_environment():
    # Children of the program are not recorded, and no variable of the
    # recorder's stays for the program to see.  os.environ's pop unsets the
    # C environment too.
    for key in RECORDER_VARIABLES:
        os.environ.pop(key, None)


def _leave(here):
    # Take this directory out of sys.path and PYTHONPATH (record put it
    # first), as the program would have them.  Nothing else moves: the
    # package's own directory was never put there (a site-packages holding
    # it stays where site put it, the user's PYTHONPATH naming it stays).
    parts = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    ours = bool(parts[0]) and os.path.abspath(parts[0]) == here
    for i in range(len(sys.path)):
        if sys.path[i] and os.path.abspath(sys.path[i]) == here:
            del sys.path[i]
            break
    if ours:
        if parts[1:]:
            os.environ["PYTHONPATH"] = os.pathsep.join(parts[1:])
        else:
            os.environ.pop("PYTHONPATH", None)


def _import_package(pkg, here):
    # The package and its extension, from pkg, which goes on sys.path right
    # after this directory for these imports only: where record's
    # PYTHONPATH once put it.  An entry before this directory (a test
    # environment's own build of the recorder, put first by its wrapper)
    # still wins, as it did then; a site directory holding pkg keeps its
    # place once pkg leaves again.
    at = 0
    for i, entry in enumerate(sys.path):
        if entry and os.path.abspath(entry) == here:
            at = i + 1
            break
    sys.path.insert(at, pkg)
    try:
        import greenreplay
        from greenreplay import _greenreplay
        return greenreplay, _greenreplay
    finally:
        for i, entry in enumerate(sys.path):
            if entry is pkg:
                del sys.path[i]
                break


def _run_own_sitecustomize():
    # Import the sitecustomize this one shadows, as site would have, with
    # the import system's own frozen modules (no new import).  True if
    # there is one.
    try:
        external = sys.modules["_frozen_importlib_external"]
        bootstrap = sys.modules["_frozen_importlib"]
        spec = external.PathFinder.find_spec("sitecustomize", sys.path)
        if spec is None:
            return False
        module = bootstrap.module_from_spec(spec)
        sys.modules[__name__] = module  # the import statement returns it
        spec.loader.exec_module(module)
        return True
    except Exception as e:
        sys.stderr.write("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n"
                         "%s: %s\n" % (type(e).__name__, e))
        return True


def _window(greenreplay, _greenreplay, fd, uncaught, own_sitecustomize):
    """Record one window: "S" on the pipe fd starts recording, "E" stops it,
    each in the main thread between two bytecodes (a pending call, where
    signal handlers run), as greenreplay.start() and stop() called by the
    program there would: the seed stacks are the stacks of that moment
    (docs/recorder-start.md, "A window of a running program")."""
    greenreplay._take_environment()  # kept for start(), out of the program's environment
    _strip_environment()
    os.set_inheritable(fd, False)  # the program's children do not get it
    state = ["waiting"]

    def on_byte(byte):
        if byte == ord("S") and state[0] == "waiting":
            state[0] = "open"
            if not own_sitecustomize and sys.modules.get("sitecustomize") is _this:
                del sys.modules["sitecustomize"]  # (not while site imported it)
            try:
                greenreplay.start()
            except Exception as e:
                state[0] = "closed"
                sys.stderr.write("greenreplay: the window was not recorded: %s\n" % e)
            else:
                _greenreplay._on_uncaught(uncaught)
        elif byte == ord("E") and state[0] == "open":
            state[0] = "closed"
            try:
                greenreplay.stop()
            except Exception as e:
                greenreplay._stop_failed(e)

    _greenreplay._window(fd, on_byte)


class _Finder:
    """Last on sys.meta_path while recording: finds the greenreplay package
    for a program that imports it without having it on its own path."""

    def __init__(self, pkg):
        self.pkg = pkg

    def find_spec(self, name, path=None, target=None):
        if name != "greenreplay" or path is not None:
            return None
        return sys.modules["_frozen_importlib_external"].PathFinder.find_spec(name, [self.pkg])


def _boot_manual(greenreplay, pkg):
    # `greenreplay record --manual`: the program imports greenreplay and
    # calls start() itself.  Its settings go from the environment into the
    # extension, where the package the program imports finds them; the
    # program finds the package through the finder last on sys.meta_path.
    # True if the interpreter's own sitecustomize ran in place of this one.
    settings = {key: os.environ[key] for key in greenreplay._RECORDER_VARIABLES if key in os.environ}
    greenreplay._greenreplay._record_settings(settings)
    _strip_environment()
    own = _run_own_sitecustomize()
    sys.meta_path.append(_Finder(pkg))
    return own


def _boot():
    """None, or "leave" when this module must leave sys.modules (--manual,
    with no sitecustomize of the interpreter's own)."""
    mode = os.environ.pop("GREENREPLAY_PROGRAM", None)
    if mode not in ("1", "manual"):
        return None
    here = os.path.dirname(os.path.abspath(__file__))
    pkg = os.path.dirname(os.path.dirname(here))
    before = set(sys.modules)
    try:
        greenreplay, _greenreplay = _import_package(pkg, here)
    except ImportError as e:
        _leave(here)
        _strip_environment()
        sys.stderr.write("greenreplay: the recorder is not built for %s (Python %d.%d): %s; "
                         "run `make PYTHON=%s`; the program runs unrecorded\n"
                         % (sys.executable, sys.version_info[0], sys.version_info[1], e, sys.executable))
        return None
    ours = [name for name in sys.modules if name not in before]
    _leave(here)
    for name in ours:
        sys.modules.pop(name, None)
    if mode == "manual":
        return None if _boot_manual(greenreplay, pkg) else "leave"
    own_sitecustomize = _run_own_sitecustomize()
    conform = os.environ.get("GREENREPLAY_CONFORM")
    norecord = os.environ.get("GREENREPLAY_CONFORM_NORECORD") == "1"
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

    def fire(frame, caller):
        # Called by the extension at the call of the program's first frame;
        # caller: the C function that runs it (exec, under runpy for -m).
        before = set(sys.modules)
        try:
            if not norecord:
                try:
                    greenreplay.start(_entry=frame, _entry_c=caller)
                except Exception as e:
                    sys.stderr.write("greenreplay: recording not started: %s; the program runs unrecorded\n" % e)
                else:
                    _greenreplay._on_uncaught(uncaught)
                    if not conform:  # conform keeps the package in sys.modules
                        sys.meta_path.append(_Finder(pkg))
            # greenreplay conform (greenreplay/conform.py): the profiler under
            # test starts here, after the recorder (or alone, without recording).
            if conform:
                sys.modules["greenreplay"] = greenreplay
                from greenreplay import conform as c
                c.begin(frame)
        finally:
            _strip_environment()
            if not own_sitecustomize and sys.modules.get("sitecustomize") is _this:
                del sys.modules["sitecustomize"]
            if not conform:
                for name in set(sys.modules) - before:
                    if name.startswith("greenreplay"):
                        del sys.modules[name]

    window = os.environ.get("GREENREPLAY_WINDOW_FD")
    try:
        if window is not None:
            _window(greenreplay, _greenreplay, int(window), uncaught, own_sitecustomize)
        else:
            _greenreplay._arm(fire)
    except Exception as e:
        _strip_environment()
        sys.stderr.write("greenreplay: recording not started: %s; the program runs unrecorded\n" % e)


_this = sys.modules.get(__name__)
if _boot() == "leave":
    # Leave sys.modules as the program has it unrecorded (no
    # sitecustomize): the import system takes a module whose code raised
    # out of sys.modules again, and site ignores an ImportError that names
    # sitecustomize itself (site.execsitecustomize, CPython 3.3+).
    raise ImportError("greenreplay's --manual boot leaves sys.modules", name=__name__)
