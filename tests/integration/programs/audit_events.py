"""The audit events of profile and trace changes that the program's own
audit hook sees, recorded and not (tests/integration/audit_hooks.sh compares
the two runs; transparency).  The hook writes one line per event
straight to file descriptor 1 as it happens, so events raised while the
interpreter shuts down (the recorder's stop at exit) are in the output
too: the event, the thread it was raised on (main, or the name of the
thread) and the step of the program it belongs to.

Steps: cProfile enable, disable and create_stats (which disables a second
time); sys.setprofile(f) then sys.setprofile(None); sys.settrace(f), which
traces work()'s lines, then sys.settrace(None); a thread started without threading's profile hook;
threading.setprofile(f) and a thread started with it; threading's hook
cleared; on 3.12+ threading.setprofile_all_threads(f) and (None), which
change the profile slot from C (PyEval_SetProfileAllThreads), not through
sys.setprofile.  Then cProfile's counts of this file's functions and the
events the trace function saw in work()."""
import cProfile
import os
import pstats
import sys
import threading

step = "start"


def hook(event, args):
    if event in ("sys.setprofile", "sys.settrace") or event.startswith(
            ("sys.monitoring", "sys._setprofileallthreads", "sys._settraceallthreads")):
        name = threading.current_thread().name
        name = "main" if name == "MainThread" else name
        os.write(1, ("audit %s %s at %s\n" % (event, name, step)).encode())


sys.addaudithook(hook)


def work(n):
    return n + 1


def prof(frame, event, arg):
    pass


traced = []


def trace(frame, event, arg):
    # the line events of work(): line tracing still works after the
    # recorder held and gave back the trace slot (3.9: tracing_possible)
    if frame.f_code is work.__code__:
        traced.append(event)
        return trace
    return None


def run_thread(name):
    t = threading.Thread(target=work, args=(1,), name=name)
    t.start()
    t.join()


step = "cprofile"
p = cProfile.Profile()
p.enable()
work(1)
p.disable()
p.create_stats()
step = "setprofile"
sys.setprofile(prof)
work(2)
sys.setprofile(None)
step = "settrace"
sys.settrace(trace)
work(3)
sys.settrace(None)
step = "thread"
run_thread("plain")
step = "threading.setprofile"
threading.setprofile(prof)
run_thread("hooked")
threading.setprofile(None)
if hasattr(threading, "setprofile_all_threads"):  # 3.12+: C code changes every thread's slot
    step = "setprofile_all_threads"
    threading.setprofile_all_threads(prof)
    work(5)
    threading.setprofile_all_threads(None)
step = "after"
work(4)
stats = pstats.Stats(p).stats
for (file, line, name), (cc, nc, tt, ct, callers) in sorted(stats.items(), key=lambda kv: kv[0][2]):
    if file == __file__:
        print(name, nc)
print("traced work():", " ".join(traced))
sys.stdout.flush()
step = "exit"
