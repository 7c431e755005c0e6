"""line_profiler (C): per-line hits of registered functions.

Registration: every function statically defined in the program's __main__
module (its code object and, recursively, the code objects in its
constants: nested functions, methods, lambdas, comprehensions), taken from
the `<module>` code object the harness passes in ctx["main_code"], before
any of them runs.  line_profiler registers code objects through functions,
so each code object is wrapped in a throwaway function object; the real
functions share the code object.  line_profiler 4 tells code objects apart
by their bytecode: of two functions with byte-identical bodies only the
first is registered (it patches a copy of the second, which the program
never runs).  Functions of other modules are not registered.  Only the
thread that called start() is traced (line_profiler sets the thread's
trace function)."""
import types

_prof = None


def available():
    try:
        import line_profiler  # noqa: F401
    except ImportError as e:
        return False, "line_profiler is not importable: %s" % e
    return True, ""


def version():
    import line_profiler
    return getattr(line_profiler, "__version__", "unknown")


def _codes(code):
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield c
            yield from _codes(c)


def start(ctx):
    global _prof
    from line_profiler import LineProfiler
    _prof = LineProfiler()
    for code in _codes(ctx["main_code"]):
        cells = tuple(types.CellType() for _ in code.co_freevars)
        _prof.add_function(types.FunctionType(code, {}, None, None, cells))
    _prof.enable_by_count()


def stop():
    _prof.disable_by_count()


def results():
    stats = _prof.get_stats()
    out = []
    for (f, line, name), timings in stats.timings.items():
        hits = {}
        for lineno, nhits, _t in timings:
            hits[str(lineno)] = hits.get(str(lineno), 0) + nhits
        out.append({"file": f, "line": line, "name": name, "hits": hits})
    return {"line_hits": out, "threads": "starting"}
