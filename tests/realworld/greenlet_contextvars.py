# realworld: context variables per greenlet
# report: greenlet PR 172 / greenlet 0.4.17 gr_context (contextvars per
#   greenlet, used by gevent and SQLAlchemy).
#   https://github.com/python-greenlet/greenlet/pull/172
# semantics: each greenlet sets the variable in its own context and reads
#   it back after switches; nothing about profiling changes: clean.
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
import contextvars

import greenlet
import greenreplay

request_id = contextvars.ContextVar("request_id", default=None)


def handler(n):
    request_id.set(n)
    greenlet.getcurrent().parent.switch()
    greenreplay.mark("handler %d" % n)
    return request_id.get()


def main():
    greenreplay.start()
    gs = [greenlet.greenlet(handler) for _ in range(3)]
    for n, g in enumerate(gs):
        g.switch(n)
    assert [g.switch() for g in gs] == [0, 1, 2]
    assert request_id.get() is None
    greenreplay.stop()


main()
