"""An APM-style sys.setprofile chain that calls the previous profiler.

A `base` profile function is installed; then an APM agent reads
sys.getprofile() and installs its own function, which calls the previous
one for every event.  Greenlets run under both.  `base` still sees every
call through the chain: attribution lists the APM's profiler as chaining
the base one, and reports nothing.
"""
import sys

import gevent

seen = {"base": 0, "apm": 0}


def base(frame, event, arg):
    if event == "call":
        seen["base"] += 1


def install_apm():
    previous = sys.getprofile()

    def apm(frame, event, arg):
        if event == "call":
            seen["apm"] += 1
        if previous is not None:
            previous(frame, event, arg)

    sys.setprofile(apm)


def work(n):
    for i in range(3):
        gevent.sleep(0)
    return n


sys.setprofile(base)
install_apm()
gevent.joinall([gevent.spawn(work, n) for n in range(3)])
sys.setprofile(None)
print("base saw %s calls, apm %s" % (seen["base"] > 0, seen["apm"] > 0))
