# realworld: an asyncio event loop run inside a greenlet
# report: greenlet and asyncio together, as in SQLAlchemy's async layer
#   and coverage.py issue 1082 ("ASGI app misses coverage lines after
#   awaiting async sqlalchemy code").
#   https://github.com/coveragepy/coveragepy/issues/1082
# semantics: a greenlet runs asyncio.run(); the loop's tasks suspend and
#   resume coroutines inside that greenlet. Coroutine suspension is a
#   return and resumption a call for the profiler: clean.
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


async def step(n):
    await asyncio.sleep(0)
    greenreplay.mark("step %d" % n)
    return n


async def run_all():
    return sum(await asyncio.gather(*(step(n) for n in range(4))))


def in_greenlet():
    return asyncio.run(run_all())


greenreplay.start()
assert greenlet.greenlet(in_greenlet).switch() == 6
greenreplay.stop()
