"""A deliberately broken adapter (tests/integration/conform_exact.sh): the
built-in cprofile adapter with one fault chosen by the environment variable
GR_COUNTS_FAULT, so that each count check of `greenreplay conform` is shown
to fail:
  primitive  every primitive count is one less (primitive_calls)
  callers    each caller edge is named after the callee itself
             (caller_calls: counts on the real edge missing, a call from
             a function that never called it)"""
import importlib.util
import os

_spec = importlib.util.spec_from_file_location(
    "cprofile_for_counts_broken",
    os.path.join(os.environ["GR_PROFILERS_DIR"], "cprofile.py"))
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)
available, start, stop = _base.available, _base.start, _base.stop


def version():
    return "counts_broken %s (broken on purpose)" % os.environ.get("GR_COUNTS_FAULT", "")


def results():
    fault = os.environ.get("GR_COUNTS_FAULT", "")
    res = _base.results()
    for fn in res["functions"]:
        if fault == "primitive" and fn["primitive"] > 0:
            fn["primitive"] -= 1
        if fault == "callers":
            fn["callers"] = [dict(c, file=fn["file"], line=fn["line"], name=fn["name"]) for c in fn["callers"]]
    return res
