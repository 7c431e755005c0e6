"""cProfile and greenlets never resumed: docs/findings/cprofile-one-stack.md.

Two greenlets are switched out inside park() (one of them under deeper())
and never resumed; main() runs on and returns.  main ran once, park twice,
deeper once, helper three times."""
import cProfile

import greenlet


def helper():
    pass


def park():
    helper()
    greenlet.getcurrent().parent.switch()  # never resumed


def deeper():
    park()


def main():
    kept = [greenlet.greenlet(park), greenlet.greenlet(deeper)]
    for g in kept:
        g.switch()
    helper()
    return kept


prof = cProfile.Profile()
prof.enable()
kept = main()
prof.disable()
prof.create_stats()
print(sorted((name, v[1]) for (f, line, name), v in prof.stats.items()
             if name in ("main", "park", "deeper", "helper")))
