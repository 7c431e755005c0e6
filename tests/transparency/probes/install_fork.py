"""A fork in the middle of the call that installs a profile function: the
program's audit hook forks at sys.setprofile's event, before the change.
The child goes on with the call (recording ends in the child) and
installs the function; without the recorder that call gives the function
no c_return, in the child as in the parent; recorded it must not either.
With manual start, the same with greenreplay.stop() made by the audit
hook in place of the fork."""
# requires:
# manual: start
import os
import sys

if "--start" in sys.argv:
    import greenreplay
    greenreplay.start()

log = []


def prof(frame, event, arg):
    log.append("%s %s in %s" % (event, getattr(arg, "__name__", "-"), frame.f_code.co_name))


def work():
    return len("ab")


action = ["fork"]
child = [False]


def hook(event, args):
    if event != "sys.setprofile" or not action[0]:
        return
    what, action[0] = action[0], None
    if what == "fork":
        child[0] = os.fork() == 0
    elif what == "stop" and "--start" in sys.argv:
        greenreplay.stop()


sys.addaudithook(hook)


def install():
    sys.setprofile(prof)
    work()
    sys.setprofile(None)


install()
if child[0]:
    print("child:", "; ".join(log))
    sys.stdout.flush()
    os._exit(0)
os.wait()
print("parent:", "; ".join(log))
del log[:]
action[0] = "stop"
install()
print("after stop:", "; ".join(log))
