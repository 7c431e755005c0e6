"""pyinstrument (C timer, statistical): sampled stacks of the thread that
started it.

pyinstrument samples through a profile function with a timer
(setstatprofile): at the first profile event after each interval it records
the running frame's stack, walking f_back.  Results are its session's frame
records, outermost frame first, each with the function's first line
(pyinstrument's frame identifier) and the running line.  Statistical: the
comparison holds it to which functions appear and which frame each is put
under (results "stacks", docs/conform.md), not to counts or times.
Interval 100 us (the fixtures are short); async_mode disabled (no coroutine stitching of stacks)."""
import os

_prof = None
INTERVAL = 0.0001


def available():
    try:
        import pyinstrument  # noqa: F401
    except ImportError as e:
        return False, "pyinstrument is not importable: %s" % e
    return True, ""


def version():
    try:
        from importlib.metadata import version as dist_version
        return "pyinstrument %s" % dist_version("pyinstrument")
    except Exception:
        import pyinstrument
        return "pyinstrument %s" % getattr(pyinstrument, "__version__", "unknown")


def start():
    global _prof
    from pyinstrument import Profiler
    _prof = Profiler(interval=INTERVAL, async_mode="disabled")
    _prof.start()


def stop():
    _prof.stop()


def parse_identifier(ident):
    """A pyinstrument frame identifier, "NAME\\0FILE\\0FIRSTLINE" followed by
    attributes ("\\x01l" the running line, "\\x01c" the class), as a frame."""
    head, _sep, attrs = ident.partition("\x01")
    parts = head.split("\x00")
    name = parts[0] if parts else ""
    file = parts[1] if len(parts) > 1 else ""
    try:
        first = int(parts[2]) if len(parts) > 2 else 0
    except ValueError:
        first = 0
    line = first
    for a in attrs.split("\x01") if attrs else []:
        if a[:1] == "l":
            try:
                line = int(a[1:])
            except ValueError:
                pass
    return {"file": file, "line": line, "name": name, "first": first}


def results():
    session = _prof.last_session
    stacks = []
    for record in session.frame_records:
        frames, _time = record[0], record[1]
        # pyinstrument's own markers ("[self]", "[await]") are no frames
        fl = [parse_identifier(f) for f in frames if "\x00" in f]
        if fl:
            stacks.append({"frames": fl, "count": 1})
    return {"stacks": stacks, "threads": "starting", "time_samples": os.environ.get("GR_TIME_SAMPLES") == "1",
            "profiler_files": ["<site>/pyinstrument/"]}
