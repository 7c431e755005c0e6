#!/usr/bin/python3
"""tests/transparency/run.py - the transparency oracle: a program prints the
same thing recorded and unrecorded.

Example:
    tests/transparency/run.py                      # every item, every mode, host
    tests/transparency/run.py --set quick          # the subset `make test` runs
    tests/transparency/run.py --env trixie-3.13 sys_path forks
    tests/transparency/run.py --modes whole-passive fixtures/seed

An item is a probe program (tests/transparency/probes/NAME.py) or a fixture
(fixtures/NAME.py, named fixtures/NAME).  Each item runs unrecorded, then
under `greenreplay record` in each mode:

    whole-passive    record --switches passive            (whole-program)
    whole-callback   record --switches callback
    manual-passive   record --manual --switches passive
    manual-callback  record --manual --switches callback

What is compared: the program's stdout, its stderr and its exit status.
`record`'s own lines on stderr ("greenreplay: record: ...") are the tool's,
not the program's, and are left out.  The unrecorded run of a fixture gets
a stand-in greenreplay package (tests/transparency/stub: start(), stop(),
mark() do nothing) so it runs as its code says.  A probe with the header
`# manual: start` calls greenreplay.start()/stop() itself in the manual
modes (argument --start; its unrecorded run then gets the stand-in too); in
the whole-program modes it never names greenreplay.

Probe headers (the first 40 lines), besides fixtures' `# requires:`:
    # manual: start      see above
    # runs: N            run each kind N times; all runs must print the same
    # args: PKG          arguments; PKG is the recorder's package directory
    # trace: usable      the recorded trace must be readable (check exit != 2)
    # trace: clean       the recorded trace must check clean (exit 0)
    # allow: [X.Y+] RULE[:FUNCTION]...
                         with `trace: clean`, these findings are allowed
                         (check --allow), on Python X.Y and later only
                         when a version is given: a finding the recorder
                         makes by design there (docs/RECORDER.md)
    # set: full          only in the full set (too slow for `make test`)
    # timeout: SEC       limit per run of this item (default: --timeout)
The trace is checked only where the program was recorded (whole-program
modes, and manual modes of a `manual: start` probe).

A difference fails, naming the item and mode, with a unified diff (also in
OUT/ITEM.MODE.diff).  tests/transparency/known-differences.txt lists the
differences known today (ITEM MODE ENV REASON, shell patterns allowed in the
first three fields): such a cell is reported `known` and does not fail; a
listed cell that no longer differs fails as `STALE` ("now passes: remove it
from known-differences"), so the list cannot go stale.
tests/transparency/skip.txt lists cells that cannot be compared by design
(ITEM MODE REASON, patterns allowed): reported `skip` with the reason.

Options:
  --python PY     interpreter (default /usr/bin/python3; environment host-X.Y)
  --env ID        a ci/envs.sh environment instead (built if needed; it must
                  be provisioned: ci/envs.sh provision ID)
  --set SET       full (default) or quick (the bounded subset of `make test`:
                  every probe in whole-passive and manual-callback, but
                  those marked `# set: full`; every fixture in whole-passive)
  --modes M,M     only these modes
  --jobs N        cells run at once (default 2)
  --out DIR       results (default build/transparency/ENV)
  --known FILE    the known-differences list (default beside this script)
  --timeout SEC   limit per run (default 300)
  --probes DIR    the probe programs (default tests/transparency/probes)
  ITEM...         only these items (probe names, fixtures/NAME)
Exit status: 0 every cell agrees or is a known difference; 1 a difference,
a stale known difference or a run that failed; 2 bad usage; 3 the
environment is unavailable.
"""
import concurrent.futures
import difflib
import fnmatch
import glob
import os
import re
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODES = {
    "whole-passive": (False, "passive"),
    "whole-callback": (False, "callback"),
    "manual-passive": (True, "passive"),
    "manual-callback": (True, "callback"),
}
QUICK_PROBE_MODES = ("whole-passive", "manual-callback")
QUICK_FIXTURE_MODES = ("whole-passive",)
TOOL_LINE = re.compile(r"^greenreplay: record: ")


def die(status, msg):
    print("transparency: " + msg, file=sys.stderr)
    sys.exit(status)


def header(path, key):
    """Value of "# key: value" among the first 40 lines, None if absent."""
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i >= 40:
                break
            m = re.match(r"^# *%s:(.*)$" % re.escape(key), line)
            if m:
                return m.group(1).strip()
    return None


def parse_args(argv):
    opts = {"python": "/usr/bin/python3", "env": None, "set": "full", "modes": list(MODES),
            "jobs": 2, "out": None, "known": os.path.join(HERE, "known-differences.txt"),
            "timeout": 300, "items": [], "probes": os.path.join(HERE, "probes")}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            print(__doc__.strip())
            sys.exit(0)
        if a in ("--python", "--env", "--set", "--modes", "--jobs", "--out", "--known", "--timeout", "--probes"):
            if i + 1 >= len(argv):
                die(2, a + " needs a value")
            v = argv[i + 1]
            i += 2
            if a == "--modes":
                opts["modes"] = [m for m in v.split(",") if m]
                bad = [m for m in opts["modes"] if m not in MODES]
                if bad:
                    die(2, "unknown mode %s (modes: %s)" % (bad[0], ", ".join(MODES)))
            elif a in ("--jobs", "--timeout"):
                if not v.isdigit() or int(v) < 1:
                    die(2, a + " needs a positive number")
                opts[a[2:]] = int(v)
            elif a == "--set":
                if v not in ("full", "quick"):
                    die(2, "--set is full or quick")
                opts["set"] = v
            else:
                opts[a[2:]] = v
            continue
        if a.startswith("-"):
            die(2, "unknown option %s (--help lists them)" % a)
        opts["items"].append(a)
        i += 1
    return opts


def run_env(opts):
    """(interpreter words, env name, recorder package dir, extra env for record)."""
    build = os.path.realpath(os.environ.get("BUILD", os.path.join(ROOT, "build")))
    if opts["env"] is None:
        py = opts["python"]
        try:
            ver = subprocess.run([py, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                 capture_output=True, text=True, timeout=60).stdout.strip()
        except OSError as e:
            die(3, "cannot run %s: %s" % (py, e))
        if not ver:
            die(3, "cannot run %s" % py)
        name = ("host-" if py.startswith("/usr/bin/") else "python") + ver
        return [py], name, os.path.join(build, "python"), {}, build
    env_id = opts["env"]
    envs = os.path.join(ROOT, "ci", "envs.sh")
    b = subprocess.run([envs, "build", env_id], capture_output=True, text=True)
    if b.returncode != 0:
        die(3, "cannot build the recorder for %s: %s" % (env_id, (b.stderr or b.stdout).strip().splitlines()[-1:]))
    p = subprocess.run([envs, "python", env_id], capture_output=True, text=True)
    wrapper = p.stdout.strip()
    if p.returncode != 0 or not wrapper:
        die(3, "ci/envs.sh python %s: %s" % (env_id, p.stderr.strip() or "no interpreter"))
    envdir = os.path.dirname(os.path.dirname(wrapper))
    pkg = os.path.join(envdir, "build", "python")
    # The environment's wrapper puts the recorder on PYTHONPATH for every
    # run; the oracle's unrecorded runs must not have it, and `record`
    # finds it through GREENREPLAY_PYTHONPATH.  A copy of the wrapper
    # without it (and without its GREENREPLAY_* variables) runs both kinds.
    with open(wrapper, encoding="utf-8") as f:
        text = f.read()
    out = []
    for line in text.splitlines():
        # (Its PYTHONPATH line puts the recorder in front of the caller's
        # PYTHONPATH, "PKG${PYTHONPATH:+:$PYTHONPATH}": without the line the
        # caller's PYTHONPATH passes through as it is, with no empty entry
        # that would add the working directory to sys.path.)
        if line.startswith("PYTHONPATH=") or line.startswith("GREENREPLAY_ENV=") or \
                line.startswith("GREENREPLAY_PYTHON="):
            continue
        out.append(line)
    bare = os.path.join(opts["out"], "python")
    with open(bare, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    os.chmod(bare, 0o755)
    return [bare], env_id, pkg, {"GREENREPLAY_PYTHONPATH": pkg}, build


def load_known(path):
    entries = []
    if not os.path.exists(path):
        return entries
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 3)
            if len(parts) < 4:
                die(2, "%s:%d: want ITEM MODE ENV REASON" % (path, n))
            entries.append((parts[0], parts[1], parts[2], parts[3], n))
    return entries


def load_skips(path):
    """[(ITEM pattern, MODE pattern, reason)]"""
    skips = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if line and not line.startswith("#"):
                    parts = line.split(None, 2)
                    if len(parts) < 3:
                        die(2, "%s:%d: want ITEM MODE REASON" % (path, n))
                    skips.append(tuple(parts))
    return skips


def skipped(skips, name, mode):
    for pi, pm, why in skips:
        if fnmatch.fnmatchcase(name, pi) and fnmatch.fnmatchcase(mode, pm):
            return why
    return None


class Oracle:
    def __init__(self, opts):
        self.opts = opts
        self.py, self.env_name, self.pkg, self.rec_env, build = run_env(opts)
        self.cli = os.environ.get("GREENREPLAY_CLI", os.path.join(build, "greenreplay"))
        if not os.access(self.cli, os.X_OK):
            die(2, "%s is missing (make)" % self.cli)
        self.out = opts["out"]
        self.base_env = {k: v for k, v in os.environ.items()
                         if not k.startswith("GREENREPLAY") and k not in ("PYTHONHASHSEED", "PYTHONPATH")}
        self.stub = os.path.join(HERE, "stub")
        self.lock = threading.Lock()
        self.baselines = {}
        self.req_cache = {}
        v = subprocess.run(self.py + ["-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                           env=self.base_env, capture_output=True, text=True, cwd=self.out).stdout.split(".")
        self.version = tuple(int(x) for x in v) if len(v) == 2 and all(x.strip().isdigit() for x in v) else None

    def allowed(self, item):
        """check's --allow arguments for item (its `allow:` header)."""
        words = (item["allow"] or "").split()
        if words and re.match(r"^\d+\.\d+\+$", words[0]):
            since = tuple(int(x) for x in words.pop(0)[:-1].split("."))
            if self.version is None or self.version < since:
                return []
        return [a for w in words for a in ("--allow", w)]

    def missing(self, path):
        for mod in (header(path, "requires") or "").replace(",", " ").split():
            if mod not in self.req_cache:
                r = subprocess.run(self.py + ["-c", "import " + mod], env=self.base_env,
                                   capture_output=True, text=True, cwd=self.out)
                last = (r.stderr.strip().splitlines() or ["import failed"])[-1]
                self.req_cache[mod] = None if r.returncode == 0 else last
            if self.req_cache[mod]:
                return "requires %s (%s)" % (mod, self.req_cache[mod])
        return None

    def run(self, cmd, env, tag, limit=None):
        work = os.path.join(self.out, "work", tag)
        os.makedirs(work, exist_ok=True)
        limit = limit or self.opts["timeout"]
        try:
            r = subprocess.run(cmd, env=env, cwd=work, capture_output=True, text=True,
                               errors="replace", timeout=limit)
        except subprocess.TimeoutExpired:
            return "TIMEOUT after %ds\n" % limit
        err = "".join(l for l in r.stderr.splitlines(True) if not TOOL_LINE.match(l))
        # `record` exits 128+N when the program dies of signal N, as a shell
        # says it; subprocess gives -N for the unrecorded program.
        rc = 128 - r.returncode if r.returncode < 0 else r.returncode
        return "%s--- stderr ---\n%s--- exit status %d\n" % (r.stdout, err, rc)

    def argv(self, item, start):
        path = item["path"]
        args = (header(path, "args") or "").split()
        args = [self.pkg if a == "PKG" else a for a in args]
        return [path] + args + (["--start"] if start else [])

    def baseline(self, item, start):
        """The unrecorded outputs (one per run), computed once per kind."""
        stub = item["fixture"] or start
        key = (item["name"], start)
        with self.lock:
            ev = self.baselines.get(key)
            if ev is None:
                ev = self.baselines[key] = [threading.Event(), None]
                mine = True
            else:
                mine = False
        if mine:
            env = dict(self.base_env)
            if stub:
                env["PYTHONPATH"] = self.stub
            tag = "%s.plain%s" % (item["tag"], "-start" if start else "")
            ev[1] = [self.run(self.py + self.argv(item, start), env, tag, item["timeout"])
                     for _ in range(item["runs"])]
            ev[0].set()
        ev[0].wait()
        return ev[1]

    def cell(self, item, mode):
        manual, switches = MODES[mode]
        start = manual and item["manual_start"]
        base = self.baseline(item, start)
        tag = "%s.%s" % (item["tag"], mode)
        if any(b != base[0] for b in base):
            return "ERR", "the unrecorded runs disagree (the item is not deterministic)\n" + udiff(base[0], next(b for b in base if b != base[0]), "run 1", "run N")
        trace = os.path.join(self.out, tag + ".grt")
        env = dict(self.base_env)
        env.update(self.rec_env)
        cmd = [self.cli, "record"] + (["--manual"] if manual else []) + ["--switches", switches, "--force", "-o", trace, "--"]
        problems = []
        for n in range(item["runs"]):
            got = self.run(cmd + self.py + self.argv(item, start), env, tag, item["timeout"])
            if got != base[0]:
                problems.append(udiff(base[0], got, "unrecorded", "recorded (%s)" % mode))
                break
        want = item["trace"]
        if not problems and want and (not manual or start):
            c = subprocess.run([self.cli, "check"] + self.allowed(item) + [trace], capture_output=True, text=True,
                               errors="replace")
            if (want == "usable" and c.returncode == 2) or (want == "clean" and c.returncode != 0):
                problems.append("trace not %s: greenreplay check exit %d\n%s" % (
                    want, c.returncode, "".join((c.stdout + c.stderr).splitlines(True)[:15])))
        if problems:
            return "DIFF", problems[0]
        try:
            os.unlink(trace)
        except OSError:
            pass
        return "ok", ""


def udiff(a, b, na, nb):
    return "".join(difflib.unified_diff(a.splitlines(True), b.splitlines(True), na, nb, n=2))


def main():
    opts = parse_args(sys.argv[1:])
    name_hint = opts["env"] or "host"
    if opts["out"] is None:
        opts["out"] = os.path.join(ROOT, "build", "transparency", name_hint)
    opts["out"] = os.path.realpath(opts["out"])
    os.makedirs(opts["out"], exist_ok=True)
    for old in glob.glob(os.path.join(opts["out"], "*.diff")):
        os.unlink(old)
    oracle = Oracle(opts)
    skips = load_skips(os.path.join(HERE, "skip.txt"))
    known = load_known(opts["known"])

    items = []
    for path in sorted(glob.glob(os.path.join(opts["probes"], "*.py"))):
        items.append({"name": os.path.basename(path)[:-3], "path": path, "fixture": False})
    for path in sorted(glob.glob(os.path.join(ROOT, "fixtures", "*.py"))):
        items.append({"name": "fixtures/" + os.path.basename(path)[:-3], "path": path, "fixture": True})
    if opts["items"]:
        names = {i["name"] for i in items}
        for want in opts["items"]:
            if want not in names:
                die(2, "no item %s (probes: tests/transparency/probes; fixtures/NAME)" % want)
        items = [i for i in items if i["name"] in opts["items"]]
    for it in items:
        it["tag"] = it["name"].replace("/", "-")
        it["manual_start"] = (header(it["path"], "manual") or "") == "start"
        it["trace"] = header(it["path"], "trace")
        it["allow"] = header(it["path"], "allow")
        r = header(it["path"], "runs")
        it["runs"] = int(r) if r and r.isdigit() else 1
        t = header(it["path"], "timeout")
        it["timeout"] = int(t) if t and t.isdigit() else None

    cells, results = [], {}
    for it in items:
        modes = [m for m in opts["modes"]
                 if opts["set"] == "full" or (header(it["path"], "set") != "full" and
                                              m in (QUICK_FIXTURE_MODES if it["fixture"] else QUICK_PROBE_MODES))]
        missing = oracle.missing(it["path"])
        for m in modes:
            why = skipped(skips, it["name"], m) or missing
            if why:
                results[(it["name"], m)] = ("skip", why)
            else:
                cells.append((it, m))
    print("transparency: %d items x modes = %d cells in %s (%s, set %s)" % (
        len(items), len(cells), oracle.env_name, " ".join(oracle.py), opts["set"]), flush=True)
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=opts["jobs"]) as pool:
        futs = {pool.submit(oracle.cell, it, m): (it, m) for it, m in cells}
        for f in concurrent.futures.as_completed(futs):
            it, m = futs[f]
            try:
                results[(it["name"], m)] = f.result()
            except Exception as e:  # a runner fault is a failure, reported
                results[(it["name"], m)] = ("ERR", "runner error: %r\n" % (e,))

    # Known differences.
    def known_for(name, mode):
        for pat_i, pat_m, pat_e, why, line in known:
            if fnmatch.fnmatchcase(name, pat_i) and fnmatch.fnmatchcase(mode, pat_m) \
                    and fnmatch.fnmatchcase(oracle.env_name, pat_e):
                return why, line
        return None

    failures = []
    final = {}
    for (name, mode), (verdict, text) in sorted(results.items()):
        k = known_for(name, mode)
        if k and verdict == "DIFF":
            verdict = "known"
        elif k and verdict == "ok":
            verdict = "STALE"
            text = ("now passes: remove it from known-differences (%s line %d: %s)\n"
                    % (os.path.relpath(opts["known"], ROOT), k[1], k[0]))
        final[(name, mode)] = (verdict, text)
        if verdict in ("DIFF", "known", "ERR", "STALE"):
            tag = "%s.%s" % (name.replace("/", "-"), mode)
            with open(os.path.join(opts["out"], tag + ".diff"), "w", encoding="utf-8") as f:
                f.write(text)
        if verdict in ("DIFF", "ERR", "STALE"):
            failures.append((name, mode, verdict, text))

    # Summary table.
    modes = opts["modes"]
    width = max([len(i["name"]) for i in items] + [4])
    print("%-*s  %s" % (width, "item", "  ".join("%-15s" % m for m in modes)))
    for it in items:
        row = []
        for m in modes:
            v = final.get((it["name"], m), ("-", ""))[0]
            row.append("%-15s" % v)
        print(("%-*s  %s" % (width, it["name"], "  ".join(row))).rstrip())
    counts = {}
    for v, _ in final.values():
        counts[v] = counts.get(v, 0) + 1
    print("transparency: %s in %s, %.0fs" % (", ".join("%d %s" % (n, v) for v, n in sorted(counts.items())),
                                               oracle.env_name, time.time() - t0))
    for n, t in sorted({(n, t) for (n, _), (v, t) in final.items() if v == "skip"}):
        print("  skip %s: %s" % (n, t))
    for name, mode, verdict, text in failures:
        lines = text.splitlines(True)
        print("\n%s %s [%s] in %s:" % (verdict, name, mode, oracle.env_name))
        print("".join(lines[:40]), end="")
        if len(lines) > 40:
            print("  ... (%d more lines: %s)" % (len(lines) - 40, os.path.join(
                opts["out"], "%s.%s.diff" % (name.replace("/", "-"), mode))))
    if failures:
        print("\ntransparency: FAIL: %d cell(s): %s" % (len(failures), ", ".join(
            "%s [%s] %s" % (n, m, v) for n, m, v, _ in failures)))
        return 1
    print("transparency: ok (known differences: %d; diffs in %s)" % (counts.get("known", 0), opts["out"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
