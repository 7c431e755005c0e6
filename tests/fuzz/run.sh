#!/usr/bin/env bash
# tests/fuzz/run.sh - a bounded libFuzzer run of both harnesses (`make fuzz`;
# .ci/run runs it after `make test`).
#
# usage: tests/fuzz/run.sh [--python PY]     (FUZZ_SECONDS=N, default 60)
#
# Needs the harnesses built by `make fuzz-build` (BUILD/fuzz/fuzz_trace and
# fuzz_times, clang with -fsanitize=fuzzer,address,undefined), the CLI and
# the recorder for PY.  Seed corpus:
#   - traces: the fixtures' traces of build/traces/*/ (recorded by `make
#     integration` or `make demo`); when there are fewer than 3, a few
#     fixtures are recorded here; and a small trace of compressed chunks
#     (format 1.3) after plain ones;
#   - side channels: fixtures/stall/stall.py recorded with the reference
#     sampler (hold-lock and two-phase) in a small configuration, and a
#     fixture recorded with --times; fuzz_times checks every input against
#     the hold-lock recording (GR_FUZZ_TRACE).
#   - tests/fuzz/regressions/{trace,times}: inputs of past findings, run
#     first on every run (add the input of each fixed finding there).
# New inputs are kept in BUILD/fuzz/corpus/{trace,times} for the next run.
# Each harness runs FUZZ_SECONDS/2 seconds.  A crash, a sanitizer report, a
# leak, a timeout (20 s) or an out-of-memory (2 GB) is a finding: the input
# is saved as BUILD/fuzz/findings/HARNESS-KIND-SHA1 and the run fails.
#
# Exit status: 0 no finding, 1 a finding, 2 setup failure.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
PY=/usr/bin/python3
while [ $# -gt 0 ]; do
    case $1 in
        --python) PY=$2; shift 2 ;;
        -h|--help) sed -n '2,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "usage: tests/fuzz/run.sh [--python PY]" >&2; exit 2 ;;
    esac
done
TOTAL=${FUZZ_SECONDS:-60}
case $TOTAL in ''|*[!0-9]*) echo "fuzz: FUZZ_SECONDS must be a number of seconds" >&2; exit 2 ;; esac
HALF=$(( TOTAL / 2 > 0 ? TOTAL / 2 : 1 ))
F=$BUILD/fuzz
CLI=$BUILD/greenreplay
for h in fuzz_trace fuzz_times; do
    [ -x "$F/$h" ] || { echo "fuzz: $F/$h is missing (make fuzz-build)" >&2; exit 2; }
done
[ -x "$CLI" ] || { echo "fuzz: $CLI is missing (make)" >&2; exit 2; }
mkdir -p "$F/seeds/trace" "$F/seeds/times" "$F/corpus/trace" "$F/corpus/times" "$F/findings"
GR_ROOT=$ROOT GR_CLI=$CLI GR_PY=$PY
# shellcheck source=../integration/lib.sh
. "$ROOT/tests/integration/lib.sh"

# Trace seeds.
n=0
for t in "$BUILD"/traces/*/*.grt; do
    [ -f "$t" ] || continue
    d=$(basename "$(dirname "$t")")
    cp "$t" "$F/seeds/trace/$d-$(basename "$t")"
    n=$((n + 1))
done
if [ "$n" -lt 3 ]; then
    for name in seed generators two_threads throw profile_only; do
        gr_missing_requirement "$PY" "$ROOT/fixtures/$name.py" >/dev/null || continue
        gr_record "$PY" "fixtures/$name.py" "$F/seeds/trace/$name.grt" "$F/seeds/$name.log" 60
    done
fi
# Format 1.3: compressed records chunks (256 bytes of records each) after
# plain ones (chunks too short to shrink), small enough to mutate.
out=$F/seeds/trace/compressed.grt
[ -s "$out" ] || PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH} "$PY" -c '
import sys, greenreplay
def f(i):
    return i
greenreplay.start(sys.argv[1], chunk=256)
for i in range(300):
    f(i)
greenreplay.mark("end")
greenreplay.stop()' "$out" >"$F/seeds/compressed.log" 2>&1
# Side-channel seeds.
have_gl=0
"$PY" -c 'import greenlet' 2>/dev/null && have_gl=1
if [ "$have_gl" = 1 ]; then
    for mode in hold-lock two-phase; do
        out=$F/seeds/stall-$mode.grt
        [ -s "$out.times" ] && continue
        "$CLI" record --manual -o "$out" -- "$PY" "$ROOT/fixtures/stall/stall.py" --mode "$mode" \
            --idle 4 --depth 6 --workers 2 --switches 6 --interval-us 1000 --output "$out" \
            >"$F/seeds/stall-$mode.log" 2>&1
    done
    # Format 1.3: 'T', 'W' and 'P' chunks interleaved (written during the
    # run), in 256-byte chunks.
    out=$F/seeds/interleaved.grt
    [ -s "$out.times" ] || PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH} \
        "$PY" "$ROOT/tests/integration/programs/sidechan_crash.py" "$out" stop --chunk 256 \
        --samples 3 --switches 200 >"$F/seeds/interleaved.log" 2>&1
    gr_missing_requirement "$PY" "$ROOT/fixtures/seed.py" >/dev/null &&
        (cd "$ROOT" && "$CLI" record --manual --times -o "$F/seeds/seed-times.grt" -- \
            "$PY" fixtures/seed.py) >"$F/seeds/seed-times.log" 2>&1
fi
for s in "$F"/seeds/*.times; do
    [ -f "$s" ] && cp "$s" "$F/seeds/times/$(basename "$s")"
done
GR_FUZZ_TRACE=""
[ -s "$F/seeds/stall-hold-lock.grt" ] && GR_FUZZ_TRACE=$F/seeds/stall-hold-lock.grt
export GR_FUZZ_TRACE
ntrace=$(find "$F/seeds/trace" -type f | wc -l)
ntimes=$(find "$F/seeds/times" -type f | wc -l)
echo "fuzz: $ntrace trace seeds, $ntimes side-channel seeds; ${HALF}s per harness"

status=0
for h in fuzz_trace fuzz_times; do
    kind=${h#fuzz_}
    log=$F/$h.log
    # UBSan findings abort (halt_on_error) so that libFuzzer saves the input.
    UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
    ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" \
        "$F/$h" -max_total_time="$HALF" -timeout=20 -rss_limit_mb=2560 -malloc_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$F/findings/$h-" \
        "$F/corpus/$kind" "$F/seeds/$kind" "$ROOT/tests/fuzz/regressions/$kind" >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    if [ "$rc" -ne 0 ]; then
        echo "fuzz: $h FOUND A PROBLEM (exit $rc after ${execs:-?} executions); log $log:"
        grep -E 'ERROR|runtime error|SUMMARY|Test unit written|invariant' "$log" | head -n 20 | sed 's/^/  | /'
        status=1
    else
        echo "fuzz: $h: ${execs:-?} executions in ${HALF}s, no finding (corpus $(find "$F/corpus/$kind" -type f | wc -l) inputs)"
    fi
done
exit $status
