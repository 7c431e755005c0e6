# realworld: a greenlet outlives the frame that created it
# report: greenlet issue 304, "preserving full stack" (py-spy sees greenlet
#   stacks cut at the greenlet's creation; the creating frame can return
#   while the greenlet lives on). https://github.com/python-greenlet/greenlet/issues/304
# semantics: make() creates and starts a greenlet, which parks itself and
#   make() returns; main resumes it later from a different frame. The
#   greenlet's stack starts at its run function: clean.
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


def body():
    def step(k):
        greenreplay.mark("step %d" % k)
        greenlet.getcurrent().parent.switch(k)
    step(1)
    step(2)
    return "done"


def make():
    g = greenlet.greenlet(body)
    g.switch()
    return g


def resume(g):
    return g.switch()


def main():
    greenreplay.start()
    g = make()
    assert resume(g) == 2
    assert resume(g) == "done"
    assert g.dead
    greenreplay.stop()


main()
