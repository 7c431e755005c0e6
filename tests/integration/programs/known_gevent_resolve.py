"""A gevent program that resolves a host name: gevent's default resolver
runs getaddrinfo in its thread pool, which calls sys.setprofile(None) after
every task (gevent/threadpool.py, _after_run_task).  The profiler is gone
from that worker thread by design: `check` says so in a note naming
gevent's thread pool, and exits 0.  `check --strict-known` lists it as a
displaced finding, which `--fail-on displaced` makes fail.
"""
# requires: gevent
# expect: clean
# note: gevent's thread pool
import gevent.monkey

gevent.monkey.patch_all()

import socket  # noqa: E402

import gevent  # noqa: E402

import greenreplay  # noqa: E402


def resolve():
    return sorted({a[4][0] for a in socket.getaddrinfo("localhost", 80, socket.AF_INET)})


greenreplay.start()
print(resolve())
# the worker removes the profiler after the task, once the result is
# handed over: wait for the task to be done, so that it is in the trace
gevent.get_hub().threadpool.join()
greenreplay.mark("after resolving")
greenreplay.stop()
