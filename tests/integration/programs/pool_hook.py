"""What gevent's thread pool does with the profiler (gevent/threadpool.py,
_before_run_task/_after_run_task), without gevent: a thread started with
_thread.start_new_thread (threading's hook never sees it) runs tasks; before
each it calls sys.setprofile(threading._profile_hook) (read directly, not
through threading.getprofile()) and after each sys.setprofile(None).

For tests/integration/observer.sh: threading._profile_hook is the
program's (None here) while recording too.  A profiler installed with
threading.setprofile would be what the worker gets before each task, so the
recorder goes into the worker there (the subject, HOOK restored) and is
removed after each task (HOOK cleared: one blind_spot, then a warning for
the other removals); the worker is not reported as unreached.  Prints what
the program saw, which must be the same recorded and unrecorded.

usage: python pool_hook.py [TASKS]
"""
import _thread
import sys
import threading

TASKS = int(sys.argv[1]) if len(sys.argv) > 1 else 20


def task(i):
    return sum(range(i))


def between(profile):
    # runs while the program has removed the profiler: unseen by the subject
    return profile


def worker(done):
    results = []
    for i in range(TASKS):
        sys.setprofile(threading._profile_hook)
        results.append(task(i))
        sys.setprofile(None)
        results.append(between(sys.getprofile()))
    done.append(results)


done = []
_thread.start_new_thread(worker, (done,))
while not done:
    pass
print("tasks", len([r for r in done[0] if r is not None]), "profile after each", set(map(repr, done[0][1::2])))
print("threading.getprofile", threading.getprofile() if hasattr(threading, "getprofile") else "n/a")
