"""A program whose own code runs while the conform harness works at exit,
after the profiler under test stopped (tests/integration/conform.sh):

- a reference cycle with a finaliser, left by the program's last atexit
  hook with the collector's first threshold lowered: the collector finds it
  during the harness's allocations (results, code map) and runs __del__
  there, after the harness's finish MARK;
- a lazy module proxy in sys.modules: the harness, which reads every
  module's __file__ for the code map, must not call its __getattr__.

What runs after the finish MARK is not the program's as the profiler saw
it: conform passes."""
import atexit
import gc
import sys


class LazyModule:
    def __getattr__(self, name):
        return lookup(name)


def lookup(name):
    raise AttributeError(name)


class Node:
    def __init__(self):
        self.peer = self  # a cycle: only the collector frees it

    def __del__(self):
        closing()


def closing():
    return None


def leave_garbage():
    gc.collect()
    Node()
    gc.set_threshold(50)


sys.modules["lazy_plugin"] = LazyModule()
try:
    LazyModule().missing
except AttributeError:
    pass
Node()
gc.collect()  # this one now, while the profiler runs
atexit.register(leave_garbage)  # runs before the harness's own hook
