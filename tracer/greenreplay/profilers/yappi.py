"""yappi (C): call counts per function, every thread.

With greenlet importable, yappi's greenlet context backend is selected
(yappi.set_context_backend("greenlet"), yappi 1.3+), as yappi documents
for gevent programs: each greenlet gets its own call stack.  Builtins are
not profiled (builtins=False).  Counts are yappi's ncall, which counts a
generator or coroutine call once however often it resumed
("generator_calls": "starts"); its nactualcall (calls not made while the
function was already running: "primitive") and, from each function's
children, its callers.""" 
def _backend():
    # yappi's greenlet context backend where greenlet imports and yappi has it.
    import yappi
    try:
        import greenlet  # noqa: F401
    except ImportError:
        return "thread"
    return "greenlet" if hasattr(yappi, "set_context_backend") else "thread"


def available():
    try:
        import yappi  # noqa: F401
    except ImportError as e:
        return False, "yappi is not importable: %s" % e
    return True, ""


def version():
    import yappi
    try:
        from importlib.metadata import version as dist_version
        v = dist_version("yappi")
    except Exception:
        v = getattr(yappi, "__version__", "unknown")
    return "%s (context backend %s)" % (v, _backend())


def start():
    import yappi
    yappi.clear_stats()
    if _backend() == "greenlet":
        yappi.set_context_backend("greenlet")
    yappi.start(builtins=False, profile_threads=True)


def stop():
    import yappi
    yappi.stop()


def results():
    import yappi
    stats = [s for s in yappi.get_func_stats() if s.lineno]
    # Callers from the children yappi keeps per function: the calls on each
    # caller->callee edge.
    callers = {}
    for s in stats:
        for ch in s.children:
            if ch.lineno:
                callers.setdefault((ch.module, ch.lineno, ch.name), []).append(
                    {"file": s.module, "line": s.lineno, "name": s.name, "calls": ch.ncall})
    fns = [{"file": s.module, "line": s.lineno, "name": s.name, "calls": s.ncall,
            "primitive": s.nactualcall, "callers": callers.get((s.module, s.lineno, s.name), [])}
           for s in stats]
    return {"functions": fns, "threads": "all", "generator_calls": "starts"}
