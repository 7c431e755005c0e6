# Continued switches against a greenlet that switches while a module is
# being imported (its frames sit under importlib's, some of which CPython
# hides from tracebacks), and a class body and a decorator that switch
# (tests/integration/continued_adversary.sh).  The module is cont_importee.py, beside
# this file.
import sys

import greenlet

sys.path.insert(0, sys.path[0])


def importer():
    import cont_importee
    return cont_importee.VALUE


def with_class():
    main = greenlet.getcurrent().parent

    def deco(f):
        main.switch("decorating")
        return f

    class C:
        main.switch("class body")

        @deco
        def m(self):
            return 1
    return C().m()


def main():
    for fn in (importer, with_class):
        g = greenlet.greenlet(fn)
        r = g.switch()
        while not g.dead:
            print(r)
            r = g.switch()
        print("result", r)


main()
