"""Fork while recording, with or without the reference sampler (argv[1]:
none, two-phase, hold-lock, seqlock).  The child must not record (it must
not write into the parent's trace), must see the program's own hooks
(sys.getprofile() None), and must exit with its own status; the parent goes
on recording.  Used by tests/integration/observer.sh."""
import os
import sys

import greenlet

import greenreplay

mode = sys.argv[1]
greenreplay.start(sampler=None if mode == "none" else mode)


def leaf():
    greenlet.getcurrent().parent.switch()


g = greenlet.greenlet(leaf)
g.switch()
pid = os.fork()
if pid == 0:
    greenreplay.mark("child")
    ok = not greenreplay.is_recording() and sys.getprofile() is None
    os._exit(7 if ok else 3)
_, status = os.waitpid(pid, 0)
greenreplay.mark("parent after the child")
g.switch()
greenreplay.stop()
print("child exit status:", os.waitstatus_to_exitcode(status))
