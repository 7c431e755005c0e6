"""line_profiler (C): per-line hits of registered functions.

Registration: every function statically defined in the program's __main__
module (its code object and, recursively, the code objects in its
constants: nested functions, methods, lambdas, comprehensions), taken from
the `<module>` code object the harness passes in ctx["main_code"], before
any of them runs.  line_profiler registers code objects through functions,
so each code object is wrapped in a throwaway function object; the real
functions share the code object.  Functions of other modules are not
registered.  Only the thread that called start() is traced (line_profiler
sets the thread's trace function).

Byte-identical bytecode (line_profiler 4): line_profiler keys its line
table by hash(co_code) XOR line number and, when a function's co_code
equals one already registered, pads a copy of its code with NOPs and sets
that copy as the function's __code__.  Here the function is a throwaway
one (the program's real function does not exist yet, and patching it would
change the program), so the program runs the unpadded code, whose keys
are the first twin's, at other line numbers: its lines are never counted
(were the line numbers the same, as for two lambdas on one line, its hits
would count as the first's; conform checks no such function, which has no
body line of its own).  Such twins (often small: `return x + 1` and
`return y + 2` compile to the same co_code) are reported in "unmeasured"
with the reason, and conform notes them as a limitation instead of
checking them: exactly the functions whose throwaway function line_profiler
gave another __code__."""
import types

_prof = None
_unmeasured = []  # [(code, reason)]: functions line_profiler cannot tell apart


def available():
    try:
        import line_profiler  # noqa: F401
    except ImportError as e:
        return False, "line_profiler is not importable: %s" % e
    return True, ""


def version():
    import line_profiler
    v = getattr(line_profiler, "__version__", None)
    if v is None:
        try:
            from importlib.metadata import version as dist_version
            v = dist_version("line_profiler")
        except Exception:
            v = "unknown"
    return v


def _codes(code):
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield c
            yield from _codes(c)


def start(ctx):
    global _prof
    from line_profiler import LineProfiler
    _prof = LineProfiler()
    _unmeasured.clear()
    first = {}  # co_code -> the first code object registered with it
    for code in _codes(ctx["main_code"]):
        cells = tuple(types.CellType() for _ in code.co_freevars)
        fn = types.FunctionType(code, {}, None, None, cells)
        _prof.add_function(fn)
        twin = first.setdefault(code.co_code, code)
        if fn.__code__ is not code and twin is not code:
            # line_profiler registered a padded copy: the program runs code,
            # keyed as twin's.
            _unmeasured.append((code, "line_profiler %s keys lines by bytecode: %s has the bytecode of %s "
                                      "(line %d), and line_profiler registered a copy of it that the program "
                                      "never runs: its lines are never counted"
                                % (version(), _qualname(code), _qualname(twin), twin.co_firstlineno)))
    _prof.enable_by_count()


def _qualname(code):
    return getattr(code, "co_qualname", code.co_name)


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
    unmeasured = [{"file": c.co_filename, "line": c.co_firstlineno, "name": _qualname(c), "reason": why}
                  for c, why in _unmeasured]
    return {"line_hits": out, "threads": "starting", "unmeasured": unmeasured}
