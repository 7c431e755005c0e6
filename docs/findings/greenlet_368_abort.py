import sys
import greenlet


def profiler(frame, event, arg):
    pass


def first():
    sys.setprofile(profiler)   # set in this greenlet
    second.switch()
    len("resumed")             # runs after the profiler was cleared elsewhere


def clear():
    sys.setprofile(None)       # cleared in another greenlet; returns to main


one = greenlet.greenlet(first)
second = greenlet.greenlet(clear)
one.switch()                   # first sets, second clears, back here
one.switch()                   # resume the first greenlet
print(sys.version.split()[0], "greenlet", greenlet.__version__, "finished")
