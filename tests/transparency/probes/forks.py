"""2,000 forks of a program that imports threading; each child calls a
function and leaves with os._exit(0).  Recorded, a child must never write
into the parent's trace (the trace must stay readable).  About 4 minutes a
run unrecorded on a loaded 2-core machine, more recorded: in the full set
only.
"""
# requires:
# manual: start
# trace: usable
# set: full
# timeout: 2400
import os
import sys
import threading  # noqa: F401  (its at-fork handlers run in every child)

if "--start" in sys.argv:
    import greenreplay
    greenreplay.start()


def work(n):
    return sum(range(n))


N = 2000
ok = 0
for i in range(N):
    work(5)
    pid = os.fork()
    if pid == 0:
        work(5)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    ok += os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
print("children exited 0:", ok, "of", N)
if "--start" in sys.argv:
    greenreplay.stop()
