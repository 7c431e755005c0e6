"""Greenlet switches made inside the program's own profile function
(sys.setprofile): CPython runs it with the thread's tracing on, and a
switch does not turn that off, so the greenlets that run there deliver no
event to any profile function.  Here the profile function, at the call of
trigger(), switches into g (which calls helper() and switches back, half
way through target()) and into h (which runs target2() to its end).
Later the program switches to g from its own code: g resumes with tracing
off, and every profile function sees its returns but never saw the call
of target().

What the recorder must write: the program displaced the subject profiler
(a HOOK); in callback mode every switch made inside the profile function
(greenlet's callback reports them, with tracing 1) and h's death; in
passive mode, which sees no switch there, META records saying greenlets
ran there unseen (check warns).  The verdict in both modes: the
displacement, and the missed call of target() at g's next real stack.
"""
import sys

import greenlet


def helper():
    return 1


def target():
    helper()
    greenlet.getcurrent().parent.switch("first")
    helper()
    return "done"


def target2():
    helper()
    return "done2"


g = greenlet.greenlet(target)
h = greenlet.greenlet(target2)
results = []


def prof(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "trigger" and not results:
        results.append(g.switch())
        results.append(h.switch())


def trigger():
    helper()


def main():
    sys.setprofile(prof)
    trigger()
    sys.setprofile(None)
    results.append(g.switch())
    print(results)


main()
