"""coverage.py with its C tracer (CTracer): executed lines per file.

coverage measures every thread (threading.settrace) with its default
concurrency setting ("thread").  The tracer ("core") is pinned: coverage
7.4+ reads COVERAGE_CORE (ctrace, pytrace, sysmon), set here only while
Coverage() is built; older versions choose the Python tracer with
timid=True.  start() fails when coverage picked another tracer than asked
(for example no compiled CTracer), naming the one it picked.  No data file
is written (data_file=None) and no configuration file is read.

The sibling adapters coverage_py.py and coverage_monitoring.py load this
file and call make(core)."""
import os
import sys

CORE = "ctrace"
WANT = {"ctrace": "CTracer", "pytrace": "PyTracer", "sysmon": "SysMonitor"}


def _version_info():
    import coverage
    return tuple(coverage.version_info[:2])


def make(core):
    """The adapter functions for coverage's tracer CORE, as a dict."""
    state = {}

    def available():
        try:
            import coverage  # noqa: F401
        except ImportError as e:
            return False, "coverage is not importable: %s" % e
        if core == "sysmon":
            if sys.version_info < (3, 12):
                return False, "sys.monitoring needs Python 3.12+ (this is %d.%d)" % sys.version_info[:2]
            if _version_info() < (7, 4):
                return False, "coverage %s has no sys.monitoring core (7.4+)" % coverage.__version__
        if core == "ctrace":
            try:
                from coverage.tracer import CTracer  # noqa: F401
            except ImportError:
                return False, "coverage %s has no compiled CTracer here" % coverage.__version__
        return True, ""

    def version():
        import coverage
        return "%s (%s)" % (coverage.__version__, state.get("tracer", WANT[core]))

    def start():
        import coverage
        kwargs = dict(data_file=None, config_file=False, branch=False)
        old = os.environ.get("COVERAGE_CORE")
        if _version_info() >= (7, 4):
            os.environ["COVERAGE_CORE"] = core
        elif core == "pytrace":
            kwargs["timid"] = True
        try:
            cov = coverage.Coverage(**kwargs)
        finally:
            if old is None:
                os.environ.pop("COVERAGE_CORE", None)
            else:
                os.environ["COVERAGE_CORE"] = old
        cov.start()
        state["cov"] = cov
        try:
            state["tracer"] = cov._collector.tracer_name()
        except Exception:
            state["tracer"] = "unknown tracer"
        if state["tracer"] != WANT[core]:
            cov.stop()
            raise RuntimeError("coverage chose %s, not %s" % (state["tracer"], WANT[core]))

    def stop():
        state["cov"].stop()

    def results():
        data = state["cov"].get_data()
        lines = {f: sorted(data.lines(f) or ()) for f in data.measured_files()}
        return {"lines": lines, "threads": "all"}

    return dict(available=available, version=version, start=start, stop=stop, results=results)


globals().update(make(CORE))
