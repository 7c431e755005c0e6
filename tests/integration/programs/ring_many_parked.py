"""More greenlets left suspended at exit than a ring holds records.

3000 greenlets park in park() and stay there; then work() runs a little.
At exit the recorder writes STOP and one STACK record per live greenlet
(3001 of them).  Recorded with --ring 1000, those STACK records must not
push the program's own last records out of the ring (greenlet's own test
suite leaves over 100,000 greenlets, make peer's ring holds 100,000):
the ring's check must still check events of the program.
"""
import greenlet


def park():
    greenlet.getcurrent().parent.switch()


def work(n):
    return sum(range(n))


parked = []
for _ in range(3000):
    g = greenlet.greenlet(park)
    g.switch()
    parked.append(g)
for _ in range(10):
    work(100)
