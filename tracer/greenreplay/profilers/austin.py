"""austin (C, out of process): frame stacks sampled from the process's
memory by a separate process (`austin -p PID`), as dd-trace-py's and
py-spy's stack samplers do.  It reads each thread's current frame chain,
so it sees the running greenlet's stack only.  Statistical: held to which
functions appear and which frame each is put under (results "stacks",
docs/conform.md), not to counts or times.

start() attaches austin to this process (interval 100 us) and waits until
it samples; stop() interrupts it (SIGINT: it writes what it collected);
results() parses its collapsed stacks (austin 3: "FILE:FUNCTION:LINE"
frames; austin 1 and 2: "FUNCTION (FILE);LLINE").  available() samples a
short child of this interpreter first: an austin that cannot read this
CPython's structures (bookworm's 1.0.1 on 3.11) says so there."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

INTERVAL_US = 100
_proc = None
_out = None
_SPIN = ("import time\n"
         "def greenreplay_austin_probe():\n"
         "    t = time.time()\n"
         "    while time.time() - t < 0.3: pass\n"
         "greenreplay_austin_probe()\n")


def _austin():
    return shutil.which("austin")


def _version():
    try:
        out = subprocess.run([_austin(), "-V"], capture_output=True, text=True, timeout=10)
        return (out.stdout + out.stderr).strip().split()[-1]
    except Exception:
        return "unknown"


def available():
    import sys
    exe = _austin()
    if not exe:
        return False, "austin is not installed (no austin on PATH)"
    fd, out = tempfile.mkstemp(prefix="greenreplay-austin-probe-")
    os.close(fd)
    try:
        r = subprocess.run([exe, "-i", "1000", "-o", out, sys.executable, "-I", "-c", _SPIN],
                           capture_output=True, text=True, timeout=30)
        with open(out, errors="replace") as f:
            ok = "greenreplay_austin_probe" in f.read()
    except Exception as e:
        return False, "austin %s could not sample: %s" % (_version(), e)
    finally:
        os.unlink(out)
    if not ok:
        why = (r.stderr.strip().splitlines() or ["no sample"])[-1]
        return False, "austin %s cannot sample Python %s: %s" % (
            _version(), sys.version.split()[0], why)
    return True, ""


def version():
    return "austin %s" % _version()


def start():
    global _proc, _out
    fd, _out = tempfile.mkstemp(prefix="greenreplay-austin-")
    os.close(fd)
    _proc = subprocess.Popen([_austin(), "-i", str(INTERVAL_US), "-o", _out, "-p", str(os.getpid())],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # Wait until it samples (it writes a header, then samples).
    deadline = time.time() + 5
    while time.time() < deadline and _proc.poll() is None:
        if os.path.getsize(_out) > 0:
            break
        time.sleep(0.01)
    time.sleep(0.05)


def stop():
    if _proc.poll() is None:
        _proc.send_signal(signal.SIGINT)
    try:
        _proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        _proc.kill()
        _proc.wait()


_NEW = re.compile(r"^(.*):([^:]*):(\d+)$")
_OLD_FN = re.compile(r"^(.*) \((.*)\)$")


def parse_line(line):
    """One collapsed-stack line as (frames, count), or None."""
    line = line.rstrip("\n")
    if not line or line.startswith("#"):
        return None
    stack, sep, metric = line.rpartition(" ")
    if not sep:
        return None
    try:
        count = max(1, int(metric.split(",")[0]))
    except ValueError:
        return None
    parts = stack.split(";")
    while parts and re.match(r"^(P\d+|T[0-9a-fx:]+|Process \d+|Thread [0-9a-fx:]+)$", parts[0]):
        parts.pop(0)
    frames = []
    if any(re.match(r"^L\d+$", p) for p in parts):
        # austin 1/2: "FUNCTION (FILE)" then "LLINE"
        i = 0
        while i < len(parts):
            m = _OLD_FN.match(parts[i])
            ln = 0
            if i + 1 < len(parts) and re.match(r"^L\d+$", parts[i + 1]):
                ln = int(parts[i + 1][1:])
                i += 1
            if m:
                frames.append({"file": m.group(2), "line": ln, "name": m.group(1)})
            i += 1
    else:
        for p in parts:
            m = _NEW.match(p)
            if m:
                frames.append({"file": m.group(1), "line": int(m.group(3)), "name": m.group(2)})
    return frames, 1 if count else 0


def results():
    stacks = []
    err = _proc.stderr.read().decode(errors="replace").strip() if _proc.stderr else ""
    try:
        with open(_out, errors="replace") as f:
            for line in f:
                p = parse_line(line)
                if p and p[0]:
                    stacks.append({"frames": p[0], "count": p[1]})
    finally:
        os.unlink(_out)
    if not stacks and err:
        raise RuntimeError("austin took no sample: %s" % err.splitlines()[-1])
    return {"stacks": stacks, "threads": "all"}
