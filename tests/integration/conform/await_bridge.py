"""A greenlet_spawn-style bridge (as SQLAlchemy's asyncio layer has):
`handler` awaits `greenlet_spawn(orm_work)`; orm_work runs in a greenlet
whose parent is the coroutine's and switches out at each await_only, so
both the coroutine (run by asyncio) and orm_work are resumed after each
await.  The lines after the awaits are the ones coverage.py's default
tracer loses (coverage.py issue 2245)."""
import asyncio

import greenlet


class _Bridge(greenlet.greenlet):
    pass


def await_only(awaitable):
    return greenlet.getcurrent().parent.switch(awaitable)


async def greenlet_spawn(fn, *args):
    context = _Bridge(fn, greenlet.getcurrent())
    result = context.switch(*args)
    while not context.dead:
        value = await result
        result = context.switch(value)
    return result


async def query(n):
    await asyncio.sleep(0)
    return n * 2


def orm_work(n):
    if n < 0:
        raise ValueError(n)
    first = await_only(query(n))
    second = await_only(query(first))
    total = first + second
    return total


def never_called():
    return "never"


async def handler():
    x = await greenlet_spawn(orm_work, 1)
    y = x + 1
    z = await greenlet_spawn(orm_work, y)
    return z


print(asyncio.run(handler()))
