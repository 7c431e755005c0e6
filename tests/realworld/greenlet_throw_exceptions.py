# realworld: exceptions across switches: throw(), and a greenlet's error
#   raised in its parent
# report: greenlet issue 129 and the greenlet documentation on throw();
#   gevent's Greenlet.kill() is this throw (gevent issue 1471 shows the
#   pattern in coverage.py). https://github.com/gevent/gevent/issues/1471
# semantics: throw() raises in the suspended greenlet's frame, which
#   handles it; a greenlet that raises passes the exception to its parent's
#   switch(). The profiler sees every unwinding: clean.
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
import greenlet
import greenreplay


def catcher():
    try:
        greenlet.getcurrent().parent.switch("waiting")
    except KeyError:
        greenreplay.mark("caught in catcher")
        return "caught"


def failer():
    def deeper():
        raise ValueError("from child")
    deeper()


def main():
    greenreplay.start()
    g = greenlet.greenlet(catcher)
    assert g.switch() == "waiting"
    assert g.throw(KeyError) == "caught"
    try:
        greenlet.greenlet(failer).switch()
    except ValueError:
        greenreplay.mark("parent got ValueError")
    greenreplay.stop()


main()
