# Continued switches against a switch from inside a C call that calls back
# into Python before it returns (tests/integration/continued_adversary.sh): sorted()
# and list.sort with a key that switches, map() over greenlet.switch itself
# (no Python frame in between), functools.reduce, a __del__ and a weakref
# callback that switch.
import functools
import gc
import weakref

import greenlet


def echo():
    me = greenlet.getcurrent()
    v = None
    while True:
        v = me.parent.switch(v)


E = greenlet.greenlet(echo)
E.switch()


def key(v):
    return E.switch(-v)


class Noisy:
    def __del__(self):
        E.switch("del")


def worker():
    me = greenlet.getcurrent()
    print(sorted([3, 1, 2], key=key))
    lst = [5, 4, 6]
    lst.sort(key=key)
    print(lst)
    print(list(map(E.switch, range(3))))           # the C function switches itself
    print(functools.reduce(lambda a, b: a + E.switch(b), range(4), 0))
    n = Noisy()
    del n                                           # __del__ switches, no C call of ours
    holder = Noisy()
    lst2 = [holder]
    del holder
    lst2.clear()                                    # __del__ inside a C call
    class T:
        pass
    t = T()
    r = weakref.ref(t, lambda _: E.switch("weakref"))
    del t
    gc.collect()
    me.parent.switch("worker done")
    return len(lst2) + (r() is None)


w = greenlet.greenlet(worker)
print(w.switch())
print(w.switch())
