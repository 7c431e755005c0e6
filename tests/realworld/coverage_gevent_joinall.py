# realworld: coverage.py with concurrency=gevent around gevent.joinall
# report: gevent issue 1471, "gevent 1.3b1 broke coverage.py measurement
#   after joinall()", and coverage.py issue 841.
#   https://github.com/gevent/gevent/issues/1471
# semantics: the test spawns a greenlet, joins it and reads its value
#   under coverage's tracer. The trace function does not touch the profile
#   function: clean.
# modes: whole manual
# needs: coverage gevent
# quick: no
# expect: clean
import coverage
import gevent
import greenreplay


def coroutine():
    return 5


def calculate():
    g = gevent.spawn(coroutine)
    gevent.joinall([g])
    result = g.get()
    greenreplay.mark("after joinall")
    return result


def main():
    greenreplay.start()
    cov = coverage.Coverage(data_file=None, concurrency=["gevent"], config_file=False)
    cov.start()
    assert calculate() == 5
    cov.stop()
    greenreplay.stop()


main()
