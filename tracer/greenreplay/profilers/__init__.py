"""Built-in adapters of `greenreplay conform`, one file per profiler under
test.  Each is loaded by path (greenreplay.conform.load), like a user's own
adapter, and implements the interface documented in greenreplay/conform.py
and docs/conform.md: available(), version(), start([ctx]), stop(),
results()."""
