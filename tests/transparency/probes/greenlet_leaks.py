"""greenlet's own leak tests of greenlets left by ended threads
(test_issue251_issue252_*): their outcomes recorded and unrecorded.
"""
# requires: greenlet.tests.test_leaks objgraph psutil
# manual: start
import sys
import unittest

if "--start" in sys.argv:
    import greenreplay
    greenreplay.start()

from greenlet.tests import test_leaks  # noqa: E402

names = sorted(n for n in dir(test_leaks.TestLeaks) if n.startswith("test_issue251_issue252_"))
suite = unittest.TestSuite(test_leaks.TestLeaks(n) for n in names)
result = unittest.TestResult()
suite.run(result)
bad = {t.id().rsplit(".", 1)[-1]: "fail" for t, _ in result.failures}
bad.update({t.id().rsplit(".", 1)[-1]: "error" for t, _ in result.errors})
bad.update({t.id().rsplit(".", 1)[-1]: "skip" for t, _ in result.skipped})
for n in names:
    print(n, bad.get(n, "ok"))
if "--start" in sys.argv:
    greenreplay.stop()
