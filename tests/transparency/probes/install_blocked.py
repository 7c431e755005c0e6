"""The c_return of a C call in progress on another thread when the
program turns its profile function on (3.12+): a thread in
lock.acquire() while this thread calls threading.setprofile_all_threads(f).
Unrecorded nothing had instrumented that call when it began, so f gets
no c_return of it; the recorder's function had, and must not let one
through (tracer/lazy.c).  The waiter found at its acquire() line may not
have begun the call yet: then both runs see its c_call and c_return, and
the probe prints only c_returns without their c_call."""
# requires:
# manual: start
import sys
import threading
import time

if "--start" in sys.argv:
    import greenreplay
    greenreplay.start()

log = []
MAIN = threading.get_ident()


def prof(frame, event, arg):
    if event.startswith("c_") and threading.get_ident() != MAIN:
        log.append("%s %s" % (event, getattr(arg, "__name__", "-")))


def blocked_thread():
    lock = threading.Lock()
    lock.acquire()
    ready = threading.Event()

    def waiter():
        ready.set()
        lock.acquire()
        len("ab")

    t = threading.Thread(target=waiter)
    t.start()
    ready.wait()
    # wait until the waiter's frame is at its lock.acquire() line
    while not t_blocked(t):
        time.sleep(0.001)
    threading.setprofile_all_threads(prof)
    lock.release()
    t.join()
    threading.setprofile_all_threads(None)


def t_blocked(t):
    frame = sys._current_frames().get(t.ident)
    return frame is not None and frame.f_code.co_name == "waiter" and frame.f_lineno == frame.f_code.co_firstlineno + 2


if hasattr(threading, "setprofile_all_threads"):
    blocked_thread()
    # a c_return without its c_call: the call was in progress at the
    # install (if the waiter had not yet called acquire(), both come)
    open_calls = []
    for line in log:
        event, name = line.split()
        if event == "c_call":
            open_calls.append(name)
        elif open_calls and open_calls[-1] == name:
            open_calls.pop()
        else:
            print("%s without its c_call" % line)
    print("waiter: C-call events seen: %s" % bool(log))
if "--start" in sys.argv:
    greenreplay.stop()
