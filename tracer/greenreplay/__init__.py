"""greenreplay recorder: record profile events and greenlet switches.

    import greenreplay
    greenreplay.start("run.grt")   # the profile function on, on every thread
    ...
    greenreplay.mark("here")       # ground truth: the real Python stack
    greenreplay.stop()

By default start() installs no greenlet trace callback: switches are
detected passively (a callback would heal the bug class recorded here);
start(switches="callback") installs one.  docs/RECORDER.md describes the
recorder.  The trace format is specified in docs/FORMAT.md; `greenreplay
check`, `dump` and `stats` (the C command-line tool) read it.
"""
import os
import sys

from . import _greenreplay

# Lazy: importing the package (and `greenreplay record`'s whole-program boot)
# imports nothing but the C extension beyond os and sys, which site has
# imported already.  The checking API (api.py) loads on first use (PEP 562
# __getattr__ at the end); atexit, signal and threading when recording starts.

__all__ = ["start", "stop", "mark", "flush", "is_recording"]

#: mark(label) -> None.  Writes a MARK record with the real Python stack.
#: A C function, so a working profiler sees c_call/c_return of it.
mark = _greenreplay.mark
is_recording = _greenreplay.is_recording
#: flush() -> int | None.  Make the trace file current without stopping.
flush = _greenreplay.flush

_flush_signal = None  # (signum, previous handler) while ours is installed
# While `greenreplay record` (without --manual) records the whole program,
# _greenreplay._whole_program() is its trace file: the program's own start()
# and stop() then change nothing (kept in the extension, so that a package
# the program imports again knows it too).
_at_exit_registered = False
# True in the package that started it, and in one the program imports while
# it runs: so that a --manual recording's start() and stop() make no extra C
# call (each would be a record of the trace).
_whole = _greenreplay._whole_program() is not None


def _path_rules(root):
    """(prefix, replacement, keep_line) rules that make code file names portable.

    Longest prefix first: the recording root becomes "", this package
    "<greenreplay>/" (with line numbers 0, so that traces do not change
    when this package is edited), site and dist-packages "<site>/", the
    stdlib "<stdlib>/" (docs/FORMAT.md section 3)."""
    rules = {}

    def add(path, replacement, keep_line=True):
        if not path:
            return
        for p in {os.path.abspath(path), os.path.realpath(path)}:
            rules.setdefault(p.rstrip(os.sep) + os.sep, (replacement, keep_line))

    add(os.path.dirname(os.path.abspath(__file__)), "<greenreplay>/", False)
    if root:
        add(root, "")
    site = sys.modules.get("site")  # imported at start-up (record refuses -S)
    sites = list(getattr(site, "getsitepackages", lambda: [])())
    sites += [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    for p in sites:
        add(p, "<site>/")
    # The stdlib is where os came from (sysconfig's "stdlib"; its
    # "platstdlib" is the same directory on POSIX builds), read without
    # importing sysconfig.
    add(os.path.dirname(os.path.abspath(os.__file__)), "<stdlib>/")
    return [(prefix, rep, keep) for prefix, (rep, keep) in sorted(rules.items(), key=lambda kv: -len(kv[0]))]


def _after_fork_in_child():
    # The child of a recorded process does not record: it must not write
    # into the parent's trace (the extension's pthread_atfork handler has
    # already cut it off, before any at-fork code ran).  Here the parent's
    # recording is taken down; the hooks are left as the program set them.
    _greenreplay._forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _stop_failed(e):
    # A trace that could not be written completely (disk full: its trailer
    # says write-error and counts the records lost): one line on stderr,
    # never an exception into the program or a changed exit status.
    try:
        sys.stderr.write("greenreplay: the trace %s was not written completely: %s\n"
                         % (_greenreplay._whole_program() or _env("GREENREPLAY_OUTPUT") or "", e))
    except Exception:
        pass


def _stop_at_exit():
    # A recording still running when the interpreter exits ends here, after
    # the non-daemon threads were joined, with reason 2 (exit) in the trailer.
    # Never raises (see _stop_failed).
    if _greenreplay.is_recording():
        try:
            stop(2)
        except Exception as e:
            _stop_failed(e)


def _register_at_exit():
    # atexit is imported when recording first starts, not with the package.
    global _at_exit_registered
    if not _at_exit_registered:
        import atexit
        atexit.register(_stop_at_exit)
        _at_exit_registered = True


# Threads: the extension follows every thread threading.Thread.start
# starts, from the C call that creates it (tracer/follow.c);
# threading's own hooks stay the program's.


def _on_flush_signal(signum, frame):
    # Flush, then chain to the handler the program had.
    _greenreplay.flush()
    prev = _flush_signal[1] if _flush_signal else None
    if callable(prev):
        prev(signum, frame)


def _signal_number(sig):
    import signal
    if isinstance(sig, int):
        return sig
    name = str(sig).upper()
    if name.isdigit():
        return int(name)
    return int(getattr(signal, name if name.startswith("SIG") else "SIG" + name))


def _size(text):
    # "1000", "64k", "10M", "2G" -> bytes
    text = str(text).strip()
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    if text and text[-1].lower() in units:
        return int(float(text[:-1]) * units[text[-1].lower()])
    return int(text)


# `greenreplay record --manual` names the trace and its options in
# GREENREPLAY_* variables.  Its boot (greenreplay/boot) takes them out of the
# environment before the program runs and keeps them in the extension
# (_greenreplay._record_settings), so that neither the program nor its
# children see them (a child's start() without a path is an error, never a
# write into this trace).  Where the boot did not run (python -S), the first
# start() that takes its path from the environment takes them out of it, and
# keeps them here (in the extension too) for the next start().
_record_conf = _greenreplay._record_settings()
if _record_conf is None:
    _record_conf = {}
    _greenreplay._record_settings(_record_conf)


def _env(key):
    return _record_conf.get(key, os.environ.get(key))


def _take_environment():
    for key in _RECORDER_VARIABLES:
        if key in os.environ:
            _record_conf[key] = os.environ.pop(key)


_RECORDER_VARIABLES = (
    "GREENREPLAY_OUTPUT", "GREENREPLAY_ROOT", "GREENREPLAY_TIMES", "GREENREPLAY_SWITCHES",
    "GREENREPLAY_SWITCH_STACKS", "GREENREPLAY_MAX_SIZE", "GREENREPLAY_RING",
    "GREENREPLAY_FLUSH_SIGNAL", "GREENREPLAY_SAMPLER", "GREENREPLAY_VERIFY_CONTINUED",
    "GREENREPLAY_COMPRESS")


def _forget_imports(before):
    # Modules starting imported for itself that leave sys.modules again
    # (their state is the interpreter's or the extension's, not the module
    # object's): gc (the extension's start takes its own gc out itself, and
    # with profile=False the greenlet it imports, whose state is C state:
    # docs/recorder-start.md), and atexit, which before 3.10 holds the
    # callbacks: the extension keeps it and gives it back at the program's
    # own `import atexit` (tracer/boot.c).
    if "gc" not in before and "gc" in sys.modules:
        del sys.modules["gc"]
    if "atexit" not in before and "atexit" in sys.modules:
        _greenreplay._atexit_leave(sys.modules["atexit"])


def start(path=None, *, root=None, times=None, chunk=0, sampler=None,
          interval_us=5000, keep=64, max_greenlets=65536, profile=True,
          max_size=None, ring=None, flush_signal=None, switches=None,
          switch_stacks=None, compress=None, _entry=None, _entry_c=None):
    """Start recording this process.

    path: trace file to write (created or truncated); default: the
        GREENREPLAY_OUTPUT environment variable (set by `greenreplay record`).
    root: directory that code file names are written relative to; default
        GREENREPLAY_ROOT, else the current directory.
    times: also write timestamps to PATH.times (the side channel);
        default: GREENREPLAY_TIMES=1.
    chunk: chunk size in bytes (0: 64 KiB).
    sampler: also run the reference greenlet sampler: "two-phase" (the fixed
        design), "hold-lock" (the design that stalled switches) or
        "seqlock"; default GREENREPLAY_SAMPLER, else none.  Every
        interval_us microseconds (>= 100) it copies the registry of
        tracked greenlets and unwinds and stores `keep` suspended
        greenlets' stacks (round robin over samples; hold-lock unwinds all
        of them under the lock and stores `keep`; 0 <= keep <= 8192, else
        ValueError: the sampler's memory grows with it, 144 MiB at 8192,
        docs/PERFORMANCE.md).  The registry has
        max_greenlets - 1 slots (2 to 2**30), one per greenlet alive at
        once: a dead or freed greenlet's slot is reused; greenlets that
        find every slot taken are counted (META
        sampler_untracked_greenlets) and never sampled.
        Its figures go to the side channel PATH.times, which it turns on.
    profile: install the profile function (default).  False records only
        the greenlet switches of the calling thread, through greenlet's
        callback (switches="callback" is then the default): the switch path
        alone, for benchmarks.
    max_size: cap the trace file at this many bytes (int, or "64k", "10M",
        "2G"); later records are dropped and counted, the trailer says so
        (reason size-cap).  Default GREENREPLAY_MAX_SIZE, else no cap.
    ring: keep only the last `ring` records in memory (at least that many:
        whole chunks are kept) and write the file at stop() and flush(), for
        long-running services; the records of stop() (a STACK per live
        greenlet) come after them.  Default GREENREPLAY_RING, else off.
    flush_signal: a signal ("USR1", "SIGUSR2" or a number) on which the trace
        is flushed without stopping (in ring mode: written from memory).  The
        program's own handler for it, if any, still runs after.  Main thread
        only.  Default GREENREPLAY_FLUSH_SIGNAL, else none.
    compress: write each records chunk compressed (one zstd frame per
        chunk, readable on its own: docs/FORMAT.md section 2.1); False
        writes them uncompressed.  Default: on, unless
        GREENREPLAY_COMPRESS=0 (`greenreplay record --no-compress`).
    _entry: private, for `greenreplay record` (greenreplay/boot): the
        program's first frame, at its call event, and _entry_c the C function
        that called it, if any (see _greenreplay.start).

    switches: how greenlet switches are detected.  "passive" (default;
        GREENREPLAY_SWITCHES): no greenlet trace callback is installed; at
        every profile event and mark() the recorder compares the running
        greenlet with the one it saw last on that thread, and writes an
        inferred SWITCH with the target's real stack.  "callback": greenlet's
        trace callback (greenlet.settrace) announces switches and throws
        (needed to tell throws apart); note that any greenlet trace callback
        makes greenlet recompute the target's tracing state, which hides the
        greenlet issue 256 class (docs/FORMAT.md section 4).
    switch_stacks: "needed" (default; GREENREPLAY_SWITCH_STACKS): in passive
        mode a switch back into a greenlet that resumes in the frame it was
        seen suspended in, with nothing run unseen on its thread since, is
        written without a stack (flag continued): the trace already gives
        that stack.  "every": the real stack at every switch (slower).
        GREENREPLAY_VERIFY_CONTINUED=1 (read at start()) is a self-check:
        greenlet is asked at every continued switch as well, the counts
        are written as META continued_verified / continued_mismatch at
        stop(), and `greenreplay check` reports a mismatch as a
        switch_consistency violation.

    Under `greenreplay record` without --manual the whole program is being
    recorded already: a start() of the program's own with no path (or the
    recording's own path) changes nothing and returns None, and so does its
    stop(), so that a program written for --manual records the same way
    either way; a start() naming another file raises RuntimeError.

    Installs the C profile function on every thread, and on every thread
    threading.Thread.start starts later (not on threads started with
    _thread.start_new_thread directly: check reports those), without
    changing what sys.getprofile(), threading.getprofile()
    or greenlet.gettrace() return to the program (greenlet.gettrace(): in
    passive mode; switches="callback" installs the recorder's greenlet
    callback, which it then returns); when the program installs
    its own profile function the recorder chains in front of it and writes a
    HOOK record.  Raises RuntimeError when already recording,
    ValueError without a path, OSError when the file cannot be written."""
    global _whole
    if _whole and _entry is None and _greenreplay.is_recording():
        out = _greenreplay._whole_program()
        if path is None or (out and os.path.abspath(os.fspath(path)) == os.path.abspath(out)):
            return None
    from_environment = path is None
    if path is None:
        path = _env("GREENREPLAY_OUTPUT")
        if not path:
            raise ValueError("greenreplay.start: no path given and GREENREPLAY_OUTPUT is not set")
    if root is None:
        root = _env("GREENREPLAY_ROOT") or os.getcwd()
    if times is None:
        times = _env("GREENREPLAY_TIMES") == "1"
    if sampler is None:
        sampler = _env("GREENREPLAY_SAMPLER") or None
    if max_size is None:
        max_size = _env("GREENREPLAY_MAX_SIZE") or 0
    if ring is None:
        ring = _env("GREENREPLAY_RING") or 0
    if flush_signal is None:
        flush_signal = _env("GREENREPLAY_FLUSH_SIGNAL") or None
    if compress is None:
        compress = _env("GREENREPLAY_COMPRESS") != "0"
    if switches is None:
        switches = _env("GREENREPLAY_SWITCHES") or ("passive" if profile else "callback")
    max_size, ring = _size(max_size), int(ring)
    signum = _signal_number(flush_signal) if flush_signal else None
    rules = _path_rules(root)
    if switches not in ("passive", "callback"):
        raise ValueError("greenreplay.start: switches must be 'passive' or 'callback', not %r" % (switches,))
    if switch_stacks is None:
        switch_stacks = _env("GREENREPLAY_SWITCH_STACKS") or "needed"
    if switch_stacks not in ("needed", "every"):
        raise ValueError("greenreplay.start: switch_stacks must be 'needed' or 'every', not %r"
                         % (switch_stacks,))
    before = set(sys.modules)
    _register_at_exit()
    _forget_imports(before)  # before recording: no frame of it in the trace
    if from_environment and _entry is None:
        _take_environment()  # before recording: the program's trace has none of it
    verify = _record_conf.get("GREENREPLAY_VERIFY_CONTINUED")
    if verify is not None:  # read by the extension's start
        os.environ["GREENREPLAY_VERIFY_CONTINUED"] = verify
    try:
        _greenreplay.start(os.fspath(path), rules, bool(times), chunk, sampler=sampler,
                           interval_us=interval_us, keep=keep, max_greenlets=max_greenlets,
                           profile=bool(profile), max_size=max_size, ring=ring,
                           switches=switches, entry=_entry, entry_c=_entry_c,
                           every_stack=switch_stacks == "every", compress=bool(compress))
    finally:
        if verify is not None:
            os.environ.pop("GREENREPLAY_VERIFY_CONTINUED", None)
    if signum is not None:
        global _flush_signal
        import signal
        _flush_signal = (signum, signal.signal(signum, _on_flush_signal))
    if _entry is not None:
        _greenreplay._whole_program(os.path.abspath(os.fspath(path)))
        _whole = True


def stop(reason=1):
    """Stop recording and close the trace.

    reason: 1 stop() called (default), 2 interpreter exit; goes into the
        trailer.
    Returns the number of indexed records written, or None if not recording
    (and, under whole-program recording, for the program's own stop():
    recording goes on to the program's end; see start()).
    Raises OSError if the trace could not be written completely."""
    global _flush_signal, _whole
    if _whole and reason == 1 and _greenreplay.is_recording():
        return None
    if _whole:
        _whole = False
        _greenreplay._whole_program(None)
    n = _greenreplay.stop(reason)
    if _flush_signal is not None:
        signum, prev = _flush_signal
        _flush_signal = None
        import signal
        try:
            if signal.getsignal(signum) is _on_flush_signal:
                signal.signal(signum, prev if prev is not None else signal.SIG_DFL)
        except ValueError:  # not in the main thread
            pass
    return n


# Checking from Python (greenreplay/api.py): the C checker through the CLI,
# loaded on first use (PEP 562).
_API = ("CheckError", "CheckResult", "Recording", "Violation", "check", "recording")
__all__ += list(_API)


def __getattr__(name):
    if name in _API:
        from . import api
        return getattr(api, name)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
