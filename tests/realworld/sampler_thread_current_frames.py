# realworld: a background sampler thread reading sys._current_frames()
# report: sentry-python PR 1822 "feat(profiling): Better gevent support"
#   and dd-trace-py PR 2922 (greenlet frames in a sampling profiler).
#   https://github.com/getsentry/sentry-python/pull/1822
# semantics: a real thread samples the main thread's stack while greenlets
#   switch there; it only reads frames. Both threads' calls are seen:
#   clean.
#   On the mutant mut256 (greenlet 1.1.0's issue-256 bug, passive mode) the
#   new greenlets run with tracing off under a set profile function
#   (propagation; no mark inside them to show a blind spot); a greenlet
#   trace callback (--switches callback) heals it.
# modes: whole manual
# needs: greenlet
# quick: yes
# expect: clean
# expect mutant=mut256 switches=passive: propagation
import sys
import threading

import greenlet
import greenreplay


def sampler(stop, out):
    main_id = threading.main_thread().ident
    while not stop.is_set():
        frame = sys._current_frames().get(main_id)
        names = []
        while frame is not None:
            names.append(frame.f_code.co_name)
            frame = frame.f_back
        out.append(len(names))
        stop.wait(0.001)


def step(n):
    return sum(range(n))


def child():
    for _ in range(30):
        step(500)
        greenlet.getcurrent().parent.switch()


def main():
    greenreplay.start()
    stop = threading.Event()
    out = []
    t = threading.Thread(target=sampler, args=(stop, out))
    t.start()
    g = greenlet.greenlet(child)
    while not g.dead:
        step(500)
        g.switch()
    stop.set()
    t.join()
    greenreplay.mark("sampler joined")
    greenreplay.stop()


main()
