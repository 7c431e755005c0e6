"""memray (C++, in-process): the Python stack of each allocation.

memray follows the Python stack with a profile function and, when greenlet
is importable, a greenlet trace function of its own to follow switches.
Each allocation it records carries the stack it was made in; the results
are those stacks (outermost first, the running line of each frame), one per
allocation, as results "stacks" (docs/conform.md): an allocation put on a
stack that was not running (a switched-to greenlet's allocation under the
switching frame) is a wrong stack.  Python's own allocators are traced
(trace_python_allocators) so small objects count; native stacks are not."""
import os
import tempfile

_tracker = None
_path = None


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


def start():
    global _tracker, _path
    import memray
    fd, _path = tempfile.mkstemp(prefix="greenreplay-memray-", suffix=".bin")
    os.close(fd)
    os.unlink(_path)  # memray refuses to overwrite a file
    _tracker = memray.Tracker(_path, trace_python_allocators=True)
    _tracker.__enter__()


def stop():
    _tracker.__exit__(None, None, None)


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
            fl = [{"file": f, "line": int(line), "name": fn} for fn, f, line in reversed(st)]
            if fl:
                stacks.append({"frames": fl, "count": 1})
        reader.close()
    finally:
        try:
            os.unlink(_path)
        except OSError:
            pass
    return {"stacks": stacks, "threads": "all"}
