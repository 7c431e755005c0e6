"""Scale tests (`make scale`, ci/scale.sh): run the workloads of
fixtures/scale/scale.py at production sizes and print time and peak memory,
each figure with its goal beside it where there is one.

usage: python3 ci/scale.py [--python PY] [--cli GREENREPLAY] [--cache DIR]
                           [--greenlets N] [--threads N] [--events N]
                           [--events-small N]
                           [--mem-cap-mb MB]
                           [--only greenlets,sampler,threads,events]
                           [--keep]

  --greenlets N   greenlets created over one recorded run (default 1000000);
                  peak RSS printed at 10 k, 100 k, ... N, against the same
                  program unrecorded up to min(N, 100000)
                  sampler: the same number of greenlets (batches of 100)
                  recorded with the reference sampler (two-phase, every 5 ms,
                  default registry capacity 65,535 live greenlets): the
                  registry's figures and peak RSS at 10 k, 100 k, ... N, and
                  the greenlets above the capacity that were sampled and
                  checked against the shadow stacks (check --stall)
  --threads N     threads over one recorded run, in waves of 50 (default
                  10000), against the same program unrecorded
  --events N      events of the big recording (default 100000000): recorded
                  to DIR/events-N.grt, then `greenreplay check` and
                  `greenreplay dump` (to /dev/null) on it
  --events-small N  the same first with N events (default 10000000; 0: no),
                  where a reader that loads the whole trace still fits
  --mem-cap-mb MB address-space cap of check and dump (default 4096): a
                  reader that needs more fails with its out-of-memory error
                  instead of pushing the shared machine into swapless OOM
  --cache DIR     where the big traces go (default ~/.cache/greenreplay/scale;
                  never the repository); deleted after the run unless --keep

Peak memory is ru_maxrss of the child (getrusage); times are wall time and
CPU time (user + system) of the child.  Rates are per CPU second: on a
machine shared with other busy processes wall time mostly measures the
queue for a CPU.
Exit status 0 when every step ran (missed goals are reported, not failed:
these are benchmarks), 1 when a step crashed, 2 on bad usage.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
WORK = os.path.join(TOP, "fixtures", "scale", "scale.py")
REUSE = os.path.join(TOP, "tests", "integration", "programs", "registry_reuse.py")


def run_measured(cmd, env=None, cap_mb=None, devnull=False):
    """Run cmd in a fresh helper process so that its ru_maxrss is its own.
    Returns dict rc, s, maxrss_kb, out, err."""
    helper = r'''
import json, os, resource, subprocess, sys, time
cap = int(sys.argv[1]); devnull = sys.argv[2] == "1"; cmd = sys.argv[3:]
def limit():
    if cap:
        resource.setrlimit(resource.RLIMIT_AS, (cap << 20, cap << 20))
t0 = time.perf_counter()
p = subprocess.run(cmd, preexec_fn=limit, stdout=subprocess.DEVNULL if devnull else subprocess.PIPE,
                   stderr=subprocess.PIPE, text=True)
s = time.perf_counter() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": p.returncode, "s": s, "maxrss_kb": ru.ru_maxrss,
                  "cpu_s": ru.ru_utime + ru.ru_stime,
                  "out": p.stdout or "", "err": p.stderr[-2000:]}))
'''
    p = subprocess.run([sys.executable, "-c", helper, str(cap_mb or 0), "1" if devnull else "0"] + cmd,
                       env=env, stdout=subprocess.PIPE, text=True)
    return json.loads(p.stdout)


def lines(out):
    return [json.loads(x) for x in out.splitlines() if x.startswith("{")]


def mb(kb):
    return "%.1f MB" % (kb / 1024.0)


def rss_table(what, rec, base):
    """Print the peak-RSS table of a recorded run against its unrecorded
    base, one row per point ("at" lines of each run's output); returns the
    base's points by "at" and the recorded run's points."""
    b = {x["at"]: x for x in lines(base["out"]) if "at" in x}
    print("  | %s | peak RSS recorded | unrecorded | recorder's share | time recorded | unrecorded |" % what)
    print("  |---:|---:|---:|---:|---:|---:|")
    pts = [x for x in lines(rec["out"]) if "at" in x]
    for x in pts:
        y = b.get(x["at"])
        print("  | %d | %s | %s | %s | %.1f s | %s |" % (
            x["at"], mb(x["hwm_kb"]), mb(y["hwm_kb"]) if y else "-",
            mb(x["hwm_kb"] - y["hwm_kb"]) if y else "-", x["s"], "%.1f s" % y["s"] if y else "-"))
    return b, pts


def events_step(a, py, env, n, per_iter):
    """Record about n events, then check and dump the trace; print the
    figures with the issue's goals.  Returns False if the recording
    crashed."""
    print()
    print("== a %d-event recording (20 greenlets, calls 3 deep, a switch every 8 calls), "
          "checked and dumped" % n)
    tr = os.path.join(a.cache, "events-%d.grt" % n)
    iters = int(n / per_iter) + 1
    rec = run_measured(py + ["events", "--iters", str(iters), "--output", tr], env)
    try:
        if rec["rc"]:
            print("  CRASHED (record): %s" % rec["err"].strip()[-500:])
            return False
        size = os.path.getsize(tr)
        chk = run_measured([a.cli, "check", "--format", "json", tr], env, cap_mb=a.mem_cap_mb)
        try:
            nev, est = json.loads(chk["out"])["traces"][0]["trailer"]["events"], ""
        except (ValueError, KeyError, IndexError):
            # check did not finish: the calibration's estimate.
            nev, est = int(per_iter * iters), " (estimated: check did not read the trailer)"
        print("  record: %d events%s in %.1f s, %.1f s of CPU (%.2f M events per CPU second), "
              "recorder process peak RSS %s" % (
                  nev, est, rec["s"], rec["cpu_s"], nev / rec["cpu_s"] / 1e6, mb(rec["maxrss_kb"])))
        print("  trace: %s, %.2f bytes per event (goal: 2.5 or less)  %s" % (
            mb(size / 1024), size / nev, "met" if size / nev <= 2.5 else "MISSED"))
        if chk["rc"] in (0, 1):
            print("  check: %.1f s, %.1f s of CPU: %.1f M events per CPU second (goal: 30 or more) %s; "
                  "peak RSS %s, %.0f bytes per event (goal at 100 M events: under 300 MB) %s; exit %d" % (
                      chk["s"], chk["cpu_s"], nev / chk["cpu_s"] / 1e6,
                      "met" if nev / chk["cpu_s"] >= 30e6 else "MISSED",
                      mb(chk["maxrss_kb"]), chk["maxrss_kb"] * 1024.0 / nev,
                      ("met" if chk["maxrss_kb"] < 300 * 1024 else "MISSED") if nev >= 99000000
                      else "(not judged at this size)", chk["rc"]))
        else:
            print("  check: FAILED under the %d MB address-space cap after %.1f s, peak RSS %s "
                  "(goal: under 300 MB) MISSED: %s" % (
                      a.mem_cap_mb, chk["s"], mb(chk["maxrss_kb"]), chk["err"].strip()[-300:]))
        dmp = run_measured([a.cli, "dump", tr], env, cap_mb=a.mem_cap_mb, devnull=True)
        if dmp["rc"] == 0:
            print("  dump (to /dev/null): %.1f s, %.1f s of CPU: %.1f M events per CPU second (goal: 10 or "
                  "more) %s; peak RSS %s" % (
                      dmp["s"], dmp["cpu_s"], nev / dmp["cpu_s"] / 1e6,
                      "met" if nev / dmp["cpu_s"] >= 10e6 else "MISSED", mb(dmp["maxrss_kb"])))
        else:
            print("  dump: FAILED (exit %d) under the %d MB address-space cap after %.1f s, "
                  "peak RSS %s: %s" % (dmp["rc"], a.mem_cap_mb, dmp["s"], mb(dmp["maxrss_kb"]),
                                        dmp["err"].strip()[-300:]))
        return True
    finally:
        if not a.keep and os.path.exists(tr):
            os.unlink(tr)


def main():
    ap = argparse.ArgumentParser(description="scale tests")
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--cli", default=os.path.join(os.environ.get("BUILD", os.path.join(TOP, "build")),
                                                  "greenreplay"))
    ap.add_argument("--cache", default=os.path.expanduser("~/.cache/greenreplay/scale"))
    ap.add_argument("--greenlets", type=int, default=1000000)
    ap.add_argument("--threads", type=int, default=10000)
    ap.add_argument("--events", type=int, default=100000000)
    ap.add_argument("--events-small", type=int, default=10000000)
    ap.add_argument("--mem-cap-mb", type=int, default=4096)
    ap.add_argument("--only", default="greenlets,sampler,threads,events")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    build = os.path.dirname(os.path.abspath(a.cli))
    if not os.access(a.cli, os.X_OK):
        print("ci/scale.py: %s missing (run make)" % a.cli, file=sys.stderr)
        return 2
    os.makedirs(a.cache, exist_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(build, "python") + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    only = set(a.only.split(","))
    crashed = []
    print("scale tests, %s, %s (%d CPUs, load %s)" % (
        time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), a.python, os.cpu_count(),
        " ".join(open("/proc/loadavg").read().split()[:3])))
    py = [a.python, WORK]

    if "greenlets" in only:
        print()
        print("== %d greenlets created over one run (batches of 100 suspended at once)" % a.greenlets)
        tr = os.path.join(a.cache, "greenlets.grt")
        base = run_measured(py + ["greenlets", "--count", str(min(a.greenlets, 100000))], env)
        rec = run_measured(py + ["greenlets", "--count", str(a.greenlets), "--output", tr], env)
        if rec["rc"] or base["rc"]:
            crashed.append("greenlets")
            print("  CRASHED: %s" % (rec["err"] or base["err"]).strip()[-500:])
        else:
            b, pts = rss_table("greenlets created", rec, base)
            print("  CPU time: recorded %.1f s for %d greenlets (%.1f us each), unrecorded %.1f s for %d "
                  "(%.1f us each)" % (rec["cpu_s"], a.greenlets, rec["cpu_s"] / a.greenlets * 1e6,
                                      base["cpu_s"], min(a.greenlets, 100000),
                                      base["cpu_s"] / min(a.greenlets, 100000) * 1e6))
            size = os.path.getsize(tr)
            grow = pts[-1]["hwm_kb"] - pts[0]["hwm_kb"] if pts else 0
            print("  peak RSS growth from %d to %d greenlets: %s (goal: bounded, i.e. flat)  %s" % (
                pts[0]["at"], pts[-1]["at"], mb(grow), "met" if grow < 4096 else "MISSED"))
            print("  trace %s, %.0f bytes per greenlet" % (mb(size / 1024), size / a.greenlets))
        if not a.keep and os.path.exists(tr):
            os.unlink(tr)

    if "sampler" in only:
        print()
        print("== %d greenlets created over one run with the sampler (two-phase, every 5 ms, "
              "batches of 100 suspended at once, default registry capacity)" % a.greenlets)
        tr = os.path.join(a.cache, "sampler.grt")
        rec = run_measured([a.python, REUSE, "--count", str(a.greenlets), "--live", "100",
                            "--max-greenlets", "65536", "--interval-us", "5000", "--wait-samples", "0",
                            "--checkpoints", "--output", tr], env)
        chk = run_measured([a.cli, "check", "--stall", "--format", "json", tr], env, cap_mb=a.mem_cap_mb)
        try:
            end = [x for x in lines(rec["out"]) if "count" in x][-1]
        except IndexError:
            end = None
        try:
            t = json.loads(chk["out"])["traces"][0]
        except (ValueError, KeyError, IndexError):
            t = {}
        if rec["rc"] or not end:
            crashed.append("sampler")
            print("  CRASHED: record exit %d: %s" % (rec["rc"], rec["err"].strip()[-500:]))
        else:
            pts = [x for x in lines(rec["out"]) if "at" in x]
            print("  | greenlets created | peak RSS | registry live / peak / capacity | slots reused "
                  "| untracked | registry bytes | time |")
            print("  |---:|---:|---:|---:|---:|---:|---:|")
            for x in pts:
                g = x["registry"]
                print("  | %d | %s | %d / %d / %d | %d | %d | %s | %.1f s |" % (
                    x["at"], mb(x["hwm_kb"]), g["live"], g["peak_live"], g["capacity"], g["reused"],
                    g["untracked"], mb(g["bytes"] / 1024.0), x["s"]))
            grow = pts[-1]["hwm_kb"] - pts[0]["hwm_kb"] if pts else 0
            last, sm = end["last"], end["sampled"]
            print("  peak RSS growth from %d to %d greenlets: %s (goal: bounded, i.e. flat: the registry "
                  "is fixed, and the side channel's 'W' entries and samples are written during the "
                  "run)  %s" % (pts[0]["at"], pts[-1]["at"], mb(grow), "met" if grow < 4096 else "MISSED"))
            print("  registry: %s fixed, peak %d live of %d, %d untracked (goal: 0)  %s; %d sampled "
                  "stacks dropped by the generation check (greenlet died while unwound)" % (
                      mb(last["bytes"] / 1024.0), last["peak_live"], last["capacity"], last["untracked"],
                      "met" if not last["untracked"] else "MISSED", last["recycled_stacks"]))
            print("  samples: %d, %d stacks of %d greenlets, %d of them above greenlet number 65,536, "
                  "greatest %d (goal: late greenlets sampled)  %s" % (
                      sm["samples"], sm["stacks"], sm["gids"], sm["gids_above"], sm["max_gid"],
                      "met" if sm["gids_above"] else "MISSED"))
            if "stall" in t:
                st = t["stall"]["stacks"]
                print("  check --stall: %d stacks: %d equal to the shadow stack of the greenlet they name, "
                      "%d partial, %d torn by a switch, %d mismatched (goal: 0), exit %d; %.1f s, peak RSS %s"
                      "  %s" % (st["total"], st["equal"], st["partial"], st["torn"], st["mismatched"],
                                 chk["rc"], chk["s"], mb(chk["maxrss_kb"]),
                                 "met" if not st["mismatched"] and chk["rc"] == 0 else "MISSED"))
            else:
                # check --stall did not finish (out of memory under the
                # cap, or a crash): no attribution verdict.
                print("  check --stall: FAILED (exit %d) under the %d MB address-space cap after %.1f s, "
                      "peak RSS %s: %s  MISSED (no attribution verdict)" % (
                          chk["rc"], a.mem_cap_mb, chk["s"], mb(chk["maxrss_kb"]),
                          (t.get("error") or chk["err"].strip()[-300:])))
            print("  CPU time: recorded %.1f s for %d greenlets (%.1f us each)" % (
                rec["cpu_s"], a.greenlets, rec["cpu_s"] / a.greenlets * 1e6))
        for f in (tr, tr + ".times"):
            if not a.keep and os.path.exists(f):
                os.unlink(f)

    if "threads" in only:
        print()
        print("== %d threads over one run (waves of 50, each calls 3 functions and switches to a greenlet)"
              % a.threads)
        tr = os.path.join(a.cache, "threads.grt")
        base = run_measured(py + ["threads", "--count", str(a.threads)], env)
        rec = run_measured(py + ["threads", "--count", str(a.threads), "--output", tr], env)
        if rec["rc"] or base["rc"]:
            crashed.append("threads")
            print("  CRASHED: %s" % (rec["err"] or base["err"]).strip()[-500:])
        else:
            b, pts = rss_table("threads", rec, base)
            if len(pts) > 1 and pts[0]["at"] in b and pts[-1]["at"] in b:
                d = (pts[-1]["hwm_kb"] - b[pts[-1]["at"]]["hwm_kb"]) - (pts[0]["hwm_kb"] - b[pts[0]["at"]]["hwm_kb"])
                per = d * 1024.0 / (pts[-1]["at"] - pts[0]["at"])
                print("  recorder's share grew by %s from %d to %d threads: %.0f bytes per thread "
                      "(before: ~300 B per thread ever seen, kept until stop; goal: bounded)" % (
                          mb(d), pts[0]["at"], pts[-1]["at"], per))
            print("  CPU time: recorded %.1f s, unrecorded %.1f s" % (rec["cpu_s"], base["cpu_s"]))
            size = os.path.getsize(tr)
            print("  trace %s, %.0f bytes per thread" % (mb(size / 1024), size / a.threads))
        if not a.keep and os.path.exists(tr):
            os.unlink(tr)

    if "events" in only:
        # Events per iteration of the workload, from a small recording's
        # trailer.
        cal = os.path.join(a.cache, "calibrate.grt")
        r = run_measured(py + ["events", "--iters", "100000", "--output", cal], env)
        c = run_measured([a.cli, "check", "--format", "json", cal], env)
        try:
            per_iter = json.loads(c["out"])["traces"][0]["trailer"]["events"] / 100000.0
        except (ValueError, KeyError, IndexError):
            per_iter = 0
        if os.path.exists(cal):
            os.unlink(cal)
        if r["rc"] or not per_iter:
            crashed.append("events")
            print("  CRASHED (calibration): %s %s" % (r["err"].strip()[-300:], c["err"].strip()[-300:]))
        else:
            for n in sorted({a.events_small, a.events}):
                if n > 0 and not events_step(a, py, env, n, per_iter):
                    crashed.append("events %d" % n)
    print()
    if crashed:
        print("crashed: %s" % ", ".join(crashed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
