"""Benchmark workload: a switch-heavy gevent program, recorded to a trace.

W worker greenlets (gevent.spawn) pass items through a gevent.queue.Queue
and yield to the hub with gevent.sleep(0) between small pieces of work
(a few Python calls and builtins), so a large share of the profile events
are greenlet switches and the gevent hub's own code, as in a busy gevent
service.  Only sleep(0) and queues are used: the schedule, and so the
trace, is the same on every run.

Records the program with greenreplay (passive switches, the default) into
--output and prints one line: records, bytes and bytes per event (indexed
record; the whole file, header, definitions and framing included) of the
trace (compressed chunks, the default), with the goal (0.1 or less).  Prints figures; asserts nothing.

usage: python switch_heavy.py --output TRACE [--workers W] [--rounds R]
"""
import argparse
import os

import gevent
import gevent.queue

import greenreplay


def parse(item):
    return int(str(item)) + 1


def work(i, q, out, rounds):
    total = 0
    for r in range(rounds):
        q.put(i * rounds + r)
        gevent.sleep(0)
        item = q.get()
        total += parse(item) + len(str(total))
        gevent.sleep(0)
    out.append(total)


def run(workers, rounds):
    q = gevent.queue.Queue()
    out = []
    jobs = [gevent.spawn(work, i, q, out, rounds) for i in range(workers)]
    gevent.joinall(jobs)
    return sum(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output", required=True, help="trace file to write")
    ap.add_argument("--workers", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=200)
    a = ap.parse_args()
    gevent.get_hub()
    gevent.sleep(0)
    greenreplay.start(a.output, root=os.getcwd())
    try:
        run(a.workers, a.rounds)
    finally:
        records = greenreplay.stop()
    size = os.path.getsize(a.output)
    print("trace size, switch-heavy gevent workload (%d workers x %d rounds): %d records (events), "
          "%d bytes: %.3f bytes per event (compressed chunks; goal <= 0.1)"
          % (a.workers, a.rounds, records, size, size / max(records, 1)))


if __name__ == "__main__":
    main()
