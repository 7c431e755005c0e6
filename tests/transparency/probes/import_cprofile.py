"""cProfile's count of the calls made by `import json` (and the modules it
pulls in).  A module the recorder preloaded is not imported again, so its
calls vanish from the count.
"""
# requires:
import cProfile
import pstats

profiler = cProfile.Profile()
profiler.enable()
import json  # noqa: E402,F401
import email.parser  # noqa: E402,F401
profiler.disable()
stats = pstats.Stats(profiler)
print("cProfile calls:", stats.total_calls)
print("cProfile functions:", len(stats.stats))
