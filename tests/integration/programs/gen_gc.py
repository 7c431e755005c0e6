"""Unfinished generators finalized other than by close(): by their last
reference dropped in the middle of a frame (`del`), by the garbage collector
(a reference cycle, gc.collect()), and when the frame holding one returns.
CPython 3.9-3.12 show an extra call/return pair of the generator at each
finalization, 3.13+ none (CPython issues 113728, 140373); `greenreplay diff
--ignore gen-finalize` must see the same structure.  No greenlet needed
(tests/integration/gen_finalize.sh records it on two interpreters).
"""
import gc

import greenreplay


def gen(n):
    for i in range(n):
        yield i


def by_del():
    g = gen(3)
    next(g)
    del g                      # refcount finalization, mid-frame
    greenreplay.mark("after del")


def by_gc():
    g = gen(3)
    next(g)
    cycle = [g]
    cycle.append(cycle)        # only the collector frees it
    del g, cycle
    gc.collect()
    greenreplay.mark("after collect")


def by_return():
    for x in gen(3):           # started by a for loop
        break
    return x                   # finalized when the frame goes


def main():
    gc.disable()               # collections only where the program asks
    greenreplay.start()
    by_del()
    by_gc()
    by_return()
    greenreplay.mark("end")
    greenreplay.stop()


main()
