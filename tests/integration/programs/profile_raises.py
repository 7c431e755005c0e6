"""The program's profile function raises at the call of the function a new
greenlet starts in, as the profile module's "Bad call" check does: CPython
clears the slot, the exception reaches switch()."""
import sys, greenlet
def target():
    return 1
def prof(frame, event, arg):
    if event == "call" and frame.f_code is target.__code__:
        raise AssertionError("bad call")
def main():
    sys.setprofile(prof)
    try:
        greenlet.greenlet(target).switch()
    except AssertionError as e:
        print("caught", e)
    print(sys.getprofile())
main()
