"""Profile changes made inside the program's own trace function while it
handles a "call" or a "return" event (cProfile's enable() and disable() on
3.9-3.11, which change the profile slot from C).  CPython gives the trace
function such an event first and the profile function after it returns, so
the event goes to whatever the change left in the profile slot, before the
recorder's foothold sees its next event.  On 3.11 the recorder writes that
event itself, after the HOOKs of the changes (the CALL of called_toggled,
the RETURN of returned_toggled, the CALL of called_enabled: cProfile got
that one, the subject is displaced until disable()), so check finds no
imbalance; the one verdict left is the displaced subject, with the calls
cProfile alone saw (rule displaced, "the program's own profile
function").  Prints what the program saw, the same recorded and not."""
import cProfile
import sys

p = cProfile.Profile()
plan = {}


def tracer(frame, event, arg):
    what = plan.get(frame.f_code.co_name)
    if what and what[0] == event:
        del plan[frame.f_code.co_name]
        for step in what[1:]:
            step()
    # (a "return" event goes to the frame's own trace function)
    return tracer if frame.f_code.co_name == "returned_toggled" else None


def called_toggled():
    return "called_toggled"


def returned_toggled():
    return "returned_toggled"


def called_enabled():
    return "called_enabled"


def inner():
    return 1


plan["called_toggled"] = ("call", p.enable, p.disable)
plan["returned_toggled"] = ("return", p.enable, p.disable)
plan["called_enabled"] = ("call", p.enable)
sys.settrace(tracer)
seen = [called_toggled(), returned_toggled(), called_enabled(), inner()]
sys.settrace(None)
p.disable()
print("ran:", seen)
print("plan left:", sorted(plan))
