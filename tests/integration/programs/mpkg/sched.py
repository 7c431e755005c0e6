"""The schedule both entry points run: a producer and a consumer greenlet
handing items over, with a mark at each hand-over and one in a nested call,
then the consumer killed by a throw."""
import greenlet

import greenreplay


def depth(n):
    if n:
        return depth(n - 1)
    greenreplay.mark("bottom")
    return 0


def run():
    main = greenlet.getcurrent()

    def consumer():
        while True:
            item = main.switch()
            greenreplay.mark("got %d" % item)
            depth(2)

    c = greenlet.greenlet(consumer)
    c.switch()
    for i in range(3):
        greenreplay.mark("sent %d" % i)
        c.switch(i)
    try:
        c.throw(greenlet.GreenletExit)
    except greenlet.GreenletExit:
        pass
    return c.dead
