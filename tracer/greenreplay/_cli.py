"""Finding and running the C command-line tool from Python.

`greenreplay` installed by pip is a console script whose main() is here: it
runs the C tool that the same install built (greenreplay/_bin/greenreplay),
telling it where this package lives (GREENREPLAY_PYTHONPATH), so that
`greenreplay record -- PYTHON SCRIPT` finds the recorder without PYTHONPATH.
greenreplay.check() and the pytest plugin find the tool with cli_path().
"""
import os
import sys

_PKG = os.path.dirname(os.path.abspath(__file__))

#: What to do when the C tool cannot be found (FileNotFoundError's message).
HINT = ("install greenreplay with `python3 -m pip install .` from its source tree "
        "(it builds the tool), build it with `make`, or set GREENREPLAY_CLI to its path")


def _is_elf(path):
    # A `greenreplay` on PATH may be this console script itself: only a
    # native executable is the C tool.
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def cli_path():
    """Path of the C command-line tool `greenreplay`.

    Looked up, first found wins: $GREENREPLAY_CLI; the tool installed with
    this package (greenreplay/_bin/greenreplay, put there by pip install);
    the tool of the `make` tree this package was built in (BUILD/greenreplay
    beside BUILD/python/greenreplay); the tool of a `make install`
    (PREFIX/bin beside PREFIX/lib/greenreplay/python); a native
    `greenreplay` executable on PATH.  Raises FileNotFoundError (with what to do) when none exists."""
    env = os.environ.get("GREENREPLAY_CLI")
    if env:
        if os.path.isfile(env) and os.access(env, os.X_OK):
            return env
        raise FileNotFoundError("greenreplay: GREENREPLAY_CLI=%s is not an executable file" % env)
    up = os.path.dirname
    candidates = [os.path.join(_PKG, "_bin", "greenreplay"),
                  # make: BUILD/greenreplay and BUILD/python/greenreplay
                  os.path.join(up(up(_PKG)), "greenreplay"),
                  # make install: PREFIX/bin and PREFIX/lib/greenreplay/python/greenreplay
                  os.path.join(up(up(up(up(_PKG)))), "bin", "greenreplay")]
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK) and _is_elf(c):
            return c
    for d in os.environ.get("PATH", "").split(os.pathsep):
        c = os.path.join(d or ".", "greenreplay")
        if os.path.isfile(c) and os.access(c, os.X_OK) and _is_elf(c):
            return c
    raise FileNotFoundError("greenreplay: the command-line tool was not found; " + HINT)


def cli_env(env=None):
    """A copy of env (default os.environ) in which the C tool's `record`
    finds this package: GREENREPLAY_PYTHONPATH is set to the directory that
    holds it, unless already set."""
    env = dict(os.environ if env is None else env)
    env.setdefault("GREENREPLAY_PYTHONPATH", os.path.dirname(_PKG))
    return env


def main(argv=None):
    """Console script `greenreplay`: exec the C tool with the same arguments.
    Exit status: the tool's own; 2 when it cannot be found or run."""
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        cli = cli_path()
    except FileNotFoundError as e:
        sys.stderr.write("%s\n" % e)
        return 2
    try:
        os.execve(cli, ["greenreplay"] + args, cli_env())
    except OSError as e:
        sys.stderr.write("greenreplay: cannot run %s: %s\n" % (cli, e.strerror))
        return 2


if __name__ == "__main__":
    sys.exit(main())
