# realworld: task.cancel() of an asyncio task awaiting another coroutine
# report: CPython issue 73776 (bpo-29590): throw() into a delegating
#   generator does not run the outer frame; the everyday form is asyncio's
#   Task.cancel(), e.g. under SQLAlchemy's async layer.
#   https://github.com/python/cpython/issues/73776
# semantics: cancel() makes the task throw CancelledError into outer(),
#   which awaits inner(); CPython hands the throw to inner() without a call
#   event for outer(). Every profiler sees the same: call thrower, call
#   inner, return inner, return thrower. This is CPython's defined
#   behaviour, not a lost event: clean on every version.
# modes: whole manual
# needs:
# quick: yes
# expect: clean
import asyncio
import greenreplay


async def inner(log):
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        greenreplay.mark("inner cancelled")
        log.append("inner")
        raise


async def outer(log):
    try:
        await inner(log)
    finally:
        log.append("outer")


async def main():
    log = []
    task = asyncio.ensure_future(outer(log))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    assert log == ["inner", "outer"], log


greenreplay.start()
asyncio.run(main())
greenreplay.stop()
