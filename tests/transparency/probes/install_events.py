"""The first events a profile function gets after the program installs it:
with sys.setprofile (a Python function), with threading's
setprofile_all_threads (3.12+, installed from C on this thread), and with
the pure Python `profile` module; from a contextmanager's generator
(__enter__ is in the C call next()) and from a script run by exec().
Without the recorder the call that installs a function, and the C calls
the frames below it are in, give it no c_return (nothing had instrumented
them); recorded they must not either.  A C call made later at the same
place of a frame that was in a Python call then keeps its c_return."""
# requires:
# manual: start
import contextlib
import sys
import threading

if "--start" in sys.argv:
    import greenreplay
    greenreplay.start()

log = []


def prof(frame, event, arg):
    log.append("%s %s in %s" % (event, getattr(arg, "__name__", "-"), frame.f_code.co_name))


def work():
    return len("ab")


def with_setprofile():
    sys.setprofile(prof)
    work()
    sys.setprofile(None)


def with_all_threads():
    threading.setprofile_all_threads(prof)
    work()
    threading.setprofile_all_threads(None)


@contextlib.contextmanager
def profiled():
    sys.setprofile(prof)
    try:
        yield
    finally:
        sys.setprofile(None)


def with_contextmanager():
    with profiled():
        work()


def with_exec():
    exec("import sys\nsys.setprofile(prof)\nwork()\n", {"prof": prof, "work": work})
    sys.setprofile(None)


def dispatch(fn, arg):
    return fn(arg)


def install(f):
    sys.setprofile(f)


def with_dispatch():
    dispatch(install, prof)
    dispatch(len, "ab")
    sys.setprofile(None)


with_setprofile()
with_contextmanager()
with_exec()
with_dispatch()
if hasattr(threading, "setprofile_all_threads"):
    with_all_threads()
for line in log:
    print(line)

import profile  # noqa: E402

p = profile.Profile()
try:
    print("profile:", p.runcall(work))
except AssertionError as e:  # profile.py's own check of its events
    print("profile: AssertionError", e.args[0] if e.args else "")
if "--start" in sys.argv:
    greenreplay.stop()
