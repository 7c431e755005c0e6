"""After a profile change made for every thread (3.12+:
sys._setprofileallthreads, the C function under
threading.setprofile_all_threads) the recorder has watched with footholds
in the trace slots (its own on this thread, foreign ones on the others) and
given them all back, no code may stay instrumented for trace events: no
thread has a trace function, so a function run afterwards has no
INSTRUMENTED_LINE in its bytecode (code._co_code_adaptive), as without the
recorder.  The changing thread's own foothold gets the first event (the
main thread waits in a C call meanwhile).  With "atstop" (record --manual)
the changing thread blocks before its next event instead and the main
thread stops the recording: stop() takes that thread's own foothold away
too, and with it the trace events.  Prints whether the probe function is
instrumented for line events, the same recorded and unrecorded (False).
Needs 3.12+; prints "skip: ..." before.
usage: foothold_instrumentation.py [atstop]"""
import _thread
import dis
import functools
import operator
import sys
import threading

if not hasattr(sys, "_setprofileallthreads"):
    print("skip: no sys._setprofileallthreads before 3.12")
    sys.exit(0)

go = _thread.allocate_lock()
go.acquire()


def count(frame, event, arg):
    return None


def probe():
    a = 1
    return a


def line_instrumented():
    probe()
    code = probe.__code__._co_code_adaptive
    line = dis.opmap["INSTRUMENTED_LINE"]
    return any(code[i] == line for i in range(0, len(code), 2))


def changer():
    sys._setprofileallthreads(count)
    done = 1  # this thread's next event: its own foothold's, main still waits
    go.release()
    return done


def blocked_changer():
    # C calls only, no event between them: the change, then the thread
    # says it is there and blocks before its own foothold gets an event.
    change = functools.partial(sys._setprofileallthreads, count)
    list(map(operator.call, [change, go.release, blocker.acquire]))


if sys.argv[1:] == ["atstop"]:
    import greenreplay

    blocker = _thread.allocate_lock()
    blocker.acquire()
    greenreplay.start()
    t = threading.Thread(target=blocked_changer)
    t.start()
    go.acquire()
    greenreplay.stop()
    instrumented = line_instrumented()
    blocker.release()
else:
    t = threading.Thread(target=changer)
    t.start()
    go.acquire()
    instrumented = line_instrumented()
t.join()
print("probe instrumented for line events:", instrumented)
