"""A program without greenlets: every built-in adapter must pass it
(exit 0).  The profile module's dispatcher raised AssertionError ('Bad
return') at the return of <module> here, which the profiler had never
seen called (tests/integration/conform.sh)."""


def square(n):
    return n * n


def squares(n):
    for i in range(n):
        yield square(i)


class Box:
    def __init__(self, items):
        self.items = list(items)

    def total(self):
        return sum(self.items)


def fails():
    raise ValueError("caught")


try:
    fails()
except ValueError:
    pass
print(Box(squares(4)).total())
