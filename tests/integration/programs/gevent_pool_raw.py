"""gevent's thread pool: its workers are started with
_thread.start_new_thread (gevent/threadpool.py), never by threading, and
run the tasks' Python code.  For tests/integration/threads.sh: gevent 20.9
(bullseye) never gives them a profiler, and check reports them as threads
no profiler reached, naming gevent's call site, with no mark in the
program; gevent 20.12+ (the host's 22.10) hands each task threading's
profile hook, which brings the recorder in: clean, with a note."""
import gevent
from gevent.threadpool import ThreadPool


def task(n):
    return sum(range(n))


pool = ThreadPool(4)
print(sorted(pool.map(task, range(10)))[:3])
pool.kill()
