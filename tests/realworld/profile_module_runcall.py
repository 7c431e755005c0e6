# realworld: the pure-Python profile module around part of a program
# report: CPython's profile module (Lib/profile.py) installs itself with
#   sys.setprofile on every version, also 3.12+ where cProfile moved to
#   sys.monitoring (CPython issue 103533).
#   https://github.com/python/cpython/issues/103533
# semantics: profile.Profile().runcall(job) replaces the thread's profile
#   function for the duration of job and then removes it. The program
#   displaced the subject profiler: the displaced class (exit 1).
# modes: whole manual
# needs:
# quick: yes
# expect: displaced
import profile

import greenreplay


def leaf(n):
    return n + 1


def job():
    return sum(leaf(n) for n in range(5))


def main():
    greenreplay.start()
    p = profile.Profile()
    assert p.runcall(job) == 15
    greenreplay.stop()


main()
