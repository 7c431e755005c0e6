#!/usr/bin/env python3
"""ci/matrix-report.py - outcomes and reports of the compatibility matrix.

Used by ci/matrix.sh, with the host's python3 (3.9 or later, standard
library only).  Subcommands:

  envs ENVS.json [ID|PATTERN ...]
      the environments of `ci/envs.sh list --json` (plus the build-only
      ones named with --extra NAME), in matrix order, as tab-separated lines
      ID KIND STATUS COMMAND PYTHON_VERSION GREENLET GEVENT REASON;
      exit 2 when a selected ID matches nothing
  cell CELLFILE --known FILE --envs ENVS.json
      classify one cell (pass, known, fail, skip, xpass) from the facts
      ci/matrix.sh wrote in CELLFILE (NAME.cell) and the check report beside
      it; writes NAME.outcome.json and prints "OUTCOME<TAB>TEXT"
  collect --out DIR --known FILE --envs ENVS.json [--docs FILE] [--meta K=V]
          [--require-kills]
      gather every cell of DIR/cells into DIR/matrix.json, then render;
      --require-kills: a mutant surviving a fixture aimed at it counts as
      a failure (exit 1)
  render MATRIX.json [--out DIR] [--docs FILE]
      write DIR/matrix.md, DIR/index.html (+ one page per cell),
      DIR/junit.xml (and FILE, the Markdown, e.g. docs/matrix.md)
  merge A.json B.json ... -o OUT.json [--docs FILE]
      join the matrices of several runs (one CI job per environment) into
      OUT.json, copy their cell files beside it, then render
  known [FILE]
      parse and list the known issues (exit 1 when the file is invalid)
  verdict CHECK.json --known FILE --fixture NAME --python V [--greenlet V]
          [--debug] [--want RULES] [--want-crash] [--crashed] [--rc N]
          [--check-rc N]
      classify one recording outside the matrix (tests/integration/run.sh)
      as `cell` does; prints "OUTCOME<TAB>KNOWN IDS<TAB>TEXT"

Exit status of collect, render and merge: 0 no cell is `fail`, 1 some cell
is `fail`, 3 no `fail` but some environment could not run (status
`error`), 2 bad usage or input.
"""

import configparser
import fnmatch
import html
import importlib.util
import json
import os
import re
import shutil
import sys
import time
import xml.sax.saxutils as saxutils

SCHEMA = "greenreplay-matrix/1"
OUTCOMES = ["pass", "known", "xpass", "fail", "skip", "killed", "survived"]
KIND_ORDER = {"host": 0, "root": 1, "pyenv": 2, "user": 3}
MINORS = ["3.9", "3.10", "3.11", "3.12", "3.13", "3.14", "3.15"]


def die(msg, code=2):
    sys.stderr.write("matrix: %s\n" % msg)
    sys.exit(code)


# ----------------------------------------------------------------- versions

def parse_version(text):
    """'3.12.1' -> (3, 12, 1); '3.15.0a1' -> (3, 15, 0); None if no digits."""
    if text is None:
        return None
    parts = []
    for piece in str(text).strip().split("."):
        m = re.match(r"\d+", piece)
        if not m:
            break
        parts.append(int(m.group(0)))
    return tuple(parts) if parts else None


def _cmp_prefix(v, bound, upper):
    """Compare version v with a bound of possibly fewer components.  For an
    upper bound, 3.12 stands for every 3.12.x (v <= bound when v's prefix
    equals it)."""
    n = len(bound)
    head = v[:n] + (0,) * max(0, n - len(v))
    if head != bound:
        return -1 if head < bound else 1
    if upper:
        return 0
    return 0 if len(v) >= n else -1


class VersionSpec:
    """Comma-separated items: 'any', 'none', '3.12' (every 3.12.x),
    '3.12.0-3.12.4', '3.9-3.12', '>=3.13', '>3.1', '<=3.12', '<3.13'."""

    def __init__(self, text, what):
        self.text = (text or "any").strip()
        self.items = []
        for raw in self.text.split(","):
            item = raw.strip()
            if not item:
                continue
            if item in ("any", "*"):
                self.items.append(("any", None, None))
                continue
            if item == "none":
                self.items.append(("none", None, None))
                continue
            m = re.match(r"^(>=|<=|>|<)\s*([0-9][0-9.]*)$", item)
            if m:
                self.items.append((m.group(1), parse_version(m.group(2)), None))
                continue
            m = re.match(r"^([0-9][0-9.]*)\s*-\s*([0-9][0-9.]*)$", item)
            if m:
                self.items.append(("range", parse_version(m.group(1)), parse_version(m.group(2))))
                continue
            if re.match(r"^[0-9][0-9.]*$", item):
                self.items.append(("eq", parse_version(item), None))
                continue
            raise ValueError("%s: bad version item %r (use 3.12, 3.12.0-3.12.4, >=3.13, any, none)"
                             % (what, item))
        if not self.items:
            raise ValueError("%s: empty version list" % what)

    def matches(self, version):
        """version: a version string, or None/'none' when absent."""
        absent = version in (None, "", "none") or str(version).startswith("broken")
        v = None if absent else parse_version(version)
        for op, a, b in self.items:
            if op == "any":
                return True
            if op == "none":
                if absent:
                    return True
                continue
            if v is None:
                continue
            if op == "eq" and _cmp_prefix(v, a, True) == 0:
                return True
            if op == "range" and _cmp_prefix(v, a, False) >= 0 and _cmp_prefix(v, b, True) <= 0:
                return True
            if op == ">=" and _cmp_prefix(v, a, False) >= 0:
                return True
            if op == ">" and _cmp_prefix(v, a, True) > 0:
                return True
            if op == "<=" and _cmp_prefix(v, a, True) <= 0:
                return True
            if op == "<" and _cmp_prefix(v, a, False) < 0:
                return True
        return False


# ------------------------------------------------------------ known issues

def split_list(text):
    return [x for x in re.split(r"[,\s]+", (text or "").strip()) if x]


BUILDS = ("any", "debug", "release")


class KnownIssue:
    FIELDS = {"title", "python", "greenlet", "build", "fixtures", "rules", "missing", "message", "evidence",
              "status", "profilers"}
    # Projects whose public issue numbers name an entry (PROJECT-N).
    PROJECTS = ("cpython", "greenlet", "gevent", "yappi", "coveragepy", "line_profiler", "greenreplay-observed")

    def __init__(self, ident, sec, path):
        where = "%s [%s]" % (path, ident)
        unknown = {k for k in sec if k not in self.FIELDS and not k.startswith("message.")}
        if unknown:
            raise ValueError("%s: unknown field(s) %s" % (where, ", ".join(sorted(unknown))))
        if not re.match(r"^(%s)-[0-9]+$" % "|".join(self.PROJECTS), ident):
            raise ValueError("%s: the id must be PROJECT-N, PROJECT one of %s"
                             % (where, ", ".join(self.PROJECTS)))
        # profilers: the entry explains differences of the profiler axis
        # (ci/profilers.sh) for these profilers (conform adapter names,
        # patterns allowed); its rules are then difference kinds of
        # `greenreplay conform --json`.  Without it, it explains checker
        # violations of the matrix only.
        self.profilers = split_list(sec.get("profilers"))
        self.id = ident
        self.title = sec.get("title", "").strip()
        if not self.title:
            raise ValueError("%s: no title" % where)
        self.python = VersionSpec(sec.get("python"), where + " python")
        self.greenlet = VersionSpec(sec.get("greenlet"), where + " greenlet")
        # build: "debug" (only interpreters built with Py_DEBUG, the envs whose
        # `ci/envs.sh list --json` says "debug": true), "release", or "any".
        self.build = (sec.get("build") or "any").strip()
        if self.build not in BUILDS:
            raise ValueError("%s: build must be one of %s, not %r" % (where, ", ".join(BUILDS), self.build))
        self.fixtures = split_list(sec.get("fixtures"))
        if not self.fixtures:
            raise ValueError("%s: no fixtures (name them, or * for any)" % where)
        self.rules = split_list(sec.get("rules"))
        self.missing = split_list(sec.get("missing"))
        self.status = (sec.get("status") or "").strip()
        self.informational = self.status.startswith("informational")
        if not self.rules and not self.missing and not self.informational:
            raise ValueError("%s: neither rules nor missing: it would explain nothing "
                             "(status = informational for a difference seen in dumps only)" % where)
        if self.informational and (self.rules or self.missing):
            raise ValueError("%s: an informational entry explains no rule" % where)
        # message: a pattern every explained violation's message must match;
        # message.RULE: the same for RULE only.
        self.message = None
        self.patterns = {}
        for key, val in sec.items():
            if key == "message" or key.startswith("message."):
                rule = key[len("message."):] if key != "message" else "*"
                try:
                    self.patterns[rule] = re.compile(val.strip())
                except re.error as e:
                    raise ValueError("%s: bad %s pattern: %s" % (where, key, e))
                if rule != "*" and rule not in self.rules:
                    raise ValueError("%s: %s names a rule not in rules" % (where, key))
        if self.patterns:
            self.message = "; ".join("%s: %s" % (r, p.pattern) for r, p in sorted(self.patterns.items()))
        self.evidence = " ".join((sec.get("evidence") or "").split())

    def names_fixture(self, fixture):
        return not self.informational and any(f != "*" and fnmatch.fnmatchcase(fixture, f)
                                              for f in self.fixtures)

    def applies(self, python, greenlet, fixture, debug=False):
        if self.build != "any" and (self.build == "debug") != bool(debug):
            return False
        return (self.python.matches(python) and self.greenlet.matches(greenlet)
                and any(fnmatch.fnmatchcase(fixture, f) for f in self.fixtures))

    def explains(self, rule, message):
        if not any(fnmatch.fnmatchcase(rule, r) for r in self.rules):
            return False
        for key in (rule, "*"):
            p = self.patterns.get(key)
            if p is not None and not p.search(message or ""):
                return False
        return True

    def to_json(self):
        return {"id": self.id, "title": self.title, "python": self.python.text,
                "greenlet": self.greenlet.text, "build": self.build, "fixtures": self.fixtures, "rules": self.rules,
                "missing": self.missing, "message": self.message, "evidence": self.evidence,
                "status": self.status or None, "profilers": self.profilers or None}


def load_known(path):
    cp = configparser.ConfigParser(interpolation=None, comment_prefixes=("#", ";"),
                                   inline_comment_prefixes=None, strict=True)
    try:
        with open(path, encoding="utf-8") as f:
            cp.read_file(f)
    except FileNotFoundError:
        die("known-issues file not found: %s" % path)
    except configparser.Error as e:
        die("%s: %s" % (path, str(e).replace("\n", " ")))
    issues = []
    for ident in cp.sections():
        try:
            issues.append(KnownIssue(ident, dict(cp.items(ident)), path))
        except ValueError as e:
            die(str(e))
    return issues


# ----------------------------------------------------------------- cells

def read_kv(path):
    out = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if "=" in line:
                k, v = line.split("=", 1)
                out[k] = v
    return out


def load_envs(path):
    try:
        with open(path, encoding="utf-8") as f:
            envs = json.load(f)
    except (OSError, ValueError) as e:
        die("cannot read the environments list %s: %s" % (path, e))
    if not isinstance(envs, list):
        die("%s: not a list of environments" % path)
    return {e["id"]: e for e in envs if isinstance(e, dict) and "id" in e}


def env_sort_key(e):
    v = parse_version(e.get("python_version") or e.get("python")) or (99,)
    return (v[:2], KIND_ORDER.get(e.get("kind"), 9), e.get("id", ""))


def check_violations(path):
    """Violations of a `check --format json` report: (list, error).  Every
    object with a string member "rule" inside a trace's "violations" counts,
    whatever the rule's name."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        return None, "no valid JSON from check (%s)" % e
    out = []
    warnings = []
    for t in doc.get("traces", []) if isinstance(doc, dict) else []:
        if not isinstance(t, dict):
            continue
        warnings.extend(str(w) for w in t.get("warnings") or [])
        for v in t.get("violations") or []:
            if isinstance(v, dict) and isinstance(v.get("rule"), str):
                out.append({"rule": v["rule"], "index": v.get("index"), "tid": v.get("tid"),
                            "gid": v.get("gid"), "message": str(v.get("message", "")),
                            "advisory": v.get("advisory") is True})
    return {"violations": out, "warnings": warnings}, None


# What a dying interpreter says on stderr.  glibc's assert():
#   PROG: FILE:LINE: FUNCTION: Assertion `EXPR' failed.
# CPython's _PyObject_AssertFailed (debug builds: negative reference
# counts, _PyObject_ASSERT), printed before its fatal error:
#   FILE:LINE: FUNCTION: Assertion "EXPR" failed[: MESSAGE]
# and CPython's fatal errors (GIL not held, allocator misuse, ...):
#   Fatal Python error: FUNCTION: MESSAGE
ASSERT_GLIBC = re.compile(r"^(?:\S+: )?(?P<file>[^\s:]+):(?P<line>\d+): (?P<function>[^:]+): "
                          r"Assertion [`'\u2018](?P<expr>.*)['\u2019] failed\.?\s*$")
ASSERT_PY = re.compile(r"^(?P<file>[^\s:]+):(?P<line>\d+): (?:(?P<function>[^:]+): )?"
                       r"Assertion (?:\"(?P<expr>.*)\" )?failed(?:: (?P<message>.*))?$")
FATAL_PY = re.compile(r"^Fatal Python error: (?P<fatal>.*)$")


def crash_details(log_path, signal):
    """The crash of a cell whose program died by a signal: a dict with the
    signal, the first assertion on its output (file, line, function,
    expression, message), CPython's fatal error line, and `text`, one line
    for reports ("SIGABRT: Python/instrumentation.c:1066 in
    get_tools_for_instruction: assertion `debug_check_sanity(interp, code)'
    failed").  The file name keeps its last two components."""
    out = {"signal": signal or None, "assertion": None, "fatal": None}
    try:
        with open(log_path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        lines = []
    for line in lines:
        line = line.rstrip()
        if out["assertion"] is None:
            m = ASSERT_GLIBC.match(line) or ASSERT_PY.match(line)
            if m:
                d = m.groupdict()
                out["assertion"] = {"file": "/".join(d["file"].split("/")[-2:]), "line": int(d["line"]),
                                    "function": d.get("function"), "expression": d.get("expr"),
                                    "message": d.get("message")}
                continue
        if out["fatal"] is None:
            m = FATAL_PY.match(line)
            if m:
                out["fatal"] = m.group("fatal").strip()
    text = out["signal"] or "killed by a signal"
    a = out["assertion"]
    if a:
        text += ": %s:%d%s: assertion %s failed%s" % (
            a["file"], a["line"], (" in " + a["function"]) if a["function"] else "",
            ("`%s'" % a["expression"]) if a["expression"] else "", (": " + a["message"]) if a["message"] else "")
    if out["fatal"] and not (a and out["fatal"].startswith("_PyObject_AssertFailed")):
        text += "; Fatal Python error: %s" % out["fatal"]
    out["text"] = text
    return out


def short_crash(crash):
    """A cell-sized form: signal, FILE:LINE and the expression."""
    if not crash:
        return ""
    a = crash.get("assertion")
    s = crash.get("signal") or "signal"
    if a:
        s += " `%s:%d` `%s`" % (a["file"].split("/")[-1], a["line"], a.get("expression") or a.get("message") or "")
    elif crash.get("fatal"):
        s += " Fatal: `%s`" % crash["fatal"][:60]
    return s


def short_skip(reason):
    r = reason or ""
    if r.startswith("environment "):
        return "env error" if "could not run" in r.split(":")[0] else "env unavailable"
    m = re.match(r"^(\w+) (unavailable|broken) in this environment", r)
    if m:
        return "no %s" % m.group(1) if m.group(2) == "unavailable" else "%s broken" % m.group(1)
    return "skip"


def classify(cell, env, known, base_dir):
    """The outcome of one cell (a dict for matrix.json)."""
    env_id, fixture = cell.get("env"), cell.get("fixture")
    pyv = env.get("python_version") or env.get("python")
    glv = env.get("greenlet")
    debug = env.get("debug") is True
    res = {"env": env_id, "fixture": fixture, "outcome": None, "reason": "", "known": [],
           "expected": cell.get("expect_header", ""), "got": None, "violations": [],
           "warnings": [], "golden": cell.get("golden", "unchecked"),
           "golden_file": cell.get("golden_file") or None, "golden_note": cell.get("golden_note") or None,
           "golden_env": cell.get("golden_env") or None,
           "determinism": cell.get("determinism", "unchecked"),
           "determinism_note": cell.get("determinism_note") or None,
           "callback_mode": cell.get("callback_mode", "unchecked"),
           "callback_rules": cell.get("callback_rules") or None,
           "whole_mode": cell.get("whole_mode", "unchecked"),
           "whole_rules": cell.get("whole_rules") or None,
           "whole_expect": cell.get("whole_expect") or None,
           "exit_status": int(cell["rc"]) if cell.get("rc", "").lstrip("-").isdigit() else None,
           "duration_s": float(cell["duration"]) if cell.get("duration") else None, "files": {},
           "crash": None}
    stem = os.path.join("cells", env_id, fixture)
    for key, suffix in (("trace", ".grt"), ("dump", ".txt"), ("log", ".log"),
                        ("check_json", ".check.json"), ("check_text", ".check.txt"),
                        ("golden_diff", ".diff"), ("determinism_diff", ".again.diff")):
        if os.path.exists(os.path.join(base_dir, stem + suffix)):
            res["files"][key] = stem + suffix
    state = cell.get("state")
    if state == "skip":
        res["outcome"] = "skip"
        res["reason"] = cell.get("skip_reason") or "skipped"
        return res
    want_rules = set(split_list(cell.get("want_rules")))
    want_crash = cell.get("want_crash") == "1"
    crashed = cell.get("crashed") == "1"
    problem = cell.get("problem", "")
    got_rules = set()
    if not problem:
        rep, error = check_violations(cell.get("check_json") or os.path.join(base_dir, stem + ".check.json"))
        if error:
            problem = error
        else:
            res["violations"] = rep["violations"]
            res["warnings"] = rep["warnings"]
            got_rules = {v["rule"] for v in rep["violations"]}
            # findings that do not fail (displaced) leave the exit status 0
            failing = {v["rule"] for v in rep["violations"] if not v["advisory"]}
            crc = cell.get("check_rc")
            if (crc == "0" and failing) or (crc == "1" and not failing):
                problem = "check exit status %s disagrees with its JSON report (rules: %s)" % (
                    crc, ",".join(sorted(got_rules)) or "none")
    counts = {}
    for v in res["violations"]:
        counts[v["rule"]] = counts.get(v["rule"], 0) + 1
    res["got"] = {"rules": sorted(got_rules), "counts": counts, "crashed": crashed,
                  "signal": cell.get("signal") or None}
    if crashed:
        # The trace up to the crash is still checked (its violations are
        # above); what the interpreter said when it died goes with them.
        res["crash"] = crash_details(os.path.join(base_dir, stem + ".log"), cell.get("signal"))
    crash_text = res["crash"]["text"] if res["crash"] else ""
    applicable = [k for k in known if not k.profilers and k.applies(pyv, glv, fixture, debug)]
    if problem:
        res["outcome"], res["reason"] = "fail", problem
    else:
        explained, unexplained = [], []

        def explain(pred):
            for k in applicable:
                if pred(k):
                    if k.id not in explained:
                        explained.append(k.id)
                    return True
            return False

        for v in res["violations"]:
            if v["rule"] in want_rules:
                continue
            if not explain(lambda k, v=v: k.explains(v["rule"], v["message"])):
                unexplained.append("unexpected %s at event %s: %s" % (v["rule"], v["index"], v["message"]))
        for r in sorted(want_rules - got_rules):
            if not explain(lambda k, r=r: r in k.missing):
                unexplained.append("expected %s violations, got none" % r)
        if crashed and not want_crash and not explain(lambda k: k.explains("crash", crash_text)):
            unexplained.append("the program crashed (%s)" % crash_text)
        if want_crash and not crashed and not explain(lambda k: "crash" in k.missing):
            unexplained.append("expected a crash, the program exited with status %s" % cell.get("rc"))
        if unexplained:
            res["outcome"] = "fail"
            res["reason"] = "; ".join(unexplained[:3]) + (" (and %d more)" % (len(unexplained) - 3)
                                                          if len(unexplained) > 3 else "")
            res["known"] = explained
        elif explained:
            res["outcome"], res["known"] = "known", explained
            res["reason"] = "differs from '# expect: %s' as known: %s" % (
                res["expected"] or "clean", ", ".join(explained))
            if crashed and not want_crash:
                res["reason"] += "; crashed (%s)" % crash_text
                if counts:
                    res["reason"] += "; the trace up to the crash: %s" % ", ".join(
                        "%s=%d" % kv for kv in sorted(counts.items()))
        else:
            xp = [k.id for k in applicable if k.names_fixture(fixture)]
            if xp:
                res["outcome"], res["known"] = "xpass", xp
                res["reason"] = "as expected although known issue(s) %s should affect it" % ", ".join(xp)
            else:
                res["outcome"] = "pass"
                res["reason"] = "as expected (%s)" % (res["expected"] or "clean")
    if res["outcome"] != "fail":
        if res["golden"] == "differs":
            res["outcome"] = "fail"
            res["reason"] = "dump differs from its golden %s" % res["golden_file"]
        elif res["determinism"] == "differs":
            res["outcome"] = "fail"
            res["reason"] = "two recordings differ: %s" % (res["determinism_note"] or "")
    return mutant_outcome(cell, res)


def mutant_outcome(cell, res):
    """In a mutant environment (cell line mutant=NAME, written by
    ci/matrix.sh for the ci/matrix-greenlet.conf entries with a patch), a
    cell that would be `fail` with unmodified greenlet is `killed`: the
    recording, the checker or the run told the mutant apart.  One that
    would be pass, known or xpass is `survived`.  skip stays skip.  The
    cell's `aimed` says whether the "# fixtures:" line of the mutant's
    patch (ci/mutants/NAME.patch) names the fixture (it must then kill
    it)."""
    whole_outcome(cell, res)
    m = cell.get("mutant")
    if not m:
        return res
    res["mutant"] = m
    res["aimed"] = cell.get("aimed") == "1"
    if res["outcome"] == "fail":
        res["outcome"] = "killed"
        res["reason"] = "killed %s: %s" % (m, res["reason"])
    elif res["outcome"] in ("pass", "known", "xpass"):
        res["reason"] = "%s survived: %s" % (m, res["reason"])
        res["outcome"] = "survived"
    return res


def whole_outcome(cell, res):
    """The whole-program recording of the cell (whole_mode=ran: ci/matrix.sh
    recorded the fixture without --manual too, as the WHOLE column of
    ci/matrix-greenlet.conf asks).  whole_killed: its rules (crash included)
    are not what the fixture's "# expect:" line says.  In a mutant column a
    fixture aimed at the mutant must kill it this way too (WHOLE kill): a
    survival is whole_problem; with WHOLE "known WHY" a survival is
    expected for WHY and a kill is the problem (the entry is stale)."""
    mode = cell.get("whole_mode", "unchecked")
    if mode == "unchecked":
        return
    expect = (cell.get("whole_expect") or "").split(None, 1)
    if mode != "ran":
        res["whole_outcome"] = "unusable"
        killed = True
    else:
        got = set(split_list(cell.get("whole_rules")))
        want = set(split_list(cell.get("want_rules")))
        if cell.get("want_crash") == "1":
            want.add("crash")
        killed = got != want
        res["whole_outcome"] = "killed" if killed else "survived"
    if not cell.get("mutant") or cell.get("aimed") != "1" or not expect:
        return
    if expect[0] == "kill" and not killed:
        res["whole_problem"] = "%s survived whole-program (record without --manual)" % cell.get("mutant")
    elif expect[0] == "known":
        if killed:
            res["whole_problem"] = ("%s is now killed whole-program: write kill instead of known in "
                                    "ci/matrix-greenlet.conf" % cell.get("mutant"))
        else:
            res["whole_known"] = expect[1] if len(expect) > 1 else "known"


def cmd_cell(args):
    path = args.pop(0)
    known_path = envs_path = None
    while args:
        a = args.pop(0)
        if a == "--known":
            known_path = args.pop(0)
        elif a == "--envs":
            envs_path = args.pop(0)
        else:
            die("cell: unknown argument %s" % a)
    known = load_known(known_path)
    envs = load_envs(envs_path)
    cell = read_kv(path)
    env = envs.get(cell.get("env"), {"id": cell.get("env")})
    base = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(path))))
    res = classify(cell, env, known, base)
    with open(path[:-len(".cell")] + ".outcome.json", "w", encoding="utf-8") as f:
        json.dump(res, f, indent=1)
    text = res["reason"]
    if res["outcome"] == "skip":
        text = res["reason"]
    print("%s\t%s" % (res["outcome"], text))


def cmd_verdict(args):
    """One recording's check outcome against its "# expect:" line and the
    known issues, outside the matrix (tests/integration/run.sh)."""
    opts = {"known": None, "python": None, "greenlet": None, "fixture": None, "want": "",
            "rc": "0", "check-rc": None}
    flags = {"debug": False, "want-crash": False, "crashed": False}
    check = None
    while args:
        a = args.pop(0)
        if a.startswith("--") and a[2:] in opts:
            opts[a[2:]] = args.pop(0)
        elif a.startswith("--") and a[2:] in flags:
            flags[a[2:]] = True
        elif not a.startswith("--") and check is None:
            check = a
        else:
            die("verdict: unknown argument %s" % a)
    if not check or not opts["fixture"] or not opts["python"]:
        die("verdict: needs CHECK.json, --fixture and --python")
    known = load_known(opts["known"] or os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                     "fixtures", "known-issues.ini"))
    cell = {"env": "-", "fixture": opts["fixture"], "state": "ran", "want_rules": opts["want"],
            "want_crash": "1" if flags["want-crash"] else "0", "crashed": "1" if flags["crashed"] else "0",
            "rc": opts["rc"], "check_rc": opts["check-rc"], "check_json": check}
    env = {"python_version": opts["python"], "greenlet": opts["greenlet"] or "none",
           "debug": flags["debug"]}
    res = classify(cell, env, known, os.path.dirname(os.path.abspath(check)))
    print("%s\t%s\t%s" % (res["outcome"], ",".join(res["known"]), res["reason"]))


# ------------------------------------------------------------- environments

def cmd_envs(args):
    path = args.pop(0)
    extra = []
    sel = []
    while args:
        a = args.pop(0)
        if a == "--extra":
            extra.append(args.pop(0))
        else:
            sel.extend(x for x in a.split(",") if x)
    envs = list(load_envs(path).values())
    ids = {e["id"] for e in envs}
    for x in extra:
        name, _, pyv = x.partition("=")
        if name not in ids:
            envs.append({"id": name, "kind": "user", "status": "not built", "python": pyv or "?"})
            ids.add(name)
    envs.sort(key=env_sort_key)
    if sel:
        chosen = []
        for pat in sel:
            hit = [e for e in envs if fnmatch.fnmatchcase(e["id"], pat)]
            if not hit:
                die("no environment matches '%s' (ci/envs.sh list, ci/matrix-greenlet.sh list)" % pat)
            for e in hit:
                if e not in chosen:
                    chosen.append(e)
        envs = [e for e in envs if e in chosen]
    for e in envs:
        fields = [e.get("id"), e.get("kind"), e.get("status"), e.get("command"),
                  e.get("python_version") or e.get("python"), e.get("greenlet"), e.get("gevent"),
                  e.get("reason")]
        print("\t".join("-" if f in (None, "") else str(f).replace("\t", " ").replace("\n", " ")
                        for f in fields))


# ------------------------------------------------------------------ collect

def fixture_info(root, name):
    path = os.path.join(root, "fixtures", name + ".py")
    info = {"name": name, "expect": None, "requires": None, "summary": ""}
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return info
    for line in lines[:40]:
        m = re.match(r"^# *(expect|requires): *(.*)$", line)
        if m and info[m.group(1)] is None:
            info[m.group(1)] = m.group(2).strip()
    doc = []
    for line in lines[:40]:
        s = line.strip().strip('"')
        if doc and (not s or line.strip().endswith('"""')):
            if s:
                doc.append(s)
            break
        if s:
            doc.append(s)
    text = " ".join(doc)
    info["summary"] = text[:300]
    return info


def summarize(doc):
    total = {o: 0 for o in OUTCOMES}
    per_env = {}
    for e in doc["envs"]:
        per_env[e["id"]] = {o: 0 for o in OUTCOMES}
    for c in doc["cells"]:
        total[c["outcome"]] = total.get(c["outcome"], 0) + 1
        per_env.setdefault(c["env"], {o: 0 for o in OUTCOMES})
        per_env[c["env"]][c["outcome"]] += 1
    coverage = {}
    for m in MINORS:
        coverage[m] = [e["id"] for e in doc["envs"]
                       if (parse_version(e.get("python_version") or e.get("python")) or ())[:2]
                       == parse_version(m) and e.get("status") == "ran"
                       and parse_version(e.get("greenlet")) is not None]
    seed = [c for c in doc["cells"] if c["fixture"] == "seed"]
    doc["summary"] = {"outcomes": total, "per_env": per_env, "greenlet_coverage": coverage,
                      "mutants": mutation_summary(doc),
                      "missing_minors": [m for m in MINORS if not coverage[m]],
                      "seed": {o: sorted(c["env"] for c in seed if c["outcome"] == o)
                               for o in OUTCOMES if any(c["outcome"] == o for c in seed)},
                      "env_errors": [e["id"] for e in doc["envs"] if e.get("status") == "error"]}


def mutation_summary(doc):
    """Kill statistics of the mutant environments: per environment, the
    aimed fixtures that killed or let survive its mutant; a mutant
    environment counts as killed when at least one fixture aimed at it
    killed it.  Score: killed mutant environments / mutant environments
    that ran (None when none ran)."""
    envs = {}
    for e in doc["envs"]:
        if e.get("mutant"):
            envs[e["id"]] = {"mutant": e["mutant"], "aimed_killed": [], "aimed_survived": [],
                             "other_killed": [], "other_survived": [], "skipped": []}
    for c in doc["cells"]:
        d = envs.get(c["env"])
        if d is None:
            continue
        if c["outcome"] == "skip":
            d["skipped"].append(c["fixture"])
        elif c["outcome"] in ("killed", "survived"):
            d[("aimed_" if c.get("aimed") else "other_") + c["outcome"]].append(c["fixture"])
    ran = [i for i, d in envs.items() if d["aimed_killed"] or d["aimed_survived"]]
    killed = [i for i in ran if envs[i]["aimed_killed"]]
    aimed = sum(len(envs[i]["aimed_killed"]) + len(envs[i]["aimed_survived"]) for i in ran)
    return {"envs": envs, "ran": ran, "killed": killed,
            "score": (len(killed) / len(ran)) if ran else None,
            "aimed_cells": aimed,
            "aimed_cells_killed": sum(len(envs[i]["aimed_killed"]) for i in ran)}


MUTANTS_TEXT = """
Mutant greenlets bring back one historical greenlet bug class each
(`ci/mutants/*.patch`: the header of each names the class and its public
source), built from Debian's greenlet sources by `ci/matrix-greenlet.sh`.
`tests/mutants/` shows each one's effect with a plain `sys.setprofile`
program and no recorder. In a mutant column a cell is **killed** when
the recording or the checker tells it from unmodified greenlet (what
would be `FAIL` elsewhere) and *survived* when it comes out as the
fixture expects of unmodified greenlet. A fixture aimed at a mutant
(named by the `# fixtures:` line of its patch, marked ◎) must kill it; unmodified
greenlet of the same sources and Python (`pyenv-3.10-gl2.0`, `pyenv-3.11-gl2.0`)
must stay clean. Each fixture is also recorded whole-program (`greenreplay
record` without `--manual`, the default mode): "whole-program: killed" or
"survived" follows the cell; ✗ marks an aimed fixture that the WHOLE column
of `ci/matrix-greenlet.conf` expects to kill the mutant whole-program and
did not (or one listed there as known that now kills it).
"""


def mutants_md(doc):
    """The kill table (mutant environment x fixture) and the mutation score."""
    ms = doc["summary"].get("mutants") or {}
    menvs = [e for e in doc["envs"] if e.get("mutant")]
    if not menvs:
        return []
    cm = cell_map(doc)
    out = []
    w = out.append
    w("## Mutants")
    w("")
    out.extend(MUTANTS_TEXT.strip().splitlines())
    w("")
    rows = [fx for fx in doc["fixtures"]
            if any((cm.get((e["id"], fx["name"])) or {}).get("outcome") in ("killed", "survived")
                   for e in menvs)]
    rows.sort(key=lambda fx: (not any((cm.get((e["id"], fx["name"])) or {}).get("aimed") for e in menvs),
                              fx["name"]))
    w("| fixture | " + " | ".join("`%s`<br>%s" % (e["id"], e["mutant"]) for e in menvs) + " |")
    w("|---|" + "---|" * len(menvs))
    for fx in rows:
        cells = []
        for e in menvs:
            c = cm.get((e["id"], fx["name"]))
            if c is None:
                cells.append("—")
                continue
            mark = "◎ " if c.get("aimed") else ""
            if c["outcome"] == "killed":
                rules = ",".join(c.get("got", {}).get("rules") or []) or (
                    "crash" if (c.get("got") or {}).get("crashed") else "run")
                text = "%s**killed** (%s)" % (mark, rules)
            elif c["outcome"] == "survived":
                text = mark + "survived"
            else:
                text = mark + md_cell(c)
            w_o = c.get("whole_outcome")
            if w_o:
                text += "; whole-program: " + ("**%s**" % w_o if w_o == "killed" else w_o)
                if c.get("whole_rules") and w_o == "killed":
                    text += " (%s)" % c["whole_rules"]
                if c.get("whole_problem"):
                    text += " ✗"
                elif c.get("whole_known"):
                    text += " (known)"
            cells.append(text)
        w("| `%s` | " % fx["name"] + " | ".join(cells) + " |")
    w("")
    if ms.get("ran"):
        w("**Mutation score:** %d of %d mutant environments killed by a fixture aimed at"
          " them (%.0f%%); %d of %d aimed cells killed." % (
              len(ms["killed"]), len(ms["ran"]), 100.0 * ms["score"], ms["aimed_cells_killed"],
              ms["aimed_cells"]))
        surv = [i for i in ms["ran"] if i not in ms["killed"]]
        if surv:
            w("Surviving: " + ", ".join("`%s` (%s)" % (i, ms["envs"][i]["mutant"]) for i in surv) + ".")
    else:
        w("**Mutation score:** no mutant environment ran a fixture aimed at it.")
    w("")
    return out


def cmd_collect(args):
    out = known_path = envs_path = docs = None
    meta = {}
    kills = False
    while args:
        a = args.pop(0)
        if a == "--require-kills":
            kills = True
        elif a == "--out":
            out = args.pop(0)
        elif a == "--known":
            known_path = args.pop(0)
        elif a == "--envs":
            envs_path = args.pop(0)
        elif a == "--docs":
            docs = args.pop(0)
        elif a == "--meta":
            k, _, v = args.pop(0).partition("=")
            meta[k] = v
        else:
            die("collect: unknown argument %s" % a)
    if not (out and known_path and envs_path):
        die("collect: --out, --known and --envs are needed")
    known = load_known(known_path)
    envs = load_envs(envs_path)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cells_dir = os.path.join(out, "cells")
    env_rows, cells, fixtures = [], [], []
    for env_id in sorted(os.listdir(cells_dir)) if os.path.isdir(cells_dir) else []:
        d = os.path.join(cells_dir, env_id)
        st_path = os.path.join(d, "_env")
        if not os.path.isfile(st_path):
            continue
        st = read_kv(st_path)
        e = dict(envs.get(env_id, {"id": env_id, "kind": "user"}))
        row = {"id": env_id, "kind": e.get("kind"), "python": e.get("python"),
               "mutant": st.get("mutant") or None,
               "python_version": e.get("python_version"), "greenlet": e.get("greenlet"),
               "greenlet_from": e.get("greenlet_from"), "gevent": e.get("gevent"), "debug": e.get("debug") is True,
               "interpreter": e.get("interpreter"), "golden_env": st.get("golden_env") or None,
               "status": st.get("status", "ran"), "reason": st.get("reason") or None,
               "retry": st.get("retry") or None, "elapsed_s": float(st.get("elapsed") or 0),
               "order": int(st.get("order") or 0)}
        env_rows.append(row)
        for name in sorted(os.listdir(d)):
            if not name.endswith(".cell"):
                continue
            cell = read_kv(os.path.join(d, name))
            res = classify(cell, e, known, out)
            cells.append(res)
            if res["fixture"] not in fixtures:
                fixtures.append(res["fixture"])
    env_rows.sort(key=lambda r: (r["order"], r["id"]))
    for r in env_rows:
        del r["order"]
    fixtures.sort()
    if kills:
        meta["require_kills"] = "1"
    doc = {"schema": SCHEMA, "generated": dict(meta, time=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())),
           "envs": env_rows, "fixtures": [fixture_info(root, n) for n in fixtures],
           "known_issues": [k.to_json() for k in known if not k.profilers], "cells": cells}
    summarize(doc)
    path = os.path.join(out, "matrix.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return render(doc, out, docs)


# ------------------------------------------------------------------- merge

def cmd_merge(args):
    inputs, out, docs = [], None, None
    while args:
        a = args.pop(0)
        if a == "-o":
            out = args.pop(0)
        elif a == "--docs":
            docs = args.pop(0)
        else:
            inputs.append(a)
    if not inputs or not out:
        die("merge: usage: ci/matrix.sh merge A.json B.json ... -o OUT.json [--docs FILE]")
    out_dir = os.path.dirname(os.path.abspath(out))
    os.makedirs(out_dir, exist_ok=True)
    merged = {"schema": SCHEMA, "generated": {"merged_from": [], "time": None},
              "envs": [], "fixtures": [], "known_issues": [], "cells": []}
    env_index, cell_index, fx_index, ki_index = {}, {}, {}, {}
    for path in inputs:
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            die("merge: cannot read %s: %s" % (path, e))
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            die("merge: %s is not a matrix (schema %s)" % (path, SCHEMA))
        in_dir = os.path.dirname(os.path.abspath(path))
        merged["generated"]["merged_from"].append({"file": path, "generated": doc.get("generated")})
        for e in doc.get("envs", []):
            if e["id"] in env_index:
                merged["envs"][env_index[e["id"]]] = e
            else:
                env_index[e["id"]] = len(merged["envs"])
                merged["envs"].append(e)
        for fx in doc.get("fixtures", []):
            if fx["name"] not in fx_index:
                fx_index[fx["name"]] = len(merged["fixtures"])
                merged["fixtures"].append(fx)
        for k in doc.get("known_issues", []):
            if k["id"] not in ki_index:
                ki_index[k["id"]] = len(merged["known_issues"])
                merged["known_issues"].append(k)
        for c in doc.get("cells", []):
            for key, rel in list(c.get("files", {}).items()):
                src = os.path.join(in_dir, rel)
                dst = os.path.join(out_dir, rel)
                if not os.path.exists(src):
                    del c["files"][key]
                    continue
                if os.path.abspath(src) != os.path.abspath(dst):
                    os.makedirs(os.path.dirname(dst), exist_ok=True)
                    shutil.copyfile(src, dst)
            k = (c["env"], c["fixture"])
            if k in cell_index:
                merged["cells"][cell_index[k]] = c
            else:
                cell_index[k] = len(merged["cells"])
                merged["cells"].append(c)
    merged["envs"].sort(key=env_sort_key)
    merged["fixtures"].sort(key=lambda f: f["name"])
    merged["generated"]["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    summarize(merged)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(merged, f, indent=1)
        f.write("\n")
    return render(merged, out_dir, docs)


def cmd_render(args):
    path = args.pop(0)
    out = docs = None
    while args:
        a = args.pop(0)
        if a == "--out":
            out = args.pop(0)
        elif a == "--docs":
            docs = args.pop(0)
        else:
            die("render: unknown argument %s" % a)
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        die("cannot read %s: %s" % (path, e))
    src_dir = os.path.dirname(os.path.abspath(path))
    out = out or src_dir
    if os.path.abspath(out) != src_dir:
        for c in doc["cells"]:
            for rel in c.get("files", {}).values():
                s, d = os.path.join(src_dir, rel), os.path.join(out, rel)
                if os.path.exists(s):
                    os.makedirs(os.path.dirname(d), exist_ok=True)
                    shutil.copyfile(s, d)
    summarize(doc)
    return render(doc, out, docs)


# ----------------------------------------------------------------- render

def cell_map(doc):
    return {(c["env"], c["fixture"]): c for c in doc["cells"]}


def env_label(e):
    gl = e.get("greenlet") or "?"
    return "%s %s, greenlet %s" % (e.get("id"), e.get("python_version") or e.get("python") or "?", gl)


def md_cell(c):
    if c is None:
        return "—"
    o = c["outcome"]
    if o == "pass":
        return "pass"
    if o == "skip":
        return "skip (%s)" % short_skip(c["reason"])
    crash = ""
    if c.get("crash"):
        # A crash's verdict: the signal, where CPython asserted, and the
        # violations of the trace written up to it.
        crash = "<br>" + short_crash(c["crash"]).replace("|", "\\|")
        counts = (c.get("got") or {}).get("counts") or {}
        if counts:
            crash += "<br>+ " + ", ".join("%s×%d" % kv for kv in sorted(counts.items()))
    if o == "known":
        return "known: " + ", ".join(c["known"]) + crash
    if o == "killed":
        return ("◎ " if c.get("aimed") else "") + "killed"
    if o == "survived":
        return "◎ **survived**" if c.get("aimed") else "survived"
    if o == "xpass":
        return "**XPASS**: " + ", ".join(c["known"])
    return "**FAIL**" + crash


def render_md(doc):
    s = doc["summary"]
    cm = cell_map(doc)
    out = []
    w = out.append
    w("# Compatibility matrix")
    w("")
    w("Every fixture (rows) recorded in every test environment (columns), each")
    w("in a fresh process, checked with `greenreplay check` and compared with its")
    w("`# expect:` line, the known issues in `fixtures/known-issues.ini` and its")
    w("golden dump. Regenerated by `make matrix` (`ci/matrix.sh`); the HTML page")
    w("`build/matrix/index.html` links every cell to its violations and trace dump,")
    w("`build/matrix/matrix.json` and `build/matrix/junit.xml` are for machines.")
    w("")
    w("**Outcomes:** `pass` as the fixture expects; `known: ID` differs only as")
    w("the known issue ID explains; `XPASS: ID` a known issue that should affect")
    w("the cell did not show; `FAIL` anything else (an unexplained violation, a")
    w("missing one, a crash, a dump that differs from its golden); `skip (why)`:")
    w("not run. A program that died by a signal shows it under the outcome, with")
    w("the assertion CPython printed (`file:line` and expression; debug builds)")
    w("and `+ rule×N`, the violations of the trace written up to the crash;")
    w("skip reasons: `no greenlet`, `gevent broken`; `env error`: the environment")
    w("could not run, `env unavailable`: this machine lacks it. `make matrix`")
    w("exits non-zero on any `FAIL`.")
    w("")
    tot = s["outcomes"]
    w("**Result:** %d cells: %s." % (sum(tot.values()),
                                     ", ".join("%d %s" % (tot[o], o) for o in OUTCOMES if tot.get(o))))
    w("")
    envs = doc["envs"]
    w("| fixture | " + " | ".join("`%s`<br>%s%s<br>greenlet %s" % (
        e["id"], e.get("python_version") or e.get("python") or "?", " debug" if e.get("debug") else "",
        e.get("greenlet") or "?") for e in envs) + " |")
    w("|---|" + "---|" * len(envs))
    for fx in doc["fixtures"]:
        w("| `%s` | " % fx["name"] + " | ".join(md_cell(cm.get((e["id"], fx["name"]))) for e in envs) + " |")
    w("| *totals* | " + " | ".join(
        "<br>".join("%d %s" % (s["per_env"].get(e["id"], {}).get(o, 0), o) for o in OUTCOMES
                    if s["per_env"].get(e["id"], {}).get(o, 0)) or "—" for e in envs) + " |")
    w("")
    w("## Environments")
    w("")
    w("| id | kind | Python | greenlet | gevent | status |")
    w("|---|---|---|---|---|---|")
    for e in envs:
        st = e.get("status") or "?"
        if e.get("reason"):
            st += ": " + e["reason"]
        w("| `%s` | %s | %s%s | %s | %s | %s |" % (e["id"], e.get("kind") or "?",
                                               e.get("python_version") or e.get("python") or "?",
                                               " (debug build)" if e.get("debug") else "",
                                               e.get("greenlet") or "?", e.get("gevent") or "?",
                                               st.replace("|", "\\|")))
    w("")
    w("Minor versions with greenlet: " + "; ".join(
        "%s: %s" % (m, ", ".join("`%s`" % i for i in ids) if ids else "**none**")
        for m, ids in s["greenlet_coverage"].items()) + ".")
    w("")
    w("## Known issues")
    w("")
    used = {}
    for c in doc["cells"]:
        for k in c.get("known", []):
            used.setdefault(k, []).append(c)
    for k in doc["known_issues"]:
        cells = used.get(k["id"], [])
        w("- **%s** — %s. Python %s, greenlet %s%s; fixtures %s; explains %s%s." % (
            k["id"], k["title"].rstrip("."), k["python"], k["greenlet"],
            (", %s builds only" % k["build"]) if k.get("build", "any") != "any" else "", ", ".join(k["fixtures"]),
            ", ".join(k["rules"]) or "-",
            (" (missing: %s)" % ", ".join(k["missing"])) if k.get("missing") else ""))
        if (k.get("status") or "").startswith("informational"):
            ap = informational_cells(k, doc)
            w("  %s; applies to %d cell(s)%s." % (
                k["status"][0].upper() + k["status"][1:], len(ap),
                (": " + ", ".join("%s/%s" % (c["env"], c["fixture"]) for c in ap)) if ap else ""))
            if k.get("evidence"):
                w("  Evidence: " + k["evidence"])
            continue
        known_c = [c for c in cells if c["outcome"] == "known"]
        xp = [c for c in cells if c["outcome"] == "xpass"]
        seen = "  Seen in %d cell(s)" % len(known_c)
        if known_c:
            seen += ": " + ", ".join("%s/%s" % (c["env"], c["fixture"]) for c in known_c[:12])
            if len(known_c) > 12:
                seen += ", …"
        if xp:
            seen += "; **xpass** in " + ", ".join("%s/%s" % (c["env"], c["fixture"]) for c in xp)
        w(seen + ".")
        if k.get("evidence"):
            w("  Evidence: " + k["evidence"])
    mut = mutants_md(doc)
    if mut:
        w("")
        out.extend(mut[:-1])
    if any(c.get("callback_mode") in ("same", "differs") for c in doc["cells"]):
        out.extend(observer_md(doc))
    fails = [c for c in doc["cells"] if c["outcome"] == "fail"]
    if fails:
        w("")
        w("## Failures")
        w("")
        for c in fails:
            w("- `%s` / `%s`: %s" % (c["env"], c["fixture"], c["reason"]))
    w("")
    w(HOWTO.strip())
    w("")
    return "\n".join(out)


HOWTO = """
## Running it

```sh
make matrix                                   # everything (provisions first: docs/ENVIRONMENTS.md)
ci/matrix.sh --envs 'sid-*,host-3.11' --fixtures seed,generators   # a part
ci/matrix.sh --env gl31=/path/to/venv/bin/python --envs gl31       # your own interpreter
ci/matrix.sh --matrix-file my-envs.conf       # user environments, one "NAME COMMAND..." a line
ci/matrix.sh list                             # what a run would cover
ci/matrix.sh known                            # check and list fixtures/known-issues.ini
make matrix-golden                            # goldens of every environment (see below)
make matrix-screenshot                        # headless Chromium screenshot of the HTML page
```

Every cell runs in a fresh process: `greenreplay record --manual` with the
environment's interpreter (`ci/envs.sh python ID`), `greenreplay dump` and
`greenreplay check --format json` on the host. A fixture whose `# requires:`
modules the environment cannot import is `skip` with the import error. One
progress line per cell (environment, fixture n/N, outcome, time, elapsed).
`ci/matrix.sh --help` lists every option; `make matrix MATRIX_ARGS='...'`
passes them. Exit status 0 unless a cell is `fail` (`--strict`: 3 when an
environment could not run).

**Environments.** Those of `ci/envs.sh list` (docs/ENVIRONMENTS.md), user
environments (`--env`, `--matrix-file`, default `ci/matrix.conf`) and the
ones of `ci/matrix-greenlet.conf`: no Debian suite builds greenlet for
CPython 3.10 or 3.12 and no Python package index is reachable here, but
Debian's `python3-greenlet` ships greenlet's C++ sources, so
`ci/matrix-greenlet.sh` compiles them (release build, `-DNDEBUG`) for the
pyenv interpreters into venvs in the cache; they join as user environments.
An environment whose provisioning or build fails, or a user interpreter
that is missing or broken, is an `error` column (the failed step and the
command to retry; its cells `skip`); the other columns still run.

**Debug builds.** Columns whose id ends in `d` run CPython's debug build
(`python3.Xd`, `Py_DEBUG`) with the same greenlet as the release column:
CPython's own assertions and reference-count and GIL checks become a
second oracle. A program that dies there shows the signal and the
assertion (file, line, expression) or fatal error it printed; the trace
written up to the crash is still checked and its violations are listed
with it. Known issues can be limited to debug or release builds
(`build = debug`).

**Mutants.** The entries of `ci/matrix-greenlet.conf` with a MUTANT column
build greenlet with one patch of `ci/mutants/` (each brings back one
historical greenlet bug class; its header names the class, the public source
and, on its `# fixtures:` line, the fixtures aimed at it). Their cells are
`killed` or `survived` instead of fail or pass; the kill table and the
mutation score follow the main table. `make mutants` (`tests/mutants/run.sh
--prepare`) builds them and shows each class to a plain `sys.setprofile`
program without the recorder; `ci/matrix.sh --envs 'mut*,pyenv-3.1[01]-gl2.0'`
runs the mutants beside their unmodified controls; `--require-kills` makes a
surviving aimed cell a failure. Mutants and controls also record every
fixture whole-program (the WHOLE column of `ci/matrix-greenlet.conf`): an
aimed fixture must kill the mutant that way too, unless WHOLE says `known`
with the reason; a known one that kills fails `--require-kills` until
WHOLE is changed to `kill`.

**Known issues** (`fixtures/known-issues.ini`): a cell whose outcome differs
from the fixture's `# expect:` line is `known` when every unexpected
violation (rule, and message pattern if the entry has one) and every missing
expected rule is explained by an entry whose Python and greenlet versions
and fixtures match the cell. A cell that matches `# expect:` although an
entry naming its fixture applies is `xpass`.

**Goldens.** When `fixtures/golden/ENV/NAME.txt` exists for the dump's Python
and greenlet versions (ENV `py3.X-greenletA.B`, or `py3.X.Y-greenletA.B.C`
when two environments share the short name, e.g. pyenv 3.11.7 beside
Debian's 3.11.2), the dump must equal it. `ci/matrix.sh --update-goldens`
records each cell twice and writes the golden only when both traces are
byte-identical; review `git diff fixtures/golden` before committing.

**Scale-out.** `ci/matrix-workflow.yml` (GitHub Actions) runs one job per
environment and a job per pip-installed greenlet version, uploads each
job's `build/matrix/`, and merges them:
`ci/matrix.sh merge A/matrix.json B/matrix.json ... -o build/matrix/matrix.json`
(then `matrix.md`, `index.html`, `junit.xml` are regenerated from it;
`ci/matrix.sh report MATRIX.json` does only that).
"""


def informational_cells(k, doc):
    """Cells that ran where an informational entry applies."""
    try:
        py, gl = VersionSpec(k["python"], k["id"]), VersionSpec(k["greenlet"], k["id"])
    except ValueError:
        return []
    envs = {e["id"]: e for e in doc["envs"]}
    out = []
    for c in doc["cells"]:
        e = envs.get(c["env"], {})
        if k.get("build", "any") != "any" and (k["build"] == "debug") != bool(e.get("debug")):
            continue
        if (c["outcome"] != "skip" and py.matches(e.get("python_version") or e.get("python"))
                and gl.matches(e.get("greenlet"))
                and any(fnmatch.fnmatchcase(c["fixture"], f) for f in k["fixtures"])):
            out.append(c)
    return out


CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.5em; margin: 0 0 .3em; } h2 { font-size: 1.2em; margin-top: 1.5em; }
table.m { border-collapse: collapse; font-size: 12.5px; }
table.m th, table.m td { border: 1px solid #bbb; padding: 3px 5px; text-align: center; }
table.m th.fx { text-align: left; font-weight: normal; font-family: monospace; white-space: nowrap; }
table.m thead th { background: #f2f2f2; vertical-align: bottom; font-weight: normal; }
table.m thead th b { font-family: monospace; }
td a { color: inherit; text-decoration: none; display: block; }
td.pass { background: #c8efc8; } td.known { background: #ffe8a3; } td.fail { background: #f59b9b; font-weight: bold; }
td.skip { background: #e6e6e6; color: #666; } td.xpass { background: #a9c8ff; font-weight: bold; }
td.killed { background: #b9e3f0; font-weight: bold; } td.survived { background: #f7c6e0; }
td.none { background: #fff; color: #aaa; }
.legend span { display: inline-block; padding: 2px 8px; margin-right: 6px; border: 1px solid #bbb; }
.small { font-size: 11px; } pre { background: #f7f7f7; border: 1px solid #ddd; padding: 8px; white-space: pre-wrap; overflow-wrap: anywhere; font-size: 12px; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: 2px 12px; }
dl.facts dt { font-weight: bold; } dl.facts dd { margin: 0; }
.err { color: #a00; font-weight: bold; }
"""


def esc(s):
    return html.escape("" if s is None else str(s))


def profiler_axis(out, docs=None):
    """The profiler axis's section (ci/profilers.sh, ci/profilers-report.py)
    for the matrix reports: (Markdown, HTML).  The Markdown is the section
    DOCS already holds (a full ci/profilers.sh run wrote it; a matrix run
    keeps it), else rendered from OUT/profilers/profilers.json; the HTML
    comes from that file.  None for what is not there."""
    if not out:
        return None, None
    spec = importlib.util.spec_from_file_location(
        "profilers_report", os.path.join(os.path.dirname(os.path.abspath(__file__)), "profilers-report.py"))
    pr = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pr)
    kept = pr.existing_section(docs) if docs else None
    path = os.path.join(out, "profilers", "profilers.json")
    try:
        with open(path, encoding="utf-8") as f:
            pdoc = json.load(f)
        pr.summarize(pdoc)
        return kept or pr.render_md(pdoc), pr.html_section(pdoc, "profilers/")
    except (OSError, ValueError, KeyError):
        return kept, None


def render_index(doc, out=None):
    s = doc["summary"]
    cm = cell_map(doc)
    envs = doc["envs"]
    o = []
    w = o.append
    w("<!DOCTYPE html><html><head><meta charset='utf-8'><title>greenreplay compatibility matrix</title>")
    w("<style>%s</style></head><body>" % CSS)
    w("<h1>greenreplay compatibility matrix</h1>")
    tot = s["outcomes"]
    w("<p>%d cells: %s. Generated %s%s.</p>" % (
        sum(tot.values()), ", ".join("%d %s" % (tot[x], x) for x in OUTCOMES if tot.get(x)),
        esc(doc.get("generated", {}).get("time")),
        (" at commit <code>%s</code>" % esc(doc["generated"]["commit"])) if doc.get("generated", {}).get("commit") else ""))
    w("<p class='legend'><span style='background:#c8efc8'>pass</span><span style='background:#ffe8a3'>known issue</span>"
      "<span style='background:#a9c8ff'>xpass (known issue did not show)</span>"
      "<span style='background:#f59b9b'>fail</span><span style='background:#e6e6e6'>skip</span>"
      " Click a cell for its violations and trace dump.</p>")
    w("<table class='m'><thead><tr><th>fixture</th>")
    for e in envs:
        st = e.get("status")
        extra = "" if st == "ran" else "<br><span class='err'>%s</span>" % esc(st)
        gv = e.get("gevent") or "?"
        w("<th title='%s'><b>%s</b><br>Python %s<br>greenlet %s<br>gevent %s%s</th>" % (
            esc("%s; gevent %s%s" % (e.get("interpreter") or "", gv,
                                     ("; " + e["reason"]) if e.get("reason") else "")),
            esc(e["id"]), esc(e.get("python_version") or e.get("python")) + (" debug" if e.get("debug") else ""),
            esc(e.get("greenlet")), esc(gv.split(" (")[0]), extra))
    w("</tr></thead><tbody>")
    for fx in doc["fixtures"]:
        w("<tr><th class='fx' title='%s'>%s<br><span class='small'>expect: %s</span></th>" % (
            esc(fx.get("summary")), esc(fx["name"]), esc(fx.get("expect") or "?")))
        for e in envs:
            c = cm.get((e["id"], fx["name"]))
            if c is None:
                w("<td class='none'>—</td>")
                continue
            label = {"pass": "pass", "fail": "FAIL", "skip": "skip", "known": "known",
                     "xpass": "XPASS", "killed": "killed", "survived": "survived"}[c["outcome"]]
            if c.get("aimed"):
                label = "&#9678; " + label
            sub = ""
            if c["outcome"] in ("known", "xpass"):
                sub = "<br><span class='small'>%s</span>" % "<br>".join(esc(k) for k in c["known"])
            elif c["outcome"] == "skip":
                sub = "<br><span class='small'>%s</span>" % esc(short_skip(c["reason"]))
            if c.get("crash"):
                sub += "<br><span class='small'>%s</span>" % esc(short_crash(c["crash"]).replace("`", ""))
            w("<td class='%s' id='%s--%s' title='%s'><a href='%s'>%s%s</a></td>" % (
                c["outcome"], esc(e["id"]), esc(fx["name"]), esc(c["reason"]),
                esc(cell_page(c)), label, sub))
        w("</tr>")
    w("<tr><th class='fx'><i>totals</i></th>")
    for e in envs:
        pe = s["per_env"].get(e["id"], {})
        w("<td class='small'>%s</td>" % "<br>".join("%d %s" % (pe[x], x) for x in OUTCOMES if pe.get(x)))
    w("</tr></tbody></table>")
    mut = mutants_md(doc)
    if mut:
        w("<h2>Mutants</h2><p>%s</p>" % esc(" ".join(MUTANTS_TEXT.split()).replace("**", "").replace("`", "")))
        w(kill_table_html(doc))
        w("<p>%s</p>" % esc(" ".join(l for l in mut if l.startswith("**Mutation score") or
                                    l.startswith("Surviving")).replace("**", "").replace("`", "")))
    w("<h2>Environments</h2><ul>")
    for e in envs:
        line = "<li><b>%s</b> (%s): %s, Python %s, greenlet %s, gevent %s — %s" % (
            esc(e["id"]), esc(e.get("kind")), esc(e.get("interpreter")),
            esc(e.get("python_version") or e.get("python")), esc(e.get("greenlet")), esc(e.get("gevent")),
            esc(e.get("status")))
        if e.get("reason"):
            line += ": <span class='err'>%s</span>" % esc(e["reason"])
        if e.get("retry"):
            line += " (retry: <code>%s</code>)" % esc(e["retry"])
        w(line + "</li>")
    w("</ul><p>Minor versions with greenlet: %s</p>" % "; ".join(
        "%s: %s" % (m, esc(", ".join(ids)) if ids else "<span class='err'>none</span>")
        for m, ids in s["greenlet_coverage"].items()))
    w("<h2>Known issues</h2><ul>")
    for k in doc["known_issues"]:
        cells = [c for c in doc["cells"] if k["id"] in c.get("known", [])]
        if (k.get("status") or "").startswith("informational"):
            cells = informational_cells(k, doc)
        w("<li id='%s'><b>%s</b>: %s. Python %s, greenlet %s; fixtures %s; rules %s%s. %s<br>"
          "<span class='small'>%s</span></li>" % (
              esc(k["id"]), esc(k["id"]), esc(k["title"]), esc(k["python"]), esc(k["greenlet"]),
              esc(", ".join(k["fixtures"])), esc(", ".join(k["rules"]) or "-"),
              (" (missing: %s)" % esc(", ".join(k["missing"]))) if k.get("missing") else "",
              " ".join("<a href='%s'>%s/%s</a>%s" % (esc(cell_page(c)), esc(c["env"]), esc(c["fixture"]),
                                                     " (xpass)" if c["outcome"] == "xpass" else "")
                       for c in cells),
              esc(k.get("evidence"))))
    w("</ul>")
    prof = profiler_axis(out)[1]
    if prof:
        w(prof)
    w("</body></html>")
    return "\n".join(o)


def kill_table_html(doc):
    cm = cell_map(doc)
    menvs = [e for e in doc["envs"] if e.get("mutant")]
    o = ["<table class='m'><thead><tr><th>fixture</th>"]
    for e in menvs:
        o.append("<th><b>%s</b><br>%s</th>" % (esc(e["id"]), esc(e["mutant"])))
    o.append("</tr></thead><tbody>")
    for fx in doc["fixtures"]:
        cells = [cm.get((e["id"], fx["name"])) for e in menvs]
        if not any(c and c["outcome"] in ("killed", "survived") for c in cells):
            continue
        o.append("<tr><th class='fx'>%s</th>" % esc(fx["name"]))
        for c in cells:
            if c is None:
                o.append("<td class='none'>—</td>")
                continue
            o.append("<td class='%s' title='%s'><a href='%s'>%s%s</a></td>" % (
                c["outcome"], esc(c["reason"]), esc(cell_page(c)),
                "&#9678; " if c.get("aimed") else "", esc(c["outcome"])))
        o.append("</tr>")
    o.append("</tbody></table>")
    return "".join(o)


def cell_page(c):
    return "cells/%s/%s.html" % (c["env"], c["fixture"])


def read_text(base, rel, limit=400000):
    if not rel:
        return None
    try:
        with open(os.path.join(base, rel), "rb") as f:
            data = f.read(limit + 1)
    except OSError:
        return None
    text = data[:limit].decode("utf-8", "replace")
    if len(data) > limit:
        text += "\n… (cut at %d bytes; see the file)" % limit
    return text


def render_cell_page(doc, c, base):
    env = next((e for e in doc["envs"] if e["id"] == c["env"]), {"id": c["env"]})
    known = {k["id"]: k for k in doc["known_issues"]}
    o = []
    w = o.append
    w("<!DOCTYPE html><html><head><meta charset='utf-8'><title>%s / %s</title><style>%s</style></head><body>" % (
        esc(c["env"]), esc(c["fixture"]), CSS))
    w("<p><a href='../../index.html#%s--%s'>&larr; matrix</a></p>" % (esc(c["env"]), esc(c["fixture"])))
    w("<h1>%s in %s: <span style='padding:0 6px' class='%s'>%s</span></h1>" % (
        esc(c["fixture"]), esc(c["env"]), esc(c["outcome"]), esc(c["outcome"])))
    w("<table class='m'><tr><td class='%s'>%s</td></tr></table>" % (esc(c["outcome"]), esc(c["reason"])))
    w("<dl class='facts'>")
    facts = [("environment", env_label(env)), ("expect", c.get("expected") or "clean")]
    if c.get("got"):
        g = c["got"]
        got = ", ".join("%s=%d" % kv for kv in sorted(g["counts"].items())) or "clean"
        if g.get("crashed"):
            got = "crashed (%s), %s" % (g.get("signal") or "signal", got)
        facts.append(("got", got))
    if c.get("crash"):
        facts.append(("crash", c["crash"]["text"]))
    if c.get("exit_status") is not None:
        facts.append(("exit status", c["exit_status"]))
    facts.append(("golden", "%s%s%s" % (c.get("golden"), (" " + c["golden_file"]) if c.get("golden_file") else "",
                                        (" — " + c["golden_note"]) if c.get("golden_note") else "")))
    facts.append(("determinism", "%s%s" % (c.get("determinism"),
                                           (" — " + c["determinism_note"]) if c.get("determinism_note") else "")))
    if c.get("duration_s") is not None:
        facts.append(("time", "%.2f s" % c["duration_s"]))
    for k, v in facts:
        w("<dt>%s</dt><dd>%s</dd>" % (esc(k), esc(v)))
    w("</dl>")
    for kid in c.get("known", []):
        k = known.get(kid)
        if k:
            w("<p><b>%s</b>: %s (Python %s, greenlet %s). <span class='small'>%s</span></p>" % (
                esc(kid), esc(k["title"]), esc(k["python"]), esc(k["greenlet"]), esc(k.get("evidence"))))
    files = c.get("files", {})
    links = " ".join("<a href='%s'>%s</a>" % (esc(os.path.basename(rel)), esc(key))
                     for key, rel in sorted(files.items()))
    if links:
        w("<p>Files: %s</p>" % links)
    for title, key in (("Violations (greenreplay check)", "check_text"), ("Golden diff", "golden_diff"),
                       ("Determinism: second recording vs first", "determinism_diff"),
                       ("Trace dump (greenreplay dump)", "dump"), ("Program output", "log")):
        text = read_text(base, files.get(key))
        if text is None:
            if key in ("check_text", "dump"):
                w("<h2>%s</h2><p class='small'>not available%s</p>" % (
                    esc(title), " (skipped)" if c["outcome"] == "skip" else ""))
            continue
        w("<h2 id='%s'>%s</h2><pre>%s</pre>" % (esc(key), esc(title), esc(text) if text else "(empty)"))
    w("</body></html>")
    return "\n".join(o)


def junit_xml(doc):
    q = saxutils.quoteattr
    cm = cell_map(doc)
    s = doc["summary"]["outcomes"]
    o = ['<?xml version="1.0" encoding="UTF-8"?>',
         '<testsuites name="greenreplay matrix" tests="%d" failures="%d" skipped="%d">' % (
             len(doc["cells"]), s.get("fail", 0), s.get("skip", 0))]
    for e in doc["envs"]:
        cells = [cm[(e["id"], f["name"])] for f in doc["fixtures"] if (e["id"], f["name"]) in cm]
        t = sum(c.get("duration_s") or 0 for c in cells)
        o.append('  <testsuite name=%s tests="%d" failures="%d" skipped="%d" time="%.3f">' % (
            q("matrix." + e["id"]), len(cells), sum(c["outcome"] == "fail" for c in cells),
            sum(c["outcome"] == "skip" for c in cells), t))
        o.append("    <properties>")
        for k in ("kind", "python_version", "greenlet", "gevent", "status", "reason"):
            if e.get(k):
                o.append("      <property name=%s value=%s/>" % (q(k), q(str(e[k]))))
        o.append("    </properties>")
        for c in cells:
            o.append('    <testcase classname=%s name=%s time="%.3f">' % (
                q("matrix." + e["id"]), q(c["fixture"]), c.get("duration_s") or 0))
            if c["outcome"] == "fail":
                body = c["reason"]
                for v in c.get("violations", [])[:30]:
                    body += "\n%s at event %s: %s" % (v["rule"], v["index"], v["message"])
                o.append("      <failure message=%s type=\"matrix\">%s</failure>" % (
                    q(c["reason"][:500]), saxutils.escape(body)))
            elif c["outcome"] == "skip":
                o.append("      <skipped message=%s/>" % q(c["reason"]))
            elif c["outcome"] == "survived" and c.get("aimed") and doc.get("generated", {}).get("require_kills"):
                o.append("      <failure message=%s type=\"mutant\">%s</failure>" % (
                    q(c["reason"][:500]), saxutils.escape(c["reason"])))
            elif c["outcome"] in ("known", "xpass", "killed", "survived"):
                o.append("      <system-out>%s</system-out>" % saxutils.escape(
                    "%s: %s" % (c["outcome"].upper(), c["reason"])))
            o.append("    </testcase>")
        o.append("  </testsuite>")
    o.append("</testsuites>")
    return "\n".join(o) + "\n"


def observer_effects(doc):
    """Cells whose verdict in callback mode differs from passive mode."""
    return [c for c in doc["cells"] if c.get("callback_mode") == "differs"]


def observer_md(doc):
    """Markdown section: verdicts that depend on the switch mode."""
    cells = observer_effects(doc)
    checked = sum(1 for c in doc["cells"] if c.get("callback_mode") in ("same", "differs"))
    lines = ["", "## Observer effects (passive vs callback mode)", "",
             "Every cell is recorded twice: in passive mode (the default: no greenlet trace "
             "callback) and with greenlet's callback (`--switches callback`). Any greenlet "
             "callback makes greenlet recompute the target's tracing state, so on a greenlet of "
             "the greenlet issue 256 class the callback hides what passive mode sees. %d cells compared, "
             "%d differ." % (checked, len(cells)), ""]
    if cells:
        lines += ["| environment | fixture | passive | callback |", "|---|---|---|---|"]
        for c in cells:
            rules = sorted({v.get("rule") for v in c.get("violations") or [] if v.get("rule")})
            lines.append("| %s | %s | %s | %s |" % (c["env"], c["fixture"], ",".join(rules) or "clean",
                                                   c.get("callback_rules") or "clean"))
    return lines


def print_summary(doc):
    s = doc["summary"]
    tot = s["outcomes"]
    print("matrix: %d cells: %s" % (sum(tot.values()),
                                     ", ".join("%d %s" % (tot[o], o) for o in OUTCOMES if tot.get(o)) or "none"))
    for e in doc["envs"]:
        pe = s["per_env"].get(e["id"], {})
        line = "  %-18s %-8s %s" % (e["id"], e.get("status"),
                                    ", ".join("%d %s" % (pe[o], o) for o in OUTCOMES if pe.get(o)))
        if e.get("status") != "ran" and e.get("reason"):
            line += "  (%s)" % e["reason"]
        print(line)
    miss = s["missing_minors"]
    print("greenlet in every minor version 3.9-3.15: %s" % (
        "yes" if not miss else "NO, none ran for " + ", ".join(miss)))
    for c in doc["cells"]:
        if c["outcome"] == "fail":
            print("  FAIL  %s/%s: %s" % (c["env"], c["fixture"], c["reason"]))
        elif c["outcome"] == "xpass":
            print("  XPASS %s/%s: %s" % (c["env"], c["fixture"], c["reason"]))
    obs = observer_effects(doc)
    for c in obs:
        print("  OBSERVER EFFECT %s/%s: passive gives %s, callback mode gives %s" % (
            c["env"], c["fixture"], ",".join(sorted(r for r in {v.get("rule") for v in c.get("violations") or []} if r)) or "clean",
            c.get("callback_rules") or "clean"))
    ms = s.get("mutants") or {}
    for i in ms.get("ran", []):
        d = ms["envs"][i]
        print("  MUTANT %s (%s): %s; aimed fixtures killed %s, survived %s" % (
            i, d["mutant"], "killed" if i in ms["killed"] else "SURVIVED",
            ",".join(d["aimed_killed"]) or "none", ",".join(d["aimed_survived"]) or "none"))
    if ms.get("ran"):
        print("mutation score: %d/%d mutant environments killed" % (len(ms["killed"]), len(ms["ran"])))
    for e in doc["envs"]:
        if e.get("status") == "error":
            print("  ERROR %s: %s%s" % (e["id"], e.get("reason") or "",
                                        ("; retry: " + e["retry"]) if e.get("retry") else ""))


def render(doc, out, docs):
    os.makedirs(out, exist_ok=True)
    md = render_md(doc)
    # The profiler axis's section: from this run's build/matrix/profilers,
    # else kept from the docs file.
    prof_md = profiler_axis(out, docs)[0]
    if prof_md:
        md = md.rstrip("\n") + "\n\n" + prof_md
    with open(os.path.join(out, "matrix.md"), "w", encoding="utf-8") as f:
        f.write(md)
    if docs:
        with open(docs, "w", encoding="utf-8") as f:
            f.write(md)
    with open(os.path.join(out, "index.html"), "w", encoding="utf-8") as f:
        f.write(render_index(doc, out))
    for c in doc["cells"]:
        p = os.path.join(out, cell_page(c))
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8") as f:
            f.write(render_cell_page(doc, c, out))
    with open(os.path.join(out, "junit.xml"), "w", encoding="utf-8") as f:
        f.write(junit_xml(doc))
    print_summary(doc)
    print("reports: %s/{matrix.json,matrix.md,index.html,junit.xml}%s" % (
        os.path.relpath(out), (" and " + docs) if docs else ""))
    s = doc["summary"]
    if s["outcomes"].get("fail"):
        return 1
    if doc.get("generated", {}).get("require_kills") and any(
            (c["outcome"] == "survived" and c.get("aimed")) or c.get("whole_problem") for c in doc["cells"]):
        for c in doc["cells"]:
            if c.get("whole_problem"):
                print("whole-program: %s/%s: %s" % (c["env"], c["fixture"], c["whole_problem"]))
        return 1
    if s["env_errors"]:
        return 3
    return 0


def cmd_known(args):
    path = args[0] if args else os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                             "fixtures", "known-issues.ini")
    for k in load_known(path):
        print("%-26s python %-16s greenlet %-10s%s fixtures %s; rules %s%s" % (
            k.id, k.python.text, k.greenlet.text, (" build %s;" % k.build) if k.build != "any" else "",
            ",".join(k.fixtures), ",".join(k.rules) or "-",
            ("; missing " + ",".join(k.missing)) if k.missing else "")
            + ("; profilers %s" % ",".join(k.profilers) if k.profilers else ""))
    return 0


def main(argv):
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__.strip())
        return 0
    cmd, args = argv[0], list(argv[1:])
    try:
        if cmd == "envs":
            cmd_envs(args)
            return 0
        if cmd == "cell":
            cmd_cell(args)
            return 0
        if cmd == "collect":
            return cmd_collect(args)
        if cmd == "render":
            return cmd_render(args)
        if cmd == "merge":
            return cmd_merge(args)
        if cmd == "known":
            return cmd_known(args)
        if cmd == "verdict":
            cmd_verdict(args)
            return 0
    except IndexError:
        die("%s: an option is missing its value" % cmd)
    die("unknown command %s (help lists them)" % cmd)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
