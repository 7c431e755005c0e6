# realworld: asyncio.wait_for timing out a chain of awaits
# report: CPython issue 73776 (bpo-29590); the cancellation of a timed-out
#   wait_for goes through the same throw into delegating coroutines.
#   https://github.com/python/cpython/issues/73776
# semantics: wait_for cancels fetch(), suspended in query() in
#   asyncio.sleep(); the CancelledError is thrown into fetch and handed to
#   query without an event for fetch. Defined behaviour: clean.
# modes: whole manual
# needs:
# quick: yes
# expect: clean
import asyncio
import greenreplay


async def query(n):
    await asyncio.sleep(3600)
    return n


async def fetch(n):
    value = await query(n)
    return value + 1


async def main():
    for n in range(3):
        try:
            await asyncio.wait_for(fetch(n), timeout=0.001)
        except asyncio.TimeoutError:
            greenreplay.mark("timed out")


greenreplay.start()
asyncio.run(main())
greenreplay.stop()
