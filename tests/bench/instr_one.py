"""One workload under one profiler, for tests/bench/instr_cost.sh.

Runs the call-heavy workload of profile_cost.py (--workload profile, --n
is its scale), the same in a thread pool's worker thread that never
touches greenlet (--workload pool, with greenlet imported by the main
thread), the greenlet round trips of switch_cost.py (--workload switch,
--n round trips) or a hub switching round-robin to --greenlets workers,
each switching straight back (--workload hub, --n rounds) once, under --mode none (no profiler), empty (the
empty C profile function), passive, plain (passive with uncompressed
chunks: compress=False), every (passive with a real stack at every switch:
switch_stacks="every") or callback (the recorder, writing a trace to
--out).  instr_cost.sh counts the process's instructions under
callgrind at two sizes and takes the difference, so that start-up, import,
start()/stop() and first-sight costs cancel out.  Prints the number of
profile events the empty function saw (mode empty), else nothing.

usage: python instr_one.py --workload profile|pool|switch|hub [--greenlets K] --mode none|empty|passive|plain|every|callback --n N [--out FILE]
"""
import argparse
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)


def pool(n, empty):
    """The call-heavy workload in a thread pool's worker, started after the
    profiler (the recorder follows it; the empty function is installed
    there): a thread that never uses greenlet in a program that imported
    it.  Returns the events the empty function saw there (empty)."""
    import concurrent.futures
    import greenlet  # noqa: F401 (the program uses greenlet elsewhere)
    import emptyprof
    import profile_cost

    def job():
        if empty:
            emptyprof.install()
        profile_cost.workload(n)
        return emptyprof.uninstall() if empty else None

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as ex:
        return ex.submit(job).result()


def hub(k, n):
    """A Python-level hub over k greenlets: n rounds, each switching to
    every worker in turn, which switches straight back (2 * k switches a
    round)."""
    import greenlet
    me = greenlet.getcurrent()

    def work():
        while True:
            me.switch()

    workers = [greenlet.greenlet(work) for _ in range(k)]
    for _ in range(n):
        for g in workers:
            g.switch()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", choices=("profile", "pool", "switch", "hub"), required=True)
    ap.add_argument("--mode", choices=("none", "empty", "passive", "plain", "every", "callback"),
                    required=True,
                    help="every: passive with switch_stacks='every' (a real stack at every switch); "
                         "plain: passive with uncompressed chunks")
    ap.add_argument("--n", type=int, required=True,
                    help="scale (profile, pool), round trips (switch) or rounds over the workers (hub)")
    ap.add_argument("--greenlets", type=int, default=10, help="the hub's workers (hub)")
    ap.add_argument("--out", default=os.devnull + ".grt", help="trace file of the recorder modes")
    a = ap.parse_args()
    if a.workload == "profile":
        import profile_cost
        run = lambda: profile_cost.workload(a.n)
    elif a.workload == "pool":
        run = lambda: pool(a.n, a.mode == "empty")
    elif a.workload == "hub":
        run = lambda: hub(a.greenlets, a.n)
    else:
        import switch_cost
        run = lambda: switch_cost.round_trips(a.n) if a.n > 1 else None
    import emptyprof
    import greenreplay
    if a.mode == "empty":
        emptyprof.install()
    elif a.mode == "every":
        greenreplay.start(a.out, root=os.getcwd(), switches="passive", switch_stacks="every")
    elif a.mode == "plain":
        greenreplay.start(a.out, root=os.getcwd(), switches="passive", compress=False)
    elif a.mode != "none":
        greenreplay.start(a.out, root=os.getcwd(), switches=a.mode)
    seen = run()
    if a.mode == "empty":
        n = emptyprof.uninstall()
        print(seen if a.workload == "pool" else n)
    elif a.mode != "none":
        greenreplay.stop()


if __name__ == "__main__":
    main()
