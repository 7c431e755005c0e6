# Continued switches against switches made inside the program's own
# profile and trace functions (tests/integration/continued_adversary.sh): CPython
# runs them with tstate->tracing raised, greenlet does not keep that
# counter per greenlet, so the target runs with the origin's value.  Two
# greenlets ping-pong from inside the program's profile function (each
# resumes inside its own callback); then one switches from inside the
# callback into a greenlet suspended outside any callback (it runs unseen
# until it switches back); then a sys.settrace function switches.
import sys

import greenlet

state = {"on": False}


def marker():
    pass


def prof(frame, event, arg):
    if state["on"] and event == "call" and frame.f_code is marker.__code__:
        other = state["other"][greenlet.getcurrent()]
        if not other.dead:
            other.switch()


def side(n):
    greenlet.getcurrent().parent.switch()
    for _ in range(n):
        marker()                    # the profile function switches here
        len("x")
    return n


def plain(n):
    me = greenlet.getcurrent()
    for i in range(n):
        len("y")
        me.parent.switch(i)


def tracer(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "traced" and not state["t"].dead:
        state["t"].switch()
    return None


def traced():
    return 1


def main():
    a = greenlet.greenlet(side)
    b = greenlet.greenlet(side)
    state["other"] = {a: b, b: a}
    a.switch(4)
    b.switch(4)
    sys.setprofile(prof)
    state["on"] = True
    while not (a.dead and b.dead):
        for g in (a, b):
            if not g.dead:
                g.switch()
    state["on"] = False
    p = greenlet.greenlet(plain)
    p.switch(20)
    c = greenlet.greenlet(side)
    c.switch(2)
    state["other"] = {c: p}
    state["on"] = True
    c.switch()                      # c switches to p from inside prof
    state["on"] = False
    for _ in range(3):
        p.switch()
    sys.setprofile(None)
    t = greenlet.greenlet(plain)
    t.switch(20)
    state["t"] = t
    sys.settrace(tracer)
    traced()
    traced()
    sys.settrace(None)
    for _ in range(3):
        t.switch()
    print("end", a.dead, b.dead)


main()
