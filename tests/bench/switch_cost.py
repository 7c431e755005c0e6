"""Benchmark: the cost of the switch path, and the sampler's lock hold time.

Part 1 times round trips between two greenlets (two switches each) under
a profile function: none, the empty C one, and the recorder in passive,
every-stack and callback mode, the five taking turns in each of --rounds
rounds (best of the rounds, and the median ratio per round).  Part 2 (best
of --repeat runs) with: no tracer; greenreplay's C greenlet callback recording
switches (profile function off); plus the sampler registry updated on every
switch (sampler thread asleep); plus the sampler running every 5 ms in each
mode.  Part 3 runs the sampler every 5 ms over N idle greenlets D frames
deep and reports the lock hold time per sample from `greenreplay check
--stall --format json`.  Prints figures; asserts nothing.

Times are the thread's CPU time unless --clock wall.

usage: python switch_cost.py --cli build/greenreplay [--repeat N] [--rounds N] [--switches N] [--out DIR] [--clock cpu|wall]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import greenlet

import greenreplay
from goal import goal as goal_line

MODES = ["two-phase", "hold-lock", "seqlock"]


def ping(n):
    main = greenlet.getcurrent().parent
    for _ in range(n):
        main.switch()


# The thread's CPU time (CLOCK_THREAD_CPUTIME_ID): on a machine shared with
# other jobs, wall time also counts the time the thread waited for a CPU.
# --clock wall measures wall time instead (the sampler modes' figures
# include the sampler thread's interference only in wall time).
CLOCK = time.thread_time_ns


def round_trips(n):
    g = greenlet.greenlet(ping)
    g.switch(n)
    t0 = CLOCK()
    for _ in range(n - 1):
        g.switch()
    dt = CLOCK() - t0
    g.switch()
    return dt / (2 * (n - 1))


def deep(d):
    if d > 1:
        return deep(d - 1)
    greenlet.getcurrent().parent.switch()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", required=True, help="path of build/greenreplay")
    ap.add_argument("--repeat", type=int, default=5, help="runs per configuration of the sampler tables (best of)")
    ap.add_argument("--rounds", type=int, default=15,
                    help="rounds of the profile-function table, each configuration once per round")
    ap.add_argument("--switches", type=int, default=100000)
    ap.add_argument("--out", default=tempfile.gettempdir())
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                    help="cpu: the thread's CPU time (default); wall: wall time")
    a = ap.parse_args()
    global CLOCK
    CLOCK = time.thread_time_ns if a.clock == "cpu" else time.perf_counter_ns
    trace = os.path.join(a.out, "bench-switch.grt")
    sys.setrecursionlimit(1000)

    def best(setup):
        vals = []
        for _ in range(a.repeat):
            if setup:
                greenreplay.start(trace, **setup)
            try:
                vals.append(round_trips(a.switches))
            finally:
                if setup:
                    greenreplay.stop()
        return min(vals)

    # Passive mode (the default) puts nothing on the switch path itself:
    # the switch is noticed at the target's next profile event.  So the
    # figures to compare are a switch under a C profile function: the empty
    # one, and the recorder's (which also asks greenlet which greenlet runs).
    try:
        import emptyprof
    except ImportError:
        emptyprof = None

    def once_with_profile(kind):
        if kind == "empty":
            emptyprof.install()
        elif kind == "every":
            greenreplay.start(trace, switches="passive", switch_stacks="every")
        elif kind != "none":
            greenreplay.start(trace, switches=kind)
        try:
            return round_trips(a.switches)
        finally:
            if kind == "empty":
                emptyprof.uninstall()
            elif kind != "none":
                greenreplay.stop()

    # The configurations take turns (one round runs each once, --rounds
    # rounds): on a machine shared with other jobs the load changes within
    # seconds, and a configuration timed in one block would meet another
    # load than the one it is compared with.  Best of the rounds, and the
    # median ratio of each round's pair, which is less sensitive to one
    # lucky run.
    kinds = ["none"] + (["empty"] if emptyprof else []) + ["passive", "every", "callback"]
    times = {k: [] for k in kinds}
    for _ in range(a.rounds):
        for k in kinds:
            times[k].append(once_with_profile(k))

    print("switch path with the profile function on (a switch costs a c_call and a c_return of")
    print("switch, plus the recorder's work); %d rounds of %d switches, the configurations taking" % (a.rounds, 2 * a.switches))
    print("turns within each round; best of the rounds, and the median of the rounds' ratios:")
    print()
    print("| configuration | ns per switch | vs empty C profile function | median ratio per round | goal |")
    print("|---|---:|---:|---:|---|")
    bare = min(times["none"])
    print("| no profile function, no greenlet callback (bare switch) | %.0f | | | |" % bare)
    base = min(times["empty"]) if emptyprof else None
    if base:
        print("| empty C profile function | %.0f | 1.00 | 1.00 | |" % base)
    for kind, label, goal in (("passive", "recorder, passive switches (default): no greenlet callback", "<= 1.2x of the bare switch path under a profile function"),
                              ("every", "recorder, passive, a real stack at every switch (switch_stacks='every')", ""),
                              ("callback", "recorder, callback mode: greenlet trace callback", "")):
        v = min(times[kind])
        med = statistics.median(x / e for x, e in zip(times[kind], times["empty"])) if base else None
        print("| %s | %.0f | %s | %s | %s |" % (label, v, "%.2f" % (v / base) if base else "n/a",
                                              "%.2f" % med if med else "n/a", goal))
        if kind == "passive" and base:  # its GOAL line after the table
            ping_pong = ("ping-pong-timed", "%.2fx" % (v / base), "<= 1.15x", v / base <= 1.15,
                         "%.0f against %.0f ns per switch (bare switch %.0f); median of the rounds' ratios %.2f; "
                         "the thread's %s time, best of %d rounds" % (v, base, bare, med, "CPU" if a.clock == "cpu"
                                                                      else "wall", a.rounds))
    print()
    if base:
        goal_line(*ping_pong)
        print()

    configs = [("no tracer", None),
               ("C switch callback (recording switches)", dict(profile=False)),
               ("+ sampler registry updates (sampler asleep)",
                dict(profile=False, sampler="two-phase", interval_us=10 ** 9))]
    configs += [("+ sampler every 5 ms, %s" % m, dict(profile=False, sampler=m, interval_us=5000)) for m in MODES]
    print("switch cost: Python %s (%s), greenlet %s, %s, %d CPUs" % (
        platform.python_version(), sys.executable, greenlet.__version__, platform.machine(), os.cpu_count() or 0))
    print("%d switches per run, best of %d runs; one switch = half a round trip; %s time" % (
        2 * a.switches, a.repeat, "CPU" if a.clock == "cpu" else "wall"))
    print()
    print("| configuration | ns per switch |")
    print("|---|---:|")
    for name, setup in configs:
        print("| %s | %.0f |" % (name, best(setup)))

    print()
    print("lock hold per sample (sampler every 5 ms over N idle greenlets D frames deep, 20000 switches):")
    print()
    print("| mode | N | D | samples | hold median us | hold max us | frames read under lock | max wait per switch us |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for mode in MODES:
        for n, d in [(200, 10), (200, 50), (2000, 10), (2000, 50)]:
            greenreplay.start(trace, profile=False, sampler=mode, interval_us=5000, max_greenlets=n + 64)
            idle = [greenlet.greenlet(deep) for _ in range(n)]
            for g in idle:
                g.switch(d)
            round_trips(10000)
            greenreplay.stop()
            del idle
            out = subprocess.run([a.cli, "check", "--stall", "--format", "json", trace],
                                 capture_output=True, text=True)
            try:
                st = json.loads(out.stdout)["traces"][0]["stall"]
                print("| %s | %d | %d | %s | %s | %s | %s | %s |" % (
                    mode, n, d, st["samples"], _us(st["hold"]["median_ns"]), _us(st["hold"]["max_ns"]),
                    st["frames_under_lock"], _us(st["wait"]["max_ns"])))
            except (ValueError, KeyError, IndexError, TypeError):
                print("| %s | %d | %d | (check --stall gave no JSON: %s) | | | | |" % (mode, n, d, out.stderr.strip()[:60]))
    for f in (trace, trace + ".times"):
        if os.path.exists(f):
            os.unlink(f)


def _us(ns):
    return "" if ns is None else "%.1f" % (ns / 1000.0)


if __name__ == "__main__":
    main()
