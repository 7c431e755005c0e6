"""A deliberately broken adapter (tests/integration/conform_programs.sh):
the built-in cprofile adapter reading back the program's own cProfile
objects, but with each one's counts given under the id of the profiler
the program enabled next (the last under the first's): the mistake an
adapter makes when it finds the program's profilers by anything but the
identity the trace uses.  On the per-request middleware, where the
profilers' counts differ, `conform` must fail with cause "profiler"."""
import importlib.util
import os

_spec = importlib.util.spec_from_file_location(
    "cprofile_for_profilers_swapped",
    os.path.join(os.environ["GR_PROFILERS_DIR"], "cprofile.py"))
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)
available, start, stop = _base.available, _base.start, _base.stop


def version():
    return "profilers_swapped (broken on purpose)"


def results():
    res = _base.results()
    progs = res.get("program_profilers", [])
    ids = [p["id"] for p in progs]
    for p, pid in zip(progs, ids[1:] + ids[:1]):
        p["id"] = pid
    return res
