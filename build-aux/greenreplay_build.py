"""PEP 517 build backend of greenreplay (pyproject.toml names it).

Why not setuptools: pip builds a project in an isolated environment whose
build requirements it downloads from a package index, and there is none on
the machines this project runs on.  Debian's setuptools 66 also needs the
`wheel` package for a wheel, which Debian's venvs lack, and the pyenv
interpreters 3.12 and 3.13 have no setuptools at all.  This backend needs
nothing but the interpreter, `make` and a C compiler, so plain
`pip install .` works offline in any interpreter or virtual environment,
with or without build isolation (`requires = []`).

It builds with the project's own Makefile (`make cli ext` with
PYTHON=the interpreter running pip and BUILD=a scratch directory), so the
compile flags live in one place, and writes one wheel holding:

    greenreplay/                   the Python package and the recorder
                                   extension _greenreplay<EXT_SUFFIX>
    greenreplay/_bin/greenreplay   the C command-line tool (needs
                                   libjansson, zlib and libzstd at run
                                   time)
    greenreplay-V.data/data/share/man/man1/greenreplay.1   the man page
    greenreplay-V.dist-info/       metadata; entry points: the `greenreplay`
                                   console script (greenreplay._cli:main,
                                   which runs the C tool) and the pytest
                                   plugin (pytest11: greenreplay.pytest_plugin)

Build needs (Debian): build-essential (make, cc), zlib1g-dev,
libzstd-dev, libjansson-dev and the interpreter's headers (python3-dev, or a pyenv
build).  A missing one stops the build with one line naming the package.

Hooks: get_requires_for_build_wheel/sdist (nothing), build_wheel,
build_sdist, prepare_metadata_for_build_wheel.  Editable installs are not
supported (`make` builds a tree to use in place: build/python).
"""
import base64
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile

NAME = "greenreplay"
SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUMMARY = "Deterministic trace-and-replay tests for greenlets and Python profilers"
DEBIAN_HINT = "apt-get install build-essential zlib1g-dev libzstd-dev libjansson-dev python3-dev"


def _version():
    """The tool's version, from GR_TOOL_VERSION in replay/version.h (one source)."""
    with open(os.path.join(SRC, "replay", "version.h"), encoding="utf-8") as f:
        m = re.search(r'#define\s+GR_TOOL_VERSION\s+"([^"]+)"', f.read())
    if not m:
        raise RuntimeError("greenreplay build: GR_TOOL_VERSION not found in replay/version.h")
    return m.group(1)


def _dist_info(version):
    return "%s-%s.dist-info" % (NAME, version)


def _metadata(version):
    readme = ""
    try:
        with open(os.path.join(SRC, "README.md"), encoding="utf-8") as f:
            readme = f.read()
    except OSError:
        pass
    head = ("Metadata-Version: 2.1\n"
            "Name: %s\n"
            "Version: %s\n"
            "Summary: %s\n"
            "Requires-Python: >=3.9\n"
            "Provides-Extra: greenlet\n"
            "Requires-Dist: greenlet; extra == \"greenlet\"\n"
            "Description-Content-Type: text/markdown\n" % (NAME, version, SUMMARY))
    return head + "\n" + readme


ENTRY_POINTS = ("[console_scripts]\n"
                "greenreplay = greenreplay._cli:main\n"
                "\n"
                "[pytest11]\n"
                "greenreplay = greenreplay.pytest_plugin\n")


def _tag():
    """Wheel tag of the running interpreter, e.g. cp311-cp311-linux_x86_64."""
    if sys.implementation.name != "cpython":
        raise RuntimeError("greenreplay build: the recorder is a CPython extension; "
                           "%s is not CPython" % sys.executable)
    py = "cp%d%d" % sys.version_info[:2]
    abi = py + getattr(sys, "abiflags", "")
    plat = re.sub(r"[^A-Za-z0-9_]", "_", sysconfig.get_platform())
    return "%s-%s-%s" % (py, abi, plat)


def _wheel_file(tag):
    return ("Wheel-Version: 1.0\n"
            "Generator: greenreplay build-aux/greenreplay_build.py\n"
            "Root-Is-Purelib: false\n"
            "Tag: %s\n" % tag)


def _fail(msg):
    # pip shows the backend's stderr when a build fails.
    sys.stderr.write("greenreplay build: %s\n" % msg)
    raise SystemExit(1)


def _check_tools():
    make = os.environ.get("MAKE") or "make"
    cc = os.environ.get("CC") or "cc"
    if not shutil.which(make):
        _fail("`%s` not found; install it (%s)" % (make, DEBIAN_HINT))
    if not shutil.which(cc.split()[0]):
        _fail("C compiler `%s` not found; install it (%s)" % (cc, DEBIAN_HINT))
    inc = sysconfig.get_paths().get("include") or ""
    if not os.path.isfile(os.path.join(inc, "Python.h")):
        _fail("Python.h missing in %s: install the headers of %s (Debian: python3-dev)"
              % (inc or "(no include path)", sys.executable))
    return make


def _make(build):
    """Run `make cli ext` into BUILD for this interpreter; output to stderr."""
    make = _check_tools()
    jobs = "-j%d" % max(1, min(4, os.cpu_count() or 1))
    cmd = [make, jobs, "-C", SRC, "BUILD=" + build, "PYTHON=" + sys.executable, "cli", "ext"]
    sys.stderr.write("greenreplay build: %s\n" % " ".join(cmd))
    sys.stderr.flush()
    env = dict(os.environ)
    for var in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"):
        env.pop(var, None)  # a `make` above pip (make test) is not ours
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    out = proc.stdout.decode("utf-8", "replace")
    sys.stderr.write(out)
    if proc.returncode != 0:
        for header, package in (("jansson.h", "libjansson-dev"), ("zlib.h", "zlib1g-dev"),
                                ("zstd.h", "libzstd-dev"),
                                ("Python.h", "python3-dev")):
            if header + ": No such file" in out:
                _fail("%s is missing: install %s (%s)" % (header, package, DEBIAN_HINT))
        _fail("make failed (exit %d); see the output above" % proc.returncode)


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (arcname, digest, len(data))


class _Wheel:
    def __init__(self, path):
        self.zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED)
        self.record = []

    def add(self, arcname, data, mode=0o644):
        info = zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0))
        info.external_attr = (0o100000 | mode) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        self.record.append(_record_line(arcname, data))

    def close(self, record_name):
        self.record.append("%s,," % record_name)
        info = zipfile.ZipInfo(record_name, date_time=(1980, 1, 1, 0, 0, 0))
        info.external_attr = (0o100644) << 16
        self.zip.writestr(info, "\n".join(self.record) + "\n")
        self.zip.close()


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _write_metadata_dir(directory, version):
    di = os.path.join(directory, _dist_info(version))
    os.makedirs(di, exist_ok=True)
    for name, text in (("METADATA", _metadata(version)), ("WHEEL", _wheel_file(_tag())),
                       ("entry_points.txt", ENTRY_POINTS), ("top_level.txt", NAME + "\n")):
        with open(os.path.join(di, name), "w", encoding="utf-8") as f:
            f.write(text)
    return os.path.basename(di)


# ---------------------------------------------------------------- PEP 517 hooks

def get_requires_for_build_wheel(config_settings=None):
    """Nothing to download: make, cc and the interpreter do the build."""
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    """Write greenreplay-V.dist-info into metadata_directory; returns its name."""
    return _write_metadata_dir(metadata_directory, _version())


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """Build the recorder and the CLI for this interpreter and write the wheel
    into wheel_directory; returns the wheel's file name."""
    version = _version()
    tag = _tag()
    scratch = tempfile.mkdtemp(prefix="greenreplay-build-")
    try:
        build = os.path.join(scratch, "build")
        _make(build)
        pkg = os.path.join(build, "python", NAME)
        cli = os.path.join(build, NAME)
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        ext = "_greenreplay" + suffix
        if not os.path.isfile(os.path.join(pkg, ext)) or not os.path.isfile(cli):
            _fail("make left no %s or no %s in %s" % (ext, NAME, build))
        name = "%s-%s-%s.whl" % (NAME, version, tag)
        os.makedirs(wheel_directory, exist_ok=True)
        whl = _Wheel(os.path.join(wheel_directory, name))
        for f in sorted(os.listdir(pkg)):
            # Only this interpreter's extension: BUILD is fresh, but be exact.
            if f.endswith(".py") or f == ext:
                whl.add("%s/%s" % (NAME, f), _read(os.path.join(pkg, f)),
                        0o755 if f == ext else 0o644)
        # boot: whole-program recording's sitecustomize; profilers: the
        # built-in adapters of `greenreplay conform`
        for sub in ("boot", "profilers"):
            d = os.path.join(pkg, sub)
            for f in sorted(os.listdir(d)) if os.path.isdir(d) else ():
                if f.endswith(".py"):
                    whl.add("%s/%s/%s" % (NAME, sub, f), _read(os.path.join(d, f)), 0o644)
        whl.add("%s/_bin/%s" % (NAME, NAME), _read(cli), 0o755)
        man = os.path.join(SRC, "docs", "greenreplay.1")
        if os.path.isfile(man):
            whl.add("%s-%s.data/data/share/man/man1/greenreplay.1" % (NAME, version), _read(man))
        di = _dist_info(version)
        whl.add(di + "/METADATA", _metadata(version).encode())
        whl.add(di + "/WHEEL", _wheel_file(tag).encode())
        whl.add(di + "/entry_points.txt", ENTRY_POINTS.encode())
        whl.add(di + "/top_level.txt", (NAME + "\n").encode())
        whl.close(di + "/RECORD")
        return name
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _source_files():
    """Files of the source tree: git's list when this is a clone, else every
    file outside build/ and hidden directories."""
    try:
        out = subprocess.run(["git", "-C", SRC, "ls-files", "-z"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, check=True).stdout
        files = [f for f in out.decode().split("\0") if f and os.path.isfile(os.path.join(SRC, f))]
        if files:
            return sorted(files)
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for d, dirs, names in os.walk(SRC):
        rel = os.path.relpath(d, SRC)
        dirs[:] = [x for x in dirs if not x.startswith(".") and not (rel == "." and x == "build")]
        files += [os.path.normpath(os.path.join(rel, n)) for n in names]
    return sorted(files)


def build_sdist(sdist_directory, config_settings=None):
    """Write greenreplay-V.tar.gz (the source tree and PKG-INFO) into
    sdist_directory; returns its file name."""
    version = _version()
    base = "%s-%s" % (NAME, version)
    name = base + ".tar.gz"
    os.makedirs(sdist_directory, exist_ok=True)
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for f in _source_files():
            tar.add(os.path.join(SRC, f), arcname="%s/%s" % (base, f), recursive=False)
        data = _metadata(version).encode()
        info = tarfile.TarInfo("%s/PKG-INFO" % base)
        info.size = len(data)
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(data))
    return name
