"""python -m greenreplay COMMAND [ARGS...]: the command-line tool.

    python -m greenreplay --help
    python -m greenreplay record -o run.grt -- app.py [ARGS...]
    python -m greenreplay check run.grt

Every command of the C tool `greenreplay` (record, check, dump, export, ...)
runs the same way here: this module finds the tool the way the console
script does (greenreplay/_cli.py) and runs it.  `record` and `conform` take
the program after `--`; when what follows `--` is not an interpreter (a
script, `-m MODULE`, `-c CODE` or `-`), this interpreter (sys.executable)
runs it, as `python -m cProfile app.py` would.

The older form `python -m greenreplay [-m MODULE | -c CODE | SCRIPT]
[ARGS...]` with GREENREPLAY_OUTPUT set in the environment still records the
program into that file: the interpreter is re-executed with greenreplay/boot
first on PYTHONPATH, whose sitecustomize starts recording at the program's
first frame (boot/sitecustomize.py).

Nothing here is imported by `import greenreplay`: the package stays lazy,
and the recorded program runs in a new process, never under this module.
Exit status: the tool's own; 2 for bad usage or a tool or recorder that is
not built."""
import os
import sys

#: The C tool's commands (and its help options): what `python -m
#: greenreplay` passes on to it.
COMMANDS = ("record", "check", "dump", "stats", "edit", "script", "diff",
            "reduce", "export", "conform", "help",
            "-h", "--help", "--version")
#: The commands whose program follows `--` and starts with its interpreter.
_RUNS_PROGRAM = ("record", "conform")


def _is_interpreter(word):
    """True when `word`, the first word after `--`, names an interpreter
    rather than the program: a native executable, or an executable file
    whose name starts with "python" (pyenv shims and venv links)."""
    if word in ("-", "-m", "-c") or word.endswith(".py") or os.sep not in word and \
            not word.startswith("python"):
        return False
    path = word
    if os.sep not in word:
        for d in os.environ.get("PATH", "").split(os.pathsep):
            c = os.path.join(d or ".", word)
            if os.path.isfile(c) and os.access(c, os.X_OK):
                path = c
                break
        else:
            return False
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        return False
    if os.path.basename(path).startswith("python"):
        return True
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def tool_args(args, executable=None):
    """The C tool's arguments for `python -m greenreplay ARGS`: for record
    and conform, this interpreter goes after `--` unless an interpreter is
    already there."""
    args = list(args)
    if args and args[0] in _RUNS_PROGRAM and "--" in args:
        at = args.index("--") + 1
        if at < len(args) and not _is_interpreter(args[at]):
            args.insert(at, executable or sys.executable)
    return args


def _run_tool(args):
    from . import _cli
    return _cli.main(tool_args(args))


def _record_from_environment(args):
    # The older form: GREENREPLAY_OUTPUT names the trace, args the program.
    pkg = os.path.dirname(os.path.abspath(__file__))
    try:
        from . import _greenreplay  # noqa: F401
    except ImportError as e:
        sys.stderr.write(
            "greenreplay: the recorder is not built for %s (Python %d.%d): %s; "
            "run `make PYTHON=%s`, or `%s -m pip install .` in the source tree\n"
            % (sys.executable, sys.version_info[0], sys.version_info[1], e,
               sys.executable, sys.executable))
        sys.exit(2)
    env = dict(os.environ)
    paths = [os.path.join(pkg, "boot")]  # the boot imports the package from beside it
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["GREENREPLAY_PROGRAM"] = "1"
    if "GREENREPLAY_ROOT" not in env:
        env["GREENREPLAY_ROOT"] = os.path.dirname(os.path.abspath(args[0])) \
            if args[0] not in ("-m", "-c", "-") else os.getcwd()
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable] + args, env)


USAGE = ("usage: python -m greenreplay COMMAND [ARGS...]   "
         "(python -m greenreplay --help lists the commands)\n")


def main():
    args = sys.argv[1:]
    if not args:
        sys.stderr.write(USAGE)
        sys.exit(2)
    if args[0] in COMMANDS:
        sys.exit(_run_tool(args))
    if os.environ.get("GREENREPLAY_OUTPUT") and not (args[0] in ("-m", "-c") and len(args) < 2):
        _record_from_environment(args)
    sys.stderr.write("greenreplay: unknown command %r\n%s" % (args[0], USAGE))
    sys.exit(2)


if __name__ == "__main__":
    main()
