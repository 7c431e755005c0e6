# realworld: a greenlet tracer displaced by another settrace caller
# report: dd-trace-py PR 19725 ("watcher self-healing when displaced by
#   another settrace caller", e.g. the profiler) and greenlet issue 310
#   (greenlet.settrace is per thread). https://github.com/DataDog/dd-trace-py/pull/19725
# semantics: tracer A is installed, tracer B replaces it without chaining,
#   A notices on its next use and re-installs itself. Only greenlet trace
#   callbacks change hands; the profile function is never touched: clean.
#   The program's own greenlet trace callback, installed before any new
#   greenlet, heals the mutant mut256 too: clean there as well.
# modes: whole manual
# needs: greenlet
# quick: yes
# expect: clean
import greenlet
import greenreplay

events = {"a": 0, "b": 0}


def tracer_a(event, args):
    events["a"] += 1


def tracer_b(event, args):
    events["b"] += 1


def bounce(n):
    for _ in range(n):
        greenlet.getcurrent().parent.switch()


def run(n):
    g = greenlet.greenlet(bounce)
    g.switch(n)
    while not g.dead:
        g.switch()


def main():
    greenreplay.start()
    old = greenlet.settrace(tracer_a)
    run(2)
    greenlet.settrace(tracer_b)
    run(2)
    if greenlet.gettrace() is not tracer_a:
        greenlet.settrace(tracer_a)
    run(2)
    greenreplay.mark("tracers done")
    greenlet.settrace(old)
    assert events["a"] and events["b"], events
    greenreplay.stop()


main()
