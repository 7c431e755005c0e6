"""One workload under one profiler, for tests/bench/instr_cost.sh.

Runs the call-heavy workload of profile_cost.py (--workload profile, --n
is its scale) or the greenlet round trips of switch_cost.py (--workload
switch, --n round trips) once, under --mode none (no profiler), empty (the
empty C profile function), passive, plain (passive with uncompressed
chunks: compress=False), every (passive with a real stack at every switch:
switch_stacks="every") or callback (the recorder, writing a trace to
--out).  instr_cost.sh counts the process's instructions under
callgrind at two sizes and takes the difference, so that start-up, import,
start()/stop() and first-sight costs cancel out.  Prints the number of
profile events the empty function saw (mode empty), else nothing.

usage: python instr_one.py --workload profile|switch --mode none|empty|passive|plain|every|callback --n N [--out FILE]
"""
import argparse
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", choices=("profile", "switch"), required=True)
    ap.add_argument("--mode", choices=("none", "empty", "passive", "plain", "every", "callback"),
                    required=True,
                    help="every: passive with switch_stacks='every' (a real stack at every switch); "
                         "plain: passive with uncompressed chunks")
    ap.add_argument("--n", type=int, required=True, help="scale (profile) or round trips (switch)")
    ap.add_argument("--out", default=os.devnull + ".grt", help="trace file of the recorder modes")
    a = ap.parse_args()
    if a.workload == "profile":
        import profile_cost
        run = lambda: profile_cost.workload(a.n)
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
    run()
    if a.mode == "empty":
        print(emptyprof.uninstall())
    elif a.mode != "none":
        greenreplay.stop()


if __name__ == "__main__":
    main()
