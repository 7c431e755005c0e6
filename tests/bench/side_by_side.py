"""Benchmark: greenreplay side by side with cProfile, yappi and coverage.

Four workloads, each under six profilers: none, the empty C profile
function (tests/bench/emptyprof.c), greenreplay (passive switches, the
default), cProfile, yappi (its defaults; the greenlet context backend for
the greenlet workloads) and coverage's C tracer (coverage.Coverage with
its defaults, no config file, no data file).

  call-heavy    the call-heavy loop of profile_cost.py      per profile event
  ping-pong     round trips between two greenlets            per switch
  switch-heavy  the switch-heavy gevent program              per profile event
                (switch_heavy.py: workers, a queue, sleep(0))
  realistic     gevent: clients and a StreamServer on         per profile event
                loopback, JSON lines, a queue to a consumer

Figures, per workload and profiler:

  instr  callgrind's count of the process's instructions per unit, over
         no profiler's (1.00x: no cost).  Each run is counted at two
         sizes and the difference taken, so start-up, imports and
         start()/stop() cancel out.  Load-independent: the primary figure.
         Profile events per run are those the empty C profile function
         saw under callgrind at the same size.
  wall   the workload's wall time over no profiler's, best of the rounds;
         in each round every profiler runs once, in a fresh process, in a
         rotated order.  Load-dependent: the host's load average is printed
         beside it, and the thread's CPU time ratio below it.
  I1     for the gevent workloads, L1 instruction-cache misses per event
         (callgrind --cache-sim=yes), the whole process, beside the empty
         function's.
  inside the instructions per unit run inside the profiler's own
         function and what it calls (the calls CPython's profile and
         trace glue makes into the profiler's module), without CPython's
         cost of calling it: where a profiler's cost goes.

Callgrind counts user-space instructions only: a profiler that reads a
clock by a system call per event (yappi's CPU clock) costs more in time
than its instruction ratio says.

Then the goals, each with its figure and verdict.  Prints figures; asserts
nothing but its own runs' success (exit 1 when a run fails).  The full run
takes about 20 minutes on 2 CPUs at load average 16, 4 at load average 3;
--quick 3.5 at load average 2.5 (Python's start-up under callgrind is much
of either).

usage: python side_by_side.py [--quick] [--rounds N] [--jobs N]
                              [--workloads W,W] [--keep DIR]
       python side_by_side.py --one WORKLOAD PROFILER N [--trace FILE]
         (one run in this process, used by the above: prints a JSON line)
"""
import argparse
import concurrent.futures
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time

from goal import goal

here = os.path.dirname(os.path.abspath(__file__))
top = os.path.dirname(os.path.dirname(here))
sys.path.insert(0, here)

PROFILERS = ["none", "empty", "greenreplay", "cProfile", "yappi", "coverage"]
WORKLOADS = ["call-heavy", "ping-pong", "switch-heavy", "realistic"]
GEVENT = ("switch-heavy", "realistic")
# CPython's functions that call the profile or trace function: 3.11's
# ceval.c (Debian's build names them call_trace.lto_priv.0 and so on);
# 3.12's legacy_tracing.c.
CALLERS = ("call_trace", "sys_profile_", "sys_trace_")
GREENLET = ("ping-pong",) + GEVENT
UNIT = {"ping-pong": "switch"}
TITLE = {"call-heavy": "call-heavy loop", "ping-pong": "greenlet ping-pong",
         "switch-heavy": "switch-heavy gevent", "realistic": "realistic gevent (loopback sockets, queue)"}
# Sizes: (callgrind small, callgrind large, wall), full and --quick.
# Callgrind's counts are exact, so its sizes only need to be far enough
# apart for the difference to dwarf first-sight costs.
SIZES = {
    "call-heavy": ((2, 4, 40), (1, 3, 10)),
    "ping-pong": ((5000, 15000, 100000), (2000, 6000, 20000)),
    "switch-heavy": ((5, 15, 200), (3, 9, 50)),
    "realistic": ((15, 45, 150), (5, 15, 30)),
}


# ---------------------------------------------------------------- workloads

def realistic(n, clients=8):
    """`clients` connections to a StreamServer on loopback, each sending n
    JSON lines and reading each reply; the server parses each request,
    answers it and passes it through a queue to a consumer greenlet."""
    import json as js
    import gevent
    import gevent.queue
    import gevent.server
    import gevent.socket

    q = gevent.queue.Queue()

    def handle(sock, addr):
        f = sock.makefile("rwb")
        for line in f:
            req = js.loads(line)
            q.put(req)
            f.write(js.dumps({"id": req["id"], "sum": sum(req["v"])}).encode() + b"\n")
            f.flush()
        f.close()
        sock.close()

    def consume():
        seen = 0
        while q.get() is not None:
            seen += 1
        return seen

    def client(c, port):
        s = gevent.socket.socket()
        s.connect(("127.0.0.1", port))
        f = s.makefile("rwb")
        total = 0
        for i in range(n):
            f.write(js.dumps({"id": i, "v": [c, i, 2 * i]}).encode() + b"\n")
            f.flush()
            total += js.loads(f.readline())["sum"]
        f.close()
        s.close()
        return total

    srv = gevent.server.StreamServer(("127.0.0.1", 0), handle)
    srv.start()
    cons = gevent.spawn(consume)
    jobs = [gevent.spawn(client, c, srv.server_port) for c in range(clients)]
    gevent.joinall(jobs, raise_error=True)
    q.put(None)
    seen = cons.get()
    srv.stop()
    assert seen == n * clients, (seen, n * clients)
    return sum(j.value for j in jobs)


def workload(name, n):
    if name == "call-heavy":
        import profile_cost
        return lambda: profile_cost.workload(n)
    if name == "ping-pong":
        import switch_cost
        return lambda: switch_cost.round_trips(n)
    import gevent
    gevent.get_hub()
    gevent.sleep(0)
    if name == "switch-heavy":
        import switch_heavy
        return lambda: switch_heavy.run(50, n)
    return lambda: realistic(n)


def one(name, prof, n, trace):
    """Run workload `name` of size n under `prof` in this process; print a
    JSON line: the workload's wall time in ns, the events the empty
    function saw, the tracer coverage used, the threads left."""
    import threading
    body = workload(name, n)
    res = {}
    if prof == "empty":
        import emptyprof
        start, stop = emptyprof.install, lambda: res.update(events=emptyprof.uninstall())
    elif prof == "greenreplay":
        import greenreplay
        start, stop = lambda: greenreplay.start(trace, root=os.getcwd()), greenreplay.stop
    elif prof == "cProfile":
        import cProfile
        p = cProfile.Profile()
        start, stop = p.enable, p.disable
    elif prof == "yappi":
        import yappi
        if name in GREENLET:
            yappi.set_context_backend("greenlet")
        start, stop = yappi.start, yappi.stop
    elif prof == "coverage":
        import coverage
        cov = coverage.Coverage(data_file=None, config_file=False)
        start, stop = cov.start, cov.stop
    else:
        start = stop = lambda: None
    start()
    try:
        t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        body()
        res["ns"], res["cpu"] = time.perf_counter_ns() - t0, time.thread_time_ns() - c0
    finally:
        stop()
    if prof == "coverage":
        res["tracer"] = cov._collector.tracer_name()
    res["threads"] = threading.active_count()
    print(json.dumps(res))


# ---------------------------------------------------------------- driver

def build_emptyprof(out):
    """Compile emptyprof.c for this interpreter into `out` if it is older."""
    so = os.path.join(out, "emptyprof" + sysconfig.get_config_var("EXT_SUFFIX"))
    src = os.path.join(here, "emptyprof.c")
    if not os.path.exists(so) or os.path.getmtime(so) < os.path.getmtime(src):
        subprocess.run([os.environ.get("CC", "cc"), "-O2", "-fPIC", "-shared",
                        "-I" + sysconfig.get_paths()["include"], "-o", so, src], check=True)


def child(args, env, valgrind=None):
    """Run one --one child; returns (its JSON, callgrind's summary or None)."""
    name, prof, n, tmp = args
    tag = "%s-%s-%d" % (name, prof, n)
    trace = os.path.join(tmp, tag + ".grt")
    cmd = [sys.executable, os.path.abspath(__file__), "--one", name, prof, str(n), "--trace", trace]
    outf = None
    if valgrind is not None:
        outf = os.path.join(tmp, tag + ".callgrind")
        cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + outf] + valgrind + cmd
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("side_by_side: %s failed (exit %d):\n%s" % (" ".join(cmd), r.returncode, r.stderr[-2000:]))
    res = json.loads(r.stdout.strip().splitlines()[-1])
    for f in (trace, trace + ".times"):
        if os.path.exists(f):
            os.unlink(f)
    counts = None
    if outf:
        counts = callgrind_summary(outf)
        if prof != "none":
            counts["own"] = inclusive(outf)
    return res, counts


def inclusive(path):
    """Instructions run inside the profile or trace function and what it
    calls, from a callgrind output file: the inclusive cost of each call
    that CPython's profile and trace glue (CALLERS) makes into another
    object than its own, i.e. into the profiler's extension module."""
    fns, obs, fn, ob, cob, total, call = {}, {}, None, None, None, 0, False

    def name(names, v):  # "(id) name" the first time, "(id)" after
        m = re.match(r"\((\d+)\)(?: (.*))?$", v)
        if not m:
            return v
        if m.group(2) is not None:
            names[m.group(1)] = m.group(2)
        return names[m.group(1)]

    with open(path) as f:
        for line in f:
            if call:  # the line after calls=: position, then Ir first
                if fn.startswith(CALLERS) and (cob or ob) != ob:
                    total += int(line.split()[1])
                call, cob = False, None
            elif line.startswith("ob="):
                ob = name(obs, line[3:].strip())
            elif line.startswith("cob="):
                cob = name(obs, line[4:].strip())
            elif line.startswith("fn="):
                fn = name(fns, line[3:].strip())
            elif line.startswith("cfn="):  # the same table of names as fn=
                name(fns, line[4:].strip())
            elif line.startswith("calls="):
                call = True
    return total


def callgrind_summary(path):
    """{event name: total} of a callgrind output file (Ir, and with the
    cache simulation I1mr and the others)."""
    names = totals = None
    with open(path) as f:
        for line in f:
            if line.startswith("events:"):
                names = line.split()[1:]
            elif line.startswith(("summary:", "totals:")):
                totals = [int(x) for x in line.split()[1:]]
    return dict(zip(names, totals))


def measure_instr(workloads, sizes, tmp, env, jobs):
    """Callgrind at two sizes for every workload and profiler; returns
    {(w, p): {"Ir": per unit, "I1mr": per unit or None}} and the units."""
    tasks = {}
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for w in workloads:
            vg = ["--cache-sim=yes"] if w in GEVENT else []
            for p in PROFILERS:
                for n in sizes[w][:2]:
                    tasks[(w, p, n)] = pool.submit(child, (w, p, n, tmp), env, vg)
        got = {k: f.result() for k, f in tasks.items()}
    per, units = {}, {}
    for w in workloads:
        n1, n2 = sizes[w][:2]
        if w in UNIT:
            units[w] = 2 * (n2 - n1)  # a round trip is two switches
        else:
            units[w] = got[(w, "empty", n2)][0]["events"] - got[(w, "empty", n1)][0]["events"]
        for p in PROFILERS:
            a, b = got[(w, p, n1)][1], got[(w, p, n2)][1]
            per[(w, p)] = {k: (b[k] - a[k]) / units[w] for k in ("Ir", "I1mr", "own") if k in b}
            info = got[(w, p, n2)][0]
            if p == "coverage" and info.get("tracer") != "CTracer":
                sys.exit("side_by_side: coverage ran with %s, not CTracer" % info.get("tracer"))
            per[(w, p)]["threads"] = info["threads"]
    return per, units


def measure_wall(workloads, sizes, tmp, env, rounds):
    """Wall and CPU time of each workload under each profiler, interleaved;
    returns {(w, p): (best wall over best none's, best CPU time over best
    none's)} and the load averages seen (one before, one after each
    round)."""
    times = {}
    loads = [os.getloadavg()[0]]
    for r in range(rounds):
        for w in workloads:
            order = PROFILERS[r % len(PROFILERS):] + PROFILERS[:r % len(PROFILERS)]
            for p in order:
                res = child((w, p, sizes[w][2], tmp), env)[0]
                times.setdefault((w, p), []).append((res["ns"], res["cpu"]))
        loads.append(os.getloadavg()[0])
    best = {k: (min(t[0] for t in v), min(t[1] for t in v)) for k, v in times.items()}
    return {(w, p): (best[(w, p)][0] / best[(w, "none")][0], best[(w, p)][1] / best[(w, "none")][1])
            for (w, p) in best}, loads


def own(x):
    return "" if x is None else "%.0f" % x


def verdict(ok):
    return "**met**" if ok else "**missed**"


def load_note(loads):
    """The load averages of the wall rounds, for a GOAL line's note."""
    return "%s host, load average %s on %d CPUs" % ("loaded" if max(loads) > 1 else "quiet",
                                                    "-".join("%.1f" % x for x in (min(loads), max(loads))),
                                                    os.cpu_count() or 0)


def report(workloads, instr, units, wall, loads, sizes, rounds):
    def ratio(w, p):
        return instr[(w, p)]["Ir"] / instr[(w, "none")]["Ir"]

    print("| workload (unit) | " + " | ".join(PROFILERS) + " |")
    print("|---|" + "---:|" * len(PROFILERS))
    for w in workloads:
        cells = ["%.2fx / %.2fx" % (ratio(w, p), wall[(w, p)][0]) for p in PROFILERS]
        print("| %s (per %s) | %s |" % (TITLE[w], UNIT.get(w, "event"), " | ".join(cells)))
    print()
    print("cells: instructions over no profiler (callgrind) / wall time over no profiler "
          "(best of %d interleaved rounds; %s host: load average %s on %d CPUs)"
          % (rounds, "LOADED" if max(loads) > 1 else "quiet", " ".join("%.1f" % x for x in loads),
             os.cpu_count() or 0))
    print()
    print("| workload | " + " | ".join(PROFILERS) + " | units counted |")
    print("|---|" + "---:|" * (len(PROFILERS) + 1))
    for w in workloads:
        cells = ["%.0f" % instr[(w, p)]["Ir"] for p in PROFILERS]
        print("| %s, instructions per %s | %s | %d (sizes %d, %d) |"
              % (w, UNIT.get(w, "event"), " | ".join(cells), units[w], sizes[w][0], sizes[w][1]))
        cells = [own(instr[(w, p)].get("own")) for p in PROFILERS]
        print("| %s, of which inside the profile or trace function | %s | |" % (w, " | ".join(cells)))
        if w in GEVENT:
            cells = ["%.3f" % instr[(w, p)]["I1mr"] for p in PROFILERS]
            print("| %s, L1 instruction-cache misses per event | %s | |" % (w, " | ".join(cells)))
        cells = ["%.2fx" % wall[(w, p)][1] for p in PROFILERS]
        print("| %s, thread CPU time over no profiler (best of rounds) | %s | |" % (w, " | ".join(cells)))
    print()
    print("inside: callgrind's inclusive count of the calls CPython's %s make into the profiler's "
          "module, per unit" % ", ".join(c + "*" for c in CALLERS))
    print()
    print("goals:")
    for w in workloads:
        gr, em, no = (instr[(w, p)]["Ir"] for p in ("greenreplay", "empty", "none"))
        if w == "call-heavy":
            r = (gr - no) / (em - no)
            print("- call-heavy, greenreplay's instructions per event over no profiler against the empty "
                  "function's: %.2fx (%.0f against %.0f); goal <= 1.3x: %s; stretch goal <= 1.15x: %s"
                  % (r, gr - no, em - no, verdict(r <= 1.3), verdict(r <= 1.15)))
            gw, ew = wall[(w, "greenreplay")][0], wall[(w, "empty")][0]
            rw = (gw - 1) / (ew - 1) if ew > 1 else float("inf")
            goal("call-heavy-wall", "%.2fx" % rw, "<= 1.15x", rw <= 1.15,
                 "wall over no profiler %.2fx against the empty function's %.2fx; best of %d rounds; %s"
                 % (gw, ew, rounds, load_note(loads)))
        elif w == "ping-pong":
            r = gr / em
            print("- ping-pong, greenreplay's whole switch against the empty function's, in instructions: "
                  "%.2fx (%.0f against %.0f); goal <= 1.2x: %s" % (r, gr, em, verdict(r <= 1.2)))
        else:
            cp = instr[(w, "cProfile")]["Ir"]
            gw, cw = wall[(w, "greenreplay")][0], wall[(w, "cProfile")][0]
            print("- %s, greenreplay at or below cProfile's cost in wall time: %.2fx against %.2fx "
                  "(%s host); %s. In instructions: %.2fx against %.2fx: %s"
                  % (w, gw, cw, "loaded" if max(loads) > 1 else "quiet", verdict(gw <= cw),
                     gr / no, cp / no, verdict(gr <= cp)))
            goal("%s-wall" % w, "%.2fx against cProfile's %.2fx" % (gw, cw), "<= cProfile's", gw <= cw,
                 "wall over no profiler, best of %d rounds; %s; in instructions %.2fx against %.2fx"
                 % (rounds, load_note(loads), gr / no, cp / no))
            gm, em1 = instr[(w, "greenreplay")]["I1mr"], instr[(w, "empty")]["I1mr"]
            print("- %s, L1 instruction-cache misses per event, greenreplay against the empty function: "
                  "%.2fx (%.3f against %.3f; no profiler %.3f); goal <= 2x: %s"
                  % (w, gm / em1, gm, em1, instr[(w, "none")]["I1mr"], verdict(gm <= 2 * em1)))
            goal("%s-i1" % w, "%.2fx (%.1f against %.1f per event)" % (gm / em1, gm, em1), "<= 2x",
                 gm <= 2 * em1, "L1 instruction-cache misses per event (callgrind --cache-sim=yes); "
                 "no profiler %.1f, cProfile %.1f" % (instr[(w, "none")]["I1mr"], instr[(w, "cProfile")]["I1mr"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[1:]))
    ap.add_argument("--quick", action="store_true", help="smaller sizes, 3 wall rounds: a fast look")
    ap.add_argument("--rounds", type=int, help="wall-time rounds (default 5, --quick 3)")
    ap.add_argument("--jobs", type=int, default=2, help="callgrind runs at a time (default 2)")
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated subset")
    ap.add_argument("--keep", help="keep the callgrind files in this directory")
    ap.add_argument("--one", nargs=3, metavar=("WORKLOAD", "PROFILER", "N"), help=argparse.SUPPRESS)
    ap.add_argument("--trace", default=os.devnull, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        return one(a.one[0], a.one[1], int(a.one[2]), a.trace)
    workloads = a.workloads.split(",")
    for w in workloads:
        if w not in WORKLOADS:
            ap.error("unknown workload %s (%s)" % (w, ", ".join(WORKLOADS)))
    rounds = a.rounds or (3 if a.quick else 5)
    sizes = {w: SIZES[w][1 if a.quick else 0] for w in workloads}
    build = os.environ.get("BUILD", os.path.join(top, "build"))
    out = os.path.join(build, "bench")
    os.makedirs(out, exist_ok=True)
    build_emptyprof(out)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([out, os.path.join(build, "python")]),
               PYTHONHASHSEED="0")
    missing = [m for m in ("greenlet", "gevent", "yappi", "coverage") if importlib.util.find_spec(m) is None]
    if missing or shutil.which("valgrind") is None:
        print("side by side: skipped, %s" % ("%s not importable by %s" % (", ".join(missing), sys.executable)
                                             if missing else "valgrind not found"))
        return 0
    import coverage
    import gevent
    import greenlet
    print("side by side: Python %s (%s), greenlet %s, gevent %s, yappi %s, coverage %s, %d CPUs%s"
          % (platform.python_version(), sys.executable, greenlet.__version__, gevent.__version__,
             importlib.metadata.version("yappi"), coverage.__version__, os.cpu_count() or 0,
             ", --quick" if a.quick else ""))
    with tempfile.TemporaryDirectory(dir=a.keep or out) as tmp:
        t0 = time.monotonic()
        instr, units = measure_instr(workloads, sizes, a.keep or tmp, env, a.jobs)
        t1 = time.monotonic()
        wall, loads = measure_wall(workloads, sizes, tmp, env, rounds)
        t2 = time.monotonic()
    print("callgrind %.0f s, wall rounds %.0f s" % (t1 - t0, t2 - t1))
    with open(os.path.join(out, "side_by_side.json"), "w") as f:  # the figures, for another look
        json.dump({"instr": {"%s %s" % k: v for k, v in instr.items()}, "units": units,
                   "wall": {"%s %s" % k: v for k, v in wall.items()}, "loads": loads, "sizes": sizes}, f)
    print()
    report(workloads, instr, units, wall, loads, sizes, rounds)


if __name__ == "__main__":
    main()
