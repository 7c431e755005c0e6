# realworld: yappi started inside a greenlet
# report: yappi PR 57 "Make yappi grok greenlets" and yappi issue 47 (gevent
#   support); yappi 1.4 re-installs its profile function from its own
#   first event. https://github.com/sumerc/yappi/pull/57
# semantics: yappi.start() replaces the thread's profile function with
#   yappi's; the program displaced the subject profiler until
#   yappi.stop(). One cause: the displaced class, and nothing else (yappi
#   re-installing itself inside its first event loses no call: no
#   imbalance).
# modes: whole manual
# needs: yappi greenlet
# quick: yes
# expect: displaced
import greenlet
import greenreplay
import yappi


def busy(n):
    return sum(range(n))


def profiled():
    yappi.start()
    busy(100)
    greenlet.getcurrent().parent.switch()
    busy(200)
    yappi.stop()


def main():
    greenreplay.start()
    g = greenlet.greenlet(profiled)
    g.switch()
    busy(10)
    g.switch()
    yappi.clear_stats()
    greenreplay.stop()


main()
