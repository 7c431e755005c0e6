"""sys.getprofile() inside new threads: a threading.Thread and a thread of
the _thread module."""
# requires:
# manual: start
import _thread
import sys
import threading

if "--start" in sys.argv:
    import greenreplay
    greenreplay.start()

seen = []


def look(tag):
    f = sys.getprofile()
    seen.append("%s: %s" % (tag, "None" if f is None else type(f).__name__))


t = threading.Thread(target=look, args=("threading.Thread",))
t.start()
t.join()
done = threading.Event()
_thread.start_new_thread(lambda: (look("_thread"), done.set()), ())
done.wait()
for line in seen:
    print(line)
if "--start" in sys.argv:
    greenreplay.stop()
