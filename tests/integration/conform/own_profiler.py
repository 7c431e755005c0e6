"""A program that runs its own profiler while conform measures it
(tests/integration/conform.sh): with the argument `cprofile` it profiles
main() with cProfile (its enable() installs a profile function on 3.9-3.11,
sys.monitoring on 3.12+), with `setprofile` it installs a profile function
of its own with sys.setprofile and removes it.  Where the adapter's
profiler is the thread's profile function it is displaced: conform must
say "unsupported" (exit 2) instead of false differences; an adapter of
another slot (coverage: the trace function) is not displaced and passes."""
import sys


def work(n):
    return n + 1


def own(frame, event, arg):
    pass


def main():
    for i in range(3):
        work(i)


work(0)
if sys.argv[1] == "cprofile":
    import cProfile

    try:
        profiler = cProfile.Profile()
        profiler.enable()
    except ValueError:  # 3.12+: the adapter's cProfile holds sys.monitoring's profiler id
        profiler = None
    main()
    if profiler:
        profiler.disable()
else:
    sys.setprofile(own)
    main()
    sys.setprofile(None)
main()
