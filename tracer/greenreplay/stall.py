"""The workload of `greenreplay stall` (replay/stall_cmd.c, docs/stall.md):
the switch-timing scenario of the seed's dd-trace-py regression test, with
any sampler attached.

N idle greenlets stay suspended D frames deep; W workers switch to and from
the main greenlet, round after round, at least R rounds and --seconds
seconds (many sampling intervals: the seed's own 20 x 200 switches took
less than one).  The program is recorded (the same
recorder in every run, so that only the sampler differs) with:
  --sampler off                    no sampler
  --sampler two-phase|hold-lock|seqlock   the reference sampler, in process
  --attach "CMD ... {pid} ..."     an external sampler started on this
                                   process ({pid} replaced), given
                                   --attach-wait seconds to attach, then
                                   ended by SIGINT after the measured phase
Every round trip (main -> worker -> main: two switches) is timed with
time.perf_counter_ns.  Prints one JSON line: sampler, n, depth, switches,
ns_per_switch (mean over the measured phase), ready_ns_per_switch (the
same less the time this thread sat runnable in the run queue, from
/proc/thread-self/schedstat: what other processes cost it), and the round trips' median,
p90, p99 and max in ns.

usage: python -m greenreplay.stall --sampler off|two-phase|hold-lock|seqlock
           [--attach CMD] [--attach-wait 1.0] --idle N [--depth 50]
           [--workers 20] [--rounds 200] [--seconds 1.0] [--interval-us 5000]
           --output TRACE
"""
import argparse
import gc
import json
import os
import shlex
import signal
import subprocess
import sys
import time

import greenlet

import greenreplay


# The program under test: its greenlets' frames are what a sampler unwinds.
# Compiled under a file name of its own, outside this package: the
# recorder leaves greenreplay's own code out of every record and stack
# (docs/RECORDER.md), and defined here the idle greenlets' D frames would
# be invisible to the reference sampler, whose cost would then not grow
# with N.
WORKLOAD_FILE = "<greenreplay-stall-workload>"
_WORKLOAD = """
def deep(d):
    if d > 1:
        return deep(d - 1)
    greenlet.getcurrent().parent.switch()


def worker(done):
    main = greenlet.getcurrent().parent
    while not done:
        main.switch()
"""
_ns = {"greenlet": greenlet}
exec(compile(_WORKLOAD, WORKLOAD_FILE, "exec"), _ns)
deep, worker = _ns["deep"], _ns["worker"]
del _ns


def schedstat():
    """(on-CPU ns, run-queue wait ns) of this thread; (0, 0) without
    schedstats (the figures are then plain wall time)."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            run, wait = f.read().split()[:2]
        return int(run), int(wait)
    except (OSError, ValueError):
        return 0, 0


def pct(sorted_values, q):
    if not sorted_values:
        return 0
    i = min(len(sorted_values) - 1, int(q * (len(sorted_values) - 1) + 0.5))
    return sorted_values[i]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m greenreplay.stall")
    ap.add_argument("--sampler", default="off", choices=["off", "two-phase", "hold-lock", "seqlock"])
    ap.add_argument("--attach", default=None)
    ap.add_argument("--attach-wait", type=float, default=1.0)
    ap.add_argument("--idle", type=int, required=True)
    ap.add_argument("--depth", type=int, default=50)
    ap.add_argument("--workers", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--interval-us", type=int, default=5000)
    ap.add_argument("--output", required=True)
    a = ap.parse_args(argv)
    sys.setrecursionlimit(max(1000, a.depth * 4 + 100))
    greenreplay.start(a.output, sampler=None if a.sampler == "off" else a.sampler,
                      interval_us=a.interval_us, max_greenlets=a.idle + a.workers + 64)
    idle = [greenlet.greenlet(deep) for _ in range(a.idle)]
    for g in idle:
        g.switch(a.depth)
    done = []
    workers = [greenlet.greenlet(worker) for _ in range(a.workers)]
    for w in workers:
        w.switch(done)
    proc = None
    if a.attach:
        cmd = shlex.split(a.attach.replace("{pid}", str(os.getpid())))
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        time.sleep(a.attach_wait)
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace").strip().splitlines()
            sys.stderr.write("greenreplay stall: the sampler exited (status %s) before the measured phase: %s\n"
                             % (proc.returncode, err[-1] if err else "no message"))
            return 2
    greenreplay.mark("workers started")
    # No cyclic GC during the measured phase: its passes over N*D frames
    # cost the same with any sampler or none, and only blur the ratio.
    gc.collect()
    gc.disable()
    trips = []
    perf = time.perf_counter_ns
    r0 = schedstat()
    t0 = perf()
    budget = int(a.seconds * 1e9)
    rounds = 0
    while rounds < a.rounds or perf() - t0 < budget:
        rounds += 1
        for w in workers:
            s = perf()
            w.switch()
            trips.append(perf() - s)
    wall = perf() - t0
    gc.enable()
    runq = schedstat()[1] - r0[1]
    attached_to_end = proc is None or proc.poll() is None
    if proc is not None:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    done.append(True)
    for w in workers:
        while not w.dead:
            w.switch()
    greenreplay.mark("workers done")
    greenreplay.stop()
    trips.sort()
    n = 2 * len(trips)
    print(json.dumps({"sampler": a.attach and "attach" or a.sampler, "n": a.idle, "depth": a.depth,
                      "switches": n, "ns_per_switch": wall / n if n else 0,
                      "ready_ns_per_switch": (wall - runq) / n if n else 0,
                      "trip_median_ns": pct(trips, 0.5), "trip_p90_ns": pct(trips, 0.9),
                      "trip_p99_ns": pct(trips, 0.99), "trip_max_ns": trips[-1] if trips else 0,
                      "attached_to_end": attached_to_end}))
    del idle
    return 0


if __name__ == "__main__":
    sys.exit(main())
