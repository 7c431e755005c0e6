# realworld: gevent Pool workers fed by a Queue
# report: gevent's pool and queue as used by crawlers and workers; yappi
#   issue 47 (profiling such programs). https://github.com/sumerc/yappi/issues/47
# semantics: a producer fills a bounded queue, three pool greenlets
#   consume it, each item a few calls; everything runs in one thread with
#   hub switches: clean.
# modes: whole manual
# needs: gevent
# quick: yes
# expect: clean
import gevent
import gevent.pool
import gevent.queue
import greenreplay


def parse(item):
    return item * 3


def consumer(q, out):
    while True:
        item = q.get()
        if item is None:
            return
        out.append(parse(item))
        gevent.sleep(0)


def producer(q, n, consumers):
    for k in range(n):
        q.put(k)
    for _ in range(consumers):
        q.put(None)


def main():
    greenreplay.start()
    q = gevent.queue.Queue(maxsize=2)
    out = []
    pool = gevent.pool.Pool(3)
    for _ in range(3):
        pool.spawn(consumer, q, out)
    gevent.spawn(producer, q, 12, 3).join()
    pool.join()
    greenreplay.mark("all consumed")
    assert sorted(out) == [k * 3 for k in range(12)], out
    greenreplay.stop()


main()
