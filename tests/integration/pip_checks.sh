#!/usr/bin/env bash
# tests/integration/pip_checks.sh - what a user does after cloning, in one
# interpreter: a fresh virtual environment, `pip install .`, then the
# installed `greenreplay` command, the Python API and the pytest plugin,
# with nothing of the source tree on PATH or PYTHONPATH.  Run by
# tests/integration/pip_install.sh on the host, on a pyenv interpreter and
# inside a Debian root (where it runs inside the root, with bash only).
#
# usage: pip_checks.sh --python PY --work DIR --repo DIR --name LABEL
#                      [--system-site-packages] [--pytest]
#   --python PY   the interpreter to make the venv with (PY -m venv)
#   --work DIR    scratch directory (created; the venv is DIR/v)
#   --repo DIR    the source tree (`pip install .` runs there)
#   --name LABEL  prefix of every result line
#   --system-site-packages  the venv sees the interpreter's packages
#                 (greenlet and pytest from Debian): the greenlet, blind
#                 spot and pytest checks need greenlet
#   --pytest      also run pytest --greenreplay on the demo test file
#
# Output: one "PASS  LABEL: what" / "FAIL  LABEL: what" / "SKIP  ..." line
# per check, details indented under a failure; logs stay in DIR.
# Exit status: 0 every check passed, 1 a check failed, 2 bad usage.
set -uo pipefail

PY="" WORK="" REPO="" NAME="" SYSSITE=0 PYTEST=0
while [ $# -gt 0 ]; do
    case $1 in
        --python) PY=$2; shift 2 ;;
        --work) WORK=$2; shift 2 ;;
        --repo) REPO=$2; shift 2 ;;
        --name) NAME=$2; shift 2 ;;
        --system-site-packages) SYSSITE=1; shift ;;
        --pytest) PYTEST=1; shift ;;
        *) echo "pip_checks.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -n "$PY" ] && [ -n "$WORK" ] && [ -n "$REPO" ] && [ -n "$NAME" ] || { sed -n '9,10p' "$0" >&2; exit 2; }

FAILED=0
pass() { printf 'PASS  %s: %s\n' "$NAME" "$*"; }
fail() { FAILED=1; printf 'FAIL  %s: %s\n' "$NAME" "$*"; }
skip() { printf 'SKIP  %s: %s\n' "$NAME" "$*"; }
detail() { awk 'NR <= 30 { print "      | " $0 } NR == 31 { print "      | ..." }'; }

rm -rf "$WORK"
mkdir -p "$WORK"
V=$WORK/v
# What a user's shell has: no venv activated, nothing of ours on PATH or
# PYTHONPATH.  HOME is the scratch directory (no user site, no pip cache).
clean_env() { env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$WORK" LANG=C.UTF-8 "$@"; }

venv_args=()
[ "$SYSSITE" = 1 ] && venv_args+=(--system-site-packages)
if ! clean_env "$PY" -m venv "${venv_args[@]}" "$V" > "$WORK/venv.log" 2>&1; then
    fail "python -m venv ${venv_args[*]} (is the venv module installed? Debian: python3-venv)"
    detail < "$WORK/venv.log"
    exit 1
fi

# The command users run.  PIP_NO_INDEX only turns a download attempt (there
# is no package index here) into an immediate error instead of a wait for
# the network: the build must need nothing from an index.
if (cd "$REPO" && clean_env PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 "$V/bin/pip" install .) \
        > "$WORK/pip.log" 2>&1; then
    pass "pip install . (venv ${venv_args[*]:-plain}, $("$V/bin/python" -c 'import sys; print(sys.version.split()[0])'))"
else
    fail "pip install . in a fresh venv"
    detail < "$WORK/pip.log"
    exit 1
fi
[ -x "$V/bin/greenreplay" ] && [ -f "$V/share/man/man1/greenreplay.1" ] &&
    pass "the greenreplay command and its man page are installed" ||
    fail "no $V/bin/greenreplay or $V/share/man/man1/greenreplay.1 after pip install"

HAVE_GREENLET=0
clean_env "$V/bin/python" -c 'import greenlet' 2>/dev/null && HAVE_GREENLET=1

# A program to record: greenlet switches when greenlet is there.
cat > "$WORK/x.py" <<'EOF'
import greenreplay

def work(n):
    greenreplay.mark("work %d" % n)
    return n * 2

try:
    import greenlet
except ImportError:
    greenlet = None

work(1)
if greenlet is not None:
    g = greenlet.greenlet(work)
    assert g.switch(2) == 4
print("x.py done")
EOF

cd "$WORK" || exit 1
if clean_env "$V/bin/greenreplay" record -o t.grt -- "$V/bin/python" x.py > record.log 2>&1 &&
   grep -q "x.py done" record.log && [ -s t.grt ]; then
    pass "greenreplay record -o t.grt -- v/bin/python x.py (nothing on PATH or PYTHONPATH)"
else
    fail "greenreplay record of x.py"
    detail < record.log
fi
# The program's sys.path is the one it has unrecorded: the venv's
# site-packages, where pip put greenreplay, stays in its place, and a module
# installed only there imports.
site=$(clean_env "$V/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo 'NAME = "only in the venv"' > "$site/gr_venv_only.py"
printf 'import sys, gr_venv_only\nprint(gr_venv_only.NAME)\nprint("\\n".join(sys.path))\n' > path.py
clean_env "$V/bin/python" path.py > path.plain 2>&1
clean_env "$V/bin/greenreplay" record -o p.grt -- "$V/bin/python" path.py > path.rec 2>&1
clean_env "$V/bin/python" -m greenreplay record -o pm.grt -- path.py > path.pym 2>&1
if grep -q "only in the venv" path.plain && cmp -s path.plain path.rec && cmp -s path.plain path.pym; then
    pass "record (command and python -m): the program's sys.path is its own, the venv's site-packages in it"
else
    fail "record: the program's sys.path differs from its own (plain, command, python -m)"
    { cat path.plain; diff path.plain path.rec; diff path.plain path.pym; } | detail
fi
rm -f "$site/gr_venv_only.py"
if clean_env "$V/bin/greenreplay" check t.grt > check.log 2>&1 && grep -q "^result: clean" check.log; then
    pass "greenreplay check t.grt: clean"
else
    fail "greenreplay check t.grt"
    detail < check.log
fi
if [ "$HAVE_GREENLET" = 1 ]; then
    clean_env "$V/bin/greenreplay" dump t.grt > dump.log 2>&1
    if grep -q " SWITCH " dump.log; then
        pass "the trace holds the greenlet switches"
    else
        fail "no SWITCH record in the dump of t.grt"
    fi
fi

# The Python API, from a directory outside the source tree, no env.
cat > api.py <<'EOF'
import os, sys
import greenreplay

# start() with no path and no GREENREPLAY_OUTPUT: a clear error.
try:
    greenreplay.start()
except ValueError as e:
    assert "GREENREPLAY_OUTPUT" in str(e), e
else:
    raise AssertionError("start() without a path did not raise")

with greenreplay.recording() as rec:
    greenreplay.mark("inside")
r = rec.check()
assert r.clean and r.violations == [] and set(r.counts) >= {"blind_spot", "imbalance"}, r
assert all(n == 0 for n in r.counts.values()), r.counts
rec.cleanup()
assert not os.path.exists(rec.path)

try:
    greenreplay.check(os.path.join(os.getcwd(), "missing.grt"))
except greenreplay.CheckError as e:
    assert "missing.grt" in str(e), e
else:
    raise AssertionError("check() of a missing file did not raise")
os.environ["GREENREPLAY_CLI"] = "/nonexistent/greenreplay"
try:
    greenreplay.check("missing.grt")
except FileNotFoundError as e:
    assert "GREENREPLAY_CLI" in str(e), e
else:
    raise AssertionError("check() with no command-line tool did not raise FileNotFoundError")
del os.environ["GREENREPLAY_CLI"]
with open("garbage.grt", "w") as f:
    f.write("not a trace\n")
try:
    greenreplay.check("garbage.grt")
except greenreplay.CheckError as e:
    assert "offset" in str(e), e
else:
    raise AssertionError("check() of a corrupt file did not raise")

try:
    import greenlet
except ImportError:
    print("api ok (no greenlet: blind spot not tried)")
    sys.exit(0)

# A blind spot: a greenlet switched to from inside a trace function.
def hidden():
    greenreplay.mark("hidden")

g = greenlet.greenlet(hidden)

def tracer(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "trigger" and not g.dead:
        g.switch()

def trigger():
    pass

with greenreplay.recording("blind.grt") as rec:
    sys.settrace(tracer)
    trigger()
    sys.settrace(None)
r = rec.check()
assert not r.clean, r
assert [v.rule for v in r.violations] == ["blind_spot"], r.violations
v = r.violations[0]
assert isinstance(v.index, int) and v.greenlet == 2 and v.thread == 1, v
assert "hidden" in v.message and r.counts["blind_spot"] == 1, (v, r.counts)
assert "blind_spot at event %d" % v.index in r.report()
assert greenreplay.check("blind.grt").counts == r.counts
print("api ok")
EOF
if clean_env "$V/bin/python" api.py > api.log 2>&1 && grep -q "^api ok" api.log; then
    pass "Python API: recording(), check(), CheckError, FileNotFoundError, start() without a path ($(tail -n 1 api.log))"
else
    fail "Python API"
    detail < api.log
fi

[ "$PYTEST" = 1 ] || exit $FAILED
if ! clean_env "$V/bin/python" -c 'import pytest' 2>/dev/null; then
    skip "pytest plugin: pytest is not importable in the venv (Debian: python3-pytest)"
    exit $FAILED
fi
if [ "$HAVE_GREENLET" != 1 ]; then
    skip "pytest plugin: greenlet is not importable in the venv"
    exit $FAILED
fi
DEMO=$REPO/tests/integration/pytest_demo/test_demo.py
# run_pytest LOG ARGS...: pytest on the demo file; status in $rc
run_pytest() {
    local log=$1; shift
    clean_env "$V/bin/python" -m pytest -p no:cacheprovider "$@" "$DEMO" > "$log" 2>&1
    rc=$?
}
summary() { grep -E '^=+ .*(passed|failed).* in [0-9.]+s' "$1" | tail -n 1; }

run_pytest pytest.log --greenreplay --greenreplay-dir "$WORK/traces" --greenreplay-junit "$WORK/junit.xml"
if [ "$rc" = 1 ] && [[ "$(summary pytest.log)" == *" 1 failed, 5 passed"* ]] &&
   grep -q "^FAILED .*::test_blind_spot" pytest.log && grep -q "blind_spot at event" pytest.log &&
   [ "$(grep -c '^FAILED' pytest.log)" = 1 ]; then
    pass "pytest --greenreplay: test_blind_spot fails with the report, the 5 others pass"
else
    fail "pytest --greenreplay (want exit 1, 1 failed, 5 passed; got exit $rc: $(summary pytest.log))"
    detail < pytest.log
fi
if ls traces/*test_blind_spot*.grt >/dev/null 2>&1 && ! ls traces/*test_plain*.grt >/dev/null 2>&1; then
    pass "--greenreplay-dir keeps the traces with violations only (default --greenreplay-keep=failed)"
else
    fail "--greenreplay-dir: $(ls traces 2>&1 | tr '\n' ' ')"
fi
if [ -f junit.xml ] && clean_env "$V/bin/python" - junit.xml > junit.log 2>&1 <<'EOF'
import sys
import xml.etree.ElementTree as ET
suite = ET.parse(sys.argv[1]).getroot().find("testsuite")
cases = {c.get("name"): c for c in suite.findall("testcase")}
assert len(cases) == 6, sorted(cases)
failed = sorted(n for n, c in cases.items() if c.find("failure") is not None)
assert failed == ["test_blind_spot"], failed
assert "blind_spot at event" in cases["test_blind_spot"].find("failure").text
skipped = sorted(n for n, c in cases.items() if c.find("skipped") is not None)
assert skipped == ["test_not_recorded", "test_records_itself"], skipped
props = {p.get("name"): p.get("value") for p in cases["test_expected_blind_spot"].iter("property")}
assert props["greenreplay.status"] == "expected" and props["greenreplay.blind_spot"] == "1", props
print("junit ok")
EOF
then
    pass "--greenreplay-junit: one test case per test, the blind spot's failure carries the report"
else
    fail "--greenreplay-junit"
    detail < junit.log
fi

run_pytest warn.log --greenreplay --greenreplay-warn --greenreplay-dir "$WORK/traces-warn"
if [ "$rc" = 0 ] && [[ "$(summary warn.log)" == *" 6 passed, 1 warning"* ]] && grep -q "GreenreplayWarning" warn.log; then
    pass "pytest --greenreplay --greenreplay-warn: 6 passed, the violation is a warning"
else
    fail "pytest --greenreplay-warn (want exit 0, 6 passed, 1 warning; got exit $rc: $(summary warn.log))"
    detail < warn.log
fi

run_pytest plain.log --greenreplay-dir "$WORK/traces-plain"
if [ "$rc" = 0 ] && [[ "$(summary plain.log)" == *" 6 passed"* ]] && [ ! -e "$WORK/traces-plain" ]; then
    pass "pytest without --greenreplay: the plugin is loaded (entry point) but does nothing"
else
    fail "pytest without --greenreplay (got exit $rc: $(summary plain.log))"
    detail < plain.log
fi
clean_env "$V/bin/python" -m pytest --help > help.log 2>&1
if grep -q -- "--greenreplay-junit" help.log; then
    pass "the plugin is registered through the pytest11 entry point"
else
    fail "pytest --help shows no --greenreplay options"
fi

# An expected rule that does not show fails the test.
mkdir -p expect && cat > expect/test_expect.py <<'EOF'
import pytest

@pytest.mark.greenreplay(expect=["blind_spot"])
def test_expects_a_blind_spot_that_is_not_there():
    assert True

@pytest.mark.greenreplay(allow=["blind_spot"])
def test_allows_one():
    assert True
EOF
clean_env "$V/bin/python" -m pytest -p no:cacheprovider --greenreplay --greenreplay-dir "$WORK/traces-expect" \
    expect/test_expect.py > expect.log 2>&1
rc=$?
if [ "$rc" = 1 ] && [[ "$(summary expect.log)" == *" 1 failed, 1 passed"* ]] &&
   grep -q "expected a blind_spot violation, none found" expect.log; then
    pass "marker expect=[rule]: a clean trace fails the test that expects a violation; allow= passes"
else
    fail "marker expect= (want exit 1, 1 failed, 1 passed; got exit $rc: $(summary expect.log))"
    detail < expect.log
fi

if clean_env "$V/bin/python" -c 'import xdist' 2>/dev/null; then
    run_pytest xdist.log -n 2 --greenreplay --greenreplay-dir "$WORK/traces-xdist" --greenreplay-junit "$WORK/junit-xdist.xml"
    if [ "$rc" = 1 ] && [[ "$(summary xdist.log)" == *" 1 failed, 5 passed"* ]] &&
       [ "$(grep -c '<testcase ' junit-xdist.xml 2>/dev/null)" = 6 ] &&
       [ "$(grep -c '<failure ' junit-xdist.xml 2>/dev/null)" = 1 ]; then
        pass "pytest -n 2 --greenreplay (xdist): each worker records its tests; 1 failed, 5 passed; JUnit has 6 cases"
    else
        fail "pytest -n 2 --greenreplay (got exit $rc: $(summary xdist.log))"
        detail < xdist.log
    fi
else
    skip "xdist: pytest-xdist is not importable in the venv (Debian: python3-pytest-xdist)"
fi
exit $FAILED
