"""A child process that imports greenreplay (from the directory given as
argv[1]) and calls start() with no path.  Unrecorded it gets start()'s
error; a recorded parent must not change that (the child must never write
into the parent's trace).
"""
# requires:
# manual: start
# args: PKG
# trace: usable
import subprocess
import sys

if "--start" in sys.argv:
    import greenreplay
    greenreplay.start()

CHILD = r'''
import sys
sys.path.insert(0, sys.argv[1])
import greenreplay
try:
    greenreplay.start()
except Exception as e:
    print("start() raised", type(e).__name__)
else:
    print("start() returned; is_recording:", greenreplay.is_recording())
    greenreplay.stop()
'''
r = subprocess.run([sys.executable, "-c", CHILD, sys.argv[1]], capture_output=True, text=True)
print(r.stdout, end="")
print("child exit status:", r.returncode)
if "--start" in sys.argv:
    greenreplay.stop()
