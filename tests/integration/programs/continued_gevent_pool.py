# Continued switches under gevent (tests/integration/continued_adversary.sh): a pool
# of workers passing items through queues, events and sleep(0), where the
# hub (compiled: its C calls are invisible) runs between most switches.
# requires: gevent
# continued: none (gevent's hub switches in compiled code, without a c_call of switch, and runs unseen between two greenlets)
import gevent
from gevent.event import Event
from gevent.pool import Pool
from gevent.queue import Queue

q_in, q_out = Queue(), Queue()
done = Event()


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def worker(k):
    total = 0
    while True:
        item = q_in.get()
        if item is None:
            break
        gevent.sleep(0)
        total += fib(item % 12)
        q_out.put((k, item))
    return total


def producer(n):
    for i in range(n):
        q_in.put(i)
        if i % 7 == 0:
            gevent.sleep(0)
    for _ in range(4):
        q_in.put(None)


def collector(n):
    got = [q_out.get() for _ in range(n)]
    done.set()
    return len(got)


pool = Pool(8)
workers = [pool.spawn(worker, k) for k in range(4)]
pool.spawn(producer, 200)
c = pool.spawn(collector, 200)
done.wait()
pool.join()
print("items", c.value, "sum", sum(w.value for w in workers))
