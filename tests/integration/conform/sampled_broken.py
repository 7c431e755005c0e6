"""A deliberately broken sampling adapter: a built-in sampling adapter
(GR_SAMPLED_BASE: pyinstrument, memray or austin; default pyinstrument)
whose stacks without a <module> frame (those sampled
inside a greenlet other than the main one) are put on top of the last
stack that does, as a profiler keeping one stack per thread would
attribute a switched-to greenlet's time to the switching frame.  The
sampled-stack comparison must report wrong_stack
(docs/conform.md, "Sampled stacks")."""
import importlib.util
import os

_name = os.environ.get("GR_SAMPLED_BASE", "pyinstrument")
_spec = importlib.util.spec_from_file_location(
    "sampled_broken_base",
    os.path.join(os.environ.get("GR_PROFILERS_DIR") or os.path.join(
        os.path.dirname(os.path.abspath(__import__("greenreplay").__file__)), "profilers"), _name + ".py"))
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)
available, start, stop = _base.available, _base.start, _base.stop
if hasattr(_base, "launcher"):  # scalene starts the program itself
    launcher, launcher_environment = _base.launcher, _base.launcher_environment


def version():
    return "%s (broken on purpose: greenlet stacks on the switching frame)" % _base.version()


def results():
    res = _base.results()
    last_main = None
    script = None
    out = []
    for st in res["stacks"]:
        fr = st["frames"]
        mods = [f for f in fr if f["name"] == "<module>"]
        if mods:
            script = mods[-1]["file"]
            last_main = fr
            # up to its last frame of the program's script
            while last_main and last_main[-1]["file"] != script:
                last_main = last_main[:-1]
        elif last_main:
            # from the greenlet's first frame of the script
            k = next((i for i, f in enumerate(fr) if f["file"] == script), len(fr))
            fr = last_main + fr[k:]
        out.append(dict(st, frames=fr))
    res["stacks"] = out
    return res
