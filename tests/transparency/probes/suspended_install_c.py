"""A profile function installed while greenlets are suspended in the
middle of a Python function, then those greenlets resumed: what the
function sees of the suspended frames must be the same recorded and
unrecorded.  On 3.12+ CPython instruments code for a new profile function
only on the frames running then and at the next entry (RESUME) of other
code, so unrecorded the resumed frame gives none of its own events (its C
calls, its return) until its code is entered again.  Here with functions
installed from C: threading.setprofile_all_threads (3.12+) and yappi,
where it is installed (suspended_install: sys.setprofile).
"""
# requires: greenlet
# manual: start
import sys
import threading

import greenlet

if "--start" in sys.argv:
    import greenreplay
    greenreplay.start()

log = []


def prof(frame, event, arg):
    if event.startswith("c_"):
        log.append("%s %s in %s" % (event, getattr(arg, "__name__", "-"), frame.f_code.co_name))
    else:
        log.append("%s %s" % (event, frame.f_code.co_name))


def back():
    greenlet.getcurrent().parent.switch()


def worker(n):
    back()
    len("a" * n)
    greenlet.getcurrent().parent.switch()
    abs(-n)
    return n


def other():
    len("b")
    greenlet.getcurrent().parent.switch()
    return 0


def again(n):
    # Enters worker's code afresh: from then on its instructions give
    # events in every frame of it, the suspended ones too.
    return worker(n)


def scenario(install, clear, name):
    del log[:]
    g1 = greenlet.greenlet(worker)
    g2 = greenlet.greenlet(other)
    g1.switch(1)
    g2.switch()
    install(prof)
    g1.switch()          # resumes inside back(), then worker
    g2.switch()          # resumes inside other
    g3 = greenlet.greenlet(again)
    g3.switch(3)
    g1.switch()          # worker's code entered again by g3
    g3.switch()
    g3.switch()
    clear(None)
    print("%s: %d events" % (name, len(log)))
    for line in log:
        print("  " + line)


if hasattr(threading, "setprofile_all_threads"):
    scenario(threading.setprofile_all_threads, threading.setprofile_all_threads, "setprofile_all_threads")

try:
    import yappi
except ImportError:
    yappi = None
if yappi is not None:
    g1 = greenlet.greenlet(worker)
    g1.switch(1)
    yappi.set_clock_type("cpu")
    yappi.start(builtins=True)
    g1.switch()
    g3 = greenlet.greenlet(again)
    g3.switch(3)
    g1.switch()
    g3.switch()
    g3.switch()
    yappi.stop()
    wanted = ("worker", "back", "other", "again", "switch", "len", "abs")
    counts = sorted((s.name, s.ncall) for s in yappi.get_func_stats() if s.name in wanted)
    print("yappi:", counts)
    yappi.clear_stats()
if "--start" in sys.argv:
    greenreplay.stop()
