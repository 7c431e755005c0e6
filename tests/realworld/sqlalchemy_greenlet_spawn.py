# realworld: SQLAlchemy-style greenlet_spawn / await_only bridge
# report: coverage.py issue 2245 and PR 2282 (lines after an await in
#   SQLAlchemy's greenlet bridge), coverage.py issue 1082.
#   https://github.com/coveragepy/coveragepy/pull/2282
# semantics: an async function awaits greenlet_spawn(orm_work); orm_work
#   runs in a child greenlet and calls await_only(coro), which switches to
#   the parent greenlet (inside the coroutine) to await coro and switches
#   back with the result. Each switch is an ordinary greenlet switch; the
#   profiler sees every frame: clean.
#   On the mutant mut256 (greenlet 1.1.0's issue-256 bug, passive mode) a
#   new greenlet starts with tracing off: the mark inside it shows frames
#   the profiler never saw (blind_spot) and it runs without tracing under
#   a set profile function (propagation); a greenlet trace callback
#   (--switches callback) heals it.
# modes: whole manual
# needs: greenlet
# quick: yes
# expect: clean
# expect mutant=mut256 switches=passive: blind_spot propagation
import asyncio

import greenlet
import greenreplay


class _Bridge(greenlet.greenlet):
    def __init__(self, fn, driver):
        greenlet.greenlet.__init__(self, fn, driver)
        self.driver = driver


def await_only(awaitable):
    current = greenlet.getcurrent()
    return current.driver.switch(awaitable)


async def greenlet_spawn(fn, *args):
    context = _Bridge(fn, greenlet.getcurrent())
    result = context.switch(*args)
    while not context.dead:
        value = await result
        result = context.switch(value)
    return result


async def fetch_row(n):
    await asyncio.sleep(0)
    return {"id": n}


def orm_work(n):
    row = await_only(fetch_row(n))
    greenreplay.mark("after await_only")
    other = await_only(fetch_row(n + 1))
    return row["id"] + other["id"]


async def main():
    total = 0
    for n in range(3):
        total += await greenlet_spawn(orm_work, n)
    assert total == 9, total


greenreplay.start()
asyncio.run(main())
greenreplay.stop()
