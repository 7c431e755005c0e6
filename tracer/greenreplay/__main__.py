"""python -m greenreplay [-m MODULE | -c CODE | SCRIPT] [ARGS...]

Record a whole program as `greenreplay record` (without --manual) does:
re-execute this interpreter with greenreplay/boot first on PYTHONPATH, whose
sitecustomize starts recording at the program's first frame (see
boot/sitecustomize.py).  The trace path comes from GREENREPLAY_OUTPUT.
Prefer `greenreplay record`: it also checks its options, keeps the
interpreter's options, forwards signals and refuses to overwrite files that
are not traces.  Exit status: the program's own; 2 for bad usage or a
recorder not built for this interpreter."""
import os
import sys


def main():
    args = sys.argv[1:]
    if not args or (args[0] in ("-m", "-c") and len(args) < 2):
        sys.stderr.write("usage: python -m greenreplay [-m MODULE | -c CODE | SCRIPT] [ARGS...]\n")
        sys.exit(2)
    if not os.environ.get("GREENREPLAY_OUTPUT"):
        sys.stderr.write("greenreplay: GREENREPLAY_OUTPUT is not set (the trace to write)\n")
        sys.exit(2)
    pkg = os.path.dirname(os.path.abspath(__file__))
    try:
        from . import _greenreplay  # noqa: F401
    except ImportError as e:
        sys.stderr.write(
            "greenreplay: the recorder is not built for %s (Python %d.%d): %s; "
            "run `make PYTHON=%s`, or `%s -m pip install .` in the source tree\n" % (sys.executable, sys.version_info[0], sys.version_info[1], e, sys.executable, sys.executable))
        sys.exit(2)
    env = dict(os.environ)
    paths = [os.path.join(pkg, "boot"), os.path.dirname(pkg)]
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


if __name__ == "__main__":
    main()
