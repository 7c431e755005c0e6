"""Programs for tests/integration/continued.sh: when passive mode may write
a switch as continued (docs/FORMAT.md section 4, state bit 9) and when it
must ask greenlet and write the real stack.

usage: python continued_cases.py CASE TRACE needed|every
"""
import contextvars
import sys

import greenlet

import greenreplay


def ping(n):
    main = greenlet.getcurrent().parent
    for _ in range(n):
        main.switch()


def round_trip():
    """Five round trips: after the first ones, every switch is continued."""
    g = greenlet.greenlet(ping)
    g.switch(5)
    for _ in range(5):
        g.switch()


def unseen_between():
    """A greenlet whose run is a builtin (B.switch) delivers no event: the
    switch into B comes two witness steps after main's last event, so main's
    own suspension is not trusted any more: its resume is asked and walked."""
    main = greenlet.getcurrent()
    b = greenlet.greenlet(lambda: main.switch())
    a = greenlet.greenlet(b.switch)
    a.switch()
    b.switch()


def hook_between():
    """The program installs its own profile function between two switches
    (a HOOK record): the switch back into main is asked and walked."""
    def inner():
        main = greenlet.getcurrent().parent
        main.switch()
        sys.setprofile(lambda *a: None)
        main.switch()
        sys.setprofile(None)
        main.switch()
    g = greenlet.greenlet(inner)
    g.switch()
    g.switch()
    g.switch()
    g.switch()


def throw():
    """greenlet.throw into a suspended greenlet: a continued THROW."""
    def target():
        main = greenlet.getcurrent().parent
        for _ in range(2):
            try:
                main.switch()
            except ValueError:
                pass
        main.switch()
    g = greenlet.greenlet(target)
    g.switch()
    g.throw(ValueError)
    g.throw(ValueError)
    g.switch()


def origin_ends():
    """A greenlet that finishes: its parent's resume follows a RETURN (the
    origin may have ended), so greenlet is asked (and the DEAD written)."""
    g = greenlet.greenlet(lambda: None)
    g.switch()
    h = greenlet.greenlet(ping)
    h.switch(1)
    h.switch()


def context_run():
    """Context.run moves the witness without a switch; switches inside it
    and around it are continued all the same."""
    def body():
        main = greenlet.getcurrent().parent
        main.switch()
        main.switch()
    def inner():
        contextvars.copy_context().run(body)
    g = greenlet.greenlet(inner)
    g.switch()
    g.switch()
    g.switch()


CASES = {f.__name__: f for f in (round_trip, unseen_between, hook_between, throw, origin_ends,
                                 context_run)}

if __name__ == "__main__":
    case, trace, stacks = sys.argv[1:4]
    greenreplay.start(trace, switch_stacks=stacks)
    try:
        CASES[case]()
    finally:
        greenreplay.stop()
