# realworld: a worker thread removes the profiler after each task
# report: gevent PR 1722 and issue 2206 (gevent's pool calls
#   sys.setprofile(None) after every task); here the same action by a pool
#   of the program's own, which no catalogue of benign causes knows.
#   https://github.com/gevent/gevent/issues/2206
# semantics: after the first task the worker sets the profile function to
#   None and runs two more tasks unseen. The program removed the subject
#   profiler, and the cause is not a known-benign one: the displaced class
#   (exit 1).
# modes: whole manual
# needs:
# quick: yes
# expect: displaced
import sys
import threading

import greenreplay


def task(n):
    return n * 2


def worker(out):
    for n in range(3):
        out.append(task(n))
        sys.setprofile(None)


def main():
    greenreplay.start()
    out = []
    t = threading.Thread(target=worker, args=(out,))
    t.start()
    t.join()
    assert out == [0, 2, 4], out
    greenreplay.stop()


main()
