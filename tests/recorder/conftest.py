"""Fixtures of the recorder tests (tests/recorder/, `make recorder-test`).

The package under test is the make tree's (BUILD/python, default build/);
its command-line tool reads the traces back (grtrace.py).  A test records
in this process, through greenreplay.recording(), and asserts on the
records it reads back; the few that need a fresh interpreter (the same
bytes twice, a crash to survive) record in a child process.
"""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import grtrace  # noqa: E402

sys.path.insert(0, os.path.join(os.environ.get("BUILD") or os.path.join(grtrace.ROOT, "build"), "python"))
import greenreplay  # noqa: E402


class Recorded:
    """A recording of a with block into PATH, read back by trace()."""

    def __init__(self, path, kwargs):
        self.path = str(path)
        self._rec = greenreplay.recording(self.path, root=HERE, **kwargs)

    def __enter__(self):
        self._rec.__enter__()
        return self

    def __exit__(self, *exc):
        return self._rec.__exit__(*exc)

    def trace(self):
        return grtrace.read(self.path)

    def check(self):
        return grtrace.check(self.path)


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    """recorded(**start_kwargs): a context manager recording its block into
    a fresh file of tmp_path (code file names relative to tests/recorder/);
    .trace() reads it back.  The environment's GREENREPLAY_* settings are
    cleared so that only the test's own arguments count."""
    for key in list(os.environ):
        if key.startswith("GREENREPLAY_") and key != "GREENREPLAY_CLI":
            monkeypatch.delenv(key)
    count = [0]

    def make(**kwargs):
        count[0] += 1
        return Recorded(tmp_path / ("t%d.grt" % count[0]), kwargs)
    return make


@pytest.fixture(autouse=True)
def hooks_left_as_found():
    """Every test ends with no recording and the interpreter's hooks as the
    test found them: the recorder leaves nothing behind."""
    import threading
    before = (sys.getprofile(), sys.gettrace(), threading._profile_hook, threading._trace_hook)
    yield
    assert not greenreplay.is_recording()
    after = (sys.getprofile(), sys.gettrace(), threading._profile_hook, threading._trace_hook)
    assert after == before
