"""Checking traces from Python: greenreplay.check() and greenreplay.recording().

    with greenreplay.recording() as rec:      # records this block
        run_the_code_under_test()
    result = rec.check()
    assert result.clean, result.report()

The checking is done by the C checker: these functions run the command-line
tool's `check --format json` (found by greenreplay._cli.cli_path()) and read
its JSON; nothing of the rules is reimplemented here.

Exceptions:
    CheckError         the trace cannot be checked: missing, not a trace,
                       corrupt (the checker's exit status 2), or the
                       checker's output is unreadable.  .path and .message.
    FileNotFoundError  the command-line tool is not installed (the message
                       says how to get it).
    RuntimeError       recording() while this process is already recording
                       (from greenreplay.start()).
    OSError            the trace file cannot be written (from start()/stop()).
"""
import json
import os
import shutil
import subprocess
import tempfile

from ._cli import cli_path, cli_env

__all__ = ["CheckError", "CheckResult", "Violation", "Recording", "check", "recording"]


class CheckError(Exception):
    """A trace that cannot be checked (missing, not a trace, corrupt), or a
    checker that gave no usable answer.  path: the trace; message: the
    checker's one-line reason (with the byte offset for a corrupt trace)."""

    def __init__(self, path, message):
        # the CLI's own prefix ("greenreplay: PATH: ") is said once
        for prefix in ("greenreplay: ",):
            if message.startswith(prefix):
                message = message[len(prefix):]
        super().__init__("%s: %s" % (path, message) if path and not message.startswith(str(path)) else message)
        self.path = path
        self.message = message


class Violation:
    """One violation found by the checker.

    rule: "blind_spot", "imbalance", "switch_consistency", "propagation",
        "callback_guard", "displaced", "unreached", "attribution"
        (docs/RULES.md).
    index: index of the record (event) where it was found, as in `dump`.
    thread, greenlet: the trace's thread and greenlet ids (t1, g2 in dumps).
    message: the checker's explanation.
    context: dump lines of the records before it (list of str).
    allowed: True when `check --allow` or `allow = [...]` under
        [tool.greenreplay] in the nearest pyproject.toml allows it.
    advisory: True for a finding that does not fail the check: the
        program displaced the profiler (rule displaced) or its own
        profilers saw the wrong greenlets' calls (rule attribution) and
        neither `check --fail-on RULE` nor `fail_on = [...]` under
        [tool.greenreplay] made it fail."""

    __slots__ = ("rule", "index", "thread", "greenlet", "message", "context", "allowed",
                 "advisory")

    def __init__(self, rule, index, thread, greenlet, message, context=(), allowed=False,
                 advisory=False):
        self.allowed = bool(allowed)
        self.advisory = bool(advisory)
        self.rule = rule
        self.index = index
        self.thread = thread
        self.greenlet = greenlet
        self.message = message
        self.context = list(context)

    def __repr__(self):
        return "Violation(%r, index=%r, thread=%r, greenlet=%r, message=%r)" % (
            self.rule, self.index, self.thread, self.greenlet, self.message)

    def __str__(self):
        return "%s at event %s (t%s g%s): %s" % (self.rule, self.index, self.thread,
                                                self.greenlet, self.message)


class CheckResult:
    """What `greenreplay check` found in one trace.

    path: the trace file.
    clean: True when there is no violation (a truncated trace can be clean:
        see truncated_at and warnings; findings that do not fail, such as
        displaced ones, may be listed).
    violations: list of Violation, in trace order.
    counts: {rule: number of findings} for every rule, zeros included:
        the failing, allowed and not failing ones alike (summary() and
        raw["tally"] count them apart).
    records: number of records checked.
    warnings: the checker's warnings (list of str), e.g. a trace cut short.
    truncated_at: byte offset where a truncated trace ends, else None.
    trailer: {"events", "dropped", "errors", "reason"} or None (no trailer).
    notes: informational notes (frames open at stop), list of dicts.
    remarks: what looks like a lost event but is documented behaviour
        (a throw() delegated through generators, a library removing the
        profiler by design), list of str; never violations.
    profilers: the program's own profilers with what each saw and
        missed (rule attribution; docs/RULES.md, the JSON `profilers`),
        list of dicts; [] when the program installed none.
    raw: the checker's JSON object for this trace."""

    def __init__(self, path, doc):
        self.path = path
        self.raw = doc
        self.violations = [Violation(v.get("rule"), v.get("index"), v.get("tid"), v.get("gid"),
                                     v.get("message", ""), v.get("context") or [],
                                     v.get("allowed", False), v.get("advisory", False))
                           for v in doc.get("violations") or []]
        self.counts = dict(doc.get("counts") or {})
        self.clean = doc.get("status") == "clean" and not [
            v for v in self.violations if not v.allowed and not v.advisory]
        self.records = doc.get("records")
        self.warnings = list(doc.get("warnings") or [])
        self.truncated_at = doc.get("truncated_at")
        self.trailer = doc.get("trailer")
        self.notes = list(doc.get("notes") or [])
        self.remarks = list(doc.get("remarks") or [])
        self.profilers = list(doc.get("profilers") or [])

    def __bool__(self):
        return self.clean

    def __repr__(self):
        return "<CheckResult %s: %s>" % (self.path, self.summary())

    def rules(self):
        """Set of the rules with at least one violation."""
        return {v.rule for v in self.violations}

    def summary(self):
        """One line, the words of `check -q` and of the report's result line:
        "clean", "2 violations (imbalance 1, blind_spot 1)", then
        "; allowed by SOURCE: RULE N" and "; not failing: displaced 1" when
        there are such findings.  A violation is a finding that fails the
        check: the parts in each group add up to its count."""
        tally = self.raw.get("tally") or {}
        if tally.get("text"):
            return tally["text"]
        failing = [v for v in self.violations if not v.allowed and not v.advisory]
        head = "clean"
        if failing:
            by = {}
            for v in failing:
                by[v.rule] = by.get(v.rule, 0) + 1
            head = "%d violation%s (%s)" % (len(failing), "" if len(failing) == 1 else "s",
                                            ", ".join("%s %d" % kv for kv in by.items()))
        return head

    def report(self):
        """The checker's text report of this trace (what `greenreplay check
        PATH` prints: counts, each violation with its context, notes)."""
        proc = _run_check(self.path, [])
        return proc.stdout.decode("utf-8", "replace")


def _run_check(path, extra):
    cli = cli_path()
    try:
        return subprocess.run([cli, "check"] + extra + ["--", os.fspath(path)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env())
    except OSError as e:
        raise FileNotFoundError("greenreplay: cannot run %s: %s" % (cli, e.strerror)) from e


def check(path):
    """Check one trace file with the C checker.

    path: a trace (*.grt) written by the recorder.
    Returns a CheckResult.  Raises CheckError when the trace is missing or
    unusable (the checker's exit status 2) or the checker's output cannot be
    read, FileNotFoundError when the command-line tool is not installed."""
    path = os.fspath(path)
    proc = _run_check(path, ["--format", "json"])
    err = proc.stderr.decode("utf-8", "replace").strip()
    try:
        doc = json.loads(proc.stdout.decode("utf-8", "replace"))
        trace = doc["traces"][0]
    except (ValueError, KeyError, IndexError, TypeError):
        raise CheckError(path, "greenreplay check gave no JSON report (exit %d)%s"
                         % (proc.returncode, ": " + err.splitlines()[-1] if err else "")) from None
    if trace.get("status") == "unusable":
        raise CheckError(path, trace.get("error") or err or "unusable trace")
    if proc.returncode not in (0, 1):
        raise CheckError(path, err.splitlines()[-1] if err else "greenreplay check exited %d" % proc.returncode)
    return CheckResult(path, trace)


class Recording:
    """A recording made by recording(); also its result once checked.

    path: the trace file.  temporary: True when recording() chose the path
    (in a fresh temporary directory; cleanup() removes it).
    result: the CheckResult of the last check(), else None."""

    def __init__(self, path, temporary, start_kwargs):
        self.path = path
        self.temporary = temporary
        self.result = None
        self._start_kwargs = start_kwargs
        self._active = False

    def __enter__(self):
        from . import start
        try:
            start(self.path, **self._start_kwargs)
        except BaseException:
            # start() refused (already recording, unwritable file, bad
            # argument): the temporary directory recording() made holds
            # nothing worth keeping and nobody gets a Recording to clean it.
            self.cleanup()
            raise
        self._active = True
        return self

    def __exit__(self, exc_type, exc, tb):
        from . import stop
        if self._active:
            self._active = False
            stop()
        return False

    def check(self):
        """Check the trace (after the with block); returns a CheckResult.
        Raises RuntimeError inside the with block, and what check() raises."""
        if self._active:
            raise RuntimeError("greenreplay: Recording.check() inside its with block; "
                               "check after the block has ended")
        self.result = check(self.path)
        return self.result

    def cleanup(self):
        """Remove the trace (and its .times side channel) when recording()
        chose a temporary path; a path you gave is left alone."""
        if self.temporary:
            shutil.rmtree(os.path.dirname(self.path), ignore_errors=True)


def recording(path=None, **start_kwargs):
    """Context manager that records the with block:

        with greenreplay.recording() as rec:
            ...
        result = rec.check()

    path: the trace to write; default a new file "trace.grt" in a fresh
        temporary directory (kept after the block so that it can be checked
        and inspected; rec.cleanup() removes it).
    start_kwargs: passed to greenreplay.start() (times=, root=, ...).
    Returns a Recording.  Entering raises what start() raises (RuntimeError
    when already recording, OSError when the file cannot be written), after
    removing the temporary directory it made (a path you gave is left
    alone); leaving stops recording even when the block raised."""
    temporary = path is None
    if temporary:
        path = os.path.join(tempfile.mkdtemp(prefix="greenreplay-"), "trace.grt")
    return Recording(os.fspath(path), temporary, start_kwargs)
