# realworld: a suspended greenlet dropped from another thread
# report: greenlet issue 251 and greenlet 1.0's deferred kill of greenlets
#   whose last reference goes away in a thread other than their own.
#   https://github.com/python-greenlet/greenlet/issues/251
# semantics: a worker thread parks a greenlet and hands it to main; main
#   drops it while the worker waits. greenlet queues the kill for the
#   owning thread, which runs it (GreenletExit in the greenlet's finally)
#   the next time it switches. Nothing is lost: clean.
#   On the mutant mut256 (greenlet 1.1.0's issue-256 bug, passive mode) the
#   new greenlets run with tracing off under a set profile function
#   (propagation; no mark inside them to show a blind spot); a greenlet
#   trace callback (--switches callback) heals it.
# modes: whole manual
# needs: greenlet
# quick: yes
# expect: clean
# expect mutant=mut256 switches=passive: propagation
import gc
import threading

import greenlet
import greenreplay

log = []


def parked():
    try:
        greenlet.getcurrent().parent.switch()
    finally:
        log.append("unwound")


def worker(box, dropped, done):
    g = greenlet.greenlet(parked)
    g.switch()
    box.append(g)
    del g
    dropped.wait()
    greenlet.greenlet(lambda: None).switch()
    done.set()


def main():
    greenreplay.start()
    box = []
    dropped = threading.Event()
    done = threading.Event()
    t = threading.Thread(target=worker, args=(box, dropped, done))
    t.start()
    while not box:
        threading.Event().wait(0.001)
    box.clear()
    gc.collect()
    dropped.set()
    done.wait(5)
    t.join()
    greenreplay.mark("worker joined")
    greenreplay.stop()


main()
