#!/usr/bin/env bash
# ci/stall.sh - the sampler stall benchmark (`make stall`): the scenario of
# fixtures/stall/stall.py (the seed's dd-trace-py regression test) in every
# sampler mode, N = 0 and N = IDLE idle greenlets DEPTH frames deep,
# sampling every 5 ms, each run switching until the sampler took at least
# SAMPLES samples, REPS runs per configuration, without and with a
# CPU-bound thread; then a depth sweep (two-phase at N = IDLE, depths 10
# and 200, SWEEP_REPS runs each; seqlock has no lock to wait for).  `greenreplay check --stall` judges every trace;
# ci/stall_report.py prints medians, spreads, the paired switch-time ratio (time less run-queue wait)
# N=IDLE / N=0 per mode, and the verdicts.
#
# usage: ci/stall.sh [--python PY] [--modes "two-phase hold-lock seqlock"]
#                    [--idle N] [--depth D] [--reps R] [--samples S]
#                    [--sweep "10 200"] [--sweep-reps R] [--no-sweep]
#                    [--no-cpu] [--out DIR]
# The verdicts are what each design predicts, not absolute times (see
# ci/stall_report.py): hold-lock flagged by check --stall in every run;
# two-phase and seqlock never read a frame under the lock, never flagged;
# their median ratio within 1.1 plus the measured noise, hold-lock's above
# that.  Took 8.7 minutes with a load of 7-10 on 2 CPUs, 14.5 with a
# parallel build on top (2.5 minutes of CPU).  Exit status: 0 as predicted, 1 otherwise,
# 2 bad usage or the tool missing.
set -u
PY=/usr/bin/python3
MODES="two-phase hold-lock seqlock"
IDLE=2000
DEPTH=50
REPS=5
SAMPLES=200
SWEEP="10 200"
SWEEP_REPS=3
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
        --reps) REPS=$2; shift 2 ;;
        --samples) SAMPLES=$2; shift 2 ;;
        --sweep) SWEEP=$2; shift 2 ;;
        --sweep-reps) SWEEP_REPS=$2; shift 2 ;;
        --no-sweep) SWEEP=""; shift ;;
        --no-cpu) CPU=0; shift ;;
        --out) OUT=$2; shift 2 ;;
        -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "ci/stall.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
case "$REPS$SAMPLES$IDLE$DEPTH$SWEEP_REPS" in *[!0-9]*|'') echo "ci/stall.sh: --reps, --samples, --idle, --depth take numbers" >&2; exit 2 ;; esac
cli=$BUILD/greenreplay
[ -x "$cli" ] || { echo "ci/stall.sh: $cli missing (run make)" >&2; exit 2; }
mkdir -p "$OUT"
export PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH}
runs=$OUT/runs.jsonl
: >"$runs"
t_start=$(date +%s)

# One run: stall.py, then check --stall; appends one JSON line to $runs.
run() { # mode n depth cpu rep
    local mode=$1 n=$2 depth=$3 cpu=$4 rep=$5 tag flags=()
    tag=$mode-n$n-d$depth
    [ "$cpu" = 1 ] && { tag=$tag-cpu; flags+=(--cpu-thread); }
    local trace=$OUT/$tag.grt line rc
    line=$("$PY" "$here/fixtures/stall/stall.py" --mode "$mode" --idle "$n" --depth "$depth" \
           --samples "$SAMPLES" "${flags[@]}" --output "$trace" 2>"$OUT/$tag.err")
    if [ $? -ne 0 ] || [ -z "$line" ]; then
        printf '{"mode":"%s","n":%s,"depth":%s,"cpu_thread":%s,"rep":%s,"crashed":true}\n' \
            "$mode" "$n" "$depth" "$([ "$cpu" = 1 ] && echo true || echo false)" "$rep" >>"$runs"
        printf '  %-28s rep %s  CRASHED (see %s)\n' "$tag" "$rep" "$OUT/$tag.err"
        return
    fi
    "$cli" check --stall --format json "$trace" >"$OUT/$tag.check.json" 2>"$OUT/$tag.check.err"
    rc=$?
    # The text report of the last repetition too, for reading.
    [ "$rep" = "$REPS" ] && "$cli" check --stall "$trace" >"$OUT/$tag.stall.txt" 2>&1
    "$PY" - "$OUT/$tag.check.json" "$rc" "$rep" "$line" >>"$runs" <<'EOF'
import json, sys
path, rc, rep, line = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
d = json.loads(line)
d["rep"] = rep
d["check_rc"] = rc
try:
    t = json.load(open(path))["traces"][0]
    st = t["stall"]
    d["counts"] = t["counts"]
    d["wait_max_ns"] = st["wait"]["max_ns"]
    d["wait_sum_ns"] = st["wait"]["sum_ns"]
    d["contended"] = st["wait"]["contended"]
    d["hold_median_ns"] = st["hold"]["median_ns"]
    d["hold_max_ns"] = st["hold"]["max_ns"]
    d["samples_total"] = st["samples"]
    d["frames_under_lock"] = st["frames_under_lock"]
    d["stacks"] = st["stacks"]
except Exception as e:  # reported as unusable by stall_report.py
    d["check_error"] = str(e)
print(json.dumps(d))
EOF
    "$PY" - "$runs" <<'EOF'
import json, sys
d = json.loads(open(sys.argv[1]).read().splitlines()[-1])
c = d.get("counts", {})
v = {0: "pass", 1: "flagged"}.get(d["check_rc"], "unusable(%d)" % d["check_rc"])
print("  %-10s N=%-5d D=%-4d %-4s rep %d  %7.0f ns/switch (wall %7.0f)  %4d samples  max wait %9.1f us  "
      "hold median %8.1f us  check --stall: %s%s" % (
          d["mode"], d["n"], d["depth"], "cpu" if d["cpu_thread"] else "", d["rep"],
          d["ready_ns_per_switch"], d["ns_per_switch"], d["samples"], d.get("wait_max_ns", 0) / 1e3,
          d.get("hold_median_ns", 0) / 1e3, v,
          " (%s)" % ", ".join("%s %d" % (k, n) for k, n in c.items() if n) if c and any(c.values()) else ""))
EOF
}

echo "stall benchmark: $PY, N=0 and N=$IDLE idle greenlets, depth $DEPTH, 20 workers switching until"
echo "$SAMPLES samples, sampling every 5 ms, $REPS runs per configuration ($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
for cpu in $CPU; do
    for rep in $(seq 1 "$REPS"); do
        for mode in $MODES; do
            # Pairs in alternating order, so that a drift of the machine's
            # load does not always favour the same N.
            if [ $((rep % 2)) = 1 ]; then order="0 $IDLE"; else order="$IDLE 0"; fi
            for n in $order; do
                run "$mode" "$n" "$DEPTH" "$cpu" "$rep"
            done
        done
    done
done
if [ -n "$SWEEP" ]; then
    echo "depth sweep: two-phase, N=$IDLE, depths $SWEEP (and $DEPTH above)"
    for rep in $(seq 1 "$SWEEP_REPS"); do
        for d in $SWEEP; do
            case " $MODES " in *" two-phase "*) run two-phase "$IDLE" "$d" 0 "$rep" ;; esac
        done
    done
fi
echo
"$PY" "$here/ci/stall_report.py" --idle "$IDLE" --depth "$DEPTH" --samples "$SAMPLES" "$runs"
rc=$?
echo
echo "runs: $runs; traces and check --stall reports: $OUT; $(( $(date +%s) - t_start )) s"
exit $rc
