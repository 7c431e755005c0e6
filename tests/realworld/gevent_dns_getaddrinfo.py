# realworld: a gevent program that resolves a host name
# report: gevent PR 1722 (thread-pool workers install the threading
#   profile hook for each task and call sys.setprofile(None) after it) and
#   gevent issue 2206. https://github.com/gevent/gevent/pull/1722
# semantics: socket.getaddrinfo runs in gevent's thread pool (the default
#   thread resolver), for a numeric address too (used here: no network,
#   no /etc/hosts). With gevent 20.12 and later the worker removes the
#   profiler after each task: the program displaces the profiler, but by a
#   known-benign cause (gevent working as designed). Right verdict: exit 0
#   with a note naming gevent's thread pool. gevent before 20.12 (20.9 on
#   bullseye) starts the workers with _thread.start_new_thread and never
#   installs a profiler there: threads no profiler reached.
# modes: whole
# needs: gevent
# quick: yes
# expect: clean
# note: thread pool
# expect gevent<20.12: unreached
from gevent import monkey

monkey.patch_all()

import socket

import greenreplay


def main():
    greenreplay.start()
    infos = socket.getaddrinfo("127.0.0.1", 80, socket.AF_INET, socket.SOCK_STREAM)
    assert infos[0][4] == ("127.0.0.1", 80), infos
    greenreplay.stop()


main()
