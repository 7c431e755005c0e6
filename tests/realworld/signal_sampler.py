# realworld: a sampling profiler's signal handler walking frames
# report: pyinstrument and sentry-python style samplers; cloud-profiler-python
#   issue 54 ("CPU profiling with gevent": signal handling against
#   gevent/greenlet). https://github.com/GoogleCloudPlatform/cloud-profiler-python/issues/54
# semantics: signal.setitimer fires a Python handler every millisecond
#   while greenlets switch; the handler walks frame.f_back and the
#   suspended greenlet's gr_frame, only reading. A signal handler is an
#   ordinary Python call between bytecodes, seen with call and return:
#   clean, however many samples land.
#   On the mutant mut256 (greenlet 1.1.0's issue-256 bug, passive mode) the
#   new greenlets run with tracing off under a set profile function
#   (propagation; no mark inside them to show a blind spot); a greenlet
#   trace callback (--switches callback) heals it.
# modes: whole manual
# needs: greenlet
# quick: yes
# expect: clean
# expect mutant=mut256 switches=passive: propagation
import signal

import greenlet
import greenreplay

samples = []
parked = []


def handler(signum, frame):
    depth = 0
    while frame is not None:
        depth += 1
        frame = frame.f_back
    for g in parked:
        f = g.gr_frame
        while f is not None:
            f = f.f_back
    samples.append(depth)


def spin(n):
    total = 0
    for k in range(n):
        total += k % 7
    return total


def child():
    for _ in range(20):
        spin(2000)
        greenlet.getcurrent().parent.switch()


def main():
    greenreplay.start()
    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)
    g = greenlet.greenlet(child)
    parked.append(g)
    while not g.dead:
        spin(2000)
        g.switch()
    signal.setitimer(signal.ITIMER_REAL, 0, 0)
    signal.signal(signal.SIGALRM, old)
    greenreplay.mark("sampling over")
    greenreplay.stop()


main()
