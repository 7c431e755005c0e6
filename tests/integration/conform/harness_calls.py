"""A program whose own code runs while the conform harness works at exit,
after its finish MARK (tests/integration/conform.sh):

- a reference cycle with a finaliser, left by the program's last atexit
  hook (which runs before the harness's), and an audit hook that hook
  installs: at the first audit event after it, which the harness's work
  raises after its finish MARK (stopping the profiler: cProfile's disable
  raises "sys.setprofile" on 3.9-3.11, "sys.monitoring.register_callback"
  on 3.12+; or opening a file for the results), the audit hook runs the
  collector, which calls __del__.  No dependence on the collector's
  thresholds, which differ between Python versions.  The audit hook asks
  to be traced (__cantrace__), else neither the recorder nor the profiler
  would see it or the finaliser.  While the profiler is stopping, it may
  count these calls: a note, not a difference;
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


armed = []


def on_audit(event, args):
    # Not at sys.settrace: the recorder raises it itself (its foothold, at
    # cProfile's sys.setprofile) and runs the program's audit hooks
    # untraced for its own changes, so the finaliser would run unseen.
    if armed and event != "sys.settrace":
        armed.clear()
        gc.collect()  # Node.__del__ runs here, in the harness's work


on_audit.__cantrace__ = True


def leave_garbage():
    gc.collect()
    Node()
    armed.append(True)
    sys.addaudithook(on_audit)


sys.modules["lazy_plugin"] = LazyModule()
try:
    LazyModule().missing
except AttributeError:
    pass
Node()
gc.collect()  # this one now, while the profiler runs
atexit.register(leave_garbage)  # runs before the harness's own hook
