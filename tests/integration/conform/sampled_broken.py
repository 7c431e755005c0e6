"""A deliberately broken sampling adapter: a built-in sampling adapter
(GR_SAMPLED_BASE: pyinstrument, memray, austin or scalene; default
pyinstrument) whose stacks sampled inside a greenlet other than the main
one are put on top of the last stack of the main greenlet before them
(in the order the profiler gives its stacks), as a profiler
keeping one stack per thread would attribute a switched-to greenlet's time
(or, memray, its allocations) to the switching frame.  The sampled-stack
comparison must report wrong_stack (docs/conform.md, "Sampled stacks").

A stack is the main greenlet's when it holds the `<module>` frame of the
program's script.  memray keeps no frame older than its start (the
adapter starts inside `<module>`): when no stack holds `<module>`, the main
greenlet's stacks are those whose outermost frame of the script is that of
the first stack with one (memray gives its allocations in program order,
and the program allocates in its entry point before any greenlet runs).

scalene gives only the program's frames, without those between (the
adapter keeps each two apart by a marker: adjacency is not compared, so
moving its stacks could not be seen).  Over scalene this adapter also
drops those markers, claiming the frames adjacent: on a program that calls
its functions directly (sampled_switches) that claim is true.
GR_SAMPLED_FAULT=none does that alone, without moving any stack: the
control that must pass, so that the failure of the broken one comes from
the move."""
import importlib.util
import inspect
import os

_name = os.environ.get("GR_SAMPLED_BASE", "pyinstrument")
_spec = importlib.util.spec_from_file_location(
    "sampled_broken_base",
    os.path.join(os.environ.get("GR_PROFILERS_DIR") or os.path.join(
        os.path.dirname(os.path.abspath(__import__("greenreplay").__file__)), "profilers"), _name + ".py"))
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)
available, stop = _base.available, _base.stop
if hasattr(_base, "launcher"):  # scalene starts the program itself
    launcher, launcher_environment = _base.launcher, _base.launcher_environment
_script = None


def version():
    if os.environ.get("GR_SAMPLED_FAULT") == "none":
        return "%s (frames claimed adjacent, stacks unmoved)" % _base.version()
    return "%s (broken on purpose: greenlet stacks on the switching frame)" % _base.version()


def start(ctx):
    global _script
    _script = os.path.realpath(ctx["script"])
    if inspect.signature(_base.start).parameters:
        _base.start(ctx)
    else:
        _base.start()


def _in_script(fr):
    return bool(fr["file"]) and os.path.realpath(fr["file"]) == _script


def _main_test(stacks):
    """Whether a stack's frames are the main greenlet's (module docstring)."""
    if any(f["name"] == "<module>" and _in_script(f) for st in stacks for f in st["frames"]):
        return lambda fr: any(f["name"] == "<module>" and _in_script(f) for f in fr)
    entry = None
    for st in stacks:
        entry = next((f["name"] for f in st["frames"] if _in_script(f)), None)
        if entry:
            break
    return lambda fr: next((f["name"] for f in fr if _in_script(f)), None) == entry


def results():
    res = _base.results()
    stacks = res["stacks"]
    if _name == "scalene":
        stacks = [dict(st, frames=[f for f in st["frames"] if f["file"] is not None]) for st in stacks]
    if os.environ.get("GR_SAMPLED_FAULT") == "none":
        res["stacks"] = stacks
        return res
    is_main = _main_test(stacks)
    last_main = None
    out = []
    for st in stacks:
        fr = st["frames"]
        k = next((i for i, f in enumerate(fr) if _in_script(f)), None)
        if k is not None and is_main(fr):
            # up to its last frame of the script
            last_main = fr
            while last_main and not _in_script(last_main[-1]):
                last_main = last_main[:-1]
        elif k is not None and last_main:
            # from the greenlet's first frame of the script
            fr = last_main + fr[k:]
        out.append(dict(st, frames=fr))
    res["stacks"] = out
    return res
