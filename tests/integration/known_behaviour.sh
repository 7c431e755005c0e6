#!/usr/bin/env bash
# tests/integration/known_behaviour.sh --python PY: `greenreplay check` on
# programs where CPython, greenlet or a library behaves as documented in a
# way that looks like a lost event (tests/integration/programs/known_*.py),
# next to a program of the same shape with a true violation.
#
# Each program has fixture-style headers: `# requires:` (modules), `#
# expect:` (clean, or the rules with violations; a displaced finding alone
# exits 0), `# note:` (a phrase the report's notes must hold; empty: no note
# at all), optionally `# abandoned:` (frames the report lists as
# abandoned).  One line per program,
# then "N passed, N failed".
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
gr_script_init known "$@"
PY=$GR_PY cli=$GR_CLI work=$GR_WORK

for prog in "$GR_ROOT"/tests/integration/programs/known_*.py; do
    name=$(basename "$prog" .py)
    if why=$(gr_missing_requirement "$PY" "$prog"); then :; else
        echo "SKIP  $name: $why"; continue
    fi
    t=$work/$name.grt
    if ! gr_record "$PY" "tests/integration/programs/$name.py" "$t" "$work/$name.log" ||
        [ ! -f "$t" ]; then
        gr_bad "$name: recording failed"; gr_show "$work/$name.log"; continue
    fi
    "$cli" check --format json "$t" >"$work/$name.json" 2>"$work/$name.err"
    rc=$?
    "$cli" check "$t" >"$work/$name.txt" 2>&1
    got=$(gr_json_rules "$work/$name.json")
    failing=$(gr_json_failing "$work/$name.json")
    want=$(gr_normalize_expect "$(gr_header "$prog" expect)")
    if [ "$got" != "$want" ]; then
        gr_bad "$name: $(gr_describe "$got" 0), expected $(gr_describe "$want" 0)"
        gr_show "$work/$name.txt"; continue
    fi
    if { [ -n "$failing" ] && [ "$rc" -ne 1 ]; } || { [ -z "$failing" ] && [ "$rc" -ne 0 ]; }; then
        gr_bad "$name: exit $rc for $(gr_describe "$got" 0)"; gr_show "$work/$name.txt"; continue
    fi
    note=$(gr_header "$prog" note)
    if [ -n "$note" ]; then
        if ! grep -q "^note: .*$note" "$work/$name.txt" ||
            ! "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert any(sys.argv[2] in n for n in d["traces"][0]["remarks"])' \
                "$work/$name.json" "$note"; then
            gr_bad "$name: no note naming '$note' in text and JSON"; gr_show "$work/$name.txt"; continue
        fi
    elif grep -q "^note: " "$work/$name.txt"; then
        gr_bad "$name: a note where none is due"; gr_show "$work/$name.txt"; continue
    fi
    abandoned=$(gr_header "$prog" abandoned)
    if [ -n "$abandoned" ] && ! grep -A3 "^abandoned" "$work/$name.txt" | grep -qF "$abandoned"; then
        gr_bad "$name: '$abandoned' not listed as abandoned"; gr_show "$work/$name.txt"; continue
    fi
    gr_ok "$name: $(gr_describe "$got" 0)${note:+, note names '$note'}${abandoned:+, '$abandoned' abandoned}, exit $rc"
done

expect_rc() { # NAME WANT_RC WANT_TEXT ARGS...
    local name=$1 want=$2 text=$3 rc; shift 3
    "$@" >"$work/opt.txt" 2>&1; rc=$?
    if [ "$rc" -ne "$want" ] || ! grep -q -- "$text" "$work/opt.txt"; then
        gr_bad "$name: exit $rc (want $want), '$text' wanted"; gr_show "$work/opt.txt"
    else
        gr_ok "$name: exit $rc, '$text'"
    fi
}

# The program's own sys.setprofile(None) (known_throw_unseen): a displaced
# finding, listed and counted but not failing; --fail-on displaced (or
# fail_on in pyproject.toml) makes it fail, and --allow RULE:FUNCTION
# allows it again (still listed).
t=$work/known_throw_unseen.grt
if [ -f "$t" ]; then
    expect_rc "displaced by default" 0 "^(not failing) displaced at event .*removed by the program" \
        "$cli" check "$t"
    expect_rc "displaced counted" 0 "^program changes to the profiler: 1 " "$cli" check "$t"
    expect_rc "--fail-on displaced" 1 "^displaced at event .*removed by the program" \
        "$cli" check --fail-on displaced "$t"
    expect_rc "--fail-on, --allow RULE:FUNCTION" 0 "^(allowed) displaced at event" \
        "$cli" check --fail-on displaced --allow displaced:main "$t"
    expect_rc "--fail-on, --allow of another function" 1 "^result: 1 violation (displaced 1)$" \
        "$cli" check --fail-on displaced --allow displaced:Other.func "$t"
    expect_rc "--allow of no rule" 2 "no such rule" "$cli" check --allow nosuch "$t"
    expect_rc "--fail-on of no rule" 2 "--fail-on 'nosuch': no such rule" \
        "$cli" check --fail-on nosuch "$t"
    mkdir -p "$work/proj/sub"
    cat >"$work/proj/pyproject.toml" <<'TOML'
[project]
name = "demo"

[tool.greenreplay]
fail_on = ["displaced"]  # the program's own changes to the profiler fail ...
allow = [
    "displaced:main",  # ... except this one, allowed by name
]
TOML
    expect_rc "pyproject.toml fail_on, allow (from a subdirectory)" 0 "^result: clean; allowed by .*/proj/pyproject.toml: displaced 1$" \
        sh -c 'cd "$1/proj/sub" && "$2" check "$3"' sh "$work" "$cli" "$t"
    printf '[tool.greenreplay]\nfail_on = [\n  "displaced",\n]\n' >"$work/proj/pyproject.toml"
    expect_rc "pyproject.toml fail_on" 1 "^displaced at event" \
        sh -c 'cd "$1/proj/sub" && "$2" check "$3"' sh "$work" "$cli" "$t"
    printf '[tool.greenreplay]\nfail_on = ["nosuch"]\n' >"$work/proj/pyproject.toml"
    expect_rc "pyproject.toml fail_on of no rule" 2 "no such rule (in .*pyproject.toml)" \
        sh -c 'cd "$1/proj/sub" && "$2" check "$3"' sh "$work" "$cli" "$t"
    printf '[tool.greenreplay]\nfail_on = "displaced"\n' >"$work/proj/pyproject.toml"
    expect_rc "pyproject.toml fail_on malformed" 2 "fail_on must be an array" \
        sh -c 'cd "$1/proj/sub" && "$2" check "$3"' sh "$work" "$cli" "$t"
    printf '[tool.greenreplay]\nallow = "displaced"\n' >"$work/proj/pyproject.toml"
    expect_rc "pyproject.toml allow malformed" 2 "allow must be an array" \
        sh -c 'cd "$1/proj/sub" && "$2" check "$3"' sh "$work" "$cli" "$t"
fi

# The gevent trace (a known cause: a note) under --strict-known: a
# displaced finding like any other, failing only with --fail-on displaced.
t=$work/known_gevent_resolve.grt
if [ -f "$t" ] && ! grep -q "^note: .*gevent's thread pool" "$work/known_gevent_resolve.txt"; then
    echo "SKIP  strict-known: the gevent trace holds no change of the profiler by its thread pool (see above)"
elif [ -f "$t" ]; then
    expect_rc "strict-known" 0 "^(not failing) displaced at event .*removed by the program" \
        "$cli" check --strict-known "$t"
    expect_rc "strict-known, --fail-on displaced" 1 "^displaced at event .*removed by the program" \
        "$cli" check --strict-known --fail-on displaced "$t"
    expect_rc "strict-known, --fail-on, --allow RULE:FUNCTION" 0 "^(allowed) displaced at event" \
        "$cli" check --strict-known --fail-on displaced \
        --allow displaced:_WorkerGreenlet._after_run_task \
        --allow displaced:ThreadPool._after_run_task "$t"
    mkdir -p "$work/proj/sub"
    printf '[tool.greenreplay]\nstrict_known = true\n' >"$work/proj/pyproject.toml"
    expect_rc "pyproject.toml strict_known" 0 "^(not failing) displaced at event" \
        sh -c 'cd "$1/proj/sub" && "$2" check "$3"' sh "$work" "$cli" "$t"
    printf '[tool.greenreplay]\nstrict_known = true\nfail_on = ["displaced"]\n' >"$work/proj/pyproject.toml"
    expect_rc "pyproject.toml strict_known, fail_on" 1 "^displaced at event" \
        sh -c 'cd "$1/proj/sub" && "$2" check "$3"' sh "$work" "$cli" "$t"
fi

# pytest --greenreplay on a test that resolves a host name under gevent.
if "$PY" -c "import pytest, gevent" 2>/dev/null && [ -f "$t" ]; then
    mkdir -p "$work/pt"
    printf '[pytest]\n' >"$work/pt/pytest.ini"
    cat >"$work/pt/test_resolve.py" <<'PYTEST'
import gevent.monkey
gevent.monkey.patch_all()
import socket


import gevent


def test_resolve():
    assert socket.getaddrinfo("localhost", 80, socket.AF_INET)
    gevent.get_hub().threadpool.join()  # the task's end (profiler removed) is in the test
PYTEST
    if (cd "$work/pt" && PYTHONPATH="$GR_ROOT/build/python${PYTHONPATH:+:$PYTHONPATH}" \
            GREENREPLAY_CLI="$cli" "$PY" -m pytest -q -p greenreplay.pytest_plugin --greenreplay \
            -p no:cacheprovider test_resolve.py) >"$work/pt.txt" 2>&1; then
        gr_ok "pytest --greenreplay passes a test resolving a host name under gevent"
    else
        gr_bad "pytest --greenreplay failed a test resolving a host name under gevent"
        gr_show "$work/pt.txt"
    fi
    # the same test with strict_known in its pyproject.toml: a displaced
    # finding, which does not fail the test ...
    printf '[tool.greenreplay]\nstrict_known = true\n' >"$work/pt/pyproject.toml"
    if (cd "$work/pt" && PYTHONPATH="$GR_ROOT/build/python${PYTHONPATH:+:$PYTHONPATH}" \
            GREENREPLAY_CLI="$cli" "$PY" -m pytest -q -p greenreplay.pytest_plugin --greenreplay \
            -p no:cacheprovider test_resolve.py) >"$work/pt.txt" 2>&1; then
        gr_ok "pytest --greenreplay passes it under strict_known = true (displaced does not fail)"
    else
        gr_bad "pytest --greenreplay failed it under strict_known = true"; gr_show "$work/pt.txt"
    fi
fi

# pytest --greenreplay on a test whose program removes the profiler itself:
# the test passes (displaced does not fail), and fails when pyproject.toml
# says fail_on = ["displaced"].
if "$PY" -c "import pytest" 2>/dev/null; then
    mkdir -p "$work/pd"
    printf '[pytest]\n' >"$work/pd/pytest.ini"
    cat >"$work/pd/test_displace.py" <<'PYTEST'
import sys


def work(n):
    return n + 1


def test_displace():
    sys.setprofile(None)
    assert work(1) == 2
PYTEST
    run_pd() {
        (cd "$work/pd" && PYTHONPATH="$GR_ROOT/build/python${PYTHONPATH:+:$PYTHONPATH}" \
            GREENREPLAY_CLI="$cli" "$PY" -m pytest -q -p greenreplay.pytest_plugin --greenreplay \
            -p no:cacheprovider test_displace.py) >"$work/pd.txt" 2>&1
    }
    if run_pd; then
        gr_ok "pytest --greenreplay passes a test that removes the profiler (displaced does not fail)"
    else
        gr_bad "pytest --greenreplay failed a test that removes the profiler"; gr_show "$work/pd.txt"
    fi
    printf '[tool.greenreplay]\nfail_on = ["displaced"]\n' >"$work/pd/pyproject.toml"
    if run_pd; then
        gr_bad "pytest --greenreplay passed it under fail_on = [\"displaced\"]"; gr_show "$work/pd.txt"
    elif grep -q "unexpected violation" "$work/pd.txt"; then
        gr_ok "pytest --greenreplay fails it under fail_on = [\"displaced\"] in pyproject.toml"
    else
        gr_bad "pytest --greenreplay under fail_on = [\"displaced\"]: no greenreplay failure"
        gr_show "$work/pd.txt"
    fi
fi

gr_tally
