import sys
import greenlet

calls = []


def profiler(frame, event, arg):
    if event == "c_call":
        calls.append(arg.__name__)


def waiter():
    greenlet.getcurrent().parent.switch()
    len("after resume")        # a C call of the resumed frame itself
    abs(-1)


g = greenlet.greenlet(waiter)
g.switch()                     # g is now suspended, before any profiler
sys.setprofile(profiler)
g.switch()                     # resumed while profiling is on
sys.setprofile(None)
print(sys.version.split()[0], "greenlet", greenlet.__version__, "c_calls seen:", calls)
