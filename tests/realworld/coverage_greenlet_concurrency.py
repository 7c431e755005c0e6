# realworld: coverage.py with concurrency=greenlet
# report: coverage.py issue 841 / gevent issue 1471 (lines after a switch
#   reported missing) and coverage.py PR 2282.
#   https://github.com/coveragepy/coveragepy/issues/841
# semantics: coverage measures with a trace function (sys.settrace; on
#   3.12+ possibly sys.monitoring), which leaves the profile function in
#   place; greenlets switch under it. The profiler sees every call: clean.
# modes: whole manual
# needs: coverage greenlet
# quick: yes
# expect: clean
import coverage
import greenlet
import greenreplay


def child(n):
    greenlet.getcurrent().parent.switch(n)
    greenreplay.mark("child after switch")
    return n + 1


def main():
    greenreplay.start()
    cov = coverage.Coverage(data_file=None, concurrency=["greenlet"], config_file=False)
    cov.start()
    g = greenlet.greenlet(child)
    assert g.switch(1) == 1
    assert g.switch() == 2
    cov.stop()
    greenreplay.stop()


main()
