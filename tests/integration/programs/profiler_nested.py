"""Nested profilers: a library profiles a block inside the application's
profiler.

The application enables `outer` around its work; a library called from it
enables its own `inner` around one block and disables it.  cProfile's
enable() replaces the thread's profile function and disable() clears it:
`outer` misses the block (inner got it) and everything after it (no
profiler was installed).  Attribution says so; the pstats of `outer` count
no call of block() nor of after().
"""
import cProfile


def block():
    return sum(range(10))


def after():
    return 1


def library():
    inner = cProfile.Profile()
    inner.enable()
    block()
    inner.disable()


def app():
    library()
    after()


outer = cProfile.Profile()
outer.enable()
app()
outer.disable()
outer.create_stats()
print("outer block=%d after=%d" % tuple(
    sum(v[1] for k, v in outer.stats.items() if k[2] == name) for name in ("block", "after")))
