# Continued switches against things that move the thread's switch witness
# (context_ver) without a switch, or switch without any event
# (tests/integration/continued_adversary.sh): contextvars Context.run around and
# between switches, assigning gr_context, a greenlet whose run is a
# builtin (greenlet.switch of another: it switches without a frame), and
# ContextVar.set in between.
import contextvars

import greenlet

var = contextvars.ContextVar("v", default=0)


def ping(n):
    me = greenlet.getcurrent()
    for i in range(n):
        var.set(i)
        me.parent.switch(var.get())


def in_context(p, k):
    for _ in range(k):
        p.switch()
    return var.get()


def main():
    p = greenlet.greenlet(ping)
    p.switch(60)
    ctx = contextvars.copy_context()
    print(ctx.run(in_context, p, 3))          # switches inside Context.run
    ctx2 = contextvars.Context()
    ctx2.run(var.set, 5)                      # enter/exit, no switch
    p.switch()
    ctx2.run(p.switch)                        # Context.run calls switch itself
    p.switch()
    ctx3 = contextvars.copy_context()
    g = greenlet.greenlet(in_context)
    g.gr_context = ctx3                       # before it starts
    g.switch(p, 2)
    p.switch()
    g.switch()
    greenlet.getcurrent().gr_context = contextvars.copy_context()   # the running one
    p.switch()
    # a greenlet whose run is a builtin: it switches back with no event of its own
    b = greenlet.greenlet(greenlet.getcurrent().switch)
    print(b.switch("via builtin"))
    p.switch()
    b2 = greenlet.greenlet(p.switch)          # runs p directly, p returns to b2's parent
    print(b2.switch())
    p.switch()
    print("end", var.get())


main()
