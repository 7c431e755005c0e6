"""Benchmark: trace size per event, with and without chunk compression.

Records each workload in a fresh interpreter three times: twice with
compressed chunks (the default, docs/FORMAT.md section 2.1) and once with
start(compress=False); prints a table of bytes per event (the whole file:
header, definitions, framing and trailer included, over the indexed
records) with the goal beside each figure, and whether the two compressed
runs wrote the same bytes.  Workloads:

  call-heavy     the call-heavy loop of profile_cost.py (--scale)
  ping-pong      round trips between two greenlets (switch_cost.py)
  switch-heavy   the switch-heavy gevent program (switch_heavy.py)
  many-greenlets --greenlets greenlets (and a tenth as many), each
                 created, switched into and finished: bytes per event as
                 greenlet ids grow (goal: bounded)

Needs greenreplay (build/python) and emptyprof (build/bench) importable;
gevent for switch-heavy, greenlet for the others but call-heavy (skipped
when missing).  Prints figures; asserts nothing.

usage: python trace_size.py [--out DIR] [--scale N] [--round-trips N]
                            [--greenlets N]
"""
import argparse
import filecmp
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)

from goal import goal as goal_line  # noqa: E402

GOAL = 0.1  # bytes per event, compressed chunks


def one(workload, out, compress, size):
    """In this process: record `workload` into `out`; print its records."""
    import greenreplay
    if workload == "call-heavy":
        import profile_cost
        body = lambda: profile_cost.workload(size)
    elif workload == "ping-pong":
        import switch_cost
        body = lambda: switch_cost.round_trips(size)
    elif workload == "switch-heavy":
        import gevent
        import switch_heavy
        gevent.get_hub()
        gevent.sleep(0)
        body = lambda: switch_heavy.run(50, size)
    else:
        import greenlet

        def child(i):
            return i + 1

        def body():
            for i in range(size):
                greenlet.greenlet(child).switch(i)
    greenreplay.start(out, root=os.getcwd(), compress=compress)
    try:
        body()
    finally:
        records = greenreplay.stop()
    print(records)


def record(workload, out, compress, size):
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", workload,
                        "--compress", "1" if compress else "0", "--size", str(size), out],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if p.returncode != 0:
        raise RuntimeError("%s: %s" % (workload, p.stderr.strip().splitlines()[-1:]))
    return int(p.stdout.split()[-1]), os.path.getsize(out)


def available(module):
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=tempfile.gettempdir(), help="directory for the traces")
    ap.add_argument("--scale", type=int, default=40, help="call-heavy size (profile_cost.py's)")
    ap.add_argument("--round-trips", type=int, default=100000, help="ping-pong round trips")
    ap.add_argument("--rounds", type=int, default=200, help="switch-heavy rounds of 50 workers")
    ap.add_argument("--greenlets", type=int, default=100000, help="many-greenlets: greenlets made")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--compress", default="1", help=argparse.SUPPRESS)
    ap.add_argument("--size", type=int, help=argparse.SUPPRESS)
    ap.add_argument("trace", nargs="?", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        one(a.one, a.trace, a.compress == "1", a.size)
        return
    os.makedirs(a.out, exist_ok=True)
    work = [("call-heavy", a.scale, None), ("ping-pong", a.round_trips, "greenlet"),
            ("switch-heavy", a.rounds, "gevent"),
            ("many-greenlets", max(a.greenlets // 10, 1), "greenlet"),
            ("many-greenlets", a.greenlets, "greenlet")]
    names = {"call-heavy": "call-heavy loop (scale %d)",
             "ping-pong": "greenlet ping-pong (%d round trips)",
             "switch-heavy": "switch-heavy gevent (50 workers x %d rounds)",
             "many-greenlets": "%d greenlets made, each run once"}
    print("trace size per event: compressed chunks (zstd level 1, each chunk on its own) "
          "against uncompressed; whole files")
    print()
    print("| workload | events | bytes/event uncompressed | bytes/event compressed | goal | "
          "smaller by | compressed reruns |")
    print("|---|---:|---:|---:|---|---:|---|")
    small = None
    reruns, goals = [], []  # the GOAL lines go after the table
    for w, size, needs in work:
        label = names[w] % size
        if needs and not available(needs):
            print("| %s | skipped: %s is not importable | | | | | |" % (label, needs))
            continue
        base = os.path.join(a.out, "bench-size-%s" % w)
        try:
            n, z1 = record(w, base + "-z1.grt", True, size)
            _, z2 = record(w, base + "-z2.grt", True, size)
            m, plain = record(w, base + "-plain.grt", False, size)
        except RuntimeError as e:
            print("| %s | failed: %s | | | | | |" % (label, e))
            continue
        same = filecmp.cmp(base + "-z1.grt", base + "-z2.grt", shallow=False)
        per = z1 / max(n, 1)
        if w != "many-greenlets":
            goal = "<= %.1f: **%s**" % (GOAL, "met" if per <= GOAL else "missed")
            goals.append(("size-" + w, "%.4f bytes per event" % per, "<= %.1f" % GOAL, per <= GOAL,
                          "%d events; uncompressed %.3f" % (n, plain / max(m, 1))))
        elif small is None:
            goal = "bounded as ids grow: the next row"
            small = per
        else:
            # Ten times the greenlets: their ids take one more varint byte
            # before compression; bounded means at most 1.5x the bytes.
            goal = "bounded (<= 1.5x the row above): **%s**, %.2fx" % (
                "met" if per <= 1.5 * small else "missed", per / small)
            goals.append(("size-ids", "%.2fx (%.3f against %.3f bytes per event)" % (per / small, per, small),
                          "<= 1.5x at 10x the greenlets", per <= 1.5 * small,
                          "%d and %d greenlets made, each run once; compressed" % (max(size // 10, 1), size)))
        print("| %s | %d | %.3f | %.4f | %s | %.0fx | %s |"
              % (label, n, plain / max(m, 1), per, goal, plain / max(z1, 1),
                 "byte-identical" if same and n == m else "DIFFER (%d and %d bytes)" % (z1, z2)))
        reruns.append((w if w != "many-greenlets" else "%d greenlets" % size, same and n == m))
        for suffix in ("-z1.grt", "-z2.grt", "-plain.grt"):
            os.unlink(base + suffix)
    print()
    for g in goals:
        goal_line(*g)
    if reruns:
        differ = [w for w, same in reruns if not same]
        goal_line("size-reruns", "%d of %d byte-identical" % (len(reruns) - len(differ), len(reruns)),
                  "byte-identical", not differ,
                  "differ: " + ", ".join(differ) if differ else ", ".join(w for w, _ in reruns))


if __name__ == "__main__":
    main()
