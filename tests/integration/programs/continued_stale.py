# Continued switches on CPython 3.12+ against stale instrumentation
# (tests/integration/continued_adversary.sh): a profile function set while a
# greenlet is suspended re-instruments only the running thread's frame
# chain (docs/FORMAT.md §4, INSTR); the suspended greenlet's frames report
# no events of their own when they resume, not even their RETURN.  Here
# greenlet X is suspended in inner() (called by outer()) when recording
# starts (greenreplay.start(): recorded with `record --manual`, header
# below); X then resumes, calls k() (a new frame:
# seen, and X's switch carries X's real stack [.., outer, inner]), inner
# returns unseen (stale), outer calls m() (seen), and m switches back and
# forth.  The switch back into X inside m is a continued switch in the
# default mode; X's real stack there is [.., outer, m], its records say
# [.., outer, inner, m].  A second greenlet Y does the same in
# outer2/inner2, but outer2's code object is instrumented again (main calls
# outer2 itself after start) while inner2's is not: when Y switches back
# into m2, none of its frames is stale any more (an INSTR there says
# stale=0), yet inner2's return was never seen.  Before 3.12 every frame
# reports and both modes agree.  This is why continued switches are kept
# to 3.9-3.11 (compat.h GR_CONTINUED_SWITCHES): were they made on 3.12+,
# this program's verdicts and diff would differ between the two modes.
# record: --manual
import greenlet

import greenreplay


def inner(main):
    main.switch("suspended in inner")
    k()
    return "inner done"


def k():
    return 1


def m(main):
    for i in range(3):
        main.switch(("in m", i))
    return "m done"


def outer(main):
    inner(main)
    m(main)
    return "outer done"


def inner2(main):
    main.switch("suspended in inner2")
    k()
    return "inner2 done"


def m2(main):
    for i in range(3):
        main.switch(("in m2", i))
    return "m2 done"


def outer2(main):
    if main is None:               # called by main: instruments outer2's code
        return "instrumented"
    inner2(main)
    m2(main)
    return "outer2 done"


def main():
    me = greenlet.getcurrent()
    x = greenlet.greenlet(outer)
    print(x.switch(me))
    y = greenlet.greenlet(outer2)
    print(y.switch(me))
    greenreplay.start()            # x's and y's frames are stale from here (3.12+)
    while not x.dead:
        print(x.switch())
    print(outer2(None))
    while not y.dead:
        print(y.switch())
    greenreplay.stop()


main()
