"""Benchmark: the recorder's cost per profile event.

Runs a call-heavy workload (Python calls, builtin calls, generators) with no
profiler, with an empty C profile function, with greenreplay recording to a
file, and with cProfile; prints the wall time of each (best of --repeat
runs), the overhead per profile event in ns, and greenreplay's overhead
relative to the empty C profile function's.  Prints figures; asserts nothing.

usage: python profile_cost.py [--repeat N] [--scale N] [--out DIR] [--keep-trace]
"""
import argparse
import cProfile
import os
import platform
import sys
import tempfile
import time

import emptyprof
import greenreplay


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def gen(n):
    for i in range(n):
        yield abs(-i)


def workload(scale):
    total = 0
    for _ in range(scale):
        total += fib(18)
        total += sum(gen(200))
        total += len(str(total))
    return total


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def timed(fn):
    t0 = time.perf_counter_ns()
    fn()
    return time.perf_counter_ns() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs per mode; the best is kept (default 5)")
    ap.add_argument("--scale", type=int, default=40, help="workload size (default 40)")
    ap.add_argument("--out", default=tempfile.gettempdir(), help="directory for the benchmark trace")
    ap.add_argument("--keep-trace", action="store_true",
                    help="keep the recorder's trace, OUT/bench-profile-cost.grt (for encode_cost)")
    args = ap.parse_args()
    trace = os.path.join(args.out, "bench-profile-cost.grt")

    def none():
        workload(args.scale)

    def empty():
        emptyprof.install()
        try:
            workload(args.scale)
        finally:
            empty.events = emptyprof.uninstall()

    def recorder():
        greenreplay.start(trace, root=os.getcwd())
        try:
            workload(args.scale)
        finally:
            recorder.records = greenreplay.stop()

    def recorder_callback():
        greenreplay.start(trace, root=os.getcwd(), switches="callback")
        try:
            workload(args.scale)
        finally:
            greenreplay.stop()

    def cprofile():
        p = cProfile.Profile()
        p.enable()
        try:
            workload(args.scale)
        finally:
            p.disable()

    modes = [("no profiler", none), ("empty C profile function", empty),
             ("greenreplay recorder (passive switches, default)", recorder),
             ("greenreplay recorder (callback mode)", recorder_callback), ("cProfile", cprofile)]
    best = {}
    for name, fn in modes:
        fn()  # warm up
        best[name] = min(timed(fn) for _ in range(args.repeat))
    events = empty.events
    base = best["no profiler"]

    print("profile-event cost: Python %s (%s), %s, %s, %d CPUs" % (
        platform.python_version(), sys.executable, platform.machine(), cpu_name(), os.cpu_count() or 0))
    print("workload: scale %d, %d profile events per run, best of %d runs" % (args.scale, events, args.repeat))
    print()
    print("| mode | wall ms | overhead ns/event | vs empty C profile |")
    print("|---|---:|---:|---:|")
    empty_cost = (best["empty C profile function"] - base) / events
    for name, _ in modes:
        t = best[name]
        cost = (t - base) / events
        rel = "" if name == "no profiler" else "%.2fx" % (cost / empty_cost)
        print("| %s | %.1f | %s | %s |" % (name, t / 1e6, "" if name == "no profiler" else "%.1f" % cost, rel))
    size = os.path.getsize(trace)
    print()
    print("trace size, call-heavy workload: %d records (events), %d bytes: %.2f bytes per event (goal <= 2.5)"
          % (recorder.records, size, size / max(recorder.records, 1)))
    if not args.keep_trace:
        os.unlink(trace)


if __name__ == "__main__":
    main()
