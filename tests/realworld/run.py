#!/usr/bin/env python3
"""tests/realworld/run.py: the precision benchmark of realistic programs.

Example:

    tests/realworld/run.py            # every program, every environment found
    tests/realworld/run.py --quick    # the CI subset (programs marked quick)
    tests/realworld/run.py --only gl256_seed --env mut256-3.10=/path/bin/python:mut256

Each tests/realworld/NAME.py states in its header the public report it
stands for and the right verdict, per interpreter and greenlet version,
written from the report and the semantics of CPython and greenlet (not
from the tool's output):

    # modes: whole manual          record whole-program and/or with --manual
    # needs: gevent yappi          modules the program imports (else skipped)
    # quick: yes                   part of --quick
    # expect: clean                the verdict by default
    # expect gevent<20.12: unreached    a later matching line wins
    # note: thread pool            a regex the report's notes must match
                                   # (when the verdict is clean)

A verdict is `clean` or a list of rule classes: the checker's rules
(imbalance, blind_spot, switch_consistency, propagation, callback_guard)
and two classes of finding that are not blind spots of a profiler:
`displaced` (the program replaced or removed the profiler) and
`unreached` (a thread ran Python code no profiler reached). A checker that
reports those under blind_spot is classified by message; a rule whose name
says it (displaced..., unreached...) maps to the class directly.
Conditions: py, greenlet, gevent (versions: < <= > >= = !=), mutant, mode,
switches, env (names: = !=).

Every program runs in every environment that has what it needs, in each
of its modes, with --switches passive and callback. The runner prints each
wrong verdict, a confusion table by rule class (true/false positives and
negatives), precision and recall, and exits 1 on any wrong verdict (2 on a
usage or setup error).
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))

CHECKER_RULES = ["imbalance", "blind_spot", "switch_consistency", "propagation", "callback_guard"]
CLASSES = CHECKER_RULES + ["displaced", "unreached", "attribution"]

PROBE = r"""
import json, sys
out = {"py": "%d.%d.%d" % sys.version_info[:3]}
for name in ("greenlet", "gevent", "yappi", "coverage", "eventlet"):
    try:
        mod = __import__(name)
    except Exception:
        out[name] = None
        continue
    v = getattr(mod, "__version__", None)
    if v is None:
        try:
            from importlib import metadata
            v = metadata.version(name)
        except Exception:
            v = "0"
    out[name] = v
print(json.dumps(out))
"""


def vtuple(v):
    parts = []
    for p in re.split(r"[.+-]", str(v)):
        m = re.match(r"\d+", p)
        if not m:
            break
        parts.append(int(m.group()))
    return tuple(parts)


# ---------------------------------------------------------------- programs

class Program:
    def __init__(self, path):
        self.path = path
        self.name = os.path.splitext(os.path.basename(path))[0]
        self.modes = ["whole"]
        self.needs = []
        self.quick = False
        self.expects = []   # (conditions, set of classes)
        self.note = None
        self.report = ""
        self._parse()

    def _parse(self):
        header = []
        with open(self.path, encoding="utf-8") as f:
            for line in f:
                if not line.startswith("#"):
                    break
                header.append(line.rstrip("\n"))
        seen = set()
        for line in header:
            m = re.match(r"#\s*(expect)(\s[^:]*)?:\s*(.*)$", line)
            if m:
                conds = parse_conditions(m.group(2) or "", self.path)
                verdict = set(m.group(3).split())
                if verdict == {"clean"}:
                    verdict = set()
                bad = verdict - set(CLASSES)
                if bad:
                    raise SystemExit("%s: unknown verdict %s" % (self.path, " ".join(sorted(bad))))
                self.expects.append((conds, verdict))
                seen.add("expect")
                continue
            m = re.match(r"#\s*(modes|needs|quick|note|report):\s*(.*)$", line)
            if not m:
                continue
            key, val = m.group(1), m.group(2).strip()
            seen.add(key)
            if key == "modes":
                self.modes = val.split()
                if not self.modes or set(self.modes) - {"whole", "manual"}:
                    raise SystemExit("%s: modes must be whole and/or manual" % self.path)
            elif key == "needs":
                self.needs = val.split()
            elif key == "quick":
                self.quick = val == "yes"
            elif key == "note":
                self.note = re.compile(val, re.I)
            elif key == "report":
                self.report = val
        for key in ("report", "modes", "expect"):
            if key not in seen:
                raise SystemExit("%s: header has no '%s:' line" % (self.path, key))
        if self.expects[0][0]:
            raise SystemExit("%s: the first expect line must have no condition" % self.path)

    def expected(self, ctx):
        verdict = None
        for conds, v in self.expects:
            if all(c(ctx) for c in conds):
                verdict = v
        return verdict


def parse_conditions(text, where):
    conds = []
    for tok in text.split():
        m = re.match(r"(py|greenlet|gevent|mutant|mode|switches|env)(<=|>=|!=|<|>|=)(\S+)$", tok)
        if not m:
            raise SystemExit("%s: bad condition %r" % (where, tok))
        key, op, val = m.groups()
        conds.append(make_condition(key, op, val))
    return conds


def make_condition(key, op, val):
    def cond(ctx):
        have = ctx.get(key)
        if key in ("py", "greenlet", "gevent"):
            if have is None:
                return False
            a, b = vtuple(have), vtuple(val)
            a = a[:len(b)]
            return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b,
                    "=": a == b, "!=": a != b}[op]
        if op == "=":
            return (have or "") == val
        if op == "!=":
            return (have or "") != val
        raise SystemExit("condition %s%s%s: names compare with = or !=" % (key, op, val))
    return cond


# ------------------------------------------------------------ environments

class Env:
    def __init__(self, name, python, pythonpath=None, mutant=None, kind="host"):
        self.name = name
        self.python = python
        self.pythonpath = pythonpath
        self.mutant = mutant
        self.kind = kind
        self.versions = None
        self.problem = None

    def probe(self):
        try:
            out = subprocess.run([self.python, "-c", PROBE], capture_output=True, text=True, timeout=120)
            self.versions = json.loads(out.stdout.strip().splitlines()[-1])
        except Exception as e:  # an environment that cannot run is reported, not fatal
            self.problem = "probe failed: %s" % e
        return self


def cache_dir():
    return os.path.realpath(os.environ.get("GREENREPLAY_CACHE") or os.path.expanduser("~/.cache/greenreplay"))


def find_envs(args):
    envs = []
    py = args.python
    envs.append(Env("host-%s" % ".".join(
        subprocess.run([py, "-c", "import sys; print(*sys.version_info[:2], sep='.')"],
                       capture_output=True, text=True).stdout.split()), py))
    if args.host_only:
        return envs
    # Venvs of ci/matrix-greenlet.sh that are already built (mutants among them).
    mg = subprocess.run([os.path.join(TOP, "ci/matrix-greenlet.sh"), "list"], capture_output=True, text=True)
    venvs = os.path.join(cache_dir(), "matrix", "venvs")
    for line in mg.stdout.splitlines():
        f = line.split()
        if len(f) < 5 or f[0] not in args.greenlet_envs:
            continue
        vpy = os.path.join(venvs, f[0], "bin", "python")
        if os.path.exists(vpy):
            envs.append(Env(f[0], vpy, mutant=None if f[4] == "-" else f[4], kind="user"))
        else:
            print("realworld: %s not built (ci/matrix-greenlet.sh prepare %s): skipped" % (f[0], f[0]))
    # Debian roots that ci/envs.sh reports ready.
    try:
        listed = json.loads(subprocess.run([os.path.join(TOP, "ci/envs.sh"), "list", "--json"],
                                           capture_output=True, text=True, timeout=120).stdout)
    except Exception:
        listed = []
    envs_sh = os.path.join(TOP, "ci/envs.sh")
    for e in listed:
        if e.get("kind") != "root" or e.get("debug"):
            continue
        if e.get("status") != "ready" and "for this clone" in (e.get("reason") or ""):
            # The root is there; only this clone's recorder is missing (not provisioning).
            ok = all(subprocess.run([envs_sh, step, e["id"]], capture_output=True).returncode == 0
                     for step in ("build", "smoke"))
            e["status"] = "ready" if ok else e["status"]
        if e.get("status") == "ready":
            envs.append(Env(e["id"], e["command"], pythonpath=e.get("pythonpath"), kind="root"))
        else:
            print("realworld: %s: %s (%s): skipped" % (e["id"], e.get("status"), e.get("reason")))
    for spec in args.env:
        name, _, rest = spec.partition("=")
        vpy, _, mutant = rest.partition(":")
        envs = [e for e in envs if e.name != name]
        envs.append(Env(name, vpy, mutant=mutant or None, kind="user"))
    return envs


def prepare_user_env(env, args):
    """Build the recorder for a user environment (ci/envs.sh build) and use its wrapper."""
    envs_sh = os.path.join(TOP, "ci/envs.sh")
    spec = "%s=%s" % (env.name, env.python)
    r = subprocess.run([envs_sh, "--env", spec, "build", env.name], capture_output=True, text=True)
    if r.returncode != 0:
        env.problem = "ci/envs.sh build failed: %s" % (r.stderr.strip().splitlines() or ["?"])[-1]
        return
    listed = json.loads(subprocess.run([envs_sh, "--env", spec, "list", "--json", env.name],
                                       capture_output=True, text=True).stdout)
    for e in listed:
        if e["id"] == env.name:
            env.pythonpath = e.get("pythonpath")


# ------------------------------------------------------------------ cells

def classify(v):
    """The rule class of one violation of `check --format json`."""
    rule = v.get("rule", "")
    msg = v.get("message", "")
    if "displac" in rule:
        return "displaced"
    if "unreached" in rule or "unfollowed" in rule:
        return "unreached"
    if rule == "blind_spot":
        if "no profile function on t" in msg:
            return "unreached"
        if "replaced by the program" in msg or "removed by the program" in msg:
            return "displaced"
    return rule


def run_cell(prog, env, mode, switches, expected, args, workdir):
    tag = "%s.%s.%s.%s" % (prog.name, env.name, mode, switches)
    trace = os.path.join(workdir, tag + ".grt")
    cmd = [args.cli, "record", "-o", trace, "--switches", switches]
    if mode == "manual":
        cmd.append("--manual")
    cmd += ["--", env.python, prog.path]
    run_env = dict(os.environ)
    if env.pythonpath:
        run_env["GREENREPLAY_PYTHONPATH"] = env.pythonpath
    res = {"program": prog.name, "env": env.name, "mode": mode, "switches": switches,
           "trace": trace, "found": set(), "problem": None, "messages": [], "notes_ok": None}
    t0 = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout,
                           cwd=HERE, env=run_env)
    except subprocess.TimeoutExpired:
        res["problem"] = "record timed out after %ds" % args.timeout
        return res
    res["seconds"] = time.time() - t0
    if r.returncode != 0:
        tail = (r.stderr.strip().splitlines() or [""])[-1]
        res["problem"] = "program exited %d under record: %s" % (r.returncode, tail[:200])
        return res
    c = subprocess.run([args.cli, "check", "--format", "json", trace], capture_output=True, text=True)
    try:
        doc = json.loads(c.stdout)
        t = doc["traces"][0]
    except Exception:
        res["problem"] = "check exited %d without a JSON report: %s" % (
            c.returncode, (c.stderr.strip().splitlines() or [""])[-1][:200])
        return res
    if t.get("status") in ("nothing_checked", "unusable"):
        res["problem"] = "check: %s" % t.get("status")
        return res
    res["check_rc"] = c.returncode
    per_class = {}
    for v in t.get("violations", []):
        k = classify(v)
        res["found"].add(k)
        per_class[k] = per_class.get(k, 0) + 1
        if per_class[k] <= 2:
            res["messages"].append("%s [%s at %s]: %s" % (k, v.get("rule"), v.get("index"),
                                                          v.get("message", "")[:400]))
    # A rule counted but with no violation listed (past a cap) still counts.
    listed = {v.get("rule") for v in t.get("violations", [])}
    for rule, n in t.get("counts", {}).items():
        if n and rule not in listed:
            res["found"].add(classify({"rule": rule}))
    if prog.note is not None and not expected:
        hay = json.dumps({k: t.get(k) for k in t if k not in ("file", "violations", "coverage", "counts")})
        res["notes_ok"] = bool(prog.note.search(hay))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="programs marked quick only")
    ap.add_argument("--only", action="append", default=[], help="this program (repeatable)")
    ap.add_argument("--python", default=os.environ.get("PYTHON", "/usr/bin/python3"),
                    help="the host interpreter (default /usr/bin/python3)")
    ap.add_argument("--cli", default=os.path.join(TOP, "build", "greenreplay"))
    ap.add_argument("--host-only", action="store_true", help="only the host interpreter")
    ap.add_argument("--greenlet-envs", default="mut256-3.10,pyenv-3.10-gl2.0",
                    help="ci/matrix-greenlet.sh venvs to use when built (comma list)")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=PYTHON[:MUTANT]",
                    help="another interpreter (repeatable)")
    ap.add_argument("--envs", default="", help="only these environments (comma list of names)")
    ap.add_argument("--jobs", "-j", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=60)
    ap.add_argument("--keep", default=os.path.join(TOP, "build", "realworld"),
                    help="traces and results.json go here")
    ap.add_argument("-v", "--verbose", action="store_true", help="a line per cell")
    args = ap.parse_args()
    args.greenlet_envs = [x for x in args.greenlet_envs.split(",") if x]
    if not os.access(args.cli, os.X_OK):
        print("realworld: %s not built (make all)" % args.cli, file=sys.stderr)
        return 2

    progs = [Program(os.path.join(HERE, f)) for f in sorted(os.listdir(HERE))
             if f.endswith(".py") and f != "run.py" and not f.startswith("_")]
    if args.only:
        progs = [p for p in progs if p.name in args.only]
        if not progs:
            print("realworld: no program named %s" % ", ".join(args.only), file=sys.stderr)
            return 2
    elif args.quick:
        progs = [p for p in progs if p.quick]

    envs = find_envs(args)
    if args.envs:
        keep = set(args.envs.split(","))
        envs = [e for e in envs if e.name in keep]
    for e in envs:
        if e.kind == "user":
            prepare_user_env(e, args)
        if not e.problem:
            e.probe()
    workdir = args.keep
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)

    cells, skipped = [], []
    for e in envs:
        if e.problem:
            print("realworld: environment %s unusable: %s" % (e.name, e.problem))
            continue
        v = e.versions
        print("realworld: %s: python %s, greenlet %s, gevent %s, yappi %s, coverage %s, eventlet %s%s"
              % (e.name, v["py"], v["greenlet"], v["gevent"], v["yappi"], v["coverage"], v["eventlet"],
                 ", mutant " + e.mutant if e.mutant else ""))
        for p in progs:
            missing = [n for n in p.needs if not v.get(n)]
            if missing:
                skipped.append((p.name, e.name, "no " + " ".join(missing)))
                continue
            for mode in p.modes:
                for sw in ("passive", "callback"):
                    ctx = {"py": v["py"], "greenlet": v["greenlet"], "gevent": v["gevent"],
                           "mutant": e.mutant, "mode": mode, "switches": sw, "env": e.name}
                    exp = p.expected(ctx)
                    # Outside the host, --quick keeps the cells whose verdict the
                    # environment changes (an expect line with a condition holds).
                    if args.quick and e.kind != "host" and exp == p.expects[0][1]:
                        continue
                    cells.append((p, e, mode, sw, exp))

    t0 = time.time()
    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        futs = [(c, ex.submit(run_cell, *c, args, workdir)) for c in cells]
        for (p, e, mode, sw, exp), fut in futs:
            r = fut.result()
            r["expected"] = exp
            r["report"] = p.report
            r["wrong"] = bool(r["problem"]) or r["found"] != exp or r["notes_ok"] is False
            results.append(r)
            if args.verbose or r["wrong"]:
                print("%-5s %-36s %-16s %-6s %-8s expected %-22s got %s%s" % (
                    "WRONG" if r["wrong"] else "ok", p.name, e.name, mode, sw,
                    " ".join(sorted(exp)) or "clean",
                    r["problem"] or (" ".join(sorted(r["found"])) or "clean"),
                    "" if r["notes_ok"] is not False else " (no note matching /%s/)" % p.note.pattern))
                sys.stdout.flush()

    # Confusion table by rule class, and by cell (flagged or not).
    table = {k: [0, 0, 0, 0] for k in CLASSES}   # TP FP FN TN
    cell = [0, 0, 0, 0]
    for r in results:
        if r["problem"]:
            continue
        for k in set(CLASSES) | r["found"] | r["expected"]:
            row = table.setdefault(k, [0, 0, 0, 0])
            e_, f_ = k in r["expected"], k in r["found"]
            row[0 if e_ and f_ else 1 if f_ else 2 if e_ else 3] += 1
        e_, f_ = bool(r["expected"]), bool(r["found"])
        cell[0 if e_ and f_ else 1 if f_ else 2 if e_ else 3] += 1

    def ratio(a, b):
        return "%.3f" % (a / b) if b else "n/a"

    print()
    print("confusion table by rule class (%d cells checked):" % sum(1 for r in results if not r["problem"]))
    print("  %-20s %5s %5s %5s %5s  %9s %6s" % ("rule", "TP", "FP", "FN", "TN", "precision", "recall"))
    tot = [0, 0, 0, 0]
    for k, row in table.items():
        print("  %-20s %5d %5d %5d %5d  %9s %6s" % (k, *row, ratio(row[0], row[0] + row[1]),
                                                  ratio(row[0], row[0] + row[2])))
        tot = [a + b for a, b in zip(tot, row)]
    print("  %-20s %5d %5d %5d %5d  %9s %6s" % ("all", *tot, ratio(tot[0], tot[0] + tot[1]),
                                              ratio(tot[0], tot[0] + tot[2])))
    print("by cell (flagged or clean): TP %d FP %d FN %d TN %d" % tuple(cell))
    wrong = [r for r in results if r["wrong"]]
    problems = [r for r in results if r["problem"]]
    notes = [r for r in results if r["notes_ok"] is False]
    print("precision %s recall %s; %d programs, %d environments, %d cells, %d wrong (%d could not be checked, "
          "%d without the expected note), %d program-environment pairs skipped (a module missing); %.0fs"
          % (ratio(tot[0], tot[0] + tot[1]), ratio(tot[0], tot[0] + tot[2]), len(progs),
             sum(1 for e in envs if not e.problem), len(results), len(wrong), len(problems), len(notes),
             len(skipped), time.time() - t0))
    with open(os.path.join(workdir, "results.json"), "w") as f:
        json.dump([dict(r, found=sorted(r["found"]), expected=sorted(r["expected"])) for r in results],
                  f, indent=1)
    if wrong:
        print("wrong verdicts: details and first messages in %s/results.json" % workdir)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
