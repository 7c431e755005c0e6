"""A deliberately broken adapter (tests/integration/conform_exact.sh):
lines_exact.py beside this file, with one fault chosen by the environment
variable GR_LINES_FAULT, so that each line check of `greenreplay conform`
is shown to fail:
  lost     the last executed line of each function is dropped (missing_lines)
  extra    every line of each function that ran is added, the lines of
           branches not taken included (extra_lines)
  eof      a line 1000 past the end of each file is added (no_such_line)
  never    the body line of `never_called` is added (extra_lines: a
           function the recording never saw run)"""
import dis
import importlib.util
import os

_spec = importlib.util.spec_from_file_location(
    "lines_exact_for_broken", os.path.join(os.path.dirname(os.path.abspath(__file__)), "lines_exact.py"))
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)
available, start, stop = _base.available, _base.start, _base.stop


def version():
    return "lines_broken %s (broken on purpose)" % os.environ.get("GR_LINES_FAULT", "")


def _functions(path):
    # (first line, last line) of each function of the file, from its code
    try:
        with open(path) as f:
            top = compile(f.read(), path, "exec")
    except Exception:
        return {}
    out = {}

    def walk(code):
        for c in code.co_consts:
            if hasattr(c, "co_code"):
                if hasattr(c, "co_lines"):
                    lines = {l for _s, _e, l in c.co_lines() if l is not None}
                else:  # 3.9
                    lines = {l for _o, l in dis.findlinestarts(c)}
                if lines:
                    out[c.co_name] = (c.co_firstlineno, max(lines), lines)
                walk(c)
    walk(top)
    return out


def results():
    fault = os.environ.get("GR_LINES_FAULT", "")
    res = _base.results()
    for path, lines in res["lines"].items():
        fns = _functions(path)
        s = set(lines)
        for name, (first, last, own) in fns.items():
            mine = sorted(l for l in s if first < l <= last)
            if fault == "lost" and mine and name != "never_called":
                s.discard(mine[-1])
            if fault == "extra" and mine:
                s.update(l for l in own if l > first)
        if fault == "eof" and fns:
            s.add(sum(1 for _ in open(path)) + 1000)
        if fault == "never" and "never_called" in fns:
            s.add(fns["never_called"][0] + 1)
        res["lines"][path] = sorted(s)
    return res
