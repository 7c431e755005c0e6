"""An adapter whose profiler is missing: conform must skip (exit 3)."""


def available():
    return False, "the profiler under test is not installed"


def version():
    return "none"


def start():
    raise AssertionError("start() called although available() said no")


def stop():
    pass


def results():
    return {}
