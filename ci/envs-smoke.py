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

On the host (the decoder needs only the standard library):
    python3 envs-smoke.py check TRACE [--greenlet]
        check the trace: header, chunk CRCs, trailer (no dropped records, no
        recorder errors), the records the program must produce (two marks;
        with --greenlet two switches and a dead greenlet).  Prints one
        summary line; exit 0 good, 1 bad.
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


# --- decoder (docs/FORMAT.md) ---------------------------------------------

MAGIC = b"GRRPLY\r\n"
NAMES = {0x10: "THREAD", 0x11: "GREENLET", 0x12: "CALL", 0x13: "RETURN",
         0x14: "C_CALL", 0x15: "C_RETURN", 0x16: "C_EXCEPTION", 0x17: "SWITCH",
         0x18: "THROW", 0x19: "MARK", 0x1A: "DEAD", 0x1B: "START", 0x1C: "STOP",
         0x1D: "STACK", 0x1E: "INSTR", 0x1F: "HOOK"}
# number of fixed varint fields; None: a stack follows (depth, then ids)
# (format 1.1: SWITCH and THROW carry a stack; HOOK is new)
FIXED = {0x02: 4, 0x03: 2, 0x04: 1, 0x10: 1, 0x1E: 5, 0x12: 3, 0x13: 3, 0x14: 3, 0x15: 3,
         0x16: 3, 0x1A: 2, 0x1B: 2, 0x1C: 2, 0x1F: 6}
STACKED = {0x11: 4, 0x19: 5, 0x1D: 3, 0x17: 7, 0x18: 7}   # varints before `depth`


class Bad(Exception):
    pass


def _varint(buf, pos):
    v = shift = 0
    for i in range(10):
        if pos >= len(buf):
            raise Bad("varint runs past the chunk")
        b = buf[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, pos
    raise Bad("varint longer than 10 bytes")


def check(path, want_greenlet):
    import zlib
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 16 or data[:8] != MAGIC:
        raise Bad("not a greenreplay trace (bad magic)")
    if data[12:13] != b"C":
        raise Bad("not a canonical stream")
    pos, strings, meta, counts, trailer = 16, [None], {}, {}, None
    while pos < len(data):
        if pos + 9 > len(data):
            raise Bad("truncated chunk header at offset %d" % pos)
        tag = data[pos:pos + 1]
        n = int.from_bytes(data[pos + 1:pos + 5], "little")
        crc = int.from_bytes(data[pos + 5:pos + 9], "little")
        payload = data[pos + 9:pos + 9 + n]
        if len(payload) != n:
            raise Bad("truncated chunk at offset %d" % pos)
        if zlib.crc32(payload) != crc:
            raise Bad("CRC mismatch in chunk at offset %d" % pos)
        pos += 9 + n
        if tag == b"Z":
            p, trailer = 0, []
            while p < n:
                v, p = _varint(payload, p)
                trailer.append(v)
            break
        if tag != b"E":
            raise Bad("unknown chunk tag %r" % tag)
        p = 0
        while p < n:
            rec = payload[p]
            p += 1
            if rec == 0x01:
                ln, p = _varint(payload, p)
                strings.append(payload[p:p + ln].decode("utf-8", "replace"))
                p += ln
                continue
            if rec in FIXED:
                vals = []
                for _ in range(FIXED[rec]):
                    v, p = _varint(payload, p)
                    vals.append(v)
                if rec == 0x03:
                    meta[strings[vals[0]]] = strings[vals[1]]
            elif rec in STACKED:
                for _ in range(STACKED[rec]):
                    _, p = _varint(payload, p)
                depth, p = _varint(payload, p)
                for _ in range(depth):
                    _, p = _varint(payload, p)
            else:
                raise Bad("unknown record 0x%02x" % rec)
            if rec in NAMES:
                counts[NAMES[rec]] = counts.get(NAMES[rec], 0) + 1
    if trailer is None:
        raise Bad("no trailer: the trace is truncated")
    events = sum(counts.values())
    if len(trailer) < 4 or trailer[0] != events:
        raise Bad("trailer %r does not match %d records" % (trailer, events))
    if trailer[1] or trailer[2]:
        raise Bad("recorder lost %d records and swallowed %d errors" % (trailer[1], trailer[2]))
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
        try:
            print(check(argv[1], "--greenlet" in argv[2:]))
        except (Bad, OSError) as e:
            print("bad trace %s: %s" % (argv[1], e))
            return 1
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
