"""A C profile function installed through the C API keeps its own view of
the Python stack (tests/transparency/probes/stackview/stackview.c: the way
memray follows the stack behind each allocation): the view it reports, and
whether its function was in the thread's profile slot whenever it looked,
must be the same recorded and unrecorded.  The module is compiled first
with the interpreter's headers (cc, or $CC); without a compiler or the
headers the probe prints that, the same way in every run.
"""
import os
import subprocess
import sys
import sysconfig
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def build(out):
    inc = sysconfig.get_paths()["include"]
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    if not os.path.exists(os.path.join(inc, "Python.h")):
        return "no Python.h for this interpreter"
    cc = os.environ.get("CC", "cc")
    # PyEval_SetProfileAllThreads is new in 3.12 (gh-93503).
    flags = ["-DSV_ALL_THREADS=1"] if sys.version_info >= (3, 12) else []
    try:
        subprocess.run([cc, "-O1", "-fPIC", "-shared", "-I" + inc] + flags + ["-o",
                        os.path.join(out, "stackview" + suffix),
                        os.path.join(HERE, "stackview", "stackview.c")],
                       check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as e:
        return "cannot build the test profiler: %s" % e
    return None


def inner():
    return stackview.view()


def work():
    return inner()


with tempfile.TemporaryDirectory(prefix="gr-stackview-") as d:
    why = build(d)
    if why:
        print("skipped:", why)
        sys.exit(0)
    sys.path.insert(0, d)
    import stackview
    sys.path.remove(d)
    stackview.install()
    view = work()
    stats = stackview.stats()
    stackview.uninstall()
    # Frames below the program's <module> (a runner's) are not the program's.
    if "<module>" in view:
        view = view[view.index("<module>"):]
    print("view:", " > ".join(view) or "(empty)")
    for k in sorted(stats):
        print("%s: %d" % (k, stats[k]))
