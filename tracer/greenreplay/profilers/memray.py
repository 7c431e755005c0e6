"""memray (C++, in-process): the Python stack of each allocation.

memray follows the Python stack with a profile function and, when greenlet
is importable, a greenlet trace function of its own to follow switches.
Each allocation it records carries the stack it was made in; the results
are those stacks (outermost first, the running line of each frame), one per
allocation, as results "stacks" (docs/conform.md): an allocation put on a
stack that was not running (a switched-to greenlet's allocation under the
switching frame) is a wrong stack.  Python's own allocators are traced
(trace_python_allocators) so small objects count; native stacks are not.

conform starts the adapter inside the boot's one-shot profile function
(greenreplay/conform.py), where no profile event is delivered.  memray
reads every thread's stack when it starts and, up to 1.17, keeps borrowed
pointers to those frames until its profile function sees them return; the
boot's and adapter's frames return unseen, and memray reads the freed
frames at the next allocation (a SIGSEGV in PyCode_Addr2Line: memray
issue 820, a trace function's frames on the stack at start; later
versions keep no pointer to such frames).  So start() holds those frames
(the ones above the program's first frame, which stay running) until
stop(), and results() leaves them out of the stacks: a program that
starts memray from its own code has no such frames.

memray turns on its greenlet support when greenlet's extension is loaded
(its dlopen hook, or dlsym of PyInit__greenlet from 1.20) or when
"greenlet" is in sys.modules at its start.  The recorder does not load
greenlet (docs/recorder-start.md), so recorded, as unrecorded, the
program's own `import greenlet` is where memray's hook sees it load."""
import os
import sys
import tempfile

_tracker = None
_path = None
_held = []        # the boot's and adapter's frames memray saw at its start
_held_names = set()


def available():
    try:
        import memray  # noqa: F401
    except ImportError as e:
        return False, "memray is not importable: %s" % e
    return True, ""


def version():
    try:
        from importlib.metadata import version as dist_version
        return "memray %s" % dist_version("memray")
    except Exception:
        import memray
        return "memray %s" % getattr(memray, "__version__", "unknown")


def start(ctx=None):
    global _tracker, _path
    import memray
    program = (ctx or {}).get("frame")
    if program is not None:
        f = sys._getframe()
        while f is not None and f is not program:
            _held.append(f)
            _held_names.add((f.f_code.co_name, f.f_code.co_filename))
            f = f.f_back
        if f is None:  # not below the program's frame after all
            del _held[:]
            _held_names.clear()
    fd, _path = tempfile.mkstemp(prefix="greenreplay-memray-", suffix=".bin")
    os.close(fd)
    os.unlink(_path)  # memray refuses to overwrite a file
    _tracker = memray.Tracker(_path, trace_python_allocators=True)
    _tracker.__enter__()


def stop():
    _tracker.__exit__(None, None, None)
    del _held[:]


def results():
    import memray
    stacks = []
    try:
        reader = memray.FileReader(_path)
        for rec in reader.get_allocation_records():
            try:
                st = rec.stack_trace()
            except Exception:
                continue
            # (function, file, line), innermost first
            fl = [{"file": f, "line": int(line), "name": fn} for fn, f, line in reversed(st)
                  if (fn, f) not in _held_names]
            if fl:
                stacks.append({"frames": fl, "count": 1})
        reader.close()
    finally:
        try:
            os.unlink(_path)
        except OSError:
            pass
    return {"stacks": stacks, "threads": "all"}
