#!/usr/bin/env bash
# tests/bench/instr_cost.sh [--python PY] [--only "profile pool switch hub10 hub100 hub10000"] [--modes "none empty passive plain every callback"]
#
# Instruction counts of the recorder's hot paths, independent of the
# machine's load: each workload of tests/bench/instr_one.py runs under
# `valgrind --tool=callgrind` at two sizes, and the difference of the
# process's user-space instructions between them, divided by the difference
# of work (profile events, or switches), is the cost per unit (start-up,
# imports, start()/stop() and first sight of each code object cancel out).
# Workloads: profile (a call-heavy loop), pool (the same loop in a thread
# pool's worker that never uses greenlet), switch (ping-pong round trips
# between two greenlets), hubK (a Python-level hub switching round-robin
# to K greenlets, each switching straight back).
# Modes: none, empty (the empty C profile function), passive (the default
# recorder), plain (passive writing uncompressed chunks: compress=False),
# every (passive, a real stack at every switch: switch_stacks="every"),
# callback.  With passive and plain, a line after each table gives the
# chunk compression's own instructions per unit (passive less plain).
# Prints a table per workload (instructions per profile event over no
# profiler, or per switch, each against the empty C profile function) with
# its goal, and for the empty function and the passive modes the
# instructions run inside the profile function itself (callgrind
# --toggle-collect: the recorder's own share, independent of where the
# interpreter's and greenlet's allocations land).  The callgrind files of
# the larger size are kept in BUILD/bench/instr/WORKLOAD-MODE.out for
# callgrind_annotate.  Takes about 10 minutes for profile and switch
# (valgrind runs Python about 50 times slower), more with the others.  Needs valgrind.
# Prints figures; asserts nothing; exit 0, or 2 on bad arguments.
set -euo pipefail
PY=/usr/bin/python3
only="profile pool switch hub10 hub100 hub10000"
modes="none empty passive plain every callback"
while [ $# -gt 0 ]; do
    case "$1" in
        --python) PY=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
        --modes) modes=$2; shift 2 ;;
        -h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "instr_cost.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${BUILD:-$top/build}
out=$build/bench/instr
mkdir -p "$out"
inc=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
suffix=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
${CC:-cc} -O2 -fPIC -shared -I"$inc" -o "$build/bench/emptyprof$suffix" "$here/emptyprof.c"
export PYTHONPATH="$build/bench:$build/python"
# A fixed hash seed: dictionary probes depend on it, and every run of one
# build should count the same instructions.  (What still moves the whole
# process's count between builds is where things land in memory:
# docs/PERFORMANCE.md, "Continued switches".)
export PYTHONHASHSEED=0

# args WORKLOAD: instr_one.py's arguments for a workload (hubK: hub, K).
args() {
    case "$1" in
        hub*) echo "--workload hub --greenlets ${1#hub}" ;;
        *) echo "--workload $1" ;;
    esac
}

# instructions WORKLOAD MODE N [FUNCTION]: total user-space instructions of
# one run; with FUNCTION, only those executed inside it and what it calls
# (callgrind --toggle-collect).
instructions() {
    local f="$out/$1-$2-$3${4:+-own}.out"
    # shellcheck disable=SC2046
    valgrind --tool=callgrind ${4:+--toggle-collect=$4} --callgrind-out-file="$f" "$PY" "$here/instr_one.py" \
        $(args "$1") --mode "$2" --n "$3" --out "$out/trace.grt" >"$out/stdout" 2>"$out/stderr" ||
        { echo "instr_cost.sh: callgrind run $1 $2 $3 failed:" >&2; tail -3 "$out/stderr" >&2; exit 1; }
    awk '/^(summary|totals):/ {print $2; exit}' "$f"
}

# table WORKLOAD N1 N2 UNIT: one row per mode.
table() {
    local w=$1 n1=$2 n2=$3 unit=$4 work
    if [ "$unit" = event ]; then
        # Profile events: counted by the empty C profile function.
        # shellcheck disable=SC2046
        "$PY" "$here/instr_one.py" $(args "$w") --mode empty --n "$n1" >"$out/e1"
        # shellcheck disable=SC2046
        "$PY" "$here/instr_one.py" $(args "$w") --mode empty --n "$n2" >"$out/e2"
        work=$(( $(cat "$out/e2") - $(cat "$out/e1") ))
    else
        case "$w" in
            hub*) work=$(( 2 * ${w#hub} * (n2 - n1) )) ;; # a round: 2 switches per worker
            *) work=$(( 2 * (n2 - n1) )) ;; # a round trip is two switches
        esac
    fi
    echo "| $w workload, sizes $n1 and $n2 ($work $unit apart) | instructions per $unit | over no profiler | vs empty C profile function | inside the profile function |"
    echo "|---|---:|---:|---:|---:|"
    local none="" empty="" m a b per over num rel zdiff="" zown=""
    for m in $modes; do
        a=$(instructions "$w" "$m" "$n1")
        b=$(instructions "$w" "$m" "$n2")
        # Compression's share: passive's instructions less plain's.
        case "$m" in passive) zdiff="${zdiff}+$((b - a))" ;; plain) zdiff="${zdiff}-$((b - a))" ;; esac
        mv "$out/$w-$m-$n2.out" "$out/$w-$m.out"
        rm -f "$out/$w-$m-$n1.out"
        per=$(( (b - a) / work ))
        [ "$m" = none ] && none=$per
        over=""; [ -n "$none" ] && over=$(( per - none ))
        # Events: the cost over no profiler against the empty function's;
        # switches: the whole switch against the empty function's switch.
        [ "$m" = empty ] && { if [ "$unit" = event ]; then empty=$over; else empty=$per; fi; }
        rel=""
        if [ -n "$empty" ] && [ "$m" != none ]; then
            if [ "$unit" = event ]; then num=$over; else num=$per; fi
            rel=$(awk -v o="$num" -v e="$empty" 'BEGIN {printf "%.2fx", o / e}')
        fi
        # The profile function's own share: what runs inside it (the
        # recorder's gr_profile with everything it calls: greenlet's C API,
        # the chunk writes), not CPython's cost of calling it.
        local fn="" own=""
        case "$m" in empty) fn=empty_profile ;; passive|plain|every) fn=gr_profile ;; esac
        if [ -n "$fn" ]; then
            a=$(instructions "$w" "$m" "$n1" "$fn")
            b=$(instructions "$w" "$m" "$n2" "$fn")
            rm -f "$out/$w-$m-$n1-own.out" "$out/$w-$m-$n2-own.out"
            own=$(( (b - a) / work ))
            case "$m" in passive) zown="${zown}+$((b - a))" ;; plain) zown="${zown}-$((b - a))" ;; esac
        fi
        echo "| $m | $per | $over | $rel | $own |"
        [ "$m" != passive ] || [ -z "$rel" ] || goal_line "$w" "$unit" "$num" "$empty" "$own"
    done
    case "$zdiff" in
        *+*-*|*-*+*)
            awk -v d="$(( zdiff ))" -v o="$(( zown ))" -v n="$work" -v u="$unit" 'BEGIN {
                printf "chunk compression (zstd level 1), passive less plain: %.2f instructions per %s in the whole process, %.2f inside the profile function (goal: measured and printed)\n", d / n, u, o / n }' ;;
    esac
}

# goal_line WORKLOAD UNIT PASSIVE EMPTY OWN: the GOAL line of the passive
# recorder against the empty function (tests/bench/goal.py): per event
# over no profiler, or the whole switch; kept in $goals, printed at the end.
goals=""
goal_line() {
    local limit=1.15
    [ "$1" = pool ] && limit=1.20
    goals+=$(awk -v w="$1" -v u="$2" -v p="$3" -v e="$4" -v o="$5" -v l="$limit" 'BEGIN {
        printf "GOAL\t%s-instr\t%.2fx\t<= %.2fx\t%s\t%d against %d instructions per %s%s; %s inside the profile function\n",
            (w == "profile" ? "call-heavy" : w == "switch" ? "ping-pong" : w), p / e, l,
            (p / e <= l ? "met" : "missed"), p, e, u, (u == "event" ? " over no profiler" : ""), o }')$'\n'
}

echo "instruction counts: $("$PY" -c 'import sys, platform; print("Python", platform.python_version(), sys.executable)'), callgrind"
for w in $only; do
    echo
    case "$w" in
        profile) table profile 20 40 event
                 echo "goal: passive <= 1.3x (timed goal), <= 1.15x (stretch goal)" ;;
        switch) table switch 50000 100000 switch
                echo "goal: passive <= 1.2x of the empty C profile function's switch (timed goal)," \
                     "<= 1.15x (stretch goal); the switch figures are per switch with the profile function on (no 'over')" ;;
        pool) table pool 20 40 event
              echo "goal: passive <= 1.2x of the empty C profile function on a thread that never uses greenlet" ;;
        hub10) table hub10 2500 5000 switch
               echo "goal: passive <= 1.15x of the empty C profile function's switch, a hub over 10 greenlets" ;;
        hub100) table hub100 250 500 switch
                echo "goal: passive <= 1.15x of the empty C profile function's switch, a hub over 100 greenlets" ;;
        hub10000) table hub10000 3 6 switch
                  echo "goal: passive <= 1.15x of the empty C profile function's switch, a hub over 10,000 greenlets" ;;
        *) echo "instr_cost.sh: unknown workload $w" >&2; exit 2 ;;
    esac
done
rm -f "$out/trace.grt" "$out/trace.grt.times" "$out/e1" "$out/e2"
[ -z "$goals" ] || printf '\n%s' "$goals"
