# realworld: threading.setprofile(prof), then threads
# report: gevent issue 1670 and yappi PR 57 (yappi attaches to threads
#   with threading.setprofile); CPython issue 93503 (threading.setprofile
#   only reaches threads started later).
#   https://github.com/python/cpython/issues/93503
# semantics: the program installs its own profile function for new
#   threads; threading's bootstrap calls sys.setprofile(prof) in each
#   worker before run(). In those threads the program's profiler, not the
#   recorder, receives the events: the program displaced the subject
#   profiler, the same as sys.setprofile(prof) inside the thread. Right
#   verdict: the displaced class (exit 1).
# modes: whole manual
# needs:
# quick: yes
# expect: displaced
import sys
import threading

import greenreplay

counts = {}


def prof(frame, event, arg):
    if event == "call":
        counts[frame.f_code.co_name] = counts.get(frame.f_code.co_name, 0) + 1


def work(n):
    return sum(range(n))


def main():
    greenreplay.start()
    threading.setprofile(prof)
    threads = [threading.Thread(target=work, args=(n,)) for n in (5, 6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    threading.setprofile(None)
    assert counts.get("work") == 2, counts
    greenreplay.stop()


main()
