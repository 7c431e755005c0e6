"""scalene (signals, in-process): a sampling CPU and memory profiler whose
signal handler runs Python code between bytecodes on the main thread.

scalene must start the program itself: its profiler object is built by its
launcher (arguments, signal handlers, replaced library functions) and
cannot be started inside a program that already runs.  So this adapter is
a launcher adapter: launcher() gives the words conform puts between the
interpreter and the script, and the recorded program is

    python -m scalene --cli --json --outfile OUT --cpu --stacks
                      --cpu-sampling-rate 0.0002 --cpu-percent-threshold 0
                      --allocation-sampling-window N SCRIPT --- ARGS

recorded whole-program (the recording starts at scalene's own __main__;
its frames are outside the root).  CPU only: memory profiling preloads
scalene's allocator library and runs the program again in a new process,
which the recording would not follow.  With --stacks, each CPU sample adds
one to the stack of each thread's running frame (the main thread's is the
frame the signal interrupted: the running greenlet's), keeping only frames
of the files scalene profiles (the program's); the results are those
stacks ("stacks", count = samples), read back from OUT at exit, after
scalene wrote it.  scalene drops frames outside the program without a
trace, so each two frames it gives are kept apart by a marker (frames
outside the root): adjacency is not compared, only which functions ran.  Its per-line CPU percentages are not compared: they carry
no sample count, and a line's share is the stacks' innermost frames."""
import json
import os

_output = None


def available():
    try:
        import scalene  # noqa: F401
    except ImportError as e:
        return False, "scalene is not importable: %s" % e
    try:
        import importlib.util
        spec = importlib.util.find_spec("scalene.scalene_parseargs")
        with open(spec.origin, encoding="utf-8") as f:
            has_stacks = '"--stacks"' in f.read()
    except Exception:
        has_stacks = False
    if not has_stacks:
        # --stacks (stack samples with counts) came in scalene 1.5.2x; before,
        # only per-line percentages, with no sample count to test
        return False, "%s has no --stacks option (no sampled stacks to compare)" % version()
    # scalene's start imports its C extensions (get_line_atomic from
    # scalene_mapfile, pywhere).  A package built for other Pythons than
    # this one (Debian sid's 1.5.54: 3.14 only) imports, its launcher then
    # fails with ImportError before the program runs and writes no output.
    import importlib.util
    import sys
    for ext in ("get_line_atomic", "pywhere"):
        try:
            found = importlib.util.find_spec("scalene." + ext) is not None
        except Exception:
            found = False
        if not found:
            return False, "%s has no %s extension built for Python %d.%d (its launcher cannot start)" % (
                version(), ext, sys.version_info[0], sys.version_info[1])
    return True, ""


def version():
    try:
        from importlib.metadata import version as dist_version
        return "scalene %s" % dist_version("scalene")
    except Exception:
        return "scalene unknown"


INTERVAL = "0.0002"  # seconds between CPU samples (default 0.01: the fixtures are short)
WINDOW = "10485767"  # scalene's default allocation sampling window, given explicitly


def launcher(output):
    # "{script}" then "---": scalene gives the program only the arguments
    # after "---"; before it, one that looks like its own option is its
    # (the program's --cpu, -h or --outfile X)
    return ["-m", "scalene", "--cli", "--json", "--outfile", output, "--cpu", "--stacks",
            "--cpu-sampling-rate", INTERVAL, "--cpu-percent-threshold", "0",
            "--allocation-sampling-window", WINDOW, "{script}", "---"]


def launcher_environment():
    # scalene runs the program in a new process (`python -m scalene` again,
    # which the recording would not follow) unless these are set already
    # (scalene_preload.py, get_preload_environ): with them it runs it in
    # this one.  They are the values it would set for that new process.
    return {"SCALENE_ALLOCATION_SAMPLING_WINDOW": WINDOW, "JAX_DISABLE_JIT": "1", "PYTORCH_JIT": "0"}


def start(ctx):
    # scalene already runs (it launched the program): keep where it writes.
    global _output
    _output = ctx.get("output")
    if not _output:
        raise RuntimeError("scalene runs only as the launcher of the program (greenreplay conform)")


def stop():
    pass


def _frame(fr):
    """A frame of scalene's stacks: [file, qualname, line] (1.5.51) or
    "FILE QUALNAME:LINE;" (1.5.54)."""
    if isinstance(fr, str):
        head, _sep, line = fr.rstrip(";").rpartition(":")
        file, _sep, name = head.rpartition(" ")
        fr = [file, name, line]
    return {"file": fr[0], "name": str(fr[1]).split(".")[-1], "line": int(fr[2])}


def results():
    with open(_output) as f:
        data = json.load(f)
    stacks = []
    for entry in data.get("stacks") or []:
        frames, stats = entry[0], entry[1]
        # 1.5.51: [count, python_time, c_time, cpu_samples]; 1.5.54: the
        # same as an object {"count": ...}
        count = int(stats["count"] if isinstance(stats, dict) else stats[0])
        fl = []
        for fr in frames:
            if fl:
                # scalene left out the frames between (any outside the
                # program): these two need not be adjacent (spawn_bridge:
                # <module>, then main under asyncio.run's frames).
                fl.append({"file": None, "name": "", "line": 0})
            fl.append(_frame(fr))
        if fl and count > 0:
            stacks.append({"frames": fl, "count": count})
    return {"stacks": stacks, "threads": "all", "time_samples": os.environ.get("GR_TIME_SAMPLES") == "1",
            "profiler_files": ["<site>/scalene/"]}
