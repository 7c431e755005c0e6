"""A program that needs its arguments: it exits with status 3 unless they
are exactly "--cpu -h --outfile x plain" (words a launcher profiler such
as scalene takes for its own options when they come before its separator:
tests/integration/conform_stacks.sh), after keeping the CPU busy long
enough to be sampled."""
import sys
import time


def busy(ms):
    t = time.perf_counter()
    n = 0
    while time.perf_counter() - t < ms / 1000.0:
        n += 1
    return n


def main():
    for _ in range(10):
        busy(15)
    if sys.argv[1:] != ["--cpu", "-h", "--outfile", "x", "plain"]:
        print("program_args.py: wrong arguments %r" % (sys.argv[1:],))
        sys.exit(3)


main()
