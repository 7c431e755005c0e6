"""What a program can see of the recorder, printed to compare recorded and
unrecorded runs line by line (tests/integration/transparency_boot.sh).

    probe.py [manual]

manual: call greenreplay.start() first, as a --manual program does
(unrecorded it raises: no trace file is named).  The program imports
threading and greenlet first: recording imports them at start when the
program has not yet (docs/recorder-start.md)."""
import os
import subprocess
import sys

import greenlet
import threading  # noqa: F401

if sys.argv[1:] == ["manual"]:
    import greenreplay
    try:
        greenreplay.start()
    except ValueError:
        pass

import cProfile
import pstats


def leaf(i):
    return i


def run(n):
    for i in range(n):
        leaf(i)
        greenlet.getcurrent().parent.switch(i)


def greenlet_heavy():
    g = greenlet.greenlet(run)
    v = g.switch(20)
    while not g.dead:
        v = g.switch()
    return v


def counts(profiler):
    stats = pstats.Stats(profiler).stats
    return sum(v[1] for v in stats.values())


def ours(env):
    return sorted((k, v) for k, v in env.items() if k.startswith("GREENREPLAY") or k == "PYTHONHASHSEED")


modules = sorted(sys.modules)
print("modules:", len(modules), " ".join(modules))
print("sys.path:", sys.path[1:])
print("environment:", ours(os.environ))
print("hash randomization:", sys.flags.hash_randomization)
profiler = cProfile.Profile()
profiler.enable()
greenlet_heavy()
profiler.disable()
print("greenlet_heavy calls:", counts(profiler))
profiler = cProfile.Profile()
profiler.enable()
import json  # noqa: E402,F401
profiler.disable()
print("import json calls:", counts(profiler))
child = subprocess.run(
    [sys.executable, "-c",
     "import os, sys\n"
     "print(sorted((k, v) for k, v in os.environ.items() if k.startswith('GREENREPLAY') or k == 'PYTHONHASHSEED'))\n"
     "try:\n"
     "    import greenreplay\n"
     "    greenreplay.start()\n"
     "    print('child recording')\n"
     "except (ImportError, ValueError) as e:\n"
     "    print('child start():', type(e).__name__)\n"],
    stdout=subprocess.PIPE, universal_newlines=True)
print("child:", child.stdout.replace("\n", " | "))
if sys.argv[1:] == ["manual"]:
    greenreplay.stop()
