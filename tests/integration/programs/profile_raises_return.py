"""The program's profile function raises at the return of a function and
at a generator's yield: CPython clears the slot, the exception unwinds
the frame; the generator catches it once.  Then the same with a trace
function of the program set."""
import sys


def leave():
    return 1


def gen():
    try:
        yield 1
    except ValueError:
        pass
    yield 2


def prof(frame, event, arg):
    if event == "return" and frame.f_code in (leave.__code__, gen.__code__):
        raise ValueError(frame.f_code.co_name)


def tracer(frame, event, arg):
    return None


def main():
    sys.setprofile(prof)
    try:
        leave()
    except ValueError as e:
        print("raised", e, sys.getprofile())
    sys.setprofile(prof)
    print(list(gen()), sys.getprofile())
    sys.settrace(tracer)
    sys.setprofile(prof)
    try:
        leave()
    except ValueError as e:
        print("raised", e, sys.getprofile())
    sys.settrace(None)


main()
