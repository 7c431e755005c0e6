# realworld: threading.Thread under gevent's monkey patching
# report: sentry-python PR 1822 ("the sampler thread runs in a greenlet
#   on the same thread" once threading is patched).
#   https://github.com/getsentry/sentry-python/pull/1822
# semantics: after monkey.patch_all(), threading.Thread starts a greenlet,
#   not an OS thread; the "threads" interleave through the hub in the main
#   thread. The profiler sees them all: clean.
# modes: whole manual
# needs: gevent
# quick: yes
# expect: clean
from gevent import monkey

monkey.patch_all()

import threading
import time

import greenreplay


def work(out, n):
    time.sleep(0.001)
    out.append(n)


def main():
    greenreplay.start()
    out = []
    threads = [threading.Thread(target=work, args=(out, n)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    greenreplay.mark("joined")
    assert sorted(out) == [0, 1, 2, 3], out
    greenreplay.stop()


main()
