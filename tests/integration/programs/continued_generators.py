# Continued switches against generators and coroutines that switch
# greenlets from inside (tests/integration/continued_adversary.sh): a generator's
# frame runs in one greenlet, is suspended there inside greenlet.switch,
# and later resumes in another greenlet; a coroutine driven by send() from
# two greenlets; a generator closed by a greenlet that is not the one that
# started it.
import greenlet


def hub_loop(n):
    me = greenlet.getcurrent()
    out = []
    for i in range(n):
        out.append(me.parent.switch(i))
    return out


def gen(other):
    total = 0
    for i in range(4):
        got = other.switch(i)          # switch away from inside the generator
        total += got or 0
        yield total


def gen_neg(main):
    total = 0
    for i in range(4):
        got = main.switch(-1 - i)      # switch away from inside the generator
        total += got
        yield total


def stepper(it, k):
    me = greenlet.getcurrent()
    res = []
    for _ in range(k):
        res.append(next(it))           # the generator's frame runs here now
        me.parent.switch(len(res))
    return res


async def coro(other):
    acc = []
    for i in range(3):
        acc.append(other.switch(("coro", i)))
    return acc


def drive(c):
    me = greenlet.getcurrent()
    try:
        c.send(None)
        while True:
            me.parent.switch("between")
            c.send(None)
    except StopIteration as e:
        return e.value


def main():
    echo = greenlet.greenlet(hub_loop)
    echo.switch(40)
    a = greenlet.greenlet(stepper)
    b = greenlet.greenlet(stepper)

    def turn(g, *args):
        r = g.switch(*args)
        while not g.dead and isinstance(r, int) and r < 0:
            echo.switch()
            r = g.switch(r)
        return r

    it = gen_neg(greenlet.getcurrent())
    turn(a, it, 2)                     # the generator starts in a
    turn(b, it, 2)                     # and goes on in b (its frame moves)
    while not (a.dead and b.dead):
        for g in (a, b):
            if not g.dead:
                turn(g)
    c = coro(echo)
    d1 = greenlet.greenlet(drive)
    r = d1.switch(c)
    while not d1.dead:
        r = d1.switch()
    print("coroutine", r)
    # a generator suspended (yield) in one greenlet, closed from another
    g2 = gen(echo)
    next(g2)
    closer = greenlet.greenlet(lambda: g2.close())
    closer.switch()
    print("done", a.dead, b.dead)


main()
