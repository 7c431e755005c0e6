#!/usr/bin/env python3
"""ci/profilers-report.py - outcomes and reports of the profiler axis.

Used by ci/profilers.sh with the host's python3 (standard library only);
the known-issue rules are those of ci/matrix-report.py.  Subcommands:

  cell CELLFILE --known FILE --envs ENVS.json
      classify one cell from the facts ci/profilers.sh wrote in CELLFILE
      (env=, fixture=, profiler=, expect=pass|fail|error|skip|none from
      the fixture's "# conform:" lines, state=ran|skip, rc= the exit status of
      `greenreplay conform`, skip_reason=, problem=, duration= in seconds)
      and the conform report beside it (same name, .json; its log .log);
      writes NAME.outcome.json and prints "OUTCOME<TAB>TEXT"
  collect --out DIR --known FILE --envs ENVS.json [--docs FILE] [--meta K=V]
      gather DIR/cells/*/*.cell into DIR/profilers.json, then render
  render PROFILERS.json [--out DIR] [--docs FILE]
      write DIR/profilers.md and DIR/index.html; with --docs, replace the
      profiler-axis section of FILE (docs/matrix.md; appended when absent);
      when DIR's parent holds matrix.json (build/matrix), its index.html is
      rendered again with this section

Outcomes: pass (conform exit 0; or the exit status the fixture's
"# conform: P=fail|error" expects), known (exit 1, every difference explained
by a known issue whose `profilers` field names the profiler), xpass (exit 0
although such an issue names the fixture), fail (an unexplained difference,
conform exit 2 or another status, a timeout), skip (conform exit 3: the
profiler is not available; or the environment or a required module is
missing).  A fixture expecting P=fail is pass with differences, fail
without; P=error is pass on conform exit 2 only; P=skip is fail when it
ran; exit 3 is skip whatever the fixture expects.  Exit status of collect and render: 0 no `fail` cell, 1 some, 2
bad usage or input.
"""

import fnmatch
import importlib.util
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = "greenreplay-profilers/1"
OUTCOMES = ["pass", "known", "xpass", "fail", "skip"]
# Report order of the built-in adapters (others follow, by name).
ORDER = ["cprofile", "profile", "yappi", "coverage", "coverage-py", "coverage-monitoring", "line_profiler",
         "pyinstrument", "memray", "austin", "scalene"]
BEGIN = "<!-- profiler-axis:begin (ci/profilers.sh writes this section) -->"
END = "<!-- profiler-axis:end -->"


def _matrix_report():
    spec = importlib.util.spec_from_file_location("matrix_report", os.path.join(HERE, "matrix-report.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MR = _matrix_report()
die, esc, read_kv, load_envs, load_known = MR.die, MR.esc, MR.read_kv, MR.load_envs, MR.load_known


# ----------------------------------------------------------------- cells

def read_report(path):
    """The `conform --json` report at PATH, or (None, why not)."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        return None, "conform wrote no report"
    except (OSError, ValueError) as e:
        return None, "unreadable conform report: %s" % e
    if not isinstance(doc, dict) or not isinstance(doc.get("differences", []), list):
        return None, "conform report is not an object with a differences list"
    return doc, None


def last_line(path, skip_prefix=None):
    """The last non-blank line of a log (the first 'skip: ' line when
    skip_prefix is given), or ''."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [ln.strip() for ln in f if ln.strip()]
    except OSError:
        return ""
    if skip_prefix:
        for ln in lines:
            if ln.startswith(skip_prefix):
                return ln[len(skip_prefix):].strip()
    return lines[-1] if lines else ""


def last_error(path):
    """The last line of a Python traceback in the log at PATH ('' if none)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [ln.rstrip("\n") for ln in f]
    except OSError:
        return ""
    err = [ln.strip() for ln in lines if ln and not ln[0].isspace() and re.match(r"^[A-Za-z_.]*(Error|Exception|Exit)\b", ln)]
    return err[-1] if err else ""


def applicable(known, profiler, env, fixture):
    pyv = env.get("python_version") or env.get("python")
    return [k for k in known if k.profilers
            and any(fnmatch.fnmatchcase(profiler, p) for p in k.profilers)
            and k.applies(pyv, env.get("greenlet"), fixture, env.get("debug") is True)]


def classify(cell, env, known, stem):
    """_classify, with the cell's note (a mutant cell: where its
    expectation comes from, ci/profilers-mutants.conf) after the reason."""
    res = _classify(cell, env, known, stem)
    if cell.get("note"):
        res["note"] = cell["note"]
        res["reason"] = "%s [%s]" % (res.get("reason") or "", cell["note"])
    return res


def _classify(cell, env, known, stem):
    """The outcome of one cell (a dict for profilers.json).  STEM is the
    cell file's path without .cell."""
    prof = cell.get("profiler", "")
    fixture = cell.get("fixture", "")
    res = {"env": cell.get("env"), "fixture": fixture, "profiler": prof, "outcome": None, "reason": "",
           "known": [], "profiler_version": None, "functions_checked": None, "differences": [],
           "exit_status": int(cell["rc"]) if cell.get("rc", "").lstrip("-").isdigit() else None,
           "duration_s": float(cell["duration"]) if cell.get("duration") else None, "timing": None,
           "files": {}}
    base = os.path.basename(stem)
    for key, suffix in (("report", ".json"), ("log", ".log")):
        if os.path.exists(stem + suffix):
            res["files"][key] = "cells/%s/%s%s" % (res["env"], base, suffix)
    if cell.get("state") == "skip":
        res["outcome"], res["reason"] = "skip", cell.get("skip_reason") or "skipped"
        return res
    rc = res["exit_status"]
    if cell.get("problem"):
        res["outcome"], res["reason"] = "fail", cell["problem"]
        return res
    rep, why = read_report(stem + ".json")
    if rep is not None:
        res["profiler_version"] = rep.get("profiler_version")
        res["functions_checked"] = rep.get("functions_checked")
        res["differences"] = rep.get("differences") or []
        res["timing"] = rep.get("timing")
    if rc == 3:
        res["outcome"] = "skip"
        res["reason"] = ((rep or {}).get("reason") or last_line(stem + ".log", "skip: ")
                         or "profiler not available")
        return res
    # The fixture's "# conform:" expectation of this profiler here (none:
    # no expectation, as pass).
    exp = res["expect"] = cell.get("expect") or "none"
    if exp == "error":
        if rc == 2:
            res["outcome"] = "pass"
            res["reason"] = "conform error, as the fixture's '# conform: %s=error' expects: %s" % (
                prof, (rep or {}).get("reason") or last_line(stem + ".log") or "no message")
        else:
            res["outcome"] = "fail"
            res["reason"] = "exit status %s, but the fixture's '# conform: %s=error' expects an error" % (rc, prof)
        return res
    if rc not in (0, 1):
        res["outcome"] = "fail"
        res["reason"] = "conform exited with status %s: %s" % (
            rc, (rep or {}).get("reason") or last_line(stem + ".log") or "no message")
        return res
    if rep is None:
        res["outcome"], res["reason"] = "fail", why
        return res
    diffs = res["differences"]
    # A program that did not run to its end (an exception, a profiler that
    # raised into it) leaves nothing sound to compare: its verdict is fail,
    # unless the fixture expects this profiler to fail there (the profiler
    # raising into the program is then part of the expected failure).
    ps = rep.get("program_status")
    died = ""
    if isinstance(ps, int) and ps != 0:
        died = "the program exited with status %d (%s)" % (ps, last_error(stem + ".log") or "no error line")
    if died and exp == "fail" and rc == 1:
        res["outcome"] = "pass"
        res["reason"] = "%s, as the fixture's '# conform: %s=fail' expects" % (died, prof)
        return res
    if died:
        res["outcome"] = "fail"
        res["reason"] = died
        return res
    if (rc == 0) != (not diffs):
        res["outcome"] = "fail"
        res["reason"] = "conform exit status %s disagrees with its report (%d difference(s))" % (rc, len(diffs))
        return res
    if exp == "skip":
        res["outcome"] = "fail"
        res["reason"] = "it ran (exit %s), but the fixture's '# conform: %s=skip' expects a skip" % (rc, prof)
        return res
    if exp == "fail":
        if diffs:
            res["outcome"] = "pass"
            res["reason"] = "%d difference(s) (%s), as the fixture's '# conform: %s=fail' expects" % (
                len(diffs), ", ".join(sorted({str(d.get("kind")) for d in diffs})), prof)
        else:
            res["outcome"] = "fail"
            res["reason"] = "no difference, but the fixture's '# conform: %s=fail' expects some" % prof
        return res
    ks = applicable(known, prof, env, fixture)
    if not diffs:
        xp = [k.id for k in ks if k.names_fixture(fixture)]
        if xp:
            res["outcome"], res["known"] = "xpass", xp
            res["reason"] = "agrees although known issue(s) %s should affect it" % ", ".join(xp)
        else:
            res["outcome"] = "pass"
            res["reason"] = "agrees (%s function(s) checked)" % (res["functions_checked"]
                                                                 if res["functions_checked"] is not None else "?")
        return res
    explained, unexplained = [], []
    for d in diffs:
        kind, msg = str(d.get("kind", "")), str(d.get("message", ""))
        hit = next((k for k in ks if k.explains(kind, msg)), None)
        if hit is None:
            unexplained.append("%s in %s (%s): %s" % (kind, d.get("function"), d.get("greenlet"), msg))
        elif hit.id not in explained:
            explained.append(hit.id)
    res["known"] = explained
    if unexplained:
        res["outcome"] = "fail"
        res["reason"] = "; ".join(unexplained[:2]) + (" (and %d more)" % (len(unexplained) - 2)
                                                      if len(unexplained) > 2 else "")
    else:
        res["outcome"] = "known"
        res["reason"] = "%d difference(s), known: %s" % (len(diffs), ", ".join(explained))
    return res


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
    if not (known_path and envs_path):
        die("cell: --known and --envs are needed")
    known, envs = load_known(known_path), load_envs(envs_path)
    cell = read_kv(path)
    env = envs.get(cell.get("env"), {"id": cell.get("env")})
    res = classify(cell, env, known, path[:-len(".cell")])
    with open(path[:-len(".cell")] + ".outcome.json", "w", encoding="utf-8") as f:
        json.dump(res, f, indent=1)
    print("%s\t%s" % (res["outcome"], res["reason"]))


# --------------------------------------------------------------- collect

PROFILER_KEYS = {"yappi": "yappi", "coverage": "coverage", "coverage-py": "coverage",
                 "coverage-monitoring": "coverage", "line_profiler": "line_profiler"}


def summarize(doc):
    per_prof = {}
    for c in doc["cells"]:
        p = per_prof.setdefault(c["profiler"], {o: 0 for o in OUTCOMES})
        p[c["outcome"]] = p.get(c["outcome"], 0) + 1
    total = {o: sum(p.get(o, 0) for p in per_prof.values()) for o in OUTCOMES}
    doc["summary"] = {"outcomes": total, "per_profiler": per_prof}


def cmd_collect(args):
    out = known_path = envs_path = docs = None
    meta = {}
    while args:
        a = args.pop(0)
        if a == "--out":
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
    known, envs = load_known(known_path), load_envs(envs_path)
    cells_dir = os.path.join(out, "cells")
    cells, env_ids, fixtures, profilers = [], [], [], []
    for env_id in sorted(os.listdir(cells_dir)) if os.path.isdir(cells_dir) else []:
        d = os.path.join(cells_dir, env_id)
        for name in sorted(os.listdir(d)):
            if not name.endswith(".cell"):
                continue
            cell = read_kv(os.path.join(d, name))
            res = classify(cell, envs.get(env_id, {"id": env_id}), known, os.path.join(d, name[:-5]))
            cells.append(res)
            for lst, v in ((env_ids, env_id), (fixtures, res["fixture"]), (profilers, res["profiler"])):
                if v not in lst:
                    lst.append(v)
    env_rows = []
    for i in env_ids:
        e = envs.get(i, {"id": i})
        env_rows.append({"id": i, "kind": e.get("kind"), "python": e.get("python"),
                         "python_version": e.get("python_version"), "greenlet": e.get("greenlet"),
                         "debug": e.get("debug") is True, "status": e.get("status"),
                         "reason": e.get("reason"),
                         "profilers": e.get("profilers") or {}})
    env_rows.sort(key=MR.env_sort_key)
    fixtures.sort(key=lambda n: (not n.startswith("profilers/"), n))
    profilers.sort(key=lambda p: (ORDER.index(p) if p in ORDER else len(ORDER), p))
    doc = {"schema": SCHEMA, "generated": dict(meta, time=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())),
           "envs": env_rows, "fixtures": fixtures, "profilers": profilers,
           "known_issues": [k.to_json() for k in known if k.profilers], "cells": cells}
    summarize(doc)
    with open(os.path.join(out, "profilers.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return render(doc, out, docs)


# ---------------------------------------------------------------- render

MARK = {"pass": "pass", "known": "known", "xpass": "XPASS", "fail": "FAIL", "skip": "skip"}


def version_of(doc, env_id, prof):
    """The profiler version seen in ENV: a cell's report, else the env's probe."""
    for c in doc["cells"]:
        v = str(c.get("profiler_version") or "")
        if c["env"] == env_id and c["profiler"] == prof and v and not v.startswith("unknown"):
            return v
    e = next((e for e in doc["envs"] if e["id"] == env_id), {})
    key = PROFILER_KEYS.get(prof)
    if prof in ("cprofile", "profile"):
        return "stdlib"
    v = (e.get("profilers") or {}).get(key) if key else None
    return v or "?"


def column_skip_reason(cells):
    """Why every cell of one profiler in one environment is skip: the reason
    most of them give, the profiler's own (not installed, not built) before a
    fixture's "# requires:" module, which only some fixtures have."""
    count = {}
    for c in cells:
        r = str(c.get("reason") or "")
        count[r] = count.get(r, 0) + 1
    return min(count, key=lambda r: (r.startswith("requires "), -count[r], r))


def md_cell(c):
    if c is None:
        return "—"
    o = c["outcome"]
    if o == "known":
        return "known: " + ", ".join(c["known"])
    if o == "xpass":
        return "**XPASS**: " + ", ".join(c["known"])
    if o == "fail":
        return "**FAIL**"
    if o == "skip":
        return "skip"
    if c.get("expect") == "error":
        return "pass (expected error)"
    if c.get("differences"):
        return "pass (expected: %s)" % ", ".join(sorted({str(d.get("kind")) for d in c["differences"]}))
    return "pass"


def render_md(doc):
    """The profiler-axis section (Markdown, between the BEGIN/END markers)."""
    s = doc["summary"]
    cm = {(c["env"], c["fixture"], c["profiler"]): c for c in doc["cells"]}
    o = [BEGIN, "## Profiler axis", ""]
    w = o.append
    g = doc.get("generated", {})
    tot = s["outcomes"]
    w("Generated by `ci/profilers.sh`%s at %s%s: %d cells (%s)%s. Each cell is `greenreplay conform "
      "--profiler P -- ENVPYTHON FIXTURE` (docs/conform.md): the profiler's own results against the "
      "recording's ground truth. pass: they agree; known: differences that fixtures/known-issues.ini "
      "explains (below); FAIL: an unexplained difference or an error; skip: the profiler (or a module the "
      "fixture requires) is not available there." % (
          " --quick" if g.get("quick") == "1" else "", g.get("time", "?"),
          (" (commit %s)" % g["commit"]) if g.get("commit") else "",
          sum(tot.values()), ", ".join("%d %s" % (tot[x], x) for x in OUTCOMES if tot.get(x)),
          ("; %s s" % g["elapsed_s"]) if g.get("elapsed_s") else ""))
    w("")
    w("### Summary per profiler")
    w("")
    w("| profiler | " + " | ".join(e["id"] for e in doc["envs"]) + " | pass | known | fail | skip |")
    w("|---|" + "---|" * (len(doc["envs"]) + 4))
    for p in doc["profilers"]:
        pp = s["per_profiler"].get(p, {})
        row = []
        for e in doc["envs"]:
            cs = [c for c in doc["cells"] if c["env"] == e["id"] and c["profiler"] == p]
            if not cs:
                v = version_of(doc, e["id"], p)
                row.append("—" if v == "?" else v)
            elif all(c["outcome"] == "skip" for c in cs):
                row.append("skip (%s)" % short_reason(column_skip_reason(cs)))
            else:
                row.append(version_of(doc, e["id"], p))
        w("| %s | %s | %d | %d | %d | %d |" % (p, " | ".join(row), pp.get("pass", 0), pp.get("known", 0),
                                                pp.get("fail", 0), pp.get("skip", 0)))
    w("")
    w("Environment cells show the profiler version used (from the suite's Debian package; `stdlib`: "
      "cProfile and profile come with the interpreter), or why the whole column is skipped; —: no cell "
      "of that profiler ran there and the environment's probe names no version of it (a mutant environment "
      "runs only its lines of ci/profilers-mutants.conf).")
    w("")
    w("### Verdicts: fixtures × environments × profilers")
    w("")
    w("| fixture | profiler | " + " | ".join("%s (%s)" % (e["id"], e.get("python_version") or e.get("python"))
                                             for e in doc["envs"]) + " |")
    w("|---|---|" + "---|" * len(doc["envs"]))
    for fx in doc["fixtures"]:
        for p in doc["profilers"]:
            w("| %s | %s | %s |" % (fx, p, " | ".join(md_cell(cm.get((e["id"], fx, p))) for e in doc["envs"])))
    w("")
    bad = [c for c in doc["cells"] if c["outcome"] in ("fail", "xpass", "known")]
    if bad:
        w("### Differences")
        w("")
        for c in bad:
            w("- %s / %s / %s — %s: %s" % (c["env"], c["fixture"], c["profiler"], c["outcome"],
                                          c["reason"].replace("|", "\\|")))
        w("")
    skips = {}
    for c in doc["cells"]:
        if c["outcome"] == "skip":
            skips.setdefault(c["reason"], []).append(c)
    if skips:
        w("### Skips")
        w("")
        for r, cs in sorted(skips.items(), key=lambda kv: -len(kv[1])):
            w("- %s (%d cell(s): %s)" % (r.replace("|", "\\|"), len(cs), ", ".join(sorted(
                {"%s/%s" % (c["env"], c["profiler"]) for c in cs}))))
        w("")
    if doc["known_issues"]:
        w("### Known profiler issues")
        w("")
        for k in doc["known_issues"]:
            seen = [c for c in doc["cells"] if k["id"] in c.get("known", [])]
            w("- **%s** — %s. Profilers %s; Python %s, greenlet %s; fixtures %s; kinds %s. Seen in %d cell(s)."
              % (k["id"], k["title"].rstrip("."), ", ".join(k["profilers"]), k["python"], k["greenlet"],
                 ", ".join(k["fixtures"]), ", ".join(k["rules"]) or "-", len(seen)))
            if k.get("evidence"):
                w("  Evidence: " + k["evidence"])
        w("")
    w(END)
    return "\n".join(o) + "\n"


def short_reason(r):
    r = r or ""
    m = re.match(r"^environment \S+ not ready", r)
    if m:
        return "env not ready"
    return (r[:60] + "…") if len(r) > 60 else r


def splice(text, section):
    """TEXT with its profiler-axis section replaced by SECTION (appended
    when TEXT has none)."""
    if BEGIN in text and END in text:
        a = text.index(BEGIN)
        b = text.index(END, a) + len(END)
        rest = text[b:]
        return text[:a] + section.rstrip("\n") + ("\n" if not rest.startswith("\n") else "") + rest
    return text.rstrip("\n") + "\n\n" + section


def existing_section(path):
    """The profiler-axis section of the Markdown file PATH, or None."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return None
    if BEGIN in text and END in text:
        a = text.index(BEGIN)
        return text[a:text.index(END, a) + len(END)] + "\n"
    return None


CLASS = {"pass": "pass", "known": "known", "xpass": "xpass", "fail": "fail", "skip": "skip"}
CSS = """
table.p { border-collapse: collapse; font-size: 12px; }
table.p th, table.p td { border: 1px solid #bbb; padding: 2px 5px; text-align: center; }
table.p td.pass { background: #c8efc8; } table.p td.known { background: #ffe8a3; }
table.p td.xpass { background: #a9c8ff; } table.p td.fail { background: #f59b9b; font-weight: bold; }
table.p td.skip { background: #e6e6e6; color: #555; }
"""


def html_section(doc, link_prefix=""):
    """The profiler axis as an HTML fragment (for its own page and the matrix page)."""
    s = doc["summary"]
    cm = {(c["env"], c["fixture"], c["profiler"]): c for c in doc["cells"]}
    o = ["<style>%s</style>" % CSS, "<h2 id='profilers'>Profiler axis</h2>"]
    w = o.append
    tot = s["outcomes"]
    w("<p>%d cells: %s. <code>greenreplay conform</code> per fixture, environment and profiler "
      "(ci/profilers.sh); generated %s.</p>" % (
          sum(tot.values()), ", ".join("%d %s" % (tot[x], x) for x in OUTCOMES if tot.get(x)),
          esc(doc.get("generated", {}).get("time"))))
    w("<h3>Summary per profiler</h3><table class='p'><tr><th>profiler</th>%s<th>pass</th><th>known</th>"
      "<th>fail</th><th>skip</th></tr>" % "".join("<th>%s</th>" % esc(e["id"]) for e in doc["envs"]))
    for p in doc["profilers"]:
        pp = s["per_profiler"].get(p, {})
        w("<tr><th>%s</th>%s<td>%d</td><td>%d</td><td>%d</td><td>%d</td></tr>" % (
            esc(p), "".join("<td>%s</td>" % esc(version_of(doc, e["id"], p)) for e in doc["envs"]),
            pp.get("pass", 0), pp.get("known", 0), pp.get("fail", 0), pp.get("skip", 0)))
    w("</table><h3>Verdicts</h3><table class='p'><tr><th>fixture</th><th>profiler</th>%s</tr>" % "".join(
        "<th>%s<br>Python %s<br>greenlet %s</th>" % (esc(e["id"]), esc(e.get("python_version") or e.get("python")),
                                                    esc(e.get("greenlet"))) for e in doc["envs"]))
    for fx in doc["fixtures"]:
        for i, p in enumerate(doc["profilers"]):
            row = "<tr>"
            if i == 0:
                row += "<th rowspan='%d'>%s</th>" % (len(doc["profilers"]), esc(fx))
            row += "<th>%s</th>" % esc(p)
            for e in doc["envs"]:
                c = cm.get((e["id"], fx, p))
                if c is None:
                    row += "<td>—</td>"
                    continue
                label = MARK[c["outcome"]]
                f = c.get("files", {}).get("report") or c.get("files", {}).get("log")
                if f:
                    label = "<a href='%s'>%s</a>" % (esc(link_prefix + f), label)
                row += "<td class='%s' title='%s'>%s</td>" % (CLASS[c["outcome"]], esc(c["reason"]), label)
            w(row + "</tr>")
    w("</table>")
    return "\n".join(o)


def render(doc, out, docs):
    os.makedirs(out, exist_ok=True)
    md = render_md(doc)
    with open(os.path.join(out, "profilers.md"), "w", encoding="utf-8") as f:
        f.write(md)
    if docs:
        try:
            with open(docs, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            text = ""
        with open(docs, "w", encoding="utf-8") as f:
            f.write(splice(text, md))
    with open(os.path.join(out, "index.html"), "w", encoding="utf-8") as f:
        f.write("<!DOCTYPE html><html><head><meta charset='utf-8'><title>greenreplay profiler axis</title>"
                "</head><body><h1>greenreplay profiler axis</h1>%s</body></html>\n" % html_section(doc))
    # The matrix page beside it shows the axis too.
    parent = os.path.dirname(os.path.abspath(out))
    mj = os.path.join(parent, "matrix.json")
    if os.path.isfile(mj) and os.path.basename(os.path.abspath(out)) == "profilers":
        try:
            with open(mj, encoding="utf-8") as f:
                mdoc = json.load(f)
            MR.summarize(mdoc)
            with open(os.path.join(parent, "index.html"), "w", encoding="utf-8") as f:
                f.write(MR.render_index(mdoc, parent))
        except (OSError, ValueError, KeyError) as e:
            print("profilers: could not render %s/index.html again: %s" % (parent, e), file=sys.stderr)
    tot = doc["summary"]["outcomes"]
    print("profiler axis: %d cells: %s" % (sum(tot.values()), ", ".join("%d %s" % (tot[x], x)
                                                                         for x in OUTCOMES if tot.get(x))))
    for p in doc["profilers"]:
        pp = doc["summary"]["per_profiler"][p]
        print("  %-20s %s" % (p, ", ".join("%d %s" % (pp[x], x) for x in OUTCOMES if pp.get(x))))
    for c in doc["cells"]:
        if c["outcome"] in ("fail", "xpass"):
            print("  %s: %s / %s / %s: %s" % (c["outcome"].upper(), c["env"], c["fixture"], c["profiler"],
                                              c["reason"]))
    print("reports: %s/{profilers.json,profilers.md,index.html}%s" % (
        os.path.relpath(out), (" and " + docs) if docs else ""))
    return 1 if tot.get("fail") else 0


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
    if doc.get("schema") != SCHEMA:
        die("%s: not a profiler-axis report (schema %r)" % (path, doc.get("schema")))
    summarize(doc)
    return render(doc, out or os.path.dirname(os.path.abspath(path)), docs)


def main(argv):
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__.strip())
        return 0
    cmd, args = argv[0], list(argv[1:])
    try:
        if cmd == "cell":
            cmd_cell(args)
            return 0
        if cmd == "collect":
            return cmd_collect(args)
        if cmd == "render":
            return cmd_render(args)
    except IndexError:
        die("%s: an option is missing its value" % cmd)
    die("unknown command %s (help lists them)" % cmd)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
