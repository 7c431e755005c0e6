"""throw() into a generator or coroutine that delegates (yield from,
await): CPython hands the exception straight to the innermost delegate
without running the outer frames, so no profile function gets an event of
them, yet they are on the real stack where the inner one catches it
(CPython issue 73776, every version).  Three forms: a generator thrown into
through two levels of `yield from`; an asyncio task cancelled while it
awaits another coroutine; a generator closed (GeneratorExit) through
`yield from`.  CPython's defined behaviour, not a blind spot: `check`
names it in a note.
"""
# requires:
# expect: clean
# note: CPython issue 73776
import asyncio

import greenreplay


class Stop(Exception):
    pass


def leaf_gen():
    try:
        yield "leaf"
    except Stop:
        greenreplay.mark("leaf_gen caught Stop")
        yield "caught"


def middle_gen():
    return (yield from leaf_gen())


def outer_gen():
    return (yield from middle_gen())


def closing_leaf():
    try:
        yield 1
    except GeneratorExit:
        greenreplay.mark("closing_leaf sees close")
        raise


def closing_outer():
    yield from closing_leaf()


async def waiter():
    try:
        await asyncio.sleep(5)
    except asyncio.CancelledError:
        greenreplay.mark("waiter sees the cancel")
        raise


async def awaits_waiter():
    return await waiter()


async def cancel_it():
    task = asyncio.ensure_future(awaits_waiter())
    await asyncio.sleep(0)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        return "cancelled"


def main():
    greenreplay.start()
    g = outer_gen()
    assert next(g) == "leaf"
    assert g.throw(Stop) == "caught"
    c = closing_outer()
    next(c)
    c.close()
    assert asyncio.run(cancel_it()) == "cancelled"
    greenreplay.stop()


main()
