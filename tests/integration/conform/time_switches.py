"""Greenlets that keep the CPU busy between switches, for the time per
function of sampling profilers (tests/integration/conform_time.sh): main
runs 3 of 12 busy periods of 10 ms, three worker greenlets the other 9.
side runs once, in another thread only: on the starting thread it is never
on a running stack."""
import threading
import time

import greenlet


def busy(ms):
    t = time.perf_counter()
    n = 0
    while time.perf_counter() - t < ms / 1000.0:
        n += 1
    return n


def side():
    return busy(2)


def worker(rounds):
    for _ in range(rounds):
        busy(10)
        greenlet.getcurrent().parent.switch()


def main():
    t = threading.Thread(target=side)
    t.start()
    t.join()
    gs = [greenlet.greenlet(worker) for _ in range(3)]
    for _ in range(3):
        for g in gs:
            g.switch(3)
        busy(10)


main()
