"""The modules loaded beside greenreplay's own once the program has called
greenreplay.start() (manual modes) and after its stop(): a start() that
imports atexit, signal, threading or greenlet for itself leaves them in
sys.modules, and the program's own `import` of them then runs no code.
"""
# requires:
# manual: start
import sys


def show(when):
    names = sorted(n for n in sys.modules if n != "greenreplay" and not n.startswith("greenreplay."))
    print(when, len(names))
    for name in names:
        print(" ", name)


if "--start" in sys.argv:
    import greenreplay
    greenreplay.start()
show("after start:")
if "--start" in sys.argv:
    greenreplay.stop()
show("after stop:")
