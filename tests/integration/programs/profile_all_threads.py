"""threading.setprofile_all_threads (3.12+) while recording, with a second
thread alive: setprofile_all_threads(prof) gives every thread the program's
profile function from C (sys._setprofileallthreads, which raises the audit
event sys.setprofile once per thread), then setprofile_all_threads(None)
clears every slot.  The first displaces the subject profiler on each thread
(a true verdict: check's displaced finding names that change and the calls
prof alone saw); the second puts it back.  With every slot empty, CPython's
profile tool is off for the event that follows, the return of
setprofile_all_threads, on which the recorder puts its function back: it
writes that RETURN itself (no imbalance).  Prints what prof saw, the same
recorded and not apart from threading.setprofile's wrapper."""
import sys
import threading

seen = []
go = threading.Event()
done = threading.Event()


def prof(frame, event, arg):
    if event == "call" and frame.f_code.co_filename == __file__:
        seen.append(frame.f_code.co_name)


def work(n):
    return n + 1


def other():
    go.wait()
    work(10)
    done.set()


def main():
    t = threading.Thread(target=other)
    t.start()
    threading.setprofile_all_threads(prof)
    work(1)
    go.set()
    done.wait()
    threading.setprofile_all_threads(None)
    work(2)
    t.join()


if hasattr(threading, "setprofile_all_threads"):
    main()
print("prof saw:", sorted(seen))
