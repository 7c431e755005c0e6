#!/usr/bin/env bash
# ci/peer.sh - greenlet's own test suite as the judge of "the recorder does
# not change what it measures" (`make peer`).
#
# usage: ci/peer.sh [OPTIONS] [MODULE...]
#
# Runs the greenlet.tests package that Debian's python3-greenlet ships
# (its leak checks need objgraph and psutil: python3-objgraph and
# python3-psutil, installed by ci/setup.sh on the host and extracted from
# the suite's .debs for a Debian root), twice in fresh processes:
#   (a) unrecorded:  PYTHON tests/peer/run_suite.py OUT/plain.tsv
#   (b) recorded:    build/greenreplay record [TRACE OPTION] -o OUT/peer.grt
#                      -- PYTHON tests/peer/run_suite.py OUT/recorded.tsv
# (whole-program recording, the default mode of `greenreplay record`), then
# compares the outcome of every test (ok, fail, error, skip, xfail, xpass)
# and lists each difference with the failure's last line.  Full tracebacks:
# OUT/{plain,recorded}.tsv.details.  Prints the two durations, the slowdown
# and the trace's size and record count (figures for docs/PERFORMANCE.md).
#
# A test whose outcome differs is run again on its own, unrecorded and
# recorded (at most --reruns of them, default 20): when both reruns agree
# it is reported as flaky (some of greenlet's memory tests, which compare
# the process's USS, fail now and then on a loaded machine, recorded or
# not).  Otherwise it is run a third time, unrecorded under a profile
# function that does nothing (run_suite.py --empty-profile, installed on
# every thread as a standard profiler is): when that run gives the
# recorded outcome with the same failure (exception type and the first
# line of its message, tests/peer/classify.py), the difference comes from
# CPython's profiling itself (any profiler changes that test, see
# docs/PERFORMANCE.md) and is reported as PROFILER, listed but not
# counted; the same outcome with another failure is the recorder's
# (RECORDER: it failed the test its own way), and so is any other
# outcome (DIFFERS).
#
# MODULE: greenlet.tests.test_x (default: all of them).
# Options:
#   --env ID        run in ci/envs.sh environment ID (e.g. trixie-3.13, a
#                   Debian root; it must be provisioned: ci/envs.sh provision
#                   ID); default: the host's /usr/bin/python3 (host-3.11)
#   --ring N        trace option (default --ring 100000): the recorder does
#                   all its work but keeps only the last N records in
#                   memory, written at exit (about 1 MB: a ring that fills
#                   soon, so greenlet's memory tests, which compare the
#                   process's USS, see it stay flat); the whole suite
#                   otherwise writes about 1.3 MB of compressed chunks
#                   (216 M records on the host's 3.11)
#   --max-size S    instead: write the trace up to S bytes (k, M, G), count
#                   the rest as dropped
#   --full          instead: the whole trace (about 1.3 MB compressed)
#   --switches MODE passive (default) or callback: `greenreplay record
#                   --switches MODE`; both must leave the suite unchanged
#   --out DIR       results (default build/peer/ID)
#   --timeout SEC   limit per run (default 900)
#   --reruns N      rerun at most N differing tests on their own (default 20)
# Environment: BUILD (as make's; default build/), GREENREPLAY_CLI.
# Prints how many events of the program the trace's check checked: in
# ring mode the recorder keeps the program's last records in the ring
# ahead of the STOP and STACK records it writes at exit; a trace with none
# (its check checked nothing) fails the run.
# Exit status: 0 both runs give every test the same outcome (but for the
# flaky and PROFILER ones, listed) and the trace's check checked events of
# the program; 1 some test differs because of the recorder, a run failed
# to produce its results, or the trace holds no event of the program; 2
# bad usage; 3 the environment or the suite's dependencies are
# unavailable.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
BUILD=$(realpath -m "${BUILD:-$ROOT/build}")   # as make's BUILD: the CLI and the host's recorder
CLI=${GREENREPLAY_CLI:-$BUILD/greenreplay}
CACHE=$(realpath -m "${GREENREPLAY_CACHE:-$HOME/.cache/greenreplay}")
RUNNER=$ROOT/tests/peer/run_suite.py
CLASSIFY=$ROOT/tests/peer/classify.py

say() { printf '%s\n' "$*"; }
die() { printf 'peer: %s\n' "$2" >&2; exit "$1"; }
usage() { sed -n '5p' "${BASH_SOURCE[0]}" | sed 's/^# //' >&2; echo "(ci/peer.sh --help for the options)" >&2; exit 2; }

ENV_ID=host-3.11 TRACE=(--ring 100000) OUT="" TIMEOUT=900 MODS=() RERUNS=20 SWITCHES=()
need() { [ $# -ge 2 ] || die 2 "$1 needs a value"; }
while [ $# -gt 0 ]; do
    case $1 in
        -h|--help) sed -n "2,$(($(grep -n '^set -uo pipefail' "${BASH_SOURCE[0]}" | cut -d: -f1) - 1))p" "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        --env) need "$@"; ENV_ID=$2; shift 2 ;;
        --ring) need "$@"; TRACE=(--ring "$2"); shift 2 ;;
        --max-size) need "$@"; TRACE=(--max-size "$2"); shift 2 ;;
        --full) TRACE=(); shift ;;
        --switches) need "$@"; SWITCHES=(--switches "$2"); shift 2 ;;
        --out) need "$@"; OUT=$(realpath -m "$2"); shift 2 ;;
        --timeout) need "$@"; TIMEOUT=$2; shift 2 ;;
        --reruns) need "$@"; RERUNS=$2; shift 2 ;;
        -*) printf 'peer: unknown option %s\n' "$1" >&2; usage ;;
        *) MODS+=("$1"); shift ;;
    esac
done
OUT=${OUT:-$ROOT/build/peer/$ENV_ID}
mkdir -p "$OUT" || die 2 "cannot create $OUT"

# ------------------------------------------------------------ interpreter
export GREENREPLAY_BINDS=${GREENREPLAY_BINDS:-}
if [ "$ENV_ID" = host-3.11 ]; then
    PY=/usr/bin/python3
    "$ROOT/ci/setup.sh" >/dev/null || die 3 "ci/setup.sh failed (python3-objgraph, python3-psutil?)"
    make -s -C "$ROOT" all PYTHON=$PY BUILD="$BUILD" >"$OUT/make.log" 2>&1 || { cat "$OUT/make.log" >&2; die 2 "make all failed"; }
else
    make -s -C "$ROOT" cli BUILD="$BUILD" >"$OUT/make.log" 2>&1 || { cat "$OUT/make.log" >&2; die 2 "make cli failed"; }
    "$ROOT/ci/envs.sh" build "$ENV_ID" >"$OUT/build.log" 2>&1 ||
        { tail -n 5 "$OUT/build.log" >&2; die 3 "cannot build the recorder for $ENV_ID (ci/envs.sh provision $ENV_ID; log $OUT/build.log)"; }
    # Its stderr is the reason when it fails (not provisioned, no root...),
    # else a note (built but not smoke-tested): passed on either way.
    PY=$("$ROOT/ci/envs.sh" python "$ENV_ID" 2>"$OUT/envs-python.err")
    rc=$?
    if [ $rc -ne 0 ] || [ -z "$PY" ]; then
        why=$(sed -n 's/^envs: //; $p' "$OUT/envs-python.err")
        die 3 "ci/envs.sh python $ENV_ID: ${why:-exit status $rc, no interpreter printed (ci/envs.sh list)}"
    fi
    sed "s|^envs: |peer: ci/envs.sh python $ENV_ID: |" "$OUT/envs-python.err" >&2
    export GREENREPLAY_PYTHONPATH
    GREENREPLAY_PYTHONPATH=$(dirname "$(dirname "$PY")")/build/python
    # A Debian root: its suite's python3-objgraph and python3-psutil,
    # fetched with the suite's own apt configuration (ci/envs.sh made it)
    # and extracted into the cache, then bound into the root.
    suite=$(awk -v id="$ENV_ID" '$1 == id && $2 == "root" { print $4 }' "$ROOT/ci/envs.conf")
    if [ -n "$suite" ] && ! "$PY" -c 'import objgraph, psutil' >/dev/null 2>&1; then
        deps=$CACHE/peer/$suite
        if [ ! -f "$deps.stamp" ]; then
            [ -f "$CACHE/apt/$suite/apt.conf" ] || die 3 "no apt configuration for $suite ($CACHE/apt/$suite; ci/envs.sh provision $ENV_ID)"
            rm -rf "$deps" && mkdir -p "$deps/debs" || die 3 "cannot create $deps"
            (cd "$deps/debs" && APT_CONFIG=$CACHE/apt/$suite/apt.conf apt-get download -q python3-objgraph python3-psutil) \
                >"$OUT/deps.log" 2>&1 || { tail -n 5 "$OUT/deps.log" >&2; die 3 "cannot download python3-objgraph/python3-psutil for $suite"; }
            for d in "$deps"/debs/*.deb; do dpkg -x "$d" "$deps" || die 3 "cannot extract $d"; done
            ls "$deps"/debs >"$deps.stamp"
        fi
        GREENREPLAY_BINDS=$deps${GREENREPLAY_BINDS:+:$GREENREPLAY_BINDS}
        export PYTHONPATH=$deps/usr/lib/python3/dist-packages${PYTHONPATH:+:$PYTHONPATH}
    fi
fi
[ -x "$CLI" ] || die 2 "$CLI is missing (make)"
if ! err=$(cd "$OUT" && "$PY" -c 'import greenlet.tests, objgraph, psutil' 2>&1); then
    die 3 "$ENV_ID cannot run greenlet's test suite: $(printf '%s\n' "$err" | tail -n 1)"
fi
versions=$(cd "$OUT" && "$PY" -c 'import sys, greenlet; print("Python %s, greenlet %s" % (sys.version.split()[0], greenlet.__version__))')

# ------------------------------------------------------------------ runs
# run NAME CMD...: CMD in OUT with a limit; sets DUR (seconds) and RC.
run() {
    local name=$1; shift
    local t0 t1
    t0=$(date +%s.%N)
    (cd "$OUT" && timeout --kill-after=10 "$TIMEOUT" "$@") >"$OUT/$name.log" 2>&1
    RC=$?
    t1=$(date +%s.%N)
    DUR=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
}
rm -f "$OUT"/plain.tsv* "$OUT"/recorded.tsv* "$OUT/peer.grt"
say "peer: greenlet's test suite in $ENV_ID ($versions)"
run plain "$PY" "$RUNNER" "$OUT/plain.tsv" "${MODS[@]}"
PLAIN_RC=$RC PLAIN_S=$DUR
say "  unrecorded: exit $PLAIN_RC in ${PLAIN_S}s ($(tail -n 1 "$OUT/plain.log"))"
run recorded "$CLI" record "${TRACE[@]}" "${SWITCHES[@]}" -o "$OUT/peer.grt" -- "$PY" "$RUNNER" "$OUT/recorded.tsv" "${MODS[@]}"
REC_RC=$RC REC_S=$DUR
say "  recorded:   exit $REC_RC in ${REC_S}s ($(tail -n 1 "$OUT/recorded.log")); trace option: ${TRACE[*]:-none (whole trace)}${SWITCHES[*]:+; ${SWITCHES[*]}}"
bytes=$(stat -c %s "$OUT/peer.grt" 2>/dev/null || echo 0)
"$CLI" check "$OUT/peer.grt" >"$OUT/check.txt" 2>&1
summary=$(head -n 1 "$OUT/check.txt" | sed 's/^== [^:]*: //')
# Ring mode: the records before the kept ones are counted in a warning.
kept=$(head -n 1 "$OUT/check.txt" | sed -n 's/.*: \([0-9]*\) records.*/\1/p')
earlier=$(sed -n 's/.*ring mode: \([0-9]*\) earlier records were dropped.*/\1/p' "$OUT/check.txt" | head -n 1)
if [ -n "$earlier" ] && [ -n "$kept" ] && [ "$kept" -gt 0 ]; then
    summary="$summary; $((earlier + kept)) records in all, a whole trace of about $(awk -v b="$bytes" -v k="$kept" -v n="$((earlier + kept))" 'BEGIN { printf "%.0f MB", b / k * n / 1048576 }') at the ring's $(awk -v b="$bytes" -v k="$kept" 'BEGIN { printf "%.1f", b / k }') bytes per record"
fi
say "  slowdown:   $(awk -v a="$PLAIN_S" -v b="$REC_S" 'BEGIN { if (a > 0) printf "%.1fx", b / a; else print "?" }')"
say "  trace:      $bytes bytes ($(awk -v b="$bytes" 'BEGIN { printf "%.1f MB", b / 1048576 }')); ${summary:-unreadable}"
# What the trace's check checked: events of the program (a ring whose
# records were all the recorder's own checks nothing; the recorder keeps
# the program's last records in the ring before the STACKs of stop).
"$CLI" check --format json "$OUT/peer.grt" >"$OUT/check.json" 2>/dev/null
progev=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["traces"][0]["coverage"]["program_events"])' \
    "$OUT/check.json" 2>/dev/null)
CHECKED_NOTHING=0
if [ "${progev:-0}" -gt 0 ] 2>/dev/null; then
    say "  checked:    $progev events of the program"
else
    say "  checked:    no event of the program: the trace's check checked nothing (${progev:-no JSON report})"
    CHECKED_NOTHING=1
fi

# ------------------------------------------------------------- compare
for f in plain recorded; do
    [ -s "$OUT/$f.tsv" ] || { say "peer: the $f run wrote no results (exit status ${PLAIN_RC}/${REC_RC}; log $OUT/$f.log)"; exit 1; }
done
/usr/bin/python3 - "$OUT/plain.tsv" "$OUT/recorded.tsv" "$OUT/differences.txt" <<'EOF'
import sys
def load(p):
    out = {}
    with open(p, encoding="utf-8") as f:
        for line in f:
            tid, outcome, detail = (line.rstrip("\n").split("\t") + ["", ""])[:3]
            out[tid] = (outcome, detail)
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
diff = []
for tid in sorted(set(a) | set(b)):
    oa, ob = a.get(tid, ("missing", "")), b.get(tid, ("missing", ""))
    if oa[0] != ob[0]:
        diff.append("%s: %s unrecorded, %s recorded%s" % (tid, oa[0], ob[0], ": " + ob[1] if ob[1] else ""))
def counts(d):
    c = {}
    for o, _ in d.values():
        c[o] = c.get(o, 0) + 1
    return ", ".join("%d %s" % (n, o) for o, n in sorted(c.items()))
print("  tests:      %d; unrecorded: %s; recorded: %s" % (len(set(a) | set(b)), counts(a), counts(b)))
with open(sys.argv[3], "w", encoding="utf-8") as f:
    f.write("".join(d + "\n" for d in diff))
EOF
[ -f "$OUT/differences.txt" ] || exit 1
ndiff=$(grep -c . "$OUT/differences.txt")
if [ "$ndiff" -eq 0 ]; then
    say "peer: every test has the same outcome recorded and unrecorded"
    [ "$CHECKED_NOTHING" = 0 ] || say "peer: but the trace holds no event of the program to check"
    exit "$CHECKED_NOTHING"
fi
# Rerun each differing test on its own (TEST_ID is module.Class.method,
# which unittest loads by name), both ways.
real=0 flaky=0 prof=0 i=0
: >"$OUT/verdicts.txt"
while IFS= read -r line; do
    tid=${line%%: *}
    i=$((i + 1))
    if [ "$i" -gt "$RERUNS" ]; then
        printf 'DIFFERS  %s (not rerun: more than %s differences)\n' "$line" "$RERUNS" >>"$OUT/verdicts.txt"
        real=$((real + 1)); continue
    fi
    run rerun-plain "$PY" "$RUNNER" "$OUT/rerun-plain.tsv" "$tid"
    run rerun-recorded "$CLI" record "${TRACE[@]}" "${SWITCHES[@]}" -o "$OUT/rerun.grt" -- "$PY" "$RUNNER" "$OUT/rerun-recorded.tsv" "$tid"
    a=$(cut -f2 "$OUT/rerun-plain.tsv" 2>/dev/null | head -n 1)
    b=$(cut -f2 "$OUT/rerun-recorded.tsv" 2>/dev/null | head -n 1)
    if [ -n "$a" ] && [ "$a" = "$b" ]; then
        printf 'FLAKY    %s (alone: %s both ways)\n' "$line" "$a" >>"$OUT/verdicts.txt"
        flaky=$((flaky + 1))
    else
        run rerun-profiled "$PY" "$RUNNER" --empty-profile "$OUT/rerun-profiled.tsv" "$tid"
        c=$(cut -f2 "$OUT/rerun-profiled.tsv" 2>/dev/null | head -n 1)
        # The same outcome is not enough: the failure itself (its type and
        # the first line of its message) must be the same too.
        class=$(/usr/bin/python3 "$CLASSIFY" "$OUT/rerun-recorded.tsv" "$OUT/rerun-profiled.tsv")
        if [ "$class" = PROFILER ]; then
            printf 'PROFILER %s (alone: %s unrecorded, %s recorded, %s under an empty profile function without the recorder: %s)\n' \
                "$line" "${a:-nothing}" "$b" "$c" "$(cut -f3 "$OUT/rerun-profiled.tsv" 2>/dev/null | head -n 1)" >>"$OUT/verdicts.txt"
            prof=$((prof + 1))
        elif [ -n "$b" ] && [ "$c" = "$b" ]; then
            printf 'RECORDER %s (alone: %s unrecorded, %s recorded and under an empty profile function, but %s)\n' \
                "$line" "${a:-nothing}" "$b" "${class#RECORDER }" >>"$OUT/verdicts.txt"
            real=$((real + 1))
        else
            printf 'DIFFERS  %s (alone: %s unrecorded, %s recorded: %s; %s under an empty profile function)\n' "$line" "${a:-nothing}" "${b:-nothing}" \
                "$(cut -f3 "$OUT/rerun-recorded.tsv" 2>/dev/null | head -n 1)" "${c:-nothing}" >>"$OUT/verdicts.txt"
            real=$((real + 1))
        fi
    fi
    rm -f "$OUT"/rerun-*.tsv* "$OUT/rerun.grt"
done <"$OUT/differences.txt"
sed 's/^/  /' "$OUT/verdicts.txt"
if [ "$real" -gt 0 ]; then
    say "peer: $real test(s) differ under recording ($flaky flaky, $prof changed by any profile function); list in $OUT/verdicts.txt"
    exit 1
fi
say "peer: same outcomes recorded and unrecorded, but for $flaky flaky test(s) that agreed when rerun alone and $prof that an empty profile function without the recorder changes the same way (PROFILER)"
[ "$CHECKED_NOTHING" = 0 ] || say "peer: but the trace holds no event of the program to check"
exit "$CHECKED_NOTHING"
