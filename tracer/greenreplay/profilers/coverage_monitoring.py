"""coverage.py with its sys.monitoring core (SysMonitor, coverage 7.4+ on Python 3.12+).

Same as the coverage adapter (coverage.py beside this file, whose make()
builds the functions), with the tracer pinned to sysmon; unavailable, with
the reason, where this coverage or Python lacks it."""
import importlib.util
import os

_spec = importlib.util.spec_from_file_location(
    "greenreplay_adapter_coverage_base", os.path.join(os.path.dirname(os.path.abspath(__file__)), "coverage.py"))
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)
globals().update(_base.make("sysmon"))
