"""Benchmark: the recorder's cost per profile event.

Runs a call-heavy workload (Python calls, builtin calls, generators) with no
profiler, with an empty C profile function, with greenreplay recording to a
file, and with cProfile; prints the time of the workload in each (best of
--repeat runs; starting and stopping a profiler is outside the timed part),
the overhead per profile event in ns, and greenreplay's overhead relative
to the empty C profile function's.  Prints figures; asserts nothing.

Time is the thread's CPU time by default (CLOCK_THREAD_CPUTIME_ID): on a
machine shared with other jobs, wall time also counts the time the thread
waited for a CPU; --clock wall measures wall time instead.

usage: python profile_cost.py [--repeat N] [--scale N] [--out DIR] [--clock cpu|wall] [--keep-trace]
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
from goal import goal


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


CLOCK = time.thread_time_ns


def timed(fn):
    """Run fn(body) and return the time body() took (fn wraps it with a
    profiler's start and stop)."""
    spent = []

    def body():
        t0 = CLOCK()
        try:
            workload(body.scale)
        finally:
            spent.append(CLOCK() - t0)
    body.scale = timed.scale
    fn(body)
    return spent[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs per mode; the best is kept (default 5)")
    ap.add_argument("--scale", type=int, default=40, help="workload size (default 40)")
    ap.add_argument("--out", default=tempfile.gettempdir(), help="directory for the benchmark trace")
    ap.add_argument("--keep-trace", action="store_true",
                    help="keep the recorder's trace, OUT/bench-profile-cost.grt (for encode_cost)")
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                    help="cpu: the thread's CPU time (default); wall: wall time")
    args = ap.parse_args()
    global CLOCK
    CLOCK = time.thread_time_ns if args.clock == "cpu" else time.perf_counter_ns
    timed.scale = args.scale
    trace = os.path.join(args.out, "bench-profile-cost.grt")

    def none(body):
        body()

    def empty(body):
        emptyprof.install()
        try:
            body()
        finally:
            empty.events = emptyprof.uninstall()

    def recorder(body):
        greenreplay.start(trace, root=os.getcwd())
        try:
            body()
        finally:
            recorder.records = greenreplay.stop()

    def recorder_callback(body):
        greenreplay.start(trace + ".callback", root=os.getcwd(), switches="callback")
        try:
            body()
        finally:
            greenreplay.stop()
            os.unlink(trace + ".callback")

    def cprofile(body):
        p = cProfile.Profile()
        p.enable()
        try:
            body()
        finally:
            p.disable()

    modes = [("no profiler", none), ("empty C profile function", empty),
             ("greenreplay recorder (passive switches, default)", recorder),
             ("greenreplay recorder (callback mode)", recorder_callback), ("cProfile", cprofile)]
    # Round robin: a busy moment of the machine slows every mode alike,
    # not all the runs of one mode.
    for name, fn in modes:
        timed(fn)  # warm up
    best = {}
    for _ in range(args.repeat):
        for name, fn in modes:
            t = timed(fn)
            best[name] = min(best.get(name, t), t)
    events = empty.events
    base = best["no profiler"]

    print("profile-event cost: Python %s (%s), %s, %s, %d CPUs" % (
        platform.python_version(), sys.executable, platform.machine(), cpu_name(), os.cpu_count() or 0))
    print("workload: scale %d, %d profile events per run, best of %d runs" % (args.scale, events, args.repeat))
    print()
    print("| mode | %s ms | overhead ns/event | vs empty C profile |" % ("CPU" if args.clock == "cpu" else "wall"))
    print("|---|---:|---:|---:|")
    empty_cost = (best["empty C profile function"] - base) / events
    for name, _ in modes:
        t = best[name]
        cost = (t - base) / events
        rel = "" if name == "no profiler" else "%.2fx" % (cost / empty_cost)
        print("| %s | %.1f | %s | %s |" % (name, t / 1e6, "" if name == "no profiler" else "%.1f" % cost, rel))
    rec = (best["greenreplay recorder (passive switches, default)"] - base) / events
    goal("call-heavy-timed", "%.2fx" % (rec / empty_cost), "<= 1.15x", rec / empty_cost <= 1.15,
         "%.1f against %.1f ns per event over no profiler; the thread's %s time, best of %d runs in one process"
         % (rec, empty_cost, "CPU" if args.clock == "cpu" else "wall", args.repeat))
    size = os.path.getsize(trace)
    print()
    print("trace size, call-heavy workload: %d records (events), %d bytes: %.3f bytes per event "
          "(compressed chunks; goal <= 0.1)"
          % (recorder.records, size, size / max(recorder.records, 1)))
    if not args.keep_trace:
        os.unlink(trace)


if __name__ == "__main__":
    main()
