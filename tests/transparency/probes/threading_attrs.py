"""threading's profile hooks as the program sees them: the private
_profile_hook, the module of threading.setprofile, getprofile()."""
# requires:
# manual: start
import sys
import threading

if "--start" in sys.argv:
    import greenreplay
    greenreplay.start()


def name(f):
    if f is None:
        return "None"
    return "%s.%s" % (getattr(f, "__module__", "?"), getattr(f, "__qualname__", type(f).__name__))


print("threading._profile_hook is None:", threading._profile_hook is None)
print("threading._profile_hook:", name(threading._profile_hook))
print("threading.setprofile.__module__:", threading.setprofile.__module__)
print("threading.setprofile:", name(threading.setprofile))
if hasattr(threading, "getprofile"):
    print("threading.getprofile():", name(threading.getprofile()))
    print("threading.getprofile.__module__:", threading.getprofile.__module__)
for attr in ("setprofile_all_threads", "_profile_all_threads"):
    if hasattr(threading, attr):
        print("threading.%s:" % attr, name(getattr(threading, attr)))
print("sys.getprofile() in the main thread is None:", sys.getprofile() is None)
if "--start" in sys.argv:
    greenreplay.stop()
