"""yappi's statistics of `import json`: rows and calls.  The import
machinery's calls change with sys.path and with the modules already loaded.
"""
# requires: yappi
import yappi

yappi.start()
import json  # noqa: E402,F401
import email.parser  # noqa: E402,F401
yappi.stop()
stats = yappi.get_func_stats()
print("yappi rows:", len(stats))
print("yappi calls:", sum(s.ncall for s in stats))
