# realworld: eventlet green threads with a queue
# report: what-studio/profiling issue 11 "Can't profile with eventlet" and
#   pyinstrument issue 84 (same with eventlet).
#   https://github.com/what-studio/profiling/issues/11
# semantics: eventlet spawns green threads (greenlets) that exchange items
#   through eventlet's queue and sleep in its hub, all in one OS thread:
#   clean.
# modes: whole manual
# needs: eventlet
# quick: yes
# expect: clean
import eventlet
import eventlet.queue
import greenreplay


def worker(q, out):
    while True:
        item = q.get()
        if item is None:
            return
        out.append(item * 2)
        eventlet.sleep(0)


def main():
    greenreplay.start()
    q = eventlet.queue.Queue()
    out = []
    threads = [eventlet.spawn(worker, q, out) for _ in range(2)]
    for k in range(6):
        q.put(k)
    for _ in threads:
        q.put(None)
    for t in threads:
        t.wait()
    greenreplay.mark("eventlet done")
    assert sorted(out) == [0, 2, 4, 6, 8, 10], out
    greenreplay.stop()


main()
