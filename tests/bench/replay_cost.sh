#!/usr/bin/env bash
# tests/bench/replay_cost.sh [--events N] [--workers N] [--cli PATH]
#
# The replayer's figures on a large synthetic trace (tests/bench/gentrace.c,
# a hub switching to WORKERS greenlets that run nested calls; the trace is
# clean):
#   - `check`: peak memory (ru_maxrss, GNU time's %M) and events/s;
#   - `stats`: peak memory and events/s;
#   - `dump` (to /dev/null): peak memory and events/s;
#   - `diff` of the trace with itself, and with its first half (a copy cut
#     in the middle, cached beside it): peak memory and records of the
#     trace per second;
#   - `script` under a 1 GB address-space cap: peak memory and
#     records/s;
# each printed with its goal (check on a 100 M-event trace under
# 300 MB and at 100 M events/s or more, single-threaded; dump at 10 M
# events/s or more; diff and script under 300 MB and at 10 M records/s or
# more; script completes under the cap), and whether it was met.
# events/s is records / wall time; the CPU time (user+sys) is printed
# beside it, since this machine is shared: a rate goal missed in wall time
# but met in CPU time says so, with the load average.  A benchmark: it
# prints figures and asserts nothing (exit 0 unless a step fails to run).
#
# The trace is cached in ~/.cache/greenreplay/bench/synth-EVENTS-WORKERS-HASH.grt
# (made once, never committed; remove the directory to free the space).
set -euo pipefail
EVENTS=100000000
WORKERS=1000
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${BUILD:-$top/build}
CLI=$build/greenreplay
while [ $# -gt 0 ]; do
    case "$1" in
        --events) EVENTS=$2; shift 2 ;;
        --workers) WORKERS=$2; shift 2 ;;
        --cli) CLI=$2; shift 2 ;;
        -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "replay_cost.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
    esac
done
gen=$build/bench/gentrace
[ -x /usr/bin/time ] || { echo "replay_cost.sh: /usr/bin/time missing (ci/setup.sh installs Debian's time)" >&2; exit 2; }
cache=${XDG_CACHE_HOME:-$HOME/.cache}/greenreplay/bench
mkdir -p "$cache"
# The name carries a hash of the generator's source and of the encoder it
# writes with (the format's compact records, docs/FORMAT.md §4.1): a changed
# generator or encoding makes a new trace (remove the old ones by hand).
src=$(cat "$here/gentrace.c" "$top/tracer/format.h" "$top/tracer/writer.c" \
    "$top/replay/read/encode.c" | sha256sum | cut -c1-8)
trace=$cache/synth-$EVENTS-$WORKERS-$src.grt
if [ ! -s "$trace" ]; then
    [ -x "$gen" ] || { echo "replay_cost.sh: $gen missing (make $gen)" >&2; exit 2; }
    echo "replay: generating $trace ..."
    "$gen" "$trace.tmp" "$EVENTS" "$WORKERS" >/dev/null
    mv "$trace.tmp" "$trace"
fi

# Run CMD..., output to /dev/null; print "wall cpu maxrss_kb" (GNU time:
# the child's ru_maxrss, from a small parent, so no interpreter's pages).
measure() {
    local f rc=0
    f=$(mktemp)
    /usr/bin/time -o "$f" -f '%e %U %S %M' "$@" >/dev/null || rc=$?
    if [ "$rc" -gt 1 ]; then
        echo "replay_cost.sh: $* exited $rc" >&2
        rm -f "$f"
        return 1
    fi
    awk 'END { printf "%s %.3f %s\n", $1, $2 + $3, $4 }' "$f"
    rm -f "$f"
}

records=$("$CLI" stats --format json "$trace" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["records"])')
bytes=$(stat -c %s "$trace")
verdict=$("$CLI" check -q "$trace" 2>&1 | head -1 || true)
calc() { awk "BEGIN { print $1 }"; }
printf 'replay: %s records, %s bytes (%.2f bytes/record), %s\n' "$records" "$bytes" \
    "$(calc "$bytes / $records")" "$verdict"
load() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?'; }
printf 'machine: %s, %s CPUs, load average %s; %s\n' "$(uname -m)" "$(nproc)" "$(load)" \
    "$(date -u +%Y-%m-%d)"
line() { # NAME GOAL_MB GOAL_MEVS wall cpu kb
    local name=$1 goal_mb=$2 goal_rate=$3 wall=$4 cpu=$5 kb=$6
    local mb rate crate mem_goal rate_goal
    mb=$(calc "$kb / 1024")
    rate=$(calc "$records / $wall / 1000000")
    crate=$(calc "$records / ($cpu > 0 ? $cpu : 0.001) / 1000000")
    mem_goal=""
    [ "$goal_mb" = - ] ||
        mem_goal=" (goal < $goal_mb MB: $(awk "BEGIN { print ($mb < $goal_mb ? \"met\" : \"missed\") }"))"
    rate_goal=""
    [ "$goal_rate" = - ] ||
        rate_goal=" (goal >= $goal_rate M/s: $(awk "BEGIN { w = $rate >= $goal_rate; c = $crate >= $goal_rate;
            print (w ? \"met\" : c ? \"missed in wall time, met in CPU time (load average $(load))\" : \"missed\") }"))"
    printf '  %-6s peak %7.1f MB%s  %6.1f M events/s (wall %.2f s; %.1f M/s of CPU, %.2f s)%s\n' \
        "$name" "$mb" "$mem_goal" "$rate" "$wall" "$crate" "$cpu" "$rate_goal"
    goal_lines "$name" "$mb" "$goal_mb" "$rate" "$crate" "$goal_rate"
}
# goal_lines NAME MB GOAL_MB RATE CPU_RATE GOAL_RATE: the GOAL lines of
# tests/bench/goal.py, kept in $goals and printed at the end; a rate is
# judged in wall time.
goals=""
goal_lines() {
    [ "$3" = - ] || goals+=$(awk -v n="$1" -v m="$2" -v g="$3" -v r="$records" 'BEGIN {
        printf "GOAL\t%s-mem\t%.1f MB\t< %d MB\t%s\tpeak RSS, %d records\n", n, m, g, (m < g ? "met" : "missed"), r }')$'\n'
    [ "$6" = - ] || goals+=$(awk -v n="$1" -v w="$4" -v c="$5" -v g="$6" -v l="$(load)" 'BEGIN {
        printf "GOAL\t%s-rate\t%.1f M records/s\t>= %d M/s\t%s\twall time; %.1f M/s of CPU time%s; load average %s\n",
            n, w, g, (w >= g ? "met" : "missed"), c, (w < g && c >= g ? " (met in CPU time)" : ""), l }')$'\n'
}
read -r w c k < <(measure "$CLI" check "$trace")
line check 300 100 "$w" "$c" "$k"
read -r w c k < <(measure "$CLI" stats "$trace")
line stats - - "$w" "$c" "$k"
read -r w c k < <(measure "$CLI" dump "$trace")
line dump - 10 "$w" "$c" "$k"
# diff streams both traces (diff_stream.h): the trace against itself (same
# structure: the lockstep pass), and against its first half (the second
# half of A is past B's end: the window pass, and the tail note).  Rates
# are records of A per second.
read -r w c k < <(measure "$CLI" diff "$trace" "$trace")
line diff 300 10 "$w" "$c" "$k"
half=$cache/$(basename "$trace" .grt)-half.grt
if [ ! -s "$half" ]; then
    head -c $((bytes / 2)) "$trace" >"$half.tmp"
    mv "$half.tmp" "$half"
fi
read -r w c k < <(measure "$CLI" diff "$trace" "$half")
line diff/2 300 10 "$w" "$c" "$k"
# script on the same trace, under a 1 GB address-space cap: it spills
# dead greenlets and its defs to two temporary files (in $TMPDIR, else
# /tmp: together about half the program's size, some 20 bytes per record
# of this trace, 2 GB at 100 M) and writes the program (here to
# /dev/null) at the end.
# Goals: completes under the cap, peak under 300 MB, >= 10 M records/s.
read -r w c k < <(measure bash -c 'ulimit -v 1000000 && exec "$0" script -q -o /dev/null "$1"' \
    "$CLI" "$trace" || echo "- - -")
if [ "$w" = - ]; then
    echo "  script did not complete under a 1 GB address-space cap (goal: it does): missed"
    goals+=$(printf 'GOAL\tscript-mem\tdid not complete\t< 300 MB, under a 1 GB cap\tmissed\t')$'\n'
else
    line script 300 10 "$w" "$c" "$k"
    echo "  script completed under a 1 GB address-space cap (goal: it does): met"
fi
# stats is bounded by the live greenlets when its peak memory stays flat
# from the first half of the trace (about half the greenlets ever seen,
# the same live ones) to the whole (goal: at most 1.25x).
read -r w c k2 < <(measure "$CLI" stats "$half")
read -r w c k < <(measure "$CLI" stats "$trace")
awk -v a="$k2" -v b="$k" 'BEGIN {
    printf "  stats  peak %.1f MB on the whole trace, %.1f MB on its first half: %.2fx (goal: bounded by the live greenlets, <= 1.25x)\n", b / 1024, a / 1024, b / a
    printf "GOAL\tstats-bounded\t%.2fx (%.1f against %.1f MB)\t<= 1.25x\t%s\twhole trace against its first half: the same live greenlets, twice those ever seen\n", b / a, b / 1024, a / 1024, (b <= 1.25 * a ? "met" : "missed") }'
printf '\n%s' "$goals"
