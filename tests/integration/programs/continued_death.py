# Continued switches against greenlet deaths and throws
# (tests/integration/continued_adversary.sh): a suspended greenlet killed when its
# last reference goes (GreenletExit thrown in), one in a reference cycle
# killed by the garbage collector, greenlet.throw, an exception
# propagating out of a greenlet (its parent resumes with C_EXCEPTION),
# reparenting between switches, and a switch to the running greenlet.
import gc

import greenlet


def ping(n):
    me = greenlet.getcurrent()
    for i in range(n):
        me.parent.switch(i)


def suspended_forever():
    me = greenlet.getcurrent()
    try:
        me.parent.switch("in")
    except greenlet.GreenletExit:
        print("killed")
        raise


def main():
    p = greenlet.greenlet(ping)
    p.switch(50)
    k = greenlet.greenlet(suspended_forever)
    print(k.switch())
    p.switch()
    del k                                   # killed here: GreenletExit thrown in
    p.switch()
    # a cycle: the collector kills it
    c = greenlet.greenlet(suspended_forever)
    c.switch()
    c.cycle = c
    p.switch()
    del c
    gc.collect()
    p.switch()
    # throw
    t = greenlet.greenlet(suspended_forever)
    t.switch()
    p.switch()
    try:
        t.throw(ValueError("thrown"))
    except ValueError as e:
        print("came back", e)
    p.switch()

    # an exception out of a child: the parent resumes with C_EXCEPTION
    def boom():
        greenlet.getcurrent().parent.switch()
        raise KeyError("out")
    b = greenlet.greenlet(boom)
    b.switch()
    p.switch()
    try:
        b.switch()
    except KeyError:
        print("caught")
    p.switch()

    # reparenting: q's parent changes between its switches
    q = greenlet.greenlet(ping)
    q.switch(6)
    p.switch()
    r = greenlet.greenlet(lambda: q.switch())
    q.parent = r
    print(r.switch())
    p.switch()
    q.parent = greenlet.getcurrent()
    q.switch()
    p.switch()
    greenlet.getcurrent().switch()          # to itself
    p.switch()
    print("end", q.dead)


main()
