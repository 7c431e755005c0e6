"""What `greenreplay conform`'s comparison adds to a fixture's recorded run.

usage: conform_cost.py --cli BUILD/greenreplay --python PY [--repeat N]
                       [--adapters a,b] [FIXTURE.py ...]

For each fixture (default: fixtures/profilers/*.py) and adapter (default
cprofile, yappi, coverage, line_profiler, where available), runs `conform
--json` N times (default 3) and prints the medians of the recorded run
(`timing.recorded_run_s`: recording the program with the profiler inside
it, interpreter start to exit) and of the comparison (`timing.comparison_s`:
reading the trace and the results, computing the truth, comparing), the
trace's size, and the factor (recorded run + comparison) / recorded run,
which the goal wants under 2.  Prints figures; asserts nothing."""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.path.join(top, "build", "greenreplay"))
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--adapters", default="cprofile,yappi,coverage,line_profiler")
    ap.add_argument("fixtures", nargs="*")
    a = ap.parse_args()
    fixtures = a.fixtures or sorted(glob.glob(os.path.join(top, "fixtures", "profilers", "*.py")))
    listing = subprocess.run([a.cli, "conform", "--list", "--python", a.python],
                             capture_output=True, text=True).stdout
    avail = {l.split("\t")[0] for l in listing.splitlines() if l.split("\t")[1:2] == ["yes"]}
    print("conform: comparison cost, %s, median of %d runs" % (a.python, a.repeat))
    print("%-26s %-14s %10s %12s %10s %8s" % ("fixture", "adapter", "records", "recorded s", "compare s", "factor"))
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for f in fixtures:
            for ad in a.adapters.split(","):
                if ad not in avail:
                    continue
                runs, cmps = [], []
                records = "?"
                for _ in range(a.repeat):
                    js, tr = os.path.join(tmp, "v.json"), os.path.join(tmp, "t.grt")
                    subprocess.run([a.cli, "conform", "--profiler", ad, "--json", js, "-o", tr,
                                    "--", a.python, f], capture_output=True)
                    try:
                        d = json.load(open(js))
                    except (OSError, ValueError):
                        break
                    if d["verdict"] in ("skip",) or not d["timing"]["recorded_run_s"]:
                        break
                    runs.append(d["timing"]["recorded_run_s"])
                    cmps.append(d["timing"]["comparison_s"])
                    st = subprocess.run([a.cli, "stats", tr], capture_output=True, text=True).stdout
                    records = st.split(":")[1].split()[0] if ":" in st else "?"
                if not runs:
                    continue
                r, c = statistics.median(runs), statistics.median(cmps)
                factor = (r + c) / r
                worst = max(worst, factor)
                print("%-26s %-14s %10s %12.3f %10.4f %8.3f" % (os.path.basename(f), ad, records, r, c, factor))
    print("largest factor: %.3f (goal: under 2)" % worst)


if __name__ == "__main__":
    sys.exit(main())
