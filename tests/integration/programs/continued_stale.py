# Continued switches on CPython 3.12+ against stale instrumentation
# (tests/integration/continued.sh): a profile function set while a
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
# [.., outer, inner, m].  Before 3.12 every frame reports and both modes
# agree.
# record: --manual
# known-failing: 3.12+ continued switch over a stale frame that returned unseen (reported to the lead; tracer/switches.c)
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


def main():
    me = greenlet.getcurrent()
    x = greenlet.greenlet(outer)
    print(x.switch(me))
    greenreplay.start()            # x's frames are stale from here (3.12+)
    while not x.dead:
        print(x.switch())
    greenreplay.stop()


main()
