"""python -m greenreplay [-m MODULE | SCRIPT] [ARGS...]

Run a script or module with recording on from its first line to its exit.
Used by `greenreplay record`; the trace path comes from GREENREPLAY_OUTPUT.
Exit status: the program's own (1 for an uncaught exception)."""
import os
import sys
import threading
import traceback
import types


def _usage():
    sys.stderr.write("usage: python -m greenreplay [-m MODULE | SCRIPT] [ARGS...]\n")
    sys.exit(2)


def main():
    try:
        import greenreplay
    except ImportError as e:
        sys.stderr.write(
            "greenreplay: the recorder is not built for %s (Python %d.%d): %s; "
            "run `make PYTHON=%s`, or `%s -m pip install .` in the source tree\n" % (sys.executable, sys.version_info[0], sys.version_info[1], e, sys.executable, sys.executable))
        sys.exit(2)

    args = sys.argv[1:]
    if not args:
        _usage()
    if args[0] == "-m":
        if len(args) < 2:
            _usage()
        import runpy
        modname = args[1]
        sys.argv = [modname] + args[2:]
        sys.path.insert(0, os.getcwd())
        run = lambda: runpy.run_module(modname, run_name="__main__", alter_sys=True)
        root = os.getcwd()
    else:
        script = os.path.abspath(args[0])
        try:
            with open(script, "rb") as f:
                source = f.read()
        except OSError as e:
            sys.stderr.write("greenreplay: cannot read %s: %s\n" % (args[0], e.strerror))
            sys.exit(2)
        code = compile(source, script, "exec")
        sys.argv = [args[0]] + args[1:]
        sys.path[0] = os.path.dirname(script)
        main_mod = types.ModuleType("__main__")
        main_mod.__file__ = script
        main_mod.__builtins__ = __builtins__
        sys.modules["__main__"] = main_mod
        run = lambda: exec(code, main_mod.__dict__)
        root = os.path.dirname(script)

    greenreplay.start(root=os.environ.get("GREENREPLAY_ROOT") or root)
    status = 0
    try:
        run()
    except SystemExit as e:
        status = e.code
    except BaseException:
        traceback.print_exc()
        status = 1
    finally:
        # Threads the program left running are part of its run.
        for t in threading.enumerate():
            if t is not threading.current_thread() and not t.daemon:
                t.join()
        greenreplay.stop(2)
    sys.exit(status)


if __name__ == "__main__":
    main()
