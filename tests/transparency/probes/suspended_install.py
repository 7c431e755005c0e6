"""A profile function installed while greenlets are suspended in the
middle of a Python function, then those greenlets resumed: what the
function sees of the suspended frames must be the same recorded and
unrecorded.  On 3.12+ CPython instruments code for a new profile function
only on the frames running then and at the next entry (RESUME) of other
code, so unrecorded the resumed frame gives none of its own events (its C
calls, its return) until its code is entered again.  Here with
sys.setprofile, then with the function cleared before the greenlet
resumes (suspended_install_c: functions installed from C).
"""
# requires: greenlet
# manual: start
import sys

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


scenario(sys.setprofile, sys.setprofile, "sys.setprofile")

# Installed and cleared while a greenlet stays suspended, resumed after:
# its code was never instrumented for the function (debug builds check
# the code's instrumentation when it resumes).
del log[:]
g = greenlet.greenlet(worker)
g.switch(2)
sys.setprofile(prof)
len("c")
sys.setprofile(None)
g.switch()
print("cleared:", g.switch(), log)
if "--start" in sys.argv:
    greenreplay.stop()
