"""The in-program half of `greenreplay conform` (docs/conform.md).

`greenreplay conform --profiler NAME -- PY SCRIPT` runs SCRIPT through the
whole-program boot (greenreplay/boot/sitecustomize.py).  When
GREENREPLAY_CONFORM names an adapter, the boot calls `begin(frame)` at the
call of the program's first frame, right after recording started (or
instead of it, with GREENREPLAY_CONFORM_NORECORD=1): the adapter's
`start()` runs there, inside the boot's one-shot profile function, so
neither the recorder nor the profiler sees the adapter's own frames.  An
atexit hook registered here (after the recorder's, so it runs first: after
the program's non-daemon threads ended, before recording stops) calls the
adapter's `stop()` and `results()` and writes the results JSON to
GREENREPLAY_CONFORM_RESULTS.  File names in it are made relative to the
recording root exactly as the trace's are (docs/FORMAT.md section 3), and
only code under the root is kept.

Adapter interface (a module: a built-in in greenreplay/profilers/, or any
.py file given by path):

    available() -> (bool, str)   whether the profiler can run here, and why not
    version() -> str             the profiler's version (free text)
    start([ctx])                 enable it; ctx (if start takes an argument) is
                                 a dict: script, root, main_code (the code
                                 object of the program's __main__ module),
                                 frame (the program's <module> frame, at its
                                 call: it is running and the profiler sees
                                 its return; None when the program starts
                                 the profiler itself, "# conform-start:
                                 manual")
    stop()                       disable it
    launcher(output) -> [words]  optional: a profiler that must start the
                                 program itself (scalene): the words put
                                 between PYTHON and SCRIPT ("{output}": the
                                 file it writes, ctx["output"] in start();
                                 "{script}": the script goes there instead,
                                 so words after it come before the
                                 program's arguments, e.g. scalene's
                                 "{script} ---"); recording starts at the
                                 launcher's first frame, and start() only
                                 notes ctx
    launcher_environment() -> {} optional: variables set for that run
    results() -> dict            what it measured, with any of:
        "functions": [{"file", "line", "name", "calls"}]   call counts per
            function: file as the profiler reports it (co_filename),
            line = co_firstlineno, name = co_name or co_qualname
            optional per function: "primitive" (calls not made while the
            function was already running in that stack: pstats' cc) and
            "callers": [{"file", "line", "name", "calls"}] (the calls on
            each caller->callee edge; Python callers)
        "c_functions": [{"name", "calls"}]    call counts of C functions,
            named as the trace names them (module.name, Type.name)
        "lines": {file: [line, ...]}                     executed lines
        "line_hits": [{"file", "line", "name", "hits": {"LINE": N}}]
            per-line hits of each function the profiler registered
        "threads": "starting" (default: only the thread that called
            start() is profiled) or "all"
        "generator_calls": "resumptions" (default: like CPython's profile
            events, every resumption of a generator or coroutine counts as
            a call) or "starts" (counted once per call)
        "stacks": [{"frames": [{"file", "line", "name"[, "first"]}],
                    "count": N}]    sampled stacks (statistical profilers),
            outermost frame first: line the running line, "first" the
            function's co_firstlineno when the profiler knows it; count the
            samples (or allocations) with that stack
        "time_samples": true   the samples are taken by a timer, at
            instants that do not depend on what runs: their counts are
            tested against time per function (docs/conform.md)
        "profiler_files": [part, ...]   parts of the trace's file names of
            the profiler's own code: time it runs on top of the program's
            frames (its sampling) is not the program's
        "program_profilers": [{"id", "functions": [...]}]   the counts of
            each of the program's own profiler objects (id: the trace's
            PROFILER id; functions as above), read back at exit, and
            "adapter_profiler": the id of the adapter's own (0 unknown):
            compared with what the recording delivered to each profiler
            when the program installs its own (docs/conform.md)
        "unmeasured": [{"file", "line", "name", "reason"}]   functions the
            profiler cannot measure apart (a limitation of the profiler,
            e.g. line_profiler's twins of identical bytecode): not checked;
            conform prints a note of kind "limitation" with the reason for
            each that ran

The results file (schema 1) holds the adapter's results with files
normalised and filtered, plus: adapter, profiler_version, python,
greenlet, threads, generator_calls, exclude_files (the adapter's own file
when it is under the root) and "code": the static line map of every code
object of the root's files the program loaded (see code_map()).  Or, when
the adapter could not run: {"skip": reason} or {"error": message}.

Also `python -m greenreplay.conform --list` / `--probe SPEC` (used by the C
command before it records): one line per adapter, "NAME<TAB>yes|no<TAB>
version or reason"; exit status 0, or 2 when SPEC cannot be loaded.  And
`--expect FIXTURE PYTHON_VERSION [PROFILER]`: the verdicts a fixture of
fixtures/profilers/ expects (see expectations()).
"""
import atexit
import importlib.util
import inspect
import json
import os
import sys
import types

BUILTINS = ("cprofile", "profile", "yappi", "coverage", "coverage-py",
            "coverage-monitoring", "line_profiler", "pyinstrument", "memray",
            "austin", "scalene")

_state = {}


# The reference line tracer of the exact line comparison: conform runs the
# program a second time under it (not a profiler under test, not listed).
REFERENCE = "reference-lines"


def adapter_path(spec):
    """The file of adapter SPEC: a built-in NAME or a path to a .py file."""
    if spec in BUILTINS or spec == REFERENCE:
        return os.path.join(os.path.dirname(os.path.abspath(__file__)), "profilers",
                            spec.replace("-", "_") + ".py")
    return os.path.abspath(spec)


def load(spec):
    """Import adapter SPEC (a built-in name or a .py path) and check its
    interface.  Raises ValueError naming what is wrong."""
    path = adapter_path(spec)
    if not os.path.isfile(path):
        raise ValueError("no adapter %s (not a built-in: %s; not a file: %s)"
                         % (spec, ", ".join(BUILTINS), path))
    name = "greenreplay_adapter_" + "".join(c if c.isalnum() else "_" for c in os.path.basename(path)[:-3])
    mod_spec = importlib.util.spec_from_file_location(name, path)
    if mod_spec is None:
        raise ValueError("adapter %s: not a Python file" % path)
    module = importlib.util.module_from_spec(mod_spec)
    try:
        mod_spec.loader.exec_module(module)
    except Exception as e:
        raise ValueError("adapter %s: import failed: %s: %s" % (path, type(e).__name__, e))
    missing = [f for f in ("available", "version", "start", "stop", "results")
               if not callable(getattr(module, f, None))]
    if missing:
        raise ValueError("adapter %s: missing function(s) %s" % (path, ", ".join(missing)))
    module.__greenreplay_path__ = path
    return module


def _availability(module):
    ok = module.available()
    if isinstance(ok, tuple):
        return bool(ok[0]), str(ok[1]) if len(ok) > 1 and ok[1] else ""
    return bool(ok), ""


class _Paths:
    """File names as the trace writes them (greenreplay._path_rules)."""

    def __init__(self, root):
        import greenreplay
        self.rules = greenreplay._path_rules(root)
        self.cache = {}

    def __call__(self, path):
        """The trace's name for path, or None when it is not under the root."""
        if path in self.cache:
            return self.cache[path]
        out = None
        if path and not path.startswith("<"):
            full = os.path.abspath(path)
            out = full
            for prefix, rep, _keep in self.rules:
                if full.startswith(prefix):
                    out = rep + full[len(prefix):]
                    break
            if out.startswith(("<", "/")):
                out = None
        self.cache[path] = out
        return out


def _own_lines(code):
    if hasattr(code, "co_lines"):
        return {line for _s, _e, line in code.co_lines() if line is not None}
    import dis
    return {line for _o, line in dis.findlinestarts(code)}


def code_map(path):
    """Static line map of the code objects compiled from source file path:
    [{"line": co_firstlineno, "name": qualname, "generator": bool,
      "body": [lines]}], where body is the lines of the code object's own
    instructions minus its first line and minus the lines its enclosing code
    also executes (the def and decorator lines run in the parent).  [] when
    the file cannot be read or compiled."""
    try:
        with open(path, "rb") as f:
            top = compile(f.read(), path, "exec", dont_inherit=True)
    except Exception:
        return []
    out = []
    flags = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR

    def walk(code, parent_lines):
        own = _own_lines(code)
        if parent_lines is not None:
            body = sorted(own - {code.co_firstlineno} - parent_lines)
            out.append({"line": code.co_firstlineno,
                        "name": getattr(code, "co_qualname", code.co_name),
                        "generator": bool(code.co_flags & flags), "body": body})
        for c in code.co_consts:
            if hasattr(c, "co_code"):
                walk(c, own)

    walk(top, None)
    return out


def _normalise(raw, paths):
    """The adapter's results with file names made root-relative and code
    outside the root dropped."""
    res = {"threads": raw.get("threads", "starting"),
           "generator_calls": raw.get("generator_calls", "resumptions")}
    if "functions" in raw:
        fns = []
        for fn in raw["functions"]:
            f = paths(fn["file"])
            if f is not None:
                e = {"file": f, "line": int(fn["line"]), "name": str(fn["name"]), "calls": int(fn["calls"])}
                if "primitive" in fn:
                    e["primitive"] = int(fn["primitive"])
                if "callers" in fn:
                    # callers under the root only, merged by function
                    cs = {}
                    for c in fn["callers"]:
                        cf = paths(c["file"])
                        if cf is not None:
                            k = (cf, int(c["line"]), str(c["name"]))
                            cs[k] = cs.get(k, 0) + int(c["calls"])
                    e["callers"] = [{"file": k[0], "line": k[1], "name": k[2], "calls": n}
                                    for k, n in sorted(cs.items())]
                fns.append(e)
        fns.sort(key=lambda d: (d["file"], d["line"], d["name"]))
        res["functions"] = fns
    if "c_functions" in raw:
        cf = {}
        for fn in raw["c_functions"]:
            if str(fn["name"]).startswith(("greenreplay.", "_greenreplay.")):
                continue  # the recorder's own (mark): not compared, not in unrecorded runs
            cf[str(fn["name"])] = cf.get(str(fn["name"]), 0) + int(fn["calls"])
        res["c_functions"] = [{"name": n, "calls": cf[n]} for n in sorted(cf)]
    if "lines" in raw:
        lines, sizes = {}, {}
        for f, ls in raw["lines"].items():
            n = paths(f)
            if n is not None:
                lines.setdefault(n, set()).update(int(x) for x in ls)
                sizes[n] = _line_count(f)
        res["lines"] = {f: sorted(ls) for f, ls in sorted(lines.items())}
        # How many lines each file has: a reported line past the end (or
        # below 1) names no line of the file.
        res["file_lines"] = {f: n for f, n in sorted(sizes.items()) if n is not None}
    if "line_hits" in raw:
        hits = []
        for fn in raw["line_hits"]:
            f = paths(fn["file"])
            if f is not None:
                hits.append({"file": f, "line": int(fn["line"]), "name": str(fn["name"]),
                             "hits": {str(k): int(v) for k, v in sorted(fn["hits"].items(), key=lambda kv: int(kv[0]))}})
        hits.sort(key=lambda d: (d["file"], d["line"], d["name"]))
        res["line_hits"] = hits
    if "stacks" in raw:
        merged = {}
        for st in raw["stacks"]:
            frames = []
            for fr in st["frames"]:
                f = paths(fr["file"]) if fr.get("file") else None
                if f is None:
                    # outside the root: one marker for a run of such frames
                    if not frames or frames[-1][0] is not None:
                        frames.append((None, 0, "", 0))
                    continue
                frames.append((f, int(fr.get("line") or 0), str(fr.get("name") or ""), int(fr.get("first") or 0)))
            key = tuple(frames)
            merged[key] = merged.get(key, 0) + int(st.get("count", 1))
        out = []
        for frames, n in sorted(merged.items(), key=lambda kv: repr(kv[0])):
            fl = []
            for f, line, name, first in frames:
                e = {"file": f, "line": line, "name": name}
                if first:
                    e["first"] = first
                fl.append(e)
            out.append({"frames": fl, "count": n})
        res["stacks"] = out
    if raw.get("time_samples"):
        # samples taken at instants that do not depend on what runs (a
        # timer): their counts are compared with time per function
        res["time_samples"] = True
    if "profiler_files" in raw:
        # parts of the trace's file names of the profiler's own code (its
        # sampling runs on the program's thread): that time is not the program's
        res["profiler_files"] = [str(f) for f in raw["profiler_files"]]
    if "program_profilers" in raw:
        progs = []
        for p in raw["program_profilers"]:
            fns = {}
            for fn in p["functions"]:
                f = paths(fn["file"])
                if f is not None:
                    k = (f, int(fn["line"]), str(fn["name"]))
                    fns[k] = fns.get(k, 0) + int(fn["calls"])
            progs.append({"id": int(p["id"]),
                          "functions": [{"file": k[0], "line": k[1], "name": k[2], "calls": n}
                                        for k, n in sorted(fns.items())]})
        res["program_profilers"] = sorted(progs, key=lambda d: d["id"])
        res["adapter_profiler"] = int(raw.get("adapter_profiler") or 0)
    if "unmeasured" in raw:
        um = []
        for fn in raw["unmeasured"]:
            f = paths(fn["file"])
            if f is not None:
                um.append({"file": f, "line": int(fn["line"]), "name": str(fn["name"]),
                           "reason": str(fn.get("reason", ""))})
        um.sort(key=lambda d: (d["file"], d["line"], d["name"]))
        res["unmeasured"] = um
    return res


def _line_count(path):
    """The number of lines of source file path, None when unreadable."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _files_for_code(paths):
    """Source files (absolute) of every root file the results or the
    program's modules name."""
    files = {}
    for mod in list(sys.modules.values()):
        # Read the module's own dict, so that no code of the program runs
        # here (getattr would call a lazy module's __getattr__ or an
        # object's that the program put in sys.modules).
        if not issubclass(type(mod), types.ModuleType):
            continue
        f = object.__getattribute__(mod, "__dict__").get("__file__")
        if isinstance(f, str) and f.endswith(".py"):
            n = paths(f)
            if n is not None:
                files[n] = os.path.abspath(f)
    script = _state.get("script")
    if script:
        n = paths(script)
        if n is not None:
            files[n] = os.path.abspath(script)
    return files


def _write(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def _header(module, spec):
    try:
        import greenlet
        gl = getattr(greenlet, "__version__", "unknown")
    except Exception:
        gl = "none"
    try:
        ver = str(module.version())
    except Exception as e:
        ver = "unknown (%s)" % e
    return {"schema": 1, "adapter": spec, "profiler_version": ver,
            "python": sys.version.split()[0], "greenlet": gl}


def begin(frame):
    """Start the adapter named by GREENREPLAY_CONFORM (boot only).  frame:
    the program's first frame, at its call event.  Never raises: a failure
    is written to the results file and the program runs on."""
    spec = os.environ.pop("GREENREPLAY_CONFORM", None)
    out = os.environ.pop("GREENREPLAY_CONFORM_RESULTS", None)
    norecord = os.environ.pop("GREENREPLAY_CONFORM_NORECORD", None) == "1"
    # A launcher profiler (adapter launcher()): the program's first frame
    # is the launcher's; the script it runs and the file it writes are here.
    output = os.environ.pop("GREENREPLAY_CONFORM_OUTPUT", None)
    script = os.environ.pop("GREENREPLAY_CONFORM_SCRIPT", None) or frame.f_code.co_filename
    if not spec or not out:
        return
    _state.update(out=out, spec=spec, script=script)
    try:
        root = os.environ.get("GREENREPLAY_ROOT") or os.path.dirname(os.path.abspath(script))
        _state["paths"] = _Paths(root)
        module = load(spec)
        _state["module"] = module
        ok, reason = _availability(module)
        if not ok:
            _write(out, dict(_header(module, spec), skip=reason or "not available"))
            return
        ctx = {"script": os.path.abspath(script), "root": root,
               "main_code": frame.f_code, "frame": frame}
        if output:
            ctx["output"] = output
        try:
            takes_ctx = len(inspect.signature(module.start).parameters) > 0
        except (TypeError, ValueError):
            takes_ctx = False
        atexit.register(_finish)
        _state.update(ctx=ctx, takes_ctx=takes_ctx)
        if not output and _manual(script):
            ctx["frame"] = None  # started from the program's code, deeper
            _state["manual"] = True
            _state["manual_mode"] = True
            return
        _start()
    except Exception as e:
        _fail("start", e)


MARK_START = "greenreplay-conform: start"
MARK_STOP = "greenreplay-conform: stop"
MARK_FINISH = "greenreplay-conform: finish"
MARK_STOPPED = "greenreplay-conform: profiler stopped"


def _manual(script):
    # A "# conform-start: manual" line among the script's first 40 lines.
    try:
        with open(script, encoding="utf-8", errors="replace") as f:
            for _i, line in zip(range(40), f):
                if line.replace(" ", "").strip() == "#conform-start:manual":
                    return True
    except OSError:
        pass
    return False


def _mark(label):
    import greenreplay
    if greenreplay.is_recording():
        greenreplay.mark(label)


def _start():
    module = _state["module"]
    try:
        if _state["takes_ctx"]:
            module.start(_state["ctx"])
        else:
            module.start()
    finally:
        _state["ctx"].pop("frame", None)  # the harness keeps no frame alive
    _state["started"] = True


def start_profiler():
    """For programs marked "# conform-start: manual": start the profiler
    under test now.  The recording gets a MARK "greenreplay-conform: start"
    first, and the comparison counts only calls made after it (and before
    the MARK of stop_profiler()).  Does nothing outside `conform` or when
    called again.  Never raises (a failure goes to the results file)."""
    if not _state.pop("manual", False):
        return
    try:
        _mark(MARK_START)
        _start()
    except Exception as e:
        _fail("start", e)


def stop_profiler():
    """Stop the profiler started by start_profiler() (from any greenlet);
    a MARK "greenreplay-conform: stop" follows.  Results are still written
    at exit.  Does nothing when the profiler is not running."""
    if not _state.get("started") or _state.get("stopped"):
        return
    try:
        _state["module"].stop()
        _state["stopped"] = True
        _mark(MARK_STOP)
    except Exception as e:
        _state["started"] = False
        _fail("stop", e)


def _fail(step, e):
    try:
        obj = {"schema": 1, "adapter": _state.get("spec"),
               "error": "adapter %s failed: %s: %s" % (step, type(e).__name__, e)}
        if "module" in _state:
            obj = dict(_header(_state["module"], _state["spec"]), error=obj["error"])
        _write(_state["out"], obj)
    except Exception:
        pass


def _finish():
    if not _state.pop("started", False):
        return
    module = _state["module"]
    try:
        # Is the recorder still this thread's profile function (its own or
        # chained)?  The MARK says so in its flags; a profiler that writes
        # the thread state directly displaces it without an audit event
        # (yappi 1.0), and the recording then has no ground truth.  The
        # MARK also ends the program for the comparison: what follows is
        # this harness's work, even where the program's code runs during
        # it (a finaliser, another thread).
        _mark(MARK_FINISH)
    except Exception:
        pass
    if not _state.get("stopped"):
        try:
            module.stop()
        except Exception as e:
            _fail("stop", e)
            return
        try:
            # Calls between the two MARKs (a finaliser, an audit hook the
            # profiler's stop raises, another thread) the profiler may have
            # counted: the comparison keeps them apart.
            _mark(MARK_STOPPED)
        except Exception:
            pass
    try:
        raw = module.results()
        paths = _state["paths"]
        res = _normalise(raw, paths)
        own = paths(module.__greenreplay_path__)
        res["exclude_files"] = [own] if own else []
        files = _files_for_code(paths)
        res["code"] = {n: code_map(p) for n, p in sorted(files.items())}
        res.update(_header(module, _state["spec"]))
        if _state.get("manual_mode"):
            res["start"] = "manual"
        _write(_state["out"], res)
    except Exception as e:
        _fail("results", e)


def keep_profilers():
    """For an adapter's start(): ask the recorder to keep every cProfile
    object the program installs from now on alive until
    program_profilers() reads them, under the trace's PROFILER id (docs/conform.md, "A
    program with profilers of its own").  Does nothing when not recording."""
    try:
        from greenreplay import _greenreplay
        _greenreplay._keep_profilers()
    except (ImportError, AttributeError):
        pass


def program_profilers(own, cls, read):
    """For an adapter's results(): the kept profiler objects that are
    instances of cls, other than `own` (the adapter's), each read with
    read(obj) -> functions: ([{"id": PROFILER id, "functions": [...]}],
    the id of `own`, 0 when it was not kept).  Call it once: the recorder
    hands the objects over and keeps them no longer."""
    try:
        from greenreplay import _greenreplay
        kept = _greenreplay._kept_profilers()
    except (ImportError, AttributeError):
        return [], 0
    out, own_id = [], 0
    for pid, obj in kept:
        if obj is own:
            own_id = pid
        elif isinstance(obj, cls):
            out.append({"id": pid, "functions": read(obj)})
    return out, own_id


def expectations(path, python):
    """Expected verdicts of fixture `path` on Python version `python`
    ("3.12.1" or "3.12"): {profiler: verdict}.  Header lines among the first
    40: "# conform: NAME=VERDICT ..." for every version, and
    "# conform[py>=X.Y]: ...", "[py<X.Y]", "[py==X.Y]" for some; later
    lines override earlier ones.  Verdicts: pass, fail, error, skip."""
    import re
    want = tuple(int(x) for x in python.split(".")[:2])
    out = {}
    with open(path, encoding="utf-8") as f:
        for _i, line in zip(range(40), f):
            m = re.match(r"#\s*conform(?:\[py(>=|<|==)(\d+)\.(\d+)\])?:\s*(.*)$", line.strip())
            if not m:
                continue
            op, major, minor, rest = m.groups()
            if op:
                v = (int(major), int(minor))
                if not {">=": want >= v, "<": want < v, "==": want == v}[op]:
                    continue
            for item in rest.split():
                name, _, verdict = item.partition("=")
                if verdict:
                    out[name] = verdict
    return out


def _probe_line(spec):
    module = load(spec)
    ok, reason = _availability(module)
    if ok:
        try:
            detail = str(module.version())
        except Exception as e:
            detail = "version unknown: %s" % e
    else:
        detail = reason or "not available"
    line = "%s\t%s\t%s" % (spec, "yes" if ok else "no", detail.replace("\t", " ").replace("\n", " "))
    launcher = getattr(module, "launcher", None)
    if ok and callable(launcher):
        # A profiler that must start the program itself: the words that go
        # between PYTHON and SCRIPT ("{output}": the file it writes).
        words = [str(w) for w in launcher("{output}")]
        if any(not w or "\t" in w or "\n" in w for w in words):
            raise ValueError("adapter %s: launcher(): empty words or words with tabs or newlines" % spec)
        line += "\nlaunch\t" + "\t".join(words)
        env = getattr(module, "launcher_environment", None)
        pairs = ["%s=%s" % kv for kv in sorted((env() if callable(env) else {}).items())]
        if any("\t" in w or "\n" in w or w.startswith("=") for w in pairs):
            raise ValueError("adapter %s: launcher_environment(): names or values with tabs or newlines" % spec)
        if pairs:
            line += "\nenv\t" + "\t".join(pairs)
    return line


def main(argv):
    if argv[:1] == ["--list"]:
        # which interpreter answers, first: the table below is its view
        sys.stderr.write("greenreplay: conform: adapters as %s (Python %s) sees them; another "
                         "interpreter: conform --list -- PY\n"
                         % (sys.executable, sys.version.split()[0]))
        sys.stderr.flush()
        for spec in BUILTINS:
            try:
                print(_probe_line(spec).split("\n")[0])  # the table: no launch lines
            except ValueError as e:
                print("%s\tno\t%s" % (spec, e))
        return 0
    if len(argv) == 2 and argv[0] == "--probe":
        try:
            print(_probe_line(argv[1]))
        except ValueError as e:
            sys.stderr.write("greenreplay: conform: %s\n" % e)
            return 2
        return 0
    if len(argv) in (3, 4) and argv[0] == "--expect":
        # --expect FIXTURE PYTHON_VERSION [PROFILER]: "NAME VERDICT" lines,
        # or the one verdict ("none" when the fixture names none).
        exp = expectations(argv[1], argv[2])
        if len(argv) == 4:
            print(exp.get(argv[3], "none"))
        else:
            for name in sorted(exp):
                print("%s %s" % (name, exp[name]))
        return 0
    sys.stderr.write("usage: python -m greenreplay.conform --list | --probe SPEC | "
                     "--expect FIXTURE PYTHON_VERSION [PROFILER]\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
