"""Profilers the program set before start(): a Python profile function on
the main thread, with a greenlet suspended in switch() when recording
begins, and cProfile on a thread that waits inside a C call.  What each
counts of the program's own calls (and cProfile of that wait), the C calls
the Python one saw begin and not end (or end and not begin), and whether
sys.getprofile() still returns each one's object must be the same recorded
and unrecorded.  On 3.12+ the greenlet's frame suspended at start()
resumes in code not instrumented for the recorder (docs/RECORDER.md):
check reports that blind spot (propagation) and the return of child() it
hides (imbalance), as a profiler started there would miss them.
"""
# requires: greenlet
# manual: start
# trace: clean
# allow: 3.12+ propagation imbalance:child
import cProfile
import sys
import threading

import greenlet

if "--start" in sys.argv:
    import greenreplay

ME = __file__
# 3.9-3.11: cProfile is the thread's profile function, which gets the
# c_return of the wait it saw begin; 3.12+: it runs on sys.monitoring for
# every thread, and counts the lock calls of all of them.
SLOT = sys.version_info < (3, 12)


def c_name(func):
    # By name: 3.12+ gives a method's c_call and c_return each a new bound
    # method object.
    return getattr(func, "__qualname__", func.__name__)


class Counter:
    """A profile function: calls of this file's functions, and C calls
    without their other half."""

    def __init__(self):
        self.calls = {}
        self.open_c = []
        self.unmatched = []

    def __call__(self, frame, event, arg):
        if event == "call" and frame.f_code.co_filename == ME:
            self.calls[frame.f_code.co_name] = self.calls.get(frame.f_code.co_name, 0) + 1
        elif event == "c_call":
            self.open_c.append(c_name(arg))
        elif event in ("c_return", "c_exception"):
            if self.open_c and self.open_c[-1] == c_name(arg):
                self.open_c.pop()
            else:
                self.unmatched.append(c_name(arg))


def work(n):
    return sum(range(n))


def child():
    main.switch()
    work(2)


# A thread with cProfile (3.9-3.11: its profile slot; 3.12+: through
# sys.monitoring), waiting in a C call.
ready, go = threading.Event(), threading.Event()
in_thread = []


def body():
    cp = cProfile.Profile()
    cp.enable()
    ready.set()
    go.wait()
    work(3)
    in_thread.append(sys.getprofile() is (cp if sys.version_info < (3, 12) else None))
    cp.disable()
    cp.create_stats()
    for k, v in sorted(cp.stats.items()):
        if k[0] == ME or (SLOT and "acquire" in k[2]):
            in_thread.append("cProfile: %s %d/%d" % (k[2], v[0], v[1]))


t = threading.Thread(target=body)
t.start()
ready.wait()

# The main thread: a Python profile function, a suspended greenlet.
prof = Counter()
sys.setprofile(prof)
main = greenlet.getcurrent()
g = greenlet.greenlet(child)
g.switch()

if "--start" in sys.argv:
    greenreplay.start()
go.set()
t.join()
g.switch()
work(4)
if "--start" in sys.argv:
    greenreplay.stop()
kept = sys.getprofile() is prof
sys.setprofile(None)
for name in sorted(prof.calls):
    print("calls: %s %d" % (name, prof.calls[name]))
print("open C calls:", prof.open_c)
print("unmatched C returns:", prof.unmatched)
print("kept:", kept, in_thread[0])
for line in in_thread[1:]:
    print(line)
