"""A program whose own code the conform harness runs at exit, after the
profiler under test stopped: the harness asks every module in sys.modules
for its __file__ (to build the code map), and this one is a lazy proxy
whose __getattr__ is the program's.  Those calls follow the harness's
finish MARK and must not count as the program's: conform passes.
(tests/integration/conform.sh)"""
import sys


class LazyModule:
    def __getattr__(self, name):
        return lookup(name)


def lookup(name):
    raise AttributeError(name)


sys.modules["lazy_plugin"] = LazyModule()
try:
    LazyModule().missing
except AttributeError:
    pass
