#!/bin/sh
# The time-per-function test of `greenreplay conform` (docs/conform.md,
# "Time per function"): how often it flags a correct sampling profiler
# (false alarms) and how often it catches a broken one, over N runs.
# Prints figures beside the goals; never fails on them (not a timed test).
# The adapters run with GR_TIME_SAMPLES=1, which makes a built-in
# sampling adapter's results opt in to the test ("time_samples").
#
#   tests/bench/conform_time_alarms.sh [-n RUNS] [-e ENV] [-p PROFILER] [PROGRAM]
#
# Defaults: 20 runs, sid-3.14, pyinstrument,
# tests/integration/conform/sampled_switches.py.  The broken adapter is
# tests/integration/conform/sampled_broken.py over the same profiler
# (its greenlets' samples put on the switching frame).
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
runs=20 env=sid-3.14 prof=pyinstrument
while getopts n:e:p: o; do
    case $o in
        n) runs=$OPTARG ;;
        e) env=$OPTARG ;;
        p) prof=$OPTARG ;;
        *) echo "usage: $0 [-n RUNS] [-e ENV] [-p PROFILER] [PROGRAM]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
prog=${1:-$here/tests/integration/conform/sampled_switches.py}
"$here/ci/envs.sh" provision "$env" >/dev/null 2>&1 || { echo "cannot provision $env" >&2; exit 2; }
py=$("$here/ci/envs.sh" python "$env")
gr=$here/build/greenreplay
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count() { # ADAPTER LABEL: runs flagged by a time_* difference, runs in error
    flagged=0 errors=0 i=0
    while [ "$i" -lt "$runs" ]; do
        i=$((i + 1))
        GR_TIME_SAMPLES=1 GR_SAMPLED_BASE=$prof GR_PROFILERS_DIR=$here/tracer/greenreplay/profilers \
            "$gr" conform --profiler "$1" --json "$tmp/v.json" -- "$py" "$prog" >"$tmp/out" 2>&1
        rc=$?
        if [ "$rc" -ge 2 ]; then
            errors=$((errors + 1))
        elif grep -q '^time_' "$tmp/out"; then
            flagged=$((flagged + 1))
        fi
    done
    echo "$2: $flagged of $runs runs flagged by time per function ($errors in error)"
}
echo "conform time per function: $prof on $env, $(basename "$prog"), $runs runs each"
count "$prof" "correct $prof (goal: 0 flagged; the test's family-wise rate is 0.001 per run)"
count "$here/tests/integration/conform/sampled_broken.py" "broken adapter (goal: every run flagged)"
