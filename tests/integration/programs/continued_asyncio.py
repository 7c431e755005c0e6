# Continued switches against asyncio bridged to greenlets, the pattern of
# SQLAlchemy's greenlet_spawn/await_only (tests/integration/continued_adversary.sh):
# synchronous code runs in a greenlet and, to await, switches to the
# greenlet driving the coroutine, which awaits and switches back.  asyncio
# runs every callback and task step in Context.run, which moves the
# thread's switch witness (context_ver) without a switch.
import asyncio

import greenlet


def await_only(awaitable):
    return greenlet.getcurrent().parent.switch(awaitable)


async def greenlet_spawn(fn, *args):
    g = greenlet.greenlet(fn)
    result = g.switch(*args)
    while not g.dead:
        try:
            value = await result
        except Exception as e:
            result = g.throw(e)
        else:
            result = g.switch(value)
    return result


async def tick(i):
    await asyncio.sleep(0)
    if i == 3:
        raise ValueError("three")
    return i * 2


def sync_work(n):
    total = 0
    for i in range(n):
        try:
            total += await_only(tick(i))
        except ValueError:
            total -= 1
    return total


async def amain():
    results = await asyncio.gather(*(greenlet_spawn(sync_work, k) for k in (4, 5, 6)))
    print(results)


asyncio.run(amain())
