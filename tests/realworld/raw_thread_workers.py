# realworld: worker threads started with _thread.start_new_thread
# report: gevent issue 1670, "Attach profiler to native threadpool": a
#   thread started by _thread.start_new_thread gets no profiler from
#   threading.setprofile (yappi could not see gevent's pool workers).
#   https://github.com/gevent/gevent/issues/1670
# semantics: two raw threads run Python code (compute, which calls square)
#   and signal a lock. No threading bootstrap runs in them, so no profiler
#   installed the threading way reaches them: they ran Python code that
#   was never observed. The right verdict names threads no profiler
#   reached.
# modes: whole manual
# needs:
# quick: yes
# expect: unreached
import _thread

import greenreplay


def square(n):
    return n * n


def compute(n, results, done):
    results.append(sum(square(k) for k in range(n)))
    done.release()


def main():
    greenreplay.start()
    results = []
    locks = []
    for n in (10, 20):
        done = _thread.allocate_lock()
        done.acquire()
        locks.append(done)
        _thread.start_new_thread(compute, (n, results, done))
    for done in locks:
        done.acquire()
    assert sorted(results) == [285, 2470], results
    greenreplay.stop()


main()
