#!/usr/bin/env bash
# ci/stall.sh - the sampler stall scenario (fixtures/stall/stall.py) in every
# sampler mode, N = 0 and N = 2000 idle greenlets 50 frames deep, without
# and with a CPU-bound thread; prints the switch-time ratio N=2000 / N=0 per
# mode and runs `greenreplay check --stall` on every trace.
#
# usage: ci/stall.sh [--python PY] [--modes "two-phase hold-lock seqlock"]
#                    [--idle N] [--depth D] [--no-cpu] [--out DIR]
# Expectation (the seed's regression): hold-lock is flagged by check --stall
# (at every N: it reads frames under the lock), two-phase and seqlock pass.  Exit status: 0 as expected, 1 otherwise,
# 2 bad usage or the tool missing.
set -u
PY=/usr/bin/python3
MODES="two-phase hold-lock seqlock"
IDLE=2000
DEPTH=50
CPU="0 1"
here=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$here/build}
OUT=$BUILD/traces/stall
while [ $# -gt 0 ]; do
    case "$1" in
        --python) PY=$2; shift 2 ;;
        --modes) MODES=$2; shift 2 ;;
        --idle) IDLE=$2; shift 2 ;;
        --depth) DEPTH=$2; shift 2 ;;
        --no-cpu) CPU=0; shift ;;
        --out) OUT=$2; shift 2 ;;
        -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "ci/stall.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
cli=$BUILD/greenreplay
[ -x "$cli" ] || { echo "ci/stall.sh: $cli missing (run make)" >&2; exit 2; }
mkdir -p "$OUT"
export PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH}

declare -A nsw
unexpected=0
echo "stall scenario: $PY, N=0 and N=$IDLE idle greenlets, depth $DEPTH, 20 workers x 200 switches, sampling every 5 ms"
for cpu in $CPU; do
    for mode in $MODES; do
        for n in 0 "$IDLE"; do
            [ "$cpu" = 1 ] && tag=$mode-n$n-cpu || tag=$mode-n$n
            printf '  %-24s ' "$tag"
            flags=()
            [ "$cpu" = 1 ] && flags+=(--cpu-thread)
            line=$("$PY" "$here/fixtures/stall/stall.py" --mode "$mode" --idle "$n" --depth "$DEPTH" \
                   "${flags[@]}" --output "$OUT/$tag.grt" 2>"$OUT/$tag.err")
            if [ $? -ne 0 ]; then
                echo "CRASHED (see $OUT/$tag.err)"
                unexpected=1
                continue
            fi
            ns=$(printf '%s' "$line" | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print("%.0f %.0f" % (d["ns_per_switch"], d["max_round_trip_ns"]/1000))')
            nsw[$tag]=${ns%% *}
            "$cli" check --stall "$OUT/$tag.grt" >"$OUT/$tag.stall.txt" 2>&1
            rc=$?
            case $rc in 0) verdict=pass ;; 1) verdict=flagged ;; *) verdict="unusable($rc)" ;; esac
            # hold-lock reads frames under the lock even with no idle
            # greenlet (the workers' frames): check --stall's stall_depth
            # rule flags it at any N, deterministically.
            want=pass
            [ "$mode" = hold-lock ] && want=flagged
            mark=""
            if [ "$verdict" != "$want" ]; then mark="  UNEXPECTED (want $want)"; unexpected=1; fi
            printf '%8s ns/switch  max round trip %8s us  check --stall: %s%s\n' "${ns%% *}" "${ns##* }" "$verdict" "$mark"
        done
    done
done
echo
echo "| mode | CPU-bound thread | ns/switch N=0 | ns/switch N=$IDLE | ratio |"
echo "|---|---|---:|---:|---:|"
for cpu in $CPU; do
    for mode in $MODES; do
        if [ "$cpu" = 1 ]; then a=$mode-n0-cpu; b=$mode-n$IDLE-cpu; c=yes; else a=$mode-n0; b=$mode-n$IDLE; c=no; fi
        [ -n "${nsw[$a]:-}" ] && [ -n "${nsw[$b]:-}" ] || continue
        ratio=$(awk -v x="${nsw[$b]}" -v y="${nsw[$a]}" 'BEGIN { printf "%.2f", x / y }')
        echo "| $mode | $c | ${nsw[$a]} | ${nsw[$b]} | $ratio |"
    done
done
echo
echo "traces and check --stall reports: $OUT"
exit $unexpected
