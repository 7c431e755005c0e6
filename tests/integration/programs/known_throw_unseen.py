"""The flagged neighbour of known_throw_delegated.py: a throw() into a
generator that delegates with `yield from`, made after the program removed
the profile function (sys.setprofile(None)).  The inner generator's code
then runs unseen by every profiler: a displaced finding, which the
delegation note must not hide.
"""
# requires:
# expect: displaced
# note:
import sys

import greenreplay


class Stop(Exception):
    pass


def work(n):
    return n + 1


def leaf_gen():
    try:
        yield "leaf"
    except Stop:
        work(1)
        yield "caught"


def outer_gen():
    return (yield from leaf_gen())


def main():
    greenreplay.start()
    g = outer_gen()
    assert next(g) == "leaf"
    sys.setprofile(None)
    assert g.throw(Stop) == "caught"
    greenreplay.stop()


main()
