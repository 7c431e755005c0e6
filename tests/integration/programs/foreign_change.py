"""Another thread replaces this thread's profile function, and this thread
runs before the other one has any further event (yappi 1.6+ on 3.12+ does
so from every new thread it profiles, PyEval_SetProfileAllThreads): for
tests/integration/observer.sh.  The order is forced with locks, not left
to the switch interval:

  main     blocks in go.acquire() (a C call, the GIL released)
  changer  sys._setprofileallthreads(count), the C function under
           threading.setprofile_all_threads: every thread's profile
           function, main's too, with the audit event on changer's side;
           then, on the same line and with C calls only (no event a trace
           function gets), go.release() and blocks in back.acquire()
  main     wakes (the c_return of go.acquire goes to count alone) and calls
           leaf() N times while changer waits; then back.release()

With "stray", changer is started with _thread.start_new_thread, so the
recorder never reaches it (threading's hook does not run there): the change
comes from a thread it does not follow (as yappi's from a new thread whose
state got yappi's function before threading's hook ran).  With "own" too,
the main thread first makes a change of its own and undoes it
(sys._setprofileallthreads(count), then (None)) before changer starts: the
recorder noted that change's frame, which the HOOK of changer's change must
not name (another thread made it: no frame, docs/FORMAT.md §4.2).

Prints how many calls of leaf the program's own profile function counted on
the main thread, the same recorded and unrecorded.  Needs 3.12+
(sys._setprofileallthreads); prints "skip: ..." before.
usage: foreign_change.py [stray [own]]
"""
import _thread
import sys
import threading

if not hasattr(sys, "_setprofileallthreads"):
    print("skip: no sys._setprofileallthreads before 3.12")
    sys.exit(0)

N = 50
stray = sys.argv[1:2] == ["stray"]
own = sys.argv[2:] == ["own"]
main_ident = threading.get_ident()
counted = [0]


def count(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "leaf" and threading.get_ident() == main_ident:
        counted[0] += 1


def leaf(i):
    return i + 1


go = _thread.allocate_lock()
back = _thread.allocate_lock()
done = _thread.allocate_lock()
go.acquire()
back.acquire()
done.acquire()


def changer():
    sys._setprofileallthreads(count); go.release(); back.acquire()  # noqa: E702 (one line: no line event)
    done.release()


if own:
    sys._setprofileallthreads(count)
    sys._setprofileallthreads(None)
if stray:
    _thread.start_new_thread(changer, ())
else:
    t = threading.Thread(target=changer)
    t.start()
go.acquire()
total = 0
for i in range(N):
    total = leaf(total)
back.release()
done.acquire()
print("leaf calls counted on the main thread:", counted[0], "total:", total)
