#!/usr/bin/env bash
# tests/integration/suite.sh - run a list of integration scripts, go on
# after a failure, and end with a summary of every script.
#
# usage: tests/integration/suite.sh [--python PY] [--list FILE] [--jobs N] full|host
#
# Example: `tests/integration/suite.sh --python /usr/bin/python3 host` runs
# every line of tests/integration/suites.txt marked "host" (what `make check`
# runs); "full" runs every line (`make integration`).  A script whose
# second column is "py" gets `--python PY` (default /usr/bin/python3).
# --jobs N runs N scripts at a time (default 1); each script's output is
# then shown when it ends, not as it runs.  The scripts are independent:
# each has its own scratch directory.
#
# The last lines are one line per script, in list order (PASS or FAIL, exit
# status, wall seconds and the CPU seconds of the script and its children:
# on a loaded host the CPU time says what the wall time would be on a quiet
# one), then "N passed, N failed".
# Exit status: 0 every script passed, 1 a script failed, 2 bad usage.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PY=/usr/bin/python3
LIST=$ROOT/tests/integration/suites.txt
JOBS=1
usage() { sed -n '5p' "${BASH_SOURCE[0]}" | sed 's/^# //' >&2; exit 2; }
WHICH=""
while [ $# -gt 0 ]; do
    case $1 in
        --python) [ $# -ge 2 ] || usage; PY=$2; shift 2 ;;
        --list) [ $# -ge 2 ] || usage; LIST=$2; shift 2 ;;
        --jobs) [ $# -ge 2 ] || usage; JOBS=$2; shift 2 ;;
        -h|--help) sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        full|host) WHICH=$1; shift ;;
        *) usage ;;
    esac
done
[ -n "$WHICH" ] || usage
case $JOBS in ''|*[!0-9]*|0) usage ;; esac
[ -f "$LIST" ] || { echo "suite.sh: no list $LIST" >&2; exit 2; }

OUT=$(mktemp -d "${TMPDIR:-/tmp}/gr-suite.XXXXXX")
trap 'rm -rf "$OUT"' EXIT

# secs_of FILE: user + system seconds of the children line of a `times`
# output (its last line: "0m1.50s 0m0.20s").
secs_of() {
    tail -n 1 "$1" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] } printf "%.0f\n", t }'
}

# run_one N SCRIPT ARGS...: run one script in a subshell; its exit status,
# wall seconds and `times` (CPU of its children: the script) go to OUT/N.*.
run_one() {
    local n=$1 script=$2 start rc
    shift 2
    start=$(date +%s)
    if [ "$JOBS" = 1 ]; then
        "$ROOT/tests/$script" "$@" </dev/null
    else
        "$ROOT/tests/$script" "$@" </dev/null >"$OUT/$n.log" 2>&1
    fi
    rc=$?
    times >"$OUT/$n.times"
    echo "$rc $(( $(date +%s) - start ))" >"$OUT/$n.rc"
}

# show_done: print the output of scripts that ended since the last call.
declare -A SHOWN=()
show_done() {
    local i
    for ((i = 0; i < ${#SCRIPTS[@]}; i++)); do
        if [ -z "${SHOWN[$i]:-}" ] && [ -f "$OUT/$i.rc" ]; then
            SHOWN[$i]=1
            [ "$JOBS" = 1 ] && continue
            echo "==== tests/${SCRIPTS[$i]} (ended)"
            cat "$OUT/$i.log"
        fi
    done
}

SCRIPTS=() TAKES=()
while read -r script takes suite _; do
    case $script in ''|'#'*) continue ;; esac
    [ "$WHICH" = full ] || [ "$suite" = host ] || continue
    SCRIPTS+=("$script") TAKES+=("$takes")
done <"$LIST"

total_start=$(date +%s) running=0
for ((i = 0; i < ${#SCRIPTS[@]}; i++)); do
    args=()
    [ "${TAKES[$i]}" = py ] && args=(--python "$PY")
    if [ "$JOBS" = 1 ]; then
        echo "==== tests/${SCRIPTS[$i]} ${args[*]}"
        ( run_one "$i" "${SCRIPTS[$i]}" "${args[@]}" )
        continue
    fi
    while [ "$running" -ge "$JOBS" ]; do
        wait -n
        running=$((running - 1))
        show_done
    done
    echo "==== tests/${SCRIPTS[$i]} ${args[*]} (started)"
    ( run_one "$i" "${SCRIPTS[$i]}" "${args[@]}" ) &
    running=$((running + 1))
done
wait
show_done

echo "==== summary ($WHICH)"
npass=0 nfail=0 cpu_total=0
for ((i = 0; i < ${#SCRIPTS[@]}; i++)); do
    read -r rc secs <"$OUT/$i.rc" 2>/dev/null || { rc=? secs=?; }
    cpu=$(secs_of "$OUT/$i.times" 2>/dev/null || echo 0)
    cpu_total=$((cpu_total + ${cpu:-0}))
    if [ "$rc" = 0 ]; then
        npass=$((npass + 1))
        printf 'PASS  %-36s %5ss  (cpu %ss)\n' "${SCRIPTS[$i]}" "$secs" "$cpu"
    else
        nfail=$((nfail + 1))
        printf 'FAIL  %-36s %5ss  (cpu %ss, exit %s)\n' "${SCRIPTS[$i]}" "$secs" "$cpu" "$rc"
    fi
done
echo "$npass passed, $nfail failed in $(( $(date +%s) - total_start ))s (cpu ${cpu_total}s)"
[ "$nfail" -eq 0 ]
