#!/usr/bin/env bash
# tests/integration/matrix_verdicts.sh - how the matrix turns a crash into a
# verdict (ci/matrix-report.py cell), on synthetic cells: no recording.
#
# usage: tests/integration/matrix_verdicts.sh
#
# Each case writes a cell as ci/matrix.sh does (NAME.cell, the program's
# output NAME.log, the check report NAME.check.json) for an environment of
# a small envs.json, classifies it against a small known-issues file, and
# compares the outcome and the words its reason must hold:
#   - a debug build's glibc assertion, known for debug builds: known, with
#     file:line and the expression in the reason;
#   - the same crash on a release build (the entry is for debug builds
#     only), a crash whose message does not match the entry, CPython's own
#     assertion (negative reference count) and fatal error (GIL): fail, with
#     what the interpreter said;
#   - violations of the trace written up to a known crash: listed with it;
#     unexplained ones: fail;
#   - a named fixture that did not crash: xpass.
# Output: one PASS/FAIL line per case, then "N passed, N failed".
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
REPORT=$ROOT/ci/matrix-report.py
PY=/usr/bin/python3
W=$(mktemp -d "${TMPDIR:-/tmp}/gr-verdicts.XXXXXX")
trap 'rm -rf "$W"' EXIT
NPASS=0 NFAIL=0

cat >"$W/known.ini" <<'INI'
[greenlet-368]
title = abort on resume with stale instrumentation
python = >=3.12
greenlet = any
build = debug
fixtures = stale
rules = crash, imbalance
message.crash = ^SIGABRT: .*debug_check_sanity
evidence = synthetic
INI
cat >"$W/envs.json" <<'JSON'
[{"id": "dbg", "kind": "root", "python": "3.13d", "python_version": "3.13.5", "greenlet": "3.1.0", "debug": true},
 {"id": "rel", "kind": "root", "python": "3.13", "python_version": "3.13.5", "greenlet": "3.1.0", "debug": false}]
JSON
GLIBC="python3.13d: ../Python/instrumentation.c:1078: get_tools_for_instruction: Assertion \`debug_check_sanity(interp, code)' failed."
NEGREF='../Objects/object.c:212: _Py_NegativeRefcount: Assertion "0" failed: object has negative ref count
Fatal Python error: _PyObject_AssertFailed: _PyObject_AssertFailed'
GIL='Fatal Python error: PyThreadState_Get: the function must be called with the GIL held, but the GIL is released (the current Python thread state is NULL)'

# verdict NAME ENV FIXTURE SIGNAL LOG VIOLATIONS WANT_OUTCOME WORDS...:
# SIGNAL "" for a clean exit; VIOLATIONS a JSON list.
verdict() {
    local name=$1 env=$2 fx=$3 sig=$4 log=$5 viol=$6 want=$7; shift 7
    local d=$W/out/cells/$env
    mkdir -p "$d"
    local crashed=0 rc=0 crc=0
    [ -n "$sig" ] && crashed=1 rc=134
    [ "$viol" != "[]" ] && crc=1
    printf 'env=%s\nfixture=%s\nexpect_header=clean\nwant_rules=\nwant_crash=0\nstate=ran\nrc=%s\ncrashed=%s\nsignal=%s\ncheck_rc=%s\nproblem=\ngolden=unchecked\ndeterminism=unchecked\n' \
        "$env" "$fx" "$rc" "$crashed" "$sig" "$crc" >"$d/$fx.cell"
    printf '%s\n' "$log" >"$d/$fx.log"
    printf '{"traces": [{"violations": %s, "warnings": []}]}\n' "$viol" >"$d/$fx.check.json"
    local line out reason w miss=""
    line=$("$PY" "$REPORT" cell "$d/$fx.cell" --known "$W/known.ini" --envs "$W/envs.json" 2>&1)
    out=${line%%$'\t'*} reason=${line#*$'\t'}
    for w in "$@"; do
        case "$reason" in *"$w"*) ;; *) miss+=" '$w'" ;; esac
    done
    if [ "$out" = "$want" ] && [ -z "$miss" ]; then
        NPASS=$((NPASS + 1)); printf 'PASS  %s: %s\n' "$name" "$out"
    else
        NFAIL=$((NFAIL + 1)); printf 'FAIL  %s: got %s, want %s%s\n      | %s\n' "$name" "$out" "$want" \
            "${miss:+; reason lacks$miss}" "$line"
    fi
}
IMB='[{"rule": "imbalance", "index": 7, "message": "RETURN of f without a matching CALL"}]'

verdict "debug build, known assertion" dbg stale SIGABRT "$GLIBC" "[]" known \
    greenlet-368 "SIGABRT" "Python/instrumentation.c:1078" "get_tools_for_instruction" "debug_check_sanity(interp, code)"
verdict "release build, same crash (entry is for debug builds)" rel stale SIGABRT "$GLIBC" "[]" fail \
    "the program crashed (SIGABRT: Python/instrumentation.c:1078"
verdict "debug build, crash the entry's message does not match" dbg stale SIGSEGV "" "[]" fail \
    "the program crashed (SIGSEGV)"
verdict "negative reference count" dbg other SIGABRT "$NEGREF" "[]" fail \
    "Objects/object.c:212 in _Py_NegativeRefcount" "object has negative ref count"
verdict "GIL not held" dbg other SIGABRT "$GIL" "[]" fail \
    "Fatal Python error: PyThreadState_Get: the function must be called with the GIL held"
verdict "known crash with the trace's violations" dbg stale SIGABRT "$GLIBC" "$IMB" known \
    "debug_check_sanity" "the trace up to the crash: imbalance=1"
verdict "unknown crash with unexplained violations" dbg other SIGABRT "$GLIBC" "$IMB" fail \
    "unexpected imbalance at event 7" "the program crashed (SIGABRT"
verdict "named fixture, no crash on a debug build" dbg stale "" "" "[]" xpass greenlet-368

echo "$NPASS passed, $NFAIL failed"
[ "$NFAIL" -eq 0 ]
