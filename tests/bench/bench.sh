#!/usr/bin/env bash
# tests/bench/bench.sh [--python PY] [--events N] [--quick]  (make bench)
#
# Every benchmark of the performance goals in one run, then one summary of
# the goals: BUILD/bench/summary.md, a markdown table goal | figure |
# target | verdict | note | command, headed by the commit (git describe
# --always --dirty), the date, the host's load average at the start and the
# end, the Python, greenlet and gevent versions and the total time
# (tests/bench/summary.py gathers the GOAL lines each part prints).
# Parts, in this order, each one's output shown and kept in
# BUILD/bench/log/PART.log:
#   run           tests/bench/run.sh: profile-event cost, trace sizes, the
#                 writer's and compression's cost, switch path, sampler
#   side          tests/bench/side_by_side.py: four workloads under no
#                 profiler, the empty C profile function, greenreplay,
#                 cProfile, yappi and coverage
#   instr-events  tests/bench/instr_cost.sh, call-heavy loop and a thread
#                 pool's worker, instructions per event
#   instr-switch  tests/bench/instr_cost.sh, ping-pong and a hub over 10,
#                 100 and 10,000 greenlets, instructions per switch
#   replay        tests/bench/replay_cost.sh on an N-event synthetic trace
#   peer          tests/bench/peer_size.sh: greenlet's test suite recorded
#                 whole-program in file mode
# --quick (make bench BENCH_QUICK=1): smaller sizes and fewer workloads,
# a 10 M-event trace, and the peer figure read from peer_size.sh's last
# run (BUILD/bench/peer-size.txt, with its commit) instead of a new one.
# A part that fails does not stop the others; its goals are listed as not
# measured.  Exit status 1 when a part failed or a goal was not measured.
set -uo pipefail
PY=/usr/bin/python3
EVENTS=100000000
quick=${BENCH_QUICK:-}
[ "$quick" = 0 ] && quick=
while [ $# -gt 0 ]; do
    case "$1" in
        --python) PY=$2; shift 2 ;;
        --events) EVENTS=$2; shift 2 ;;
        --quick) quick=1; shift ;;
        -h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
    esac
done
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cd "$top" || exit 2
BUILD=$(realpath -m "${BUILD:-build}")
export BUILD
log=$BUILD/bench/log
rm -rf "$log"
mkdir -p "$log"

loadavg() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?'; }
t0=$(date +%s)
{
    printf 'commit\t%s\n' "$(git describe --always --dirty 2>/dev/null || echo unknown)"
    printf 'date\t%s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')"
    if [ -n "$quick" ]; then
        printf 'mode\tquick run (smaller sizes, fewer workloads; not the figures of record)\n'
    else
        printf 'mode\tfull run\n'
    fi
    printf 'command\t%s\n' "make bench${quick:+ BENCH_QUICK=1}"
    printf 'script\t%s\n' "tests/bench/bench.sh --python $PY --events $EVENTS${quick:+ --quick}"
    printf 'load_start\t%s\n' "$(loadavg)"
    printf 'cpu\t%s\n' "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)"
    printf 'cpus\t%s\n' "$(nproc)"
    printf 'versions\t%s\n' "$("$PY" - <<'EOF'
import platform, sys
def v(m):
    try:
        return __import__(m).__version__
    except ImportError:
        return "not importable"
print("Python %s (%s), greenlet %s, gevent %s" % (platform.python_version(), sys.executable,
                                                  v("greenlet"), v("gevent")))
EOF
)"
} >"$log/meta.tsv"

failed=0
# part NAME COMMAND...: run it, its output to the terminal and PART.log.
part() {
    local name=$1 s rc
    shift
    echo
    echo "=== $name: $*"
    printf '%s\n' "$*" >"$log/$name.cmd"
    s=$(date +%s)
    "$@" 2>&1 | tee "$log/$name.log"
    rc=${PIPESTATUS[0]}
    echo "$rc" >"$log/$name.rc"
    echo $(( $(date +%s) - s )) >"$log/$name.sec"
    [ "$rc" = 0 ] || { echo "=== $name: exit status $rc"; failed=1; }
}

if [ -n "$quick" ]; then
    part run tests/bench/run.sh --python "$PY" --repeat 2
    part side "$PY" tests/bench/side_by_side.py --quick
    part instr-events tests/bench/instr_cost.sh --python "$PY" --only profile --modes "none empty passive"
    part instr-switch tests/bench/instr_cost.sh --python "$PY" --only "switch hub10" --modes "empty passive"
    part replay tests/bench/replay_cost.sh --events 10000000
    part peer tests/bench/peer_size.sh --python "$PY" --last
else
    part run tests/bench/run.sh --python "$PY"
    part side "$PY" tests/bench/side_by_side.py
    part instr-events tests/bench/instr_cost.sh --python "$PY" --only "profile pool" --modes "none empty passive"
    part instr-switch tests/bench/instr_cost.sh --python "$PY" --only "switch hub10 hub100 hub10000" \
        --modes "empty passive"
    part replay tests/bench/replay_cost.sh --events "$EVENTS"
    part peer tests/bench/peer_size.sh --python "$PY"
fi

t=$(( $(date +%s) - t0 ))
{
    printf 'load_end\t%s\n' "$(loadavg)"
    printf 'total\t%d min %d s\n' $((t / 60)) $((t % 60))
} >>"$log/meta.tsv"
echo
echo "=== summary: $BUILD/bench/summary.md (docs/PERFORMANCE.md: make bench-doc pastes it)"
"$PY" "$here/summary.py" "$log" "$BUILD/bench/summary.md" || failed=1
exit "$failed"
