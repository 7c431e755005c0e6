"""Prints the tracing flags that gate profile events, read from C
(_greenreplay._tracing_state), at the program's first lines.

    python tracing_state.py cprofile   # a profiler started in this frame
    greenreplay record -- python tracing_state.py

Both must print the same: recording starts as a profiler started in the
program's first frame would, leaving every frame below untouched (on
3.10/3.11 the root CFrame's use_tracing stays 0).  Run with the greenreplay
package on PYTHONPATH."""
import sys

if sys.argv[1:] == ["cprofile"]:
    import cProfile
    _profiler = cProfile.Profile()
    _profiler.enable()
from greenreplay import _greenreplay

print(_greenreplay._tracing_state())
