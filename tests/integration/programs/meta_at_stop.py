"""Records itself into sys.argv[1] with chunks of sys.argv[2] bytes, and
ends with META records written after the last record: run it with
GREENREPLAY_VERIFY_CONTINUED=1, and stop() writes continued_verified and
continued_mismatch (docs/FORMAT.md section 3).  tests/integration/streamed.sh
records it with small chunks (the METAs land in a chunk after the first)
and with one chunk (they share the chunk of the first record), and `dump`
must print them in the same place either way, streamed or --in-memory
(docs/FORMAT.md section 6.1).  Deterministic: two runs write the same
records.  Greenlets are switched when greenlet is importable.
"""
import sys

import greenreplay

try:
    import greenlet
except ImportError:
    greenlet = None


def work(n):
    total = 0
    for i in range(n):
        total += len(str(i))
    return total


def child():
    for _ in range(5):
        work(3)
        greenlet.getcurrent().parent.switch()


greenreplay.start(sys.argv[1], chunk=int(sys.argv[2]))
work(40)
if greenlet is not None:
    g = greenlet.greenlet(child)
    while not g.dead:
        g.switch()
greenreplay.mark("done")
greenreplay.stop()
