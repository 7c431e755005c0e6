"""The recorder's foothold at the audit event sys.setprofile (raised by
cProfile's enable() and disable() on 3.9-3.11, from C) keeps the frame
that was running then, to tell events from inside the audit dispatch (a
traced audit hook of the program, __cantrace__) from the first one after
the change.  It holds that frame only until its first event from outside
the dispatch, and not at all when the thread was tracing at the audit
event (no event can come from inside that dispatch), so the program sees
no reference of the recorder's once the frame's next line runs: the frame
object's reference count, the program's traced audit hook and a local of
the program's own trace function (freed when that function returns) are
the same recorded and unrecorded.  Prints what it saw, and how many times
the audit hook ran (the recorder's own slot changes raise no audit event
the program sees).

The recorder's foothold must also stay in front of the audit hook's events
(traced, before the change): the toggle's two changes are each written as
a HOOK naming its C call (enable, then disable); so are the two the trace
function makes, with no event between them: set, then restored (the
subject back), not one "cleared".  The call of traced() goes to the
profile slot after the trace function returns, while cProfile's disable()
has left it empty: on 3.10/3.11 the recorder writes it after the two
HOOKs (the interpreter says which frame, and on 3.11 which event, it is
dispatching); on 3.9 it is lost, and check says so as an imbalance at its
return."""
import cProfile
import sys
import weakref


class Hook:
    __cantrace__ = True

    def __init__(self):
        self.calls = 0
        self.depth = 0

    def __call__(self, event, args):
        if event == "sys.setprofile":
            self.calls += 1
            self.depth = len(probe())


def probe():
    """The frames below the hook (runs inside the dispatch, traced)."""
    f, names = sys._getframe(1), []
    while f is not None:
        names.append(f.f_code.co_name)
        f = f.f_back
    return names


hook = Hook()
sys.addaudithook(hook)
p = cProfile.Profile()


def toggle():
    f = sys._getframe()
    before = sys.getrefcount(f)
    p.enable()
    during = sys.getrefcount(f)
    p.disable()
    return before, during, sys.getrefcount(f)


class Local:
    pass


freed = []


def tracer(frame, event, arg):
    # A trace function runs with the thread's tracing on: its enable() and
    # disable() raise their audit events there.
    if event == "call" and frame.f_code.co_name == "traced" and not freed:
        local = Local()
        weakref.finalize(local, freed.append, "local")
        p.enable()
        p.disable()
    return None


def traced():
    return list(freed)


before, during, after = toggle()
print("refcount of the frame: before", before - before, "after", after - before)
sys.settrace(tracer)
seen = traced()
sys.settrace(None)
print("local of the trace function freed when it returned:", seen)
# (3.12+: cProfile runs on sys.monitoring and raises no sys.setprofile)
print("audit hook ran traced, below it:", hook.calls == 0 or hook.depth > 2)
print("audit hook calls:", hook.calls)
