"""Greenlets that keep the CPU busy between switches, long enough for a
sampling profiler to sample inside each (tests/integration/conform.sh,
the sampled-stack comparison)."""
import time

import greenlet


def busy(ms):
    t = time.perf_counter()
    n = 0
    while time.perf_counter() - t < ms / 1000.0:
        n += 1
    return n


def worker(rounds):
    for _ in range(rounds):
        busy(10)
        greenlet.getcurrent().parent.switch()


def main():
    gs = [greenlet.greenlet(worker) for _ in range(3)]
    for _ in range(3):
        for g in gs:
            g.switch(3)
        busy(10)


main()
