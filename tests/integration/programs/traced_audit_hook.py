"""cProfile under an audit hook that is itself traced (__cantrace__), as
tests/integration/observer.sh runs it, recorded and not.  On 3.9-3.11
cProfile's enable() and disable() change the thread's profile function,
and the audit event sys.setprofile runs this hook, traced, after the
recorder's own hook and before the change.  The recorder's foothold took
the hook's first event for the one after the change, so the change went
unseen and every event after it was lost, until the recorder found an
"unannounced" change at stop.  Prints what cProfile counted, which must
not change under the recorder."""
import cProfile
import pstats
import sys


class Hook:
    __cantrace__ = True

    def __init__(self):
        self.events = 0

    def __call__(self, event, args):
        if event == "sys.setprofile":
            self.events += 1


sys.addaudithook(Hook())


def work(n):
    return n + 1


def after(n):
    return work(n) * 2


p = cProfile.Profile()
p.enable()
work(1)
p.disable()
p.create_stats()  # calls disable() a second time
after(2)
after(3)
stats = pstats.Stats(p).stats
for (file, line, name), (cc, nc, tt, ct, callers) in sorted(stats.items(), key=lambda kv: kv[0][2]):
    if file == __file__:
        print(name, nc)
