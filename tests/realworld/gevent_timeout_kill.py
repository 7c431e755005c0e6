# realworld: gevent.Timeout and Greenlet.kill()
# report: gevent issue 1471 (kill/joinall around coverage), yappi PR 57
#   (greenlets killed while profiled). https://github.com/gevent/gevent/issues/1471
# semantics: a Timeout is raised into a greenlet sleeping in the hub, and
#   kill() throws GreenletExit into another; both unwind through their
#   finally blocks. Every switch and throw is seen: clean.
# modes: whole manual
# needs: gevent
# quick: yes
# expect: clean
import gevent
import greenreplay

log = []


def slow():
    try:
        gevent.sleep(10)
    finally:
        log.append("slow unwound")


def sleeper():
    try:
        gevent.sleep(10)
    finally:
        greenreplay.mark("killed sleeper unwinds")
        log.append("sleeper unwound")


def main():
    greenreplay.start()
    try:
        with gevent.Timeout(0.01):
            slow()
    except gevent.Timeout:
        log.append("timeout")
    g = gevent.spawn(sleeper)
    gevent.sleep(0)
    g.kill()
    assert log == ["slow unwound", "timeout", "sleeper unwound"], log
    greenreplay.stop()


main()
