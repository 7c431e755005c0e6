# Continued switches against the program's own hooks and deep stacks
# (tests/integration/continued_adversary.sh): sys.setprofile and threading.setprofile
# by the program between switches (HOOK records), a profiler that is put
# back, and greenlets switching at a depth beyond the 128-frame cap.
import sys
import threading

import greenlet


def ping(n):
    me = greenlet.getcurrent()
    for i in range(n):
        me.parent.switch(i)


def deep(d, p, k):
    if d:
        return deep(d - 1, p, k)
    for _ in range(k):
        p.switch()
    return deep2(40, p, k)


def deep2(d, p, k):
    if d:
        return deep2(d - 1, p, k)
    for _ in range(k):
        p.switch()
    return d


def prof(frame, event, arg):
    pass


def main():
    p = greenlet.greenlet(ping)
    p.switch(200)
    old = sys.getprofile()
    sys.setprofile(prof)
    p.switch()
    p.switch()
    sys.setprofile(old)
    p.switch()
    p.switch()
    threading.setprofile(prof)
    p.switch()
    threading.setprofile(None)
    p.switch()
    g = greenlet.greenlet(deep)
    g.switch(150, p, 3)                       # suspended below the cap
    while not g.dead:
        p.switch()
        g.switch()
    print("end")


main()
