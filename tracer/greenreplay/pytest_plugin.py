"""pytest plugin: record each test and check its trace (`pytest --greenreplay`).

Registered through the `pytest11` entry point of the installed package; in a
source tree without installing, load it with `-p greenreplay.pytest_plugin`.
Nothing happens without --greenreplay or `greenreplay = true` in the ini
file (pytest.ini, or pyproject.toml's [tool.pytest.ini_options]).

Options:
  --greenreplay              record the call phase of every test into its own
                             trace and check it with the C checker
  --greenreplay-dir DIR      where the traces go (default: greenreplay-traces
                             under pytest's rootdir); one file a test, named
                             after its node id
  --greenreplay-keep all|failed  keep every trace, or (default) only those
                             with violations or errors
  --greenreplay-warn         a violation only warns (GreenreplayWarning)
                             instead of failing the test
  --greenreplay-junit FILE   JUnit XML of greenreplay's verdicts: one test
                             case per test, failure = unexpected violations

Ini options (pytest.ini [pytest], pyproject.toml [tool.pytest.ini_options],
tox.ini, setup.cfg), each the default of the command-line option beside it:
  greenreplay = true          --greenreplay
  greenreplay_dir = DIR       --greenreplay-dir DIR (relative to the rootdir)
  greenreplay_keep = all      --greenreplay-keep all
  greenreplay_warn = true     --greenreplay-warn
  greenreplay_junit = FILE    --greenreplay-junit FILE (relative to the rootdir)
  greenreplay_allow = RULE... rules tolerated in every test (as allow= of
                              the marker; --greenreplay-allow RULE, repeated)

At the end of the run, pytest's terminal summary has one line: how many
tests were recorded and checked, how many had findings, and where the
traces kept are (none are kept of clean tests unless keep is all).  A trace
directory the plugin made and left empty is removed.

Marker (registered): @pytest.mark.greenreplay(skip=False, expect=(), allow=())
  skip=True     do not record this test
  expect=[...]  rules that must be found (the test fails if one is not) and
                are then not violations of this test
  allow=[...]   rules tolerated when found

The nearest pyproject.toml's [tool.greenreplay] table (allow = ["RULE" or
"RULE:FUNCTION", ...], fail_on = ["displaced"], strict_known = true|false)
applies to every test, as it does to `greenreplay check`.  As there, a test
whose program displaced the profiler (rule displaced) passes unless
fail_on names displaced.

A test fails through greenreplay when its trace has a violation of a rule
not in expect/allow, when an expected rule is missing, or when its trace
cannot be checked (CheckError); the checker's text report is the failure
text.  The test's own failure is kept and the report added as a section.

Parallel runs (pytest-xdist, -n N): supported.  Each worker records its own
tests into the same directory (one file per test); the verdicts travel in
the reports' user_properties, and the controller writes the JUnit file.

A test that records itself (greenreplay.start() or recording()) cannot be
recorded by the plugin too: mark it skip=True.
"""
import hashlib
import json
import os
import re
import warnings
from xml.sax.saxutils import escape, quoteattr

import pytest

RULES = ("imbalance", "blind_spot", "switch_consistency", "propagation", "callback_guard",
         "displaced", "unreached", "attribution")
_KEY = "greenreplay"            # name of the user property carrying the verdict


class GreenreplayWarning(UserWarning):
    """A violation found in a test's trace under --greenreplay-warn."""


def pytest_addoption(parser):
    group = parser.getgroup("greenreplay", "greenlet/profiler trace checking (greenreplay)")
    # Flags default to None: the ini option (below) applies when a flag is
    # not given.
    group.addoption("--greenreplay", action="store_true", default=None,
                    help="record each test into its own trace and check it; a violation "
                    "fails the test (ini: greenreplay = true)")
    group.addoption("--greenreplay-dir", metavar="DIR", default=None,
                    help="directory of the traces (default: ROOTDIR/greenreplay-traces; "
                    "ini: greenreplay_dir)")
    group.addoption("--greenreplay-keep", choices=("all", "failed"), default=None,
                    help="keep every trace, or only those with violations or errors "
                    "(default; ini: greenreplay_keep)")
    group.addoption("--greenreplay-warn", action="store_true", default=None,
                    help="violations only warn instead of failing the test "
                    "(ini: greenreplay_warn = true)")
    group.addoption("--greenreplay-junit", metavar="FILE", default=None,
                    help="write a JUnit XML report with one test case per test "
                    "(ini: greenreplay_junit)")
    group.addoption("--greenreplay-allow", metavar="RULE", action="append", default=None,
                    help="a rule tolerated in every test; repeat for more "
                    "(ini: greenreplay_allow)")
    parser.addini("greenreplay", "record and check every test (as --greenreplay)",
                  type="bool", default=False)
    parser.addini("greenreplay_dir", "directory of the traces, relative to the rootdir "
                  "(as --greenreplay-dir)", default="")
    parser.addini("greenreplay_keep", "all: keep every trace; failed: only those with "
                  "violations or errors (as --greenreplay-keep)", default="failed")
    parser.addini("greenreplay_warn", "violations only warn (as --greenreplay-warn)",
                  type="bool", default=False)
    parser.addini("greenreplay_junit", "JUnit XML report, relative to the rootdir "
                  "(as --greenreplay-junit)", default="")
    parser.addini("greenreplay_allow", "rules tolerated in every test (as --greenreplay-allow)",
                  type="args", default=[])


def _setting(config, name):
    """The command-line option `name` when given, else the ini option's
    value (paths relative to the rootdir)."""
    value = config.getoption(name)
    if value is not None:
        return value
    value = config.getini(name)
    if name in ("greenreplay_dir", "greenreplay_junit"):
        if not value:
            return None
        root = str(getattr(config, "rootpath", None) or config.rootdir)
        return os.path.join(root, value)
    if name == "greenreplay_keep" and value not in ("all", "failed"):
        raise pytest.UsageError("greenreplay_keep = %s: must be all or failed" % value)
    if name == "greenreplay_allow":
        return list(value)
    return value


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "greenreplay(skip=False, expect=(), allow=()): greenreplay recording of this test: "
        "skip=True does not record it; expect: rules that must be found; allow: rules tolerated")
    if config.getoption("greenreplay_junit") and not _setting(config, "greenreplay"):
        raise pytest.UsageError("--greenreplay-junit needs --greenreplay")
    if _setting(config, "greenreplay"):
        bad = set(_setting(config, "greenreplay_allow") or ()) - set(RULES)
        if bad:
            raise pytest.UsageError("greenreplay: unknown rule %s in greenreplay_allow "
                                    "(rules: %s)" % (", ".join(sorted(bad)), ", ".join(RULES)))
        plugin = _Plugin(config)
        config.pluginmanager.register(plugin, "greenreplay-recorder")


def _marker_options(item):
    m = item.get_closest_marker("greenreplay")
    if m is None:
        return False, set(), set()
    if m.args:
        raise pytest.UsageError("%s: @pytest.mark.greenreplay takes keywords only "
                                "(skip=, expect=, allow=)" % item.nodeid)
    unknown = set(m.kwargs) - {"skip", "expect", "allow"}
    if unknown:
        raise pytest.UsageError("%s: @pytest.mark.greenreplay: unknown keyword %s"
                                % (item.nodeid, ", ".join(sorted(unknown))))
    expect, allow = m.kwargs.get("expect", ()), m.kwargs.get("allow", ())
    expect = {expect} if isinstance(expect, str) else set(expect)
    allow = {allow} if isinstance(allow, str) else set(allow)
    bad = (expect | allow) - set(RULES)
    if bad:
        raise pytest.UsageError("%s: @pytest.mark.greenreplay: unknown rule %s (rules: %s)"
                                % (item.nodeid, ", ".join(sorted(bad)), ", ".join(RULES)))
    return bool(m.kwargs.get("skip", False)), expect, allow


def _trace_name(nodeid):
    """File name of a test's trace: the node id made safe, with a short hash
    so that two ids that read alike do not share a file."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")[:120]
    return "%s-%s.grt" % (safe, hashlib.sha1(nodeid.encode("utf-8")).hexdigest()[:8])


class _Plugin:
    def __init__(self, config):
        self.config = config
        d = _setting(config, "greenreplay_dir")
        root = str(getattr(config, "rootpath", None) or config.rootdir)
        self.dir = os.path.abspath(d) if d else os.path.join(root, "greenreplay-traces")
        self.root = root
        self.keep = _setting(config, "greenreplay_keep") or "failed"
        self.warn = bool(_setting(config, "greenreplay_warn"))
        self.junit = _setting(config, "greenreplay_junit")
        self.allow = set(_setting(config, "greenreplay_allow") or ())
        # A directory that is not there yet is removed at the end if it is
        # still empty (the controller decides: it configures first).
        self.dir_existed = os.path.isdir(self.dir)
        self.verdicts = []          # (nodeid, verdict dict, outcome, duration), controller side
        self.seen = set()

    # -- the worker (or the only process): record and check ----------------

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        import greenreplay
        item._greenreplay = None
        skip, expect, allow = _marker_options(item)
        allow = allow | self.allow
        if skip:
            item._greenreplay = {"status": "skipped", "reason": "marker skip=True"}
            yield
            return
        os.makedirs(self.dir, exist_ok=True)
        path = os.path.join(self.dir, _trace_name(item.nodeid))
        try:
            greenreplay.start(path, root=self.root)
        except Exception as e:  # already recording, unwritable file
            item._greenreplay = {"status": "error", "trace": path,
                                 "message": "cannot record: %s: %s" % (type(e).__name__, e)}
            yield
            return
        try:
            yield
        finally:
            try:
                greenreplay.stop()
            except Exception as e:
                item._greenreplay = {"status": "error", "trace": path,
                                     "message": "stop failed: %s: %s" % (type(e).__name__, e)}
        if getattr(item, "_greenreplay", None) is None:
            item._greenreplay = self._verdict(path, expect, allow)

    def _verdict(self, path, expect, allow):
        import greenreplay
        try:
            result = greenreplay.check(path)
        except greenreplay.CheckError as e:
            return {"status": "error", "trace": path, "message": "trace cannot be checked: %s" % e}
        except FileNotFoundError as e:
            return {"status": "error", "trace": path, "message": str(e)}
        found = result.rules()
        # allowed by `allow = [...]` under [tool.greenreplay] in the
        # nearest pyproject.toml (the checker reads it from the cwd)
        # and the findings that do not fail (displaced) unless
        # `fail_on = [...]` there makes them fail
        unexpected = [v for v in result.violations
                      if v.rule not in expect | allow and not v.allowed and not v.advisory]
        missing = sorted(expect - found)
        v = {"trace": path, "counts": result.counts, "tally": result.summary(),
             "expected": sorted(expect),
             "found": sorted(found), "missing": missing,
             "unexpected": [str(x) for x in unexpected]}
        if unexpected or missing:
            v["status"] = "violations"
            lines = []
            if unexpected:
                lines.append("greenreplay: %d unexpected violation%s in %s"
                             % (len(unexpected), "" if len(unexpected) == 1 else "s", path))
            for rule in missing:
                lines.append("greenreplay: expected a %s violation, none found in %s" % (rule, path))
            v["message"] = "\n".join(lines)
            v["report"] = result.report() if unexpected else ""
        else:
            # only findings that do not fail (displaced): clean
            failing = {x.rule for x in result.violations if not x.advisory} | (expect & found)
            v["status"] = "expected" if failing else "clean"
            if self.keep == "failed" and not found:
                _remove_trace(path)
                v["trace"] = None
        return v

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        rep = outcome.get_result()
        if call.when != "call":
            return
        v = getattr(item, "_greenreplay", None)
        if v is None:
            return
        rep.user_properties.append((_KEY, json.dumps(v, sort_keys=True)))
        if v["status"] not in ("violations", "error"):
            return
        text = v.get("message", "")
        if v.get("report"):
            text += "\n\n" + v["report"].rstrip("\n")
        if self.warn:
            warnings.warn_explicit(GreenreplayWarning(text), GreenreplayWarning,
                                   item.location[0], (item.location[1] or 0) + 1)
            rep.sections.append(("greenreplay", text))
        elif rep.passed:
            rep.outcome = "failed"
            rep.longrepr = text
        else:
            rep.sections.append(("greenreplay", text))

    # -- the controller (or the only process): JUnit ------------------------

    def pytest_runtest_logreport(self, report):
        props = dict((k, v) for k, v in report.user_properties if k == _KEY)
        if report.when == "call" or (report.when == "setup" and not report.passed):
            if report.nodeid in self.seen:
                return
            self.seen.add(report.nodeid)
            if _KEY in props:
                v = json.loads(props[_KEY])
            elif report.skipped:
                v = {"status": "skipped", "reason": "test skipped"}
            else:
                v = {"status": "skipped", "reason": "test did not run (setup %s)" % report.outcome}
            self.verdicts.append((report.nodeid, v, report.outcome, report.duration))

    def pytest_sessionfinish(self, session):
        if hasattr(self.config, "workerinput"):
            return
        if self.junit:
            write_junit(self.junit, self.verdicts)
        if not self.dir_existed:
            try:
                os.rmdir(self.dir)      # only when empty
            except OSError:
                pass

    def pytest_terminal_summary(self, terminalreporter):
        if hasattr(self.config, "workerinput"):
            return
        terminalreporter.write_line(summary_line(self.verdicts, self.dir, self.warn))


def summary_line(verdicts, directory, warn=False):
    """The one line of pytest's terminal summary: tests recorded and checked,
    those with findings, where the kept traces are."""
    status = [v["status"] for _, v, _, _ in verdicts]
    checked = sum(1 for s in status if s != "skipped")
    bad = status.count("violations")
    errors = status.count("error")
    kept = sum(1 for _, v, _, _ in verdicts if v.get("trace") and os.path.exists(v["trace"]))
    parts = ["greenreplay: %d test%s recorded and checked" % (checked, "" if checked == 1 else "s")]
    if bad:
        parts.append("%d with violations%s" % (bad, " (warnings only)" if warn else ""))
    else:
        parts.append("no violations")
    if errors:
        parts.append("%d could not be checked" % errors)
    if kept:
        parts.append("%d trace%s kept in %s" % (kept, "" if kept == 1 else "s", directory))
    else:
        parts.append("no traces kept")
    return ", ".join(parts)


def _remove_trace(path):
    for p in (path, path + ".times"):
        try:
            os.remove(p)
        except OSError:
            pass


_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")


def _xml_text(text):
    # XML 1.0 has no control characters but tab, newline and return.
    return escape(_XML_BAD.sub("?", text))


def _xml_attr(text):
    return quoteattr(_XML_BAD.sub("?", text))


def write_junit(path, verdicts):
    """JUnit XML: one testsuite "greenreplay", one testcase per test (name:
    the node id), <failure> for unexpected or missing violations, <error>
    for a trace that could not be recorded or checked, <skipped> for tests
    not recorded.  Properties: the trace path and the count of each rule."""
    failures = sum(1 for _, v, _, _ in verdicts if v["status"] == "violations")
    errors = sum(1 for _, v, _, _ in verdicts if v["status"] == "error")
    skipped = sum(1 for _, v, _, _ in verdicts if v["status"] == "skipped")
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<testsuites>',
           '  <testsuite name="greenreplay" tests="%d" failures="%d" errors="%d" skipped="%d">'
           % (len(verdicts), failures, errors, skipped)]
    for nodeid, v, outcome, duration in verdicts:
        file_part, _, name = nodeid.partition("::")
        classname = file_part.replace("/", ".")
        if classname.endswith(".py"):
            classname = classname[:-3]
        out.append('    <testcase classname=%s name=%s time="%.3f">'
                   % (_xml_attr(classname), _xml_attr(name or nodeid), duration or 0.0))
        props = [("greenreplay.status", v["status"]), ("test.outcome", outcome)]
        if v.get("tally"):  # check's result line: violations, allowed, not failing
            props.append(("greenreplay.result", v["tally"]))
        if v.get("trace"):
            props.append(("greenreplay.trace", v["trace"]))
        for rule, n in sorted((v.get("counts") or {}).items()):
            props.append(("greenreplay.%s" % rule, str(n)))
        if v.get("expected"):
            props.append(("greenreplay.expected", ",".join(v["expected"])))
        out.append('      <properties>')
        out += ['        <property name=%s value=%s/>' % (_xml_attr(k), _xml_attr(str(x))) for k, x in props]
        out.append('      </properties>')
        if v["status"] == "violations":
            text = v.get("message", "") + ("\n\n" + v["report"] if v.get("report") else "")
            out.append('      <failure message=%s>%s</failure>'
                       % (_xml_attr(v.get("message", "").splitlines()[0] if v.get("message") else "violations"),
                          _xml_text(text)))
        elif v["status"] == "error":
            out.append('      <error message=%s/>' % _xml_attr(v.get("message", "error")))
        elif v["status"] == "skipped":
            out.append('      <skipped message=%s/>' % _xml_attr(v.get("reason", "not recorded")))
        out.append('    </testcase>')
    out += ['  </testsuite>', '</testsuites>', '']
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out))
