# realworld: work handed to gevent's ThreadPool
# report: gevent issue 1670 "Attach profiler to native threadpool", fixed
#   by gevent PR 1722 (20.12); coverage.py issue 667 (coverage missing for
#   gevent ThreadPool). https://github.com/gevent/gevent/issues/1670
# semantics: checksum() runs in pool workers. gevent 20.12+ gives each
#   task the threading profile hook and removes it after the task
#   (sys.setprofile(None)): a known-benign displacement, exit 0 with a note
#   naming gevent's thread pool. Before 20.12 the workers are raw threads
#   no profiler reached.
# modes: whole
# needs: gevent
# quick: yes
# expect: clean
# note: thread pool
# expect gevent<20.12: unreached
import gevent
import greenreplay
from gevent.threadpool import ThreadPool


def checksum(data):
    return sum(bytearray(data)) % 251


def main():
    greenreplay.start()
    pool = ThreadPool(2)
    results = [pool.apply(checksum, (bytes([n] * 64),)) for n in range(4)]
    pool.kill()
    assert results == [(n * 64) % 251 for n in range(4)], results
    greenreplay.stop()


main()
