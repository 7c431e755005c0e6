"""greenreplay recorder: record profile events and greenlet switches.

    import greenreplay
    greenreplay.start("run.grt")   # profile function + greenlet callback on
    ...
    greenreplay.mark("here")       # ground truth: the real Python stack
    greenreplay.stop()

The trace format is specified in docs/FORMAT.md; `greenreplay check`,
`dump` and `stats` (the C command-line tool) read it.
"""
import atexit
import os
import signal
import site
import sys
import sysconfig
import threading

from . import _greenreplay

__all__ = ["start", "stop", "mark", "flush", "is_recording"]

#: mark(label) -> None.  Writes a MARK record with the real Python stack.
#: A C function, so a working profiler sees c_call/c_return of it.
mark = _greenreplay.mark
is_recording = _greenreplay.is_recording
#: flush() -> int | None.  Make the trace file current without stopping.
flush = _greenreplay.flush

_flush_signal = None  # (signum, previous handler) while ours is installed
# True while `greenreplay record` (without --manual) records the whole
# program: the program's own start() and stop() then change nothing.
_whole_program = False


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
    sites = list(getattr(site, "getsitepackages", lambda: [])())
    sites += [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    for p in sites:
        add(p, "<site>/")
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib"):
        add(paths.get(key), "<stdlib>/")
    return [(prefix, rep, keep) for prefix, (rep, keep) in sorted(rules.items(), key=lambda kv: -len(kv[0]))]


def _after_fork_in_child():
    # The child of a recorded process does not record: it must not write
    # into the parent's trace.  Its hooks are left as the program set them.
    if _greenreplay.is_recording():
        _greenreplay._forked()
        _remove_threading_hook()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _stop_failed(e):
    # A trace that could not be written completely (disk full: its trailer
    # says write-error and counts the records lost): one line on stderr,
    # never an exception into the program or a changed exit status.
    try:
        sys.stderr.write("greenreplay: the trace %s was not written completely: %s\n"
                         % (os.environ.get("GREENREPLAY_OUTPUT") or "", e))
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


atexit.register(_stop_at_exit)


def _thread_bootstrap(frame, event, arg):
    # threading.setprofile hook: first event of a thread started after
    # start(); hands over to the C profile function, then installs the
    # program's own threading profile hook, if it set one, as threading
    # would have (the recorder then chains in front of it).
    _greenreplay._thread_start(frame, event, arg)
    if _program_hook is not None:
        sys.setprofile(_program_hook)


# Transparency (docs/FORMAT.md section 4, HOOK): while recording,
# threading.getprofile() returns what the program set with
# threading.setprofile(), and None when it set nothing; the recorder's own
# hook stays threading's internal one.
_program_hook = None
_threading_orig = None  # (setprofile, getprofile) while ours are installed


def _threading_setprofile(func):
    """threading.setprofile while recording: remembered for the threads
    started from now on, which the recorder reaches first."""
    global _program_hook
    _program_hook = func
    _greenreplay._thread_hooks(_thread_bootstrap, func)


def _threading_getprofile():
    """threading.getprofile while recording: what the program set."""
    return _program_hook


def _install_threading_hook():
    global _threading_orig, _program_hook
    _program_hook = getattr(threading, "_profile_hook", None)
    _threading_orig = (threading.setprofile, getattr(threading, "getprofile", None))
    threading.setprofile(_thread_bootstrap)
    _greenreplay._thread_hooks(_thread_bootstrap, _program_hook)
    threading.setprofile = _threading_setprofile
    if _threading_orig[1] is not None:
        threading.getprofile = _threading_getprofile


def _remove_threading_hook():
    global _threading_orig, _program_hook
    if _threading_orig is None:
        return
    setprofile, getprofile = _threading_orig
    _threading_orig = None
    if threading.setprofile is _threading_setprofile:
        threading.setprofile = setprofile
    if getprofile is not None and threading.getprofile is _threading_getprofile:
        threading.getprofile = getprofile
    setprofile(_program_hook)
    _program_hook = None
    _greenreplay._thread_hooks(None, None)


def _on_flush_signal(signum, frame):
    # Flush, then chain to the handler the program had.
    _greenreplay.flush()
    prev = _flush_signal[1] if _flush_signal else None
    if callable(prev):
        prev(signum, frame)


def _signal_number(sig):
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


def start(path=None, *, root=None, times=None, chunk=0, sampler=None,
          interval_us=5000, keep=64, max_greenlets=65536, profile=True,
          max_size=None, ring=None, flush_signal=None, switches=None,
          switch_stacks=None, _entry=None, _entry_c=None):
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
        long-running services.  Default GREENREPLAY_RING, else off.
    flush_signal: a signal ("USR1", "SIGUSR2" or a number) on which the trace
        is flushed without stopping (in ring mode: written from memory).  The
        program's own handler for it, if any, still runs after.  Main thread
        only.  Default GREENREPLAY_FLUSH_SIGNAL, else none.
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

    Installs the C profile function on every thread (threads started later
    included) without changing what sys.getprofile(), threading.getprofile()
    or greenlet.gettrace() return to the program (greenlet.gettrace(): in
    passive mode; switches="callback" installs the recorder's greenlet
    callback, which it then returns); when the program installs
    its own profile function the recorder chains in front of it and writes a
    HOOK record.  Raises RuntimeError when already recording,
    ValueError without a path, OSError when the file cannot be written."""
    global _whole_program
    if _whole_program and _entry is None and _greenreplay.is_recording():
        out = os.environ.get("GREENREPLAY_OUTPUT")
        if path is None or (out and os.path.abspath(os.fspath(path)) == os.path.abspath(out)):
            return None
    if path is None:
        path = os.environ.get("GREENREPLAY_OUTPUT")
        if not path:
            raise ValueError("greenreplay.start: no path given and GREENREPLAY_OUTPUT is not set")
    if root is None:
        root = os.environ.get("GREENREPLAY_ROOT") or os.getcwd()
    if times is None:
        times = os.environ.get("GREENREPLAY_TIMES") == "1"
    if sampler is None:
        sampler = os.environ.get("GREENREPLAY_SAMPLER") or None
    if max_size is None:
        max_size = os.environ.get("GREENREPLAY_MAX_SIZE") or 0
    if ring is None:
        ring = os.environ.get("GREENREPLAY_RING") or 0
    if flush_signal is None:
        flush_signal = os.environ.get("GREENREPLAY_FLUSH_SIGNAL") or None
    if switches is None:
        switches = os.environ.get("GREENREPLAY_SWITCHES") or ("passive" if profile else "callback")
    max_size, ring = _size(max_size), int(ring)
    signum = _signal_number(flush_signal) if flush_signal else None
    rules = _path_rules(root)
    if switches not in ("passive", "callback"):
        raise ValueError("greenreplay.start: switches must be 'passive' or 'callback', not %r" % (switches,))
    if switch_stacks is None:
        switch_stacks = os.environ.get("GREENREPLAY_SWITCH_STACKS") or "needed"
    if switch_stacks not in ("needed", "every"):
        raise ValueError("greenreplay.start: switch_stacks must be 'needed' or 'every', not %r"
                         % (switch_stacks,))
    if profile:
        _install_threading_hook()
    try:
        _greenreplay.start(os.fspath(path), rules, bool(times), chunk, sampler=sampler,
                           interval_us=interval_us, keep=keep, max_greenlets=max_greenlets,
                           profile=bool(profile), max_size=max_size, ring=ring,
                           switches=switches, entry=_entry, entry_c=_entry_c,
                           every_stack=switch_stacks == "every")
    except BaseException:
        _remove_threading_hook()
        raise
    if signum is not None:
        global _flush_signal
        _flush_signal = (signum, signal.signal(signum, _on_flush_signal))
    if _entry is not None:
        _whole_program = True


def stop(reason=1):
    """Stop recording and close the trace.

    reason: 1 stop() called (default), 2 interpreter exit; goes into the
        trailer.
    Returns the number of indexed records written, or None if not recording
    (and, under whole-program recording, for the program's own stop():
    recording goes on to the program's end; see start()).
    Raises OSError if the trace could not be written completely."""
    global _flush_signal, _whole_program
    if _whole_program and reason == 1 and _greenreplay.is_recording():
        return None
    _whole_program = False
    n = _greenreplay.stop(reason)
    _remove_threading_hook()
    if _flush_signal is not None:
        signum, prev = _flush_signal
        _flush_signal = None
        try:
            if signal.getsignal(signum) is _on_flush_signal:
                signal.signal(signum, prev if prev is not None else signal.SIG_DFL)
        except ValueError:  # not in the main thread
            pass
    return n


# Checking from Python (greenreplay/api.py): the C checker through the CLI.
from .api import CheckError, CheckResult, Recording, Violation, check, recording  # noqa: E402

__all__ += ["CheckError", "CheckResult", "Recording", "Violation", "check", "recording"]
