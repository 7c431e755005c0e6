"""Run greenlet's own test suite (the greenlet.tests package that Debian's
python3-greenlet ships) and write one line per test to a file:

    TEST_ID <TAB> OUTCOME <TAB> DETAIL

OUTCOME is ok, fail, error, skip, xfail (expected failure) or xpass
(unexpected success); DETAIL is, for fail and error, the exception's type
and the first line of its message ("AssertionError: 0 != 1"), which
ci/peer.sh compares (tests/peer/classify.py), or the skip reason.  The full tracebacks go to OUT.details.  Used by
ci/peer.sh, which runs it once unrecorded and once under
`greenreplay record` and compares the two files (`make peer`).

usage: python run_suite.py [--empty-profile] OUT [MODULE...]
MODULE: greenlet.tests.test_x names (default: every test_*.py of the
package).  --empty-profile: run under a profile function that does
nothing, installed as a standard profiler installs it (sys.setprofile and
threading.setprofile, every thread started later too), without the
recorder: a test that differs the same way there is changed by CPython's
profiling itself, not by the recorder.  Prints unittest's summary.  Exit status 0 when every test passed
or was skipped, 1 otherwise, 2 when the suite cannot be loaded.
"""
import os
import sys
import unittest


class Recording(unittest.TextTestResult):
    """A TextTestResult that also keeps one (outcome, detail) per test id."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.rows = []

    def _row(self, test, outcome, detail=""):
        detail = (detail or "").strip().splitlines()
        self.rows.append((test.id(), outcome, detail[0] if detail else ""))

    @staticmethod
    def _failure(err):
        """The exception's type and the first line of its message."""
        etype, value = err[0], err[1]
        name = getattr(etype, "__qualname__", None) or getattr(etype, "__name__", "?")
        try:
            msg = str(value).strip().splitlines()
        except Exception:  # a message that cannot be made: its type alone
            msg = []
        return "%s: %s" % (name, msg[0]) if msg else name

    def addSuccess(self, test):
        super().addSuccess(test)
        self._row(test, "ok")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._row(test, "fail", self._failure(err))

    def addError(self, test, err):
        super().addError(test, err)
        self._row(test, "error", self._failure(err))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._row(test, "skip", reason)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._row(test, "xfail")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._row(test, "xpass")


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().split("\n\n")[2].split("\n")[0], file=sys.stderr)
        return 2
    if argv[1] == "--empty-profile":
        import threading

        def nothing(frame, event, arg):
            return None

        sys.setprofile(nothing)
        threading.setprofile(nothing)
        argv = argv[1:]
    if len(argv) < 2:
        return 2
    out, mods = argv[1], argv[2:]
    try:
        import greenlet.tests
    except ImportError as e:
        print("run_suite: cannot import greenlet.tests: %s" % e, file=sys.stderr)
        return 2
    if not mods:
        d = os.path.dirname(greenlet.tests.__file__)
        mods = sorted("greenlet.tests." + f[:-3] for f in os.listdir(d)
                      if f.startswith("test_") and f.endswith(".py"))
    try:
        suite = unittest.defaultTestLoader.loadTestsFromNames(mods)
    except Exception as e:  # a module that does not import: say which
        print("run_suite: cannot load %s: %s" % (" ".join(mods), e), file=sys.stderr)
        return 2
    runner = unittest.TextTestRunner(verbosity=1, resultclass=Recording)
    result = runner.run(suite)
    with open(out, "w", encoding="utf-8") as f:
        for tid, outcome, detail in result.rows:
            f.write("%s\t%s\t%s\n" % (tid, outcome, detail.replace("\t", " ")))
    with open(out + ".details", "w", encoding="utf-8") as f:
        for kind, rows in (("FAIL", result.failures), ("ERROR", result.errors)):
            for test, tb in rows:
                f.write("== %s %s\n%s\n" % (kind, test.id(), tb))
    return 0 if result.wasSuccessful() else 1


sys.exit(main(sys.argv))
