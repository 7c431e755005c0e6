"""What a test's tearDown does (gevent's does): hand threading its own hook
back, threading.setprofile(threading._profile_hook), and
threading.setprofile(threading.getprofile()); then what new threads see.
"""
# requires:
# manual: start
# trace: clean
import sys
import threading

if "--start" in sys.argv:
    import greenreplay
    greenreplay.start()


def in_thread():
    box = []
    t = threading.Thread(target=lambda: box.append(sys.getprofile()))
    t.start()
    t.join()
    f = box[0]
    return "None" if f is None else "%s.%s" % (getattr(f, "__module__", "?"), getattr(f, "__qualname__", "?"))


def work(n):
    return sum(range(n))


threading.setprofile(threading._profile_hook)
print("after setprofile(_profile_hook):", in_thread(), threading._profile_hook is None)
if hasattr(threading, "getprofile"):
    threading.setprofile(threading.getprofile())
    print("after setprofile(getprofile()):", in_thread(), threading._profile_hook is None)
threading.setprofile(None)
print("after setprofile(None):", in_thread(), threading._profile_hook is None)
t = threading.Thread(target=work, args=(10,))
t.start()
t.join()
if "--start" in sys.argv:
    greenreplay.stop()
