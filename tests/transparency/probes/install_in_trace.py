"""The program installs its profile function inside its own trace
function, at the call event of a frame: unrecorded (3.12+) the function
gets no `call` of that frame (the event's tools were chosen before the
install), only what follows; 3.9-3.11 the same.  Recorded, the recorder's
function in the profile slot had made the profile tool part of the event:
it must still not hand that `call` to the function just installed
(tracer/install_return.c).  Prints the events the function saw."""
# requires:
# manual: start
# trace: clean
import sys

if "--start" in sys.argv:
    import greenreplay
    greenreplay.start()

seen = []


def prof(frame, event, arg):
    seen.append("%s %s" % (event, frame.f_code.co_name if event in ("call", "return")
                           else getattr(arg, "__name__", "?")))


def tracer(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "work" and sys.getprofile() is not prof:
        sys.setprofile(prof)
    return None


def work():
    return len("ab")


def main():
    sys.settrace(tracer)
    work()
    work()
    sys.settrace(None)
    sys.setprofile(None)


main()
if "--start" in sys.argv:
    greenreplay.stop()
print("\n".join(seen))
