#!/usr/bin/env bash
# tests/integration/conform_time.sh [--python PY]: the time per function
# of `greenreplay conform` (results "time_samples", docs/conform.md, "Time
# per function"), on a recorded program, conform/time_switches.py, with the
# synthetic sampler conform/time_sampler.py (a profile function notes which
# stack runs when; its samples are instants drawn uniformly over that time,
# so they meet the test's null hypothesis by construction):
#  - the right sampler passes, and the time test ran ("compared" names it),
#    in 20 runs with fresh draws: at most 1 false alarm (the test's
#    family-wise rate is 0.001 per run; 2 or more in 20 would be a bias, not
#    chance: probability about 2e-4).  The count is printed.  Measured: 0 of
#    20 on bullseye's 3.9.2, the host's 3.11.2, trixie's 3.13.5, sid's
#    3.14.10 and 3.15.2;
#  - GR_TIME_FAULT=share (half the samples of the worker greenlets put on
#    the switching frame): time_share naming worker;
#  - GR_TIME_FAULT=unsampled (all of them): time_unsampled naming worker;
#  - GR_TIME_FAULT=not_running (samples charged to `side`, which runs in
#    another thread only): time_not_running naming side, and nothing else.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
gr_script_init conform_time "$@"
PY=$GR_PY
ADAPTERS=$here/conform
cd "$GR_ROOT" || exit 2
if ! "$PY" -c 'import greenlet' 2>/dev/null; then
    gr_skip_all "greenlet is not importable by $PY"
fi
prog=$ADAPTERS/time_switches.py
sampler=$ADAPTERS/time_sampler.py

alarms=0 runs=20 untested=0
for _ in $(seq 1 $runs); do
    GR_TIME_FAULT='' "$GR_CLI" conform --profiler "$sampler" --json "$GR_WORK/ok.json" \
        -- "$PY" "$prog" >"$GR_WORK/ok.out" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then
        alarms=$((alarms + 1))
        cp "$GR_WORK/ok.out" "$GR_WORK/alarm.out"
    elif ! "$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert any(c.startswith("time per function (") for c in d["compared"]), d["compared"]' \
        "$GR_WORK/ok.json" >>"$GR_WORK/untested.out" 2>&1; then
        untested=$((untested + 1))
    fi
done
echo "      false alarms of the right time sampler: $alarms in $runs runs"
if [ $alarms -le 1 ] && [ $untested -eq 0 ]; then
    gr_ok "time: the right sampler passes, time per function compared ($alarms false alarms in $runs runs)"
else
    gr_bad "time: the right sampler: $alarms false alarms, $untested runs without the time test, in $runs runs"
    [ -f "$GR_WORK/alarm.out" ] && gr_show "$GR_WORK/alarm.out"
    [ -s "$GR_WORK/untested.out" ] && gr_show "$GR_WORK/untested.out"
fi

# FAULT KIND FUNCTION ONLY: the broken sampler fails with a difference of
# KIND naming FUNCTION (ONLY=1: and no other difference)
broken() {
    GR_TIME_FAULT=$1 "$GR_CLI" conform --profiler "$sampler" --json "$GR_WORK/$1.json" \
        -- "$PY" "$prog" >"$GR_WORK/$1.out" 2>&1
    rc=$?
    if [ $rc -eq 1 ] && "$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
kind, fn, only = sys.argv[2:5]
diffs = d["differences"]
assert any(x["kind"] == kind and x["function"] == fn for x in diffs), diffs
assert only == "0" or len(diffs) == 1, diffs' "$GR_WORK/$1.json" "$2" "$3" "$4"; then
        gr_ok "time: fault $1: $2 on $3"
    else
        gr_bad "time: fault $1: exit $rc, no $2 on $3"
        gr_show "$GR_WORK/$1.out"
    fi
}
broken share time_share time_switches.py:worker 0
broken unsampled time_unsampled time_switches.py:worker 0
broken not_running time_not_running time_switches.py:side 1
gr_tally
