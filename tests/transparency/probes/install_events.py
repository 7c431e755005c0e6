"""The first events a profile function gets after the program installs it:
with sys.setprofile (a Python function), with threading's
setprofile_all_threads (3.12+, installed from C on this thread), and with
the pure Python `profile` module.  Without the recorder the call that
installs a function gives it no c_return (nothing had instrumented the
call); recorded it must not either."""
# requires:
# manual: start
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


with_setprofile()
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
