"""scalene (signals, in-process): a sampling CPU and memory profiler whose
signal handlers run Python code between bytecodes on the main thread.

scalene must start the program itself (`python -m scalene SCRIPT`): its
profiler object is built by that launcher (its arguments, its signal
handlers, its preloaded allocator library) and cannot be started inside a
program that is already running, which is what a conform adapter does.
So this adapter reports it unavailable, with that reason, wherever scalene
is installed; the axis shows the cell as skip rather than a result it did
not measure."""


def available():
    try:
        import scalene  # noqa: F401
    except ImportError as e:
        return False, "scalene is not importable: %s" % e
    return False, ("scalene %s must launch the program itself (python -m scalene); it cannot be started "
                   "inside a running program, as a conform adapter starts profilers" % version().split()[-1])


def version():
    try:
        from importlib.metadata import version as dist_version
        return "scalene %s" % dist_version("scalene")
    except Exception:
        return "scalene unknown"


def start():
    raise RuntimeError(available()[1])


def stop():
    pass


def results():
    return {}
