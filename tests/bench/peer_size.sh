#!/usr/bin/env bash
# tests/bench/peer_size.sh [--python PY] [--last]
#
# The trace size of greenlet's own test suite recorded whole-program in
# file mode (goal: under 20 MB):
#   greenreplay record -o BUILD/bench/peer/peer.grt -- PY tests/peer/run_suite.py OUT.tsv
# then `greenreplay check -q` of the trace for its records and verdict.
# (ci/peer.sh --full runs the same recording and also compares every
# test's outcome with an unrecorded run.)  Takes about a minute.  Prints
# the figures and a GOAL line (tests/bench/goal.py), and keeps them with
# the commit and date in BUILD/bench/peer-size.txt.
# --last: print that file's figures (its commit named) instead of a run,
# for make bench BENCH_QUICK=1.  Exit status 1 when no figure came out.
set -uo pipefail
PY=/usr/bin/python3
last=
while [ $# -gt 0 ]; do
    case "$1" in
        --python) PY=$2; shift 2 ;;
        --last) last=1; shift ;;
        -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "peer_size.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
    esac
done
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${BUILD:-$top/build}
keep=$build/bench/peer-size.txt
if [ -n "$last" ]; then
    [ -s "$keep" ] || { echo "peer_size.sh: no earlier run ($keep missing): run tests/bench/peer_size.sh"; exit 1; }
    echo "peer size: the last run's figures, from $keep:"
    # The GOAL line's note names the run's commit and date.
    cat "$keep"
    exit 0
fi
out=$build/bench/peer
mkdir -p "$out"
rm -f "$out/peer.grt" "$out/recorded.tsv"*
commit=$(cd "$top" && git describe --always --dirty 2>/dev/null || echo unknown)
t0=$(date +%s)
# The suite's exit status is its own (1 when a test fails); a trace is
# what this measures.
(cd "$out" && "$build/greenreplay" record -o "$out/peer.grt" -- "$PY" "$top/tests/peer/run_suite.py" \
    "$out/recorded.tsv") >"$out/record.log" 2>&1
rc=$?
secs=$(( $(date +%s) - t0 ))
if [ ! -s "$out/peer.grt" ]; then
    echo "peer_size.sh: no trace (record exited $rc):"
    tail -5 "$out/record.log"
    exit 1
fi
bytes=$(stat -c %s "$out/peer.grt")
verdict=$("$build/greenreplay" check -q "$out/peer.grt" 2>&1 | head -1 | sed 's/^[^:]*: //')
records=$(printf '%s\n' "$verdict" | sed -n 's/.* \([0-9][0-9]*\) records.*/\1/p')
tests=$(wc -l <"$out/recorded.tsv" 2>/dev/null || echo '?')
{
    echo "greenlet's test suite ($tests tests, $("$PY" -c 'import greenlet; print("greenlet", greenlet.__version__)'))" \
        "recorded whole-program in file mode: $bytes bytes ($(awk -v b="$bytes" 'BEGIN { printf "%.2f MB", b / 1048576 }'))" \
        "for ${records:-?} records ($(awk -v b="$bytes" -v n="${records:-0}" 'BEGIN { if (n > 0) printf "%.4f", b / n; else print "?" }')" \
        "bytes per record); check: $verdict; suite exit $rc; ${secs} s (goal: under 20 MB)"
    printf 'GOAL\tpeer-size\t%s\t< 20 MB\t%s\t%s\n' \
        "$(awk -v b="$bytes" 'BEGIN { printf "%.2f MB", b / 1048576 }')" \
        "$(awk -v b="$bytes" 'BEGIN { print (b < 20 * 1048576 ? "met" : "missed") }')" \
        "${records:-?} records; check: $verdict; at $commit, $(date -u '+%Y-%m-%d %H:%M UTC')"
} | tee "$keep"
rm -f "$out/peer.grt" "$out/peer.grt.times"
