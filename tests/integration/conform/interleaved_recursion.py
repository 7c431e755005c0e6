"""Two greenlets run the same recursive function interleaved: each
switches to the other at the bottom of its recursion.  Per greenlet, the
outermost call of `descend` is primitive (no frame of it below in that
greenlet's stack), the inner ones are recursive: 2 primitive calls of 6.
A profiler with one stack per thread sees the second greenlet's outermost
call while the first one's frames are still on its stack, and counts it
as recursive."""
import greenlet


def descend(n, other):
    if n == 0:
        if other is not None:
            other.switch()
        return 0
    return descend(n - 1, other) + 1


def run_b():
    return descend(2, None)


def run_a(b):
    return descend(2, b)


def main():
    b = greenlet.greenlet(run_b)
    a = greenlet.greenlet(run_a)
    a.switch(b)
    a.switch()


main()
