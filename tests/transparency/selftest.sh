#!/usr/bin/env bash
# tests/transparency/selftest.sh - the transparency oracle can fail: a
# difference fails and is named with its diff, a known difference passes, a
# known difference that no longer differs fails as stale, an item whose
# unrecorded runs disagree fails as not deterministic, and the runner goes
# on after a failure to its summary table.  Probes: tests/transparency/selftest.
# One line per check, then "N passed, N failed"; exit 1 if any failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
[ "${1:-}" = --python ] && PY=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/gr-transparency.XXXXXX")
trap 'rm -rf "$work"' EXIT
pass=0 fail=0
ok() { echo "PASS  $*"; pass=$((pass + 1)); }
bad() { echo "FAIL  $*"; fail=$((fail + 1)); }
# oracle KNOWN-LINES ITEM...: run the oracle on selftest probes, whole-passive only.
oracle() {
    printf '%s\n' "$1" >"$work/known.txt"; shift
    "$here/run.py" --python "$PY" --probes "$here/selftest" --known "$work/known.txt" \
        --out "$work/out" --modes whole-passive,manual-passive "$@" >"$work/log" 2>&1
}
oracle "" parent_name same
rc=$?
[ $rc -eq 1 ] && grep -q '^DIFF parent_name \[whole-passive\]' "$work/log" && grep -q '^+parent: greenreplay' "$work/log" &&
    ok "a difference fails, named with its diff" || bad "difference: exit $rc: $(tail -n 3 "$work/log")"
grep -q '^same  *ok  *ok' "$work/log" && grep -q '^parent_name  *DIFF  *DIFF' "$work/log" &&
    ok "after a failure the runner goes on: summary table with every cell" || bad "summary table: $(grep -A3 '^item' "$work/log")"
oracle "parent_name * * the parent is greenreplay" parent_name
rc=$?
[ $rc -eq 0 ] && grep -q '^parent_name  *known  *known' "$work/log" &&
    ok "a known difference passes as known" || bad "known: exit $rc: $(tail -n 3 "$work/log")"
oracle "parent_name manual-* * the parent is greenreplay" parent_name
rc=$?
[ $rc -eq 1 ] && grep -q '^parent_name  *DIFF  *known' "$work/log" &&
    ok "a known difference covers only the modes it names" || bad "known by mode: exit $rc: $(grep '^parent_name' "$work/log")"
oracle "same whole-passive * was once different" same
rc=$?
[ $rc -eq 1 ] && grep -q '^STALE same \[whole-passive\]' "$work/log" && grep -q 'now passes: remove it from known-differences' "$work/log" &&
    ok "a known difference that agrees fails as STALE" || bad "stale: exit $rc: $(tail -n 3 "$work/log")"
oracle "same * other-env-9.9 differs elsewhere" same
rc=$?
[ $rc -eq 0 ] && ok "a known difference of another environment is ignored" || bad "other env: exit $rc: $(tail -n 3 "$work/log")"
oracle "" clock
rc=$?
[ $rc -eq 1 ] && grep -q '^ERR clock' "$work/log" && grep -q 'not deterministic' "$work/log" &&
    ok "an item whose unrecorded runs disagree fails as not deterministic" || bad "clock: exit $rc: $(tail -n 3 "$work/log")"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
