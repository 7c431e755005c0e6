# realworld: a library thread installs its own profile function
# report: gevent issue 1670 (the same state reached by sys.setprofile(prof)
#   inside the thread); dd-trace-py and sentry-python install per-thread
#   hooks the same way. https://github.com/gevent/gevent/issues/1670
# semantics: the worker calls sys.setprofile(prof) itself and runs Python
#   code under it: the recorder is displaced there until the thread ends.
#   Not a known-benign cause: the displaced class (exit 1).
# modes: whole manual
# needs:
# quick: yes
# expect: displaced
import sys
import threading

import greenreplay

seen = []


def prof(frame, event, arg):
    if event == "call":
        seen.append(frame.f_code.co_name)


def lookup():
    return 42


def worker():
    sys.setprofile(prof)
    lookup()
    sys.setprofile(None)


def main():
    greenreplay.start()
    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert "lookup" in seen, seen
    greenreplay.stop()


main()
