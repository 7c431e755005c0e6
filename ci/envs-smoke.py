"""ci/envs-smoke.py - probe and smoke test for ci/envs.sh (docs/ENVIRONMENTS.md).

Inside an environment (any Python 3.9+, run by `ci/envs.sh`):
    python envs-smoke.py probe
        key=value lines: python, executable, debug (1 for a Py_DEBUG
        build), greenlet, gevent, recorder (path of the
        loaded _greenreplay extension, or "none: REASON"), the profilers
        yappi, coverage, line_profiler (version, "none" or "broken
        (REASON)") and coverage_ctracer ("yes" or "no (REASON)").
    python envs-smoke.py record [TRACE]
        record a tiny program: mark, call, switch into a greenlet (when
        greenlet imports) and back; TRACE defaults to $GREENREPLAY_OUTPUT
        (set by `greenreplay record --manual`).

On the host, with the C CLI (build/greenreplay, or --cli PATH, or
$GREENREPLAY_CLI; the trace is read by its reader, not a second decoder):
    python3 envs-smoke.py check TRACE [--greenlet] [--cli PATH]
        check the trace with `greenreplay dump`: header, chunk CRCs,
        trailer (no dropped records, no recorder errors), the records the
        program must produce (two marks; with --greenlet two switches and a
        dead greenlet).  Prints one summary line; exit 0 good, 1 bad.
"""
import os
import sys


def _version(modname):
    try:
        mod = __import__(modname)
    except ImportError as e:
        if getattr(e, "name", None) == modname:
            return "none"
        return "broken (%s: %s)" % (type(e).__name__, e)
    except Exception as e:  # a broken build raises other errors too
        return "broken (%s: %s)" % (type(e).__name__, str(e).replace("\n", " "))
    return str(getattr(mod, "__version__", "unknown"))


def probe():
    print("python=%s" % sys.version.split()[0])
    print("executable=%s" % sys.executable)
    # 1 for a debug build (Py_DEBUG: reference count and assertion checks).
    print("debug=%d" % hasattr(sys, "gettotalrefcount"))
    print("greenlet=%s" % _version("greenlet"))
    print("gevent=%s" % _version("gevent"))
    try:
        import greenreplay
        rec = greenreplay._greenreplay.__file__
    except Exception as e:
        rec = "none (%s: %s)" % (type(e).__name__, e)
    print("recorder=%s" % rec)
    # The profilers of the profiler axis (ci/profilers.sh): version, or
    # "none" when not installed, or "broken (...)" when the package is there
    # but its extension is not built for this interpreter.
    for mod in ("yappi", "coverage", "line_profiler"):
        print("%s=%s" % (mod, _dist_version(mod)))
    print("coverage_ctracer=%s" % _ctracer())
    return 0


def _dist_version(modname):
    """The installed distribution's version of MODNAME once it imports
    (the module's own __version__ when no metadata is found)."""
    v = _version(modname)
    if v == "none" or v.startswith("broken"):
        return v
    try:
        from importlib import metadata
        return metadata.version(modname)
    except Exception:
        return v


def _ctracer():
    """'yes' when coverage.py's C tracer imports, else 'no (REASON)'."""
    try:
        from coverage.tracer import CTracer  # noqa: F401
    except Exception as e:
        return "no (%s: %s)" % (type(e).__name__, str(e).replace("\n", " "))
    return "yes"


def record(path):
    import greenreplay
    try:
        import greenlet
    except ImportError:
        greenlet = None

    def x():
        greenreplay.mark("in x")

    greenreplay.start(path)
    x()
    if greenlet is not None:
        greenlet.greenlet(x).switch()
    n = greenreplay.stop()
    print("recorded %d records: python %s, greenlet %s" % (
        n, sys.version.split()[0], greenlet.__version__ if greenlet else "none"))
    return 0


# --- check (on the host, with the C CLI: no second decoder here) ----------


class Bad(Exception):
    pass


def check(path, want_greenlet, cli):
    """Check TRACE with `greenreplay dump` (the C reader: header, chunk
    CRCs, records, trailer).  Returns the summary line; raises Bad."""
    import subprocess
    try:
        p = subprocess.run([cli, "dump", path], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
    except OSError as e:
        raise Bad("cannot run %s: %s" % (cli, e))
    if p.returncode != 0:
        raise Bad("greenreplay dump exit %d: %s" % (p.returncode, p.stderr.strip()[:300]))
    meta, counts, trailer = {}, {}, None
    for line in p.stdout.splitlines():
        if line.startswith("# trailer: "):
            trailer = dict(kv.split("=", 1) for kv in line[len("# trailer: "):].split())
        elif line.startswith("# ") and ": " in line:
            k, v = line[2:].split(": ", 1)
            meta[k] = v
        elif line[:1] == " " or line[:1].isdigit():
            parts = line.split()
            if len(parts) >= 2 and parts[0].isdigit():
                counts[parts[1]] = counts.get(parts[1], 0) + 1
    if trailer is None:
        raise Bad("no trailer: the trace is truncated")
    events = sum(counts.values())
    if int(trailer.get("events", -1)) != events:
        raise Bad("trailer %r does not match %d records" % (trailer, events))
    if trailer.get("dropped") != "0" or trailer.get("errors") != "0":
        raise Bad("recorder lost %s records and swallowed %s errors"
                  % (trailer.get("dropped"), trailer.get("errors")))
    want = {"START": 1, "STOP": 1, "MARK": 1, "SWITCH": 0}
    if want_greenlet:
        want.update({"MARK": 2, "SWITCH": 2, "DEAD": 1})
    for kind, k in sorted(want.items()):
        if counts.get(kind, 0) != k:
            raise Bad("expected %d %s records, found %d" % (k, kind, counts.get(kind, 0)))
    return "%d records, %d marks, %d switches; python %s, greenlet %s" % (
        events, counts.get("MARK", 0), counts.get("SWITCH", 0),
        meta.get("python", "?"), meta.get("greenlet", "?"))


def main(argv):
    if len(argv) >= 1 and argv[0] == "probe":
        return probe()
    if len(argv) >= 1 and argv[0] == "record":
        return record(argv[1] if len(argv) > 1 else None)
    if len(argv) >= 2 and argv[0] == "check":
        cli = os.environ.get("GREENREPLAY_CLI") or os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..", "build", "greenreplay")
        if "--cli" in argv[2:]:
            cli = argv[argv.index("--cli") + 1]
        try:
            print(check(argv[1], "--greenlet" in argv[2:], cli))
        except (Bad, OSError) as e:
            print("bad trace %s: %s" % (argv[1], e))
            return 1
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
