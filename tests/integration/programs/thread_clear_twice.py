"""A thread threading starts while recording clears its profile function
twice, then calls task() (tests/integration/threads.sh, fresh-thread).

The first sys.setprofile(None) removes the subject profiler; the second
finds nothing to remove, and the subject stays removed: the trace has two
HOOKs `cleared subject=off`, and check one displaced finding naming
task().  A recorder that read a field of the thread's state it never set
took the second clear for threading's profile hook handed back, and wrote
`restored subject=on`: the run under PYTHONMALLOC=debug (new memory filled
with 0xCD) shows it every time."""
import sys
import threading

import greenreplay


def task():
    return len("task")


def worker():
    sys.setprofile(None)
    sys.setprofile(None)
    task()
    greenreplay.mark("after the clears")


greenreplay.start()
t = threading.Thread(target=worker)
t.start()
t.join()
greenreplay.stop()
