"""What a program sees of threading's hooks while recorded, printed so that
the output recorded and unrecorded can be compared
(tests/integration/threads.sh):
  - the identities of threading.setprofile, getprofile, _profile_hook (and
    setprofile_all_threads, _trace_hook);
  - sys.getprofile() in a new thread;
  - the round trips threading.setprofile(threading._profile_hook) (gevent's
    test tearDown) and threading.setprofile(threading.getprofile());
  - a thread started after threading.setprofile(prof) runs under prof: the
    calls prof counts;
  - N threads of threading each call work() once (argv[1], default 5).
"""
import sys
import threading

N = int(sys.argv[1]) if len(sys.argv) > 1 else 5
NAMES = ("setprofile", "getprofile", "setprofile_all_threads", "settrace", "gettrace")
ORIGINAL = {name: getattr(threading, name, None) for name in NAMES}
seen = []


def hooks():
    same = all(getattr(threading, name, None) is ORIGINAL[name] for name in NAMES)
    return "functions unchanged %s, _profile_hook %r, _trace_hook %r" % (
        same, threading._profile_hook, threading._trace_hook)


def in_thread():
    seen.append(sys.getprofile())


def work(n):
    return sum(range(n))


def run(target, *args):
    t = threading.Thread(target=target, args=args)
    t.start()
    t.join()


print("at start:", hooks())
run(in_thread)
threading.setprofile(threading._profile_hook)
run(in_thread)
if hasattr(threading, "getprofile"):
    threading.setprofile(threading.getprofile())
run(in_thread)
print("after round trips:", hooks())
print("getprofile in new threads:", seen)

calls = []


def prof(frame, event, arg):
    if event == "call":
        calls.append(frame.f_code.co_name)


threading.setprofile(prof)
print("with prof set: _profile_hook is prof", threading._profile_hook is prof,
      "getprofile() is prof", getattr(threading, "getprofile", lambda: prof)() is prof)
run(work, 10)
threading.setprofile(None)
print("prof saw work:", calls.count("work"), "run:", calls.count("run"))
for _ in range(N):
    run(work, 100)
print("done:", hooks())
