"""Whether greenlet's shared object is loaded before the program's own
`import greenlet` (a start() that imports greenlet for itself loads it
first: a tool that hooks the loading of shared objects, memray's dlopen
hook, then never sees greenlet load), then a switch once it is loaded.
"""
# requires: greenlet
# manual: start
# trace: clean
import sys

if "--start" in sys.argv:
    import greenreplay
    greenreplay.start()


def greenlet_mapped():
    with open("/proc/self/maps") as maps:
        return any("greenlet" in line.rsplit("/", 1)[-1] for line in maps)


print("greenlet mapped before its import:", greenlet_mapped())
print("greenlet modules before its import:", sorted(n for n in sys.modules if n.split(".")[0] == "greenlet"))
import greenlet  # noqa: E402

print("greenlet mapped after its import:", greenlet_mapped())


def child(x):
    return main.switch(x + 1) * 2


main = greenlet.getcurrent()
g = greenlet.greenlet(child)
print("switches:", g.switch(1), g.switch(5))
if "--start" in sys.argv:
    greenreplay.stop()
