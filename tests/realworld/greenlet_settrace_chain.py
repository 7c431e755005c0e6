# realworld: a greenlet switch callback that chains the previous one
# report: memray PR 185 (memray registers greenlet.settrace to follow
#   switches) and dd-trace-py PR 2929 (a greenlet tracer chaining gevent's).
#   https://github.com/bloomberg/memray/pull/185
# semantics: the program installs a greenlet trace callback that counts
#   switches and calls the callback it replaced, then restores it. Such a
#   callback runs with tracing suspended and changes no profile function:
#   clean.
#   The program's own greenlet trace callback, installed before any new
#   greenlet, heals the mutant mut256 too: clean there as well.
# modes: whole manual
# needs: greenlet
# quick: yes
# expect: clean
import greenlet
import greenreplay

switches = []


def make_callback(previous):
    def callback(event, args):
        if event in ("switch", "throw"):
            switches.append(event)
        if previous is not None:
            previous(event, args)
    return callback


def ping(n):
    for _ in range(n):
        greenlet.getcurrent().parent.switch()
    greenreplay.mark("ping done")


def main():
    greenreplay.start()
    old = greenlet.gettrace()
    greenlet.settrace(make_callback(old))
    g = greenlet.greenlet(ping)
    g.switch(3)
    while not g.dead:
        g.switch()
    greenlet.settrace(old)
    assert len(switches) >= 8, switches
    greenreplay.stop()


main()
