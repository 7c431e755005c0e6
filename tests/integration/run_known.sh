#!/usr/bin/env bash
# tests/integration/run_known.sh --python PY: tests/integration/run.sh
# honours fixtures/known-issues.ini as the matrix does.
#
#   - ci/matrix-report.py verdict on made-up check reports, with the
#     project's known issues: an unexpected propagation violation of
#     start_in_child on 3.13 (greenreplay-observed-1) is known; the same on
#     3.11 fails; cprofile_midway without its expected displaced on 3.13
#     (cpython-103533, missing) is known; start_in_child clean on 3.13, as
#     its "# expect:" line says, is xpass (the entry is stale there);
#   - run.sh --known FILE with an entry naming the fixture throw for this
#     Python: throw gives its expected outcome, so run.sh fails it as
#     STALE and exits 1; without the entry it passes.
# One line per test, then "N passed, N failed".  Exit 1 if any failed.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
gr_script_init run-known "$@"
PY=$GR_PY work=$GR_WORK
report=$GR_ROOT/ci/matrix-report.py

# report FILE RULE MESSAGE: a check report with one violation (none when
# RULE is empty).
report_json() {
    if [ -n "$2" ]; then
        printf '{"traces": [{"violations": [{"rule": "%s", "index": 7, "message": "%s", "advisory": false}], "warnings": []}]}\n' \
            "$2" "$3" >"$1"
    else
        printf '{"traces": [{"violations": [], "warnings": []}]}\n' >"$1"
    fi
}

# verdict NAME WANT_OUTCOME WANT_IDS FIXTURE PYTHON CHECK_RC RULES_EXPECTED [RULE MESSAGE]
verdict() {
    local name=$1 want=$2 want_ids=$3 fx=$4 pyv=$5 crc=$6 expect=$7 got
    report_json "$work/$fx.json" "${8:-}" "${9:-}"
    got=$(/usr/bin/python3 "$report" verdict "$work/$fx.json" --fixture "$fx" --python "$pyv" \
        --greenlet 3.1.0 --want "$expect" --check-rc "$crc")
    local outcome=${got%%$'\t'*} ids=${got#*$'\t'}
    ids=${ids%%$'\t'*}
    if [ "$outcome" = "$want" ] && [ "$ids" = "$want_ids" ]; then
        gr_ok "verdict: $name: $outcome${ids:+ ($ids)}"
    else
        gr_bad "verdict: $name: got '$got', want $want${want_ids:+ ($want_ids)}"
    fi
}
verdict "start_in_child, propagation on 3.13" known greenreplay-observed-1 start_in_child 3.13.5 1 "" \
    propagation "predicted blind spot confirmed: g2 resumes in frames not instrumented"
verdict "start_in_child, propagation on 3.11" fail "" start_in_child 3.11.2 1 "" \
    propagation "predicted blind spot confirmed: g2 resumes in frames not instrumented"
verdict "cprofile_midway without displaced on 3.13" known cpython-103533 cprofile_midway 3.13.5 0 displaced
verdict "start_in_child clean on 3.13" xpass greenreplay-observed-1 start_in_child 3.13.5 0 ""

# run.sh with a known file of its own.
pyv=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
cat >"$work/known.ini" <<INI
[greenreplay-observed-999]
title = made up: a blind spot in throw
python = $pyv
greenlet = any
fixtures = throw
rules = blind_spot
evidence = tests/integration/run_known.sh
INI
"$GR_ROOT/tests/integration/run.sh" --python "$PY" --known "$work/known.ini" throw >"$work/stale.log" 2>&1
rc=$?
if [ "$rc" = 1 ] && grep -q "^FAIL  check throw: STALE .*greenreplay-observed-999" "$work/stale.log"; then
    gr_ok "run.sh: a fixture a known issue names gives its expected outcome: STALE, exit 1"
else
    gr_bad "run.sh with the made-up entry: exit $rc"
    gr_show "$work/stale.log"
fi
"$GR_ROOT/tests/integration/run.sh" --python "$PY" throw >"$work/plain.log" 2>&1
rc=$?
if [ "$rc" = 0 ] && grep -q "^PASS  check throw: .*as expected" "$work/plain.log"; then
    gr_ok "run.sh: the same fixture with the project's known issues: as expected, exit 0"
else
    gr_bad "run.sh with the project's known issues: exit $rc"
    gr_show "$work/plain.log"
fi

gr_tally
