#!/bin/bash
# sidechan.sh - the sampler's side channel written during the run
# (docs/FORMAT.md section 5, side channel format 1.3) and read streamed.
#
# usage: tests/integration/sidechan.sh [--python PY]
#
#   - a recording with the sampler that dies without stop() (os._exit, then
#     SIGKILL): the 'W' and 'P' chunks written before the end are kept;
#     `check --stall` reads them (exit 0 or 1, never 2 or a crash), says
#     that the side channel ends early, and compares the samples written;
#     `dump --times` reads the cut side channel too;
#   - a whole recording with small chunks (4 KiB): its 'T', 'W' and 'P'
#     chunks interleave; `dump --times` (streamed side channel) and
#     `check --stall` give the same output as for the same chunks laid out
#     as format 1.2 ('T' chunks, then 'W', then 'P': the reading of the
#     old layout), and every SWITCH line carries its 'W' figures.
#   - recordings without the profile function (start(profile=False),
#     greenlets killed at the end) in each sampler mode: the checker's
#     rules that need profile events (blind_spot, imbalance) say nothing
#     and the coverage says blind spots were not checkable, because there
#     were no profile events; the sampled stacks are not compared, and
#     check --stall says so ("sampled stacks: N, not compared (REASON)";
#     JSON stall.stacks: compared false, the reason, not_compared = total,
#     none equal or mismatched); `check --stall` passes two-phase and seqlock
#     (exit 0) and flags hold-lock with stall_depth only (exit 1).  The
#     stall_wait threshold is raised to 100 ms there: this test is about
#     the verdicts that need no clock (a loaded host can deschedule the
#     sampler while it holds the lock; docs/FORMAT.md section 7.1).
#   - a program idle in C (time.sleep: no record) for longer than the
#     sampler's ring and own buffer hold (shrunk to 16 KiB each with
#     GREENREPLAY_SAMPLER_RING, a sample every 200 us), with and without the
#     profile function: the own buffer never holds more than its capacity
#     and is thinned instead of losing samples (stride 4 at least), so the
#     samples kept span the stretch evenly (some in its first quarter, some
#     in its last, and the first quarter not denser than 3 times the last,
#     plus 4: the ring's samples are thinned too); the sampler thread sleeps
#     through sampling times it does not take (META-free figures of
#     _sampler_registry(): `dozed`, fewer wakes than sampling times); the
#     sampling times without a kept sample are counted
#     (META sampler_samples_thinned, the count the sampler reported),
#     `check --stall` warns with that count, none is lost, and every
#     sample kept is in the side channel (its trailer and `check --stall`
#     agree, 0 mismatched); the same program without the idle stretch
#     thins none and is not warned.
#   - a ring capped at 1 KiB (GREENREPLAY_SAMPLER_RING_MAX) and one greenlet
#     120 frames deep: its samples are larger than the ring takes; they are
#     counted as dropped (META sampler_samples_lost_large, check --stall's
#     warning with that count), never as taken: the trailer's sample count
#     agrees with the side channel (no 'trailer counts' warning);
#     GREENREPLAY_SAMPLER_RING_MAX out of bounds or not a number: start()
#     raises ValueError naming it; so does GREENREPLAY_SAMPLER_RING (which
#     read any garbage as 0, the default); start(keep=) outside 0..8192
#     (the sampler's memory grows with it) raises ValueError naming keep.
# Programs: tests/integration/programs/sidechan_crash.py (the recording),
# side_relayout.py (the 1.2 layout), sidechan_idle.py (the idle program),
# side_samples.py (the samples' times).  Needs greenlet for PY (else skipped).
# Exit status: 0 all passed (or skipped), 1 a test failed, 2 bad usage.
set -u
. "$(dirname "$0")/lib.sh"
gr_script_init sidechan "$@"
PY=$GR_PY BUILD=${BUILD:-$GR_ROOT/build} work=$GR_WORK
PROG=$GR_ROOT/tests/integration/programs

"$PY" -c 'import greenlet' 2>/dev/null || gr_skip_all "sidechan: greenlet is not importable by $PY"
export PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH}

# field NAME FILE: a number from the program's JSON line.
field() {
    "$PY" -c 'import json, sys
print([json.loads(l) for l in open(sys.argv[2]) if l.startswith("{")][-1][sys.argv[1]])' "$1" "$2"
}

for how in exit kill; do
    tr=$work/crash-$how.grt
    name="recording ended by $how with the sampler on"
    # (not the subshell's last command: bash would report the SIGKILL)
    (cd "$work" && timeout 120 "$PY" "$PROG/sidechan_crash.py" "$tr" "$how"; exit $?) >"$tr.out" 2>"$tr.err"
    rc=$?
    want=137 && [ "$how" = exit ] && want=3
    "$GR_CLI" check --stall "$tr" >"$tr.check" 2>&1
    crc=$?
    "$GR_CLI" dump --times "$tr" >"$tr.dump" 2>"$tr.dump.err"
    drc=$?
    taken=$(field samples "$tr.out" 2>/dev/null || echo 0)
    made=$(field switches "$tr.out" 2>/dev/null || echo 0)
    line=$(grep -m1 '^sampler: ' "$tr.check")
    got_sw=$(printf '%s\n' "$line" | sed -n 's/.*; \([0-9]*\) switches, \([0-9]*\) samples$/\1/p')
    got_p=$(printf '%s\n' "$line" | sed -n 's/.*; \([0-9]*\) switches, \([0-9]*\) samples$/\2/p')
    mism=$(sed -n 's/^sampled stacks: .* \([0-9]*\) mismatched\(, [0-9]* not comparable\)\{0,1\}$/\1/p' "$tr.check")
    if [ "$rc" -ne "$want" ]; then
        gr_bad "$name: the program exited $rc (expected $want)"; gr_show "$tr.err"
    elif [ "$crc" -gt 1 ]; then
        gr_bad "$name: check --stall exited $crc"; gr_show "$tr.check"
    elif ! grep -q "side channel .*without a trailer: the sampler data are incomplete" "$tr.check"; then
        gr_bad "$name: check --stall does not say that the side channel ends early"; gr_show "$tr.check"
    elif [ -z "$got_sw" ] || [ -z "$got_p" ] || [ "$got_sw" -eq 0 ] || [ "$got_p" -eq 0 ] ||
        [ "$got_sw" -gt "$made" ] || [ "$got_p" -gt "$taken" ]; then
        gr_bad "$name: written before the end: '$got_sw' switches of $made, '$got_p' samples of $taken"
        gr_show "$tr.check"
    elif [ "$mism" != 0 ]; then
        gr_bad "$name: sampled stacks mismatched: '$mism'"; gr_show "$tr.check"
    elif [ "$drc" -ne 0 ] || ! grep -q ' wait=[0-9]*ns cb=' "$tr.dump" || ! grep -q '^# truncated: [0-9]* bytes, ' "$tr.dump"; then
        gr_bad "$name: dump --times exited $drc"; gr_show "$tr.dump.err"
    else
        gr_ok "$name: check --stall (exit $crc) read $got_sw of $made switches and $got_p of $taken samples" \
              "written before the end, 0 mismatched, and says the side channel ends early"
    fi
done

# A whole recording in 4 KiB chunks: the layouts 1.3 (as written) and 1.2.
tr=$work/whole.grt old=$work/old.grt
name="side channel of 4 KiB chunks, 'T'/'W'/'P' interleaved"
(cd "$work" && timeout 120 "$PY" "$PROG/sidechan_crash.py" "$tr" stop) >"$tr.out" 2>"$tr.err"
rc=$?
cp "$tr" "$old" 2>/dev/null
"$PY" "$PROG/side_relayout.py" "$tr.times" "$old.times" >"$tr.layout" 2>&1
lrc=$?
kinds=$(field switches_of_kind "$tr.layout" 2>/dev/null || echo 0)
"$GR_CLI" dump --times "$tr" >"$tr.dump" 2>"$tr.dump.err"
d1=$?
"$GR_CLI" dump --times "$old" >"$old.dump" 2>"$old.dump.err"
d2=$?
"$GR_CLI" check --stall --format json "$tr" 2>&1 | sed "s|$tr|TRACE|g" >"$tr.json"
c1=${PIPESTATUS[0]}
"$GR_CLI" check --stall --format json "$old" 2>&1 | sed "s|$old|TRACE|g" >"$old.json"
c2=${PIPESTATUS[0]}
nsw=$(grep -c '^ *[0-9]* \(SWITCH\|THROW\) ' "$tr.dump")
nw=$(grep -c ' wait=[0-9]*ns cb=[0-9]*ns' "$tr.dump")
ndt=$(grep -c ' dt=[0-9]*ns' "$tr.dump")
nrec=$(grep -c '^ *[0-9]' "$tr.dump")
if [ "$rc" -ne 0 ] || [ "$lrc" -ne 0 ]; then
    gr_bad "$name: program exit $rc, relayout exit $lrc"; gr_show "$tr.err" "$tr.layout"
elif [ "$kinds" -lt 4 ]; then
    gr_bad "$name: chunk kinds change only $kinds times: $(cat "$tr.layout")"
elif [ "$d1" -ne 0 ] || [ "$d2" -ne 0 ] || ! cmp -s "$tr.dump" "$old.dump"; then
    gr_bad "$name: dump --times differs from the 1.2 layout's (exit $d1, $d2)"
    diff "$old.dump" "$tr.dump" | gr_show /dev/stdin
elif [ "$nsw" -eq 0 ] || [ "$nw" -ne "$nsw" ] || [ "$ndt" -ne "$nrec" ]; then
    gr_bad "$name: $nsw SWITCH lines, $nw with wait=; $nrec records, $ndt with dt="
elif [ "$c1" -ne 0 ] || [ "$c2" -ne 0 ] || ! cmp -s "$tr.json" "$old.json"; then
    gr_bad "$name: check --stall differs from the 1.2 layout's (exit $c1, $c2)"
    diff "$old.json" "$tr.json" | gr_show /dev/stdin
else
    gr_ok "$name ($kinds changes of kind): dump --times streamed ($nrec records, $nw switch figures)" \
          "and check --stall as for the 1.2 layout"
fi

# Without the profile function, in each sampler mode.
for mode in two-phase seqlock hold-lock; do
    tr=$work/noprof-$mode.grt
    name="profile=False, sampler $mode"
    (cd "$work" && timeout 120 "$PY" "$PROG/sidechan_crash.py" "$tr" stop --sampler "$mode" \
        --no-profile --die) >"$tr.out" 2>"$tr.err"
    rc=$?
    "$GR_CLI" check --stall --max-wait-us 100000 --format json "$tr" >"$tr.json" 2>"$tr.check.err"
    crc=$?
    # counts of every rule, the blind-spot coverage and the warnings, one line each
    "$PY" -c 'import json, sys
t = json.load(open(sys.argv[1]))["traces"][0]
print(" ".join("%s=%d" % kv for kv in sorted(t["counts"].items())))
print(t["coverage"]["blind_spots"], t["stall"]["switches"], t["stall"]["samples"])
print(any("recorded without the profile function" in w for w in t["warnings"]))
s = t["stall"]["stacks"]
print(s["compared"], s["reason"], s["total"] == s["not_compared"] > 0, s["equal"] + s["mismatched"])' "$tr.json" \
        >"$tr.sum" 2>"$tr.sum.err"
    gr_quiet "$PY" "$tr.sum.err" >>"$tr.sum"   # its errors, not the interpreter's start-up noise
    counts=$(sed -n 1p "$tr.sum") cov=$(sed -n 2p "$tr.sum") warned=$(sed -n 3p "$tr.sum")
    stacks=$(sed -n 4p "$tr.sum")
    "$GR_CLI" check --stall --max-wait-us 100000 "$tr" >"$tr.txt" 2>&1
    want_rc=0 want_counts="attribution=0 blind_spot=0 callback_guard=0 displaced=0 imbalance=0 propagation=0 sample=0"
    want_counts="$want_counts stall_depth=0 stall_wait=0 switch_consistency=0 unreached=0"
    if [ "$mode" = hold-lock ]; then
        want_rc=1 want_counts=${want_counts/stall_depth=0/stall_depth=1}
    fi
    if [ "$rc" -ne 0 ]; then
        gr_bad "$name: the program exited $rc"; gr_show "$tr.err"
    elif [ "$crc" -ne "$want_rc" ] || [ "$counts" != "$want_counts" ]; then
        gr_bad "$name: check --stall exited $crc (expected $want_rc): $counts"
        "$GR_CLI" check --stall --max-wait-us 100000 "$tr" 2>&1 | head -40 | gr_show /dev/stdin
    elif [ "${cov%% *}" != not_checkable ] || [ "$warned" != True ] ||
        ! "$GR_CLI" check "$tr" 2>&1 | grep -q 'blind spots *not checkable (recorded without the profile function'; then
        gr_bad "$name: the report does not say the stacks were not compared: $cov, warned $warned"
        gr_show "$tr.sum"
    elif [ "$stacks" != "False recorded without the profile function, profile=False True 0" ] ||
        ! grep -qx 'sampled stacks: [1-9][0-9]*, not compared (recorded without the profile function, profile=False)' "$tr.txt"; then
        gr_bad "$name: the sampled stacks are not said to be not compared (JSON: $stacks)"
        grep '^sampled stacks' "$tr.txt" | gr_show /dev/stdin
    else
        gr_ok "$name: check --stall exit $crc, rules: $counts; blind spots not checkable (no" \
              "profile events; switches, samples: ${cov#* }); '$(grep '^sampled stacks' "$tr.txt")'," \
              "JSON stacks compared false with the reason"
    fi
done

# An idle stretch longer than the sampler's ring and buffer (16 KiB each).
for how in profile nonprofile noidle; do
    tr=$work/idle-$how.grt
    args="--idle 1.5 --profile 1"
    name="sampler during 1.5 s idle in C, ring and buffer of 16 KiB"
    case $how in
    nonprofile) args="--idle 1.5 --profile 0"; name="$name, profile=False" ;;
    noidle) args="--idle 0 --profile 1"; name="sampler with no idle stretch, ring and buffer of 16 KiB" ;;
    esac
    # shellcheck disable=SC2086
    (cd "$work" && GREENREPLAY_SAMPLER_RING=16384 timeout 120 "$PY" "$PROG/sidechan_idle.py" "$tr" $args) \
        >"$tr.out" 2>"$tr.err"
    rc=$?
    "$GR_CLI" check --stall "$tr" >"$tr.check" 2>&1
    crc=$?
    "$GR_CLI" dump "$tr" >"$tr.dump" 2>&1
    "$PY" "$PROG/side_samples.py" "$tr.times" >"$tr.samples" 2>"$tr.samples.err"
    # The figures: ring, buffer, peak, thinned (after the idle), thinned,
    # lost and samples (at the end), the greatest stride; the samples kept
    # in the first and in the last quarter of the idle stretch.
    figs=$("$PY" -c 'import json, sys
d = json.loads(open(sys.argv[1]).readline())
i, e = d["idle"], d["end"]
t = json.load(open(sys.argv[2]))["t_ns"]
a, b = d["idle_from"], d["idle_to"]
q = (b - a) // 4
print(i["ring_bytes"], i["buffer_bytes"], max(i["buffer_peak"], e["buffer_peak"]), i["samples_thinned"],
      e["samples_thinned"], e["samples_lost_full"], e["samples"], e["thin_stride_peak"],
      sum(a <= x < a + q for x in t), sum(b - q <= x < b for x in t), i["dozed"],
      i["sampling_times"] - i["wakes"])' "$tr.out" "$tr.samples" 2>/dev/null)
    read -r ring buf peak thin_idle thin_end lost_end taken stride first_q last_q dozed slept \
        <<<"${figs:-x x x x x x x x x x x x}"
    meta=$(sed -n 's/^# sampler_samples_thinned: \([0-9]*\)$/\1/p' "$tr.dump")
    meta_lost=$(sed -n 's/^# sampler_samples_lost_full: \([0-9]*\)$/\1/p' "$tr.dump")
    warned=$(sed -n 's/^warning: \([0-9]*\) sampling times without a sample kept: .*thinned.*/\1/p' "$tr.check")
    line=$(grep -m1 '^sampler: ' "$tr.check")
    got_p=$(printf '%s\n' "$line" | sed -n 's/.*; \([0-9]*\) switches, \([0-9]*\) samples$/\2/p')
    mism=$(sed -n 's/^sampled stacks: .* \([0-9]*\) mismatched\(, [0-9]* not comparable\)\{0,1\}$/\1/p' "$tr.check")
    if [ "$rc" -ne 0 ] || [ "$ring" = x ]; then
        gr_bad "$name: the program exited $rc"; gr_show "$tr.err" "$tr.out" "$tr.samples" "$tr.samples.err"
    elif [ "$crc" -gt 1 ] || grep -q 'trailer counts' "$tr.check" || [ -z "$got_p" ] ||
        [ "$got_p" -lt "$taken" ]; then
        gr_bad "$name: check --stall exited $crc, read '$got_p' samples of at least $taken"
        gr_show "$tr.check"
    elif [ "$ring" -ne 16384 ] || [ "$buf" -ne 16384 ] || [ "$peak" -gt "$buf" ]; then
        gr_bad "$name: ring $ring bytes, own buffer $buf bytes, which held up to $peak"
    elif [ "$lost_end" -ne 0 ] || [ -n "$meta_lost" ]; then
        gr_bad "$name: $lost_end samples lost (META '$meta_lost'): the own buffer should be thinned"
    elif [ "$how" = noidle ]; then
        if [ "$thin_end" -ne 0 ] || [ -n "$meta" ] || [ -n "$warned" ] || [ "$mism" != 0 ]; then
            gr_bad "$name: thinned $thin_end, META '$meta', warning '$warned', mismatched '$mism'"
            gr_show "$tr.check"
        else
            gr_ok "$name: $got_p samples, none thinned or lost, no warning"
        fi
    elif [ "$peak" -eq 0 ] || [ "$thin_idle" -eq 0 ] || [ "$stride" -lt 4 ] || [ -z "$meta" ] ||
        [ "$meta" -lt "$thin_end" ] || [ "$thin_end" -lt "$thin_idle" ] || [ "$warned" != "$meta" ]; then
        gr_bad "$name: buffer peak $peak; thinned $thin_idle after the idle, $thin_end at the end" \
               "(stride up to $stride), META '$meta', check --stall warned of '$warned'"
        gr_show "$tr.check"
    elif [ "$first_q" -eq 0 ] || [ "$last_q" -eq 0 ] || [ "$first_q" -gt $((3 * last_q + 4)) ]; then
        gr_bad "$name: the samples kept do not span the idle stretch evenly: $first_q in its" \
               "first quarter, $last_q in its last"
    elif [ "$dozed" -eq 0 ] || [ "$slept" -le 0 ]; then
        gr_bad "$name: the sampler thread slept through $dozed sampling times, woke for all but" \
               "$slept of them (want it to sleep through some while it thins)"
    elif [ "$how" = profile ] && [ "$mism" != 0 ]; then
        gr_bad "$name: sampled stacks mismatched: '$mism'"; gr_show "$tr.check"
    else
        gr_ok "$name: own buffer held at most $peak of $buf bytes; thinned (stride up to $stride):" \
              "$first_q samples kept in the first quarter of the stretch, $last_q in the last" \
              "(the start thinned as the rest); $dozed sampling times slept through;" \
              "$meta sampling times thinned, counted (META, check --stall warning); $got_p kept," \
              "all in the side channel"
    fi
done

# Samples larger than the ring takes: dropped and counted, never as taken.
tr=$work/large.grt
name="ring capped at 1 KiB, one greenlet 120 frames deep"
(cd "$work" && GREENREPLAY_SAMPLER_RING_MAX=1024 timeout 120 "$PY" "$PROG/sidechan_idle.py" "$tr" \
    --idle 0 --depths 3,3,120,3,3 --until-lost-large) >"$tr.out" 2>"$tr.err"
rc=$?
"$GR_CLI" check --stall "$tr" >"$tr.check" 2>&1
crc=$?
"$GR_CLI" dump "$tr" >"$tr.dump" 2>&1
ring=$("$PY" -c 'import json, sys
print(json.loads(open(sys.argv[1]).readline())["end"]["ring_bytes"])' "$tr.out" 2>/dev/null)
meta=$(sed -n 's/^# sampler_samples_lost_large: \([0-9]*\)$/\1/p' "$tr.dump")
warned=$(sed -n 's/^warning: \([0-9]*\) samples were larger than the sampler.s ring takes .*GREENREPLAY_SAMPLER_RING_MAX.*/\1/p' "$tr.check")
got_p=$(grep -m1 '^sampler: ' "$tr.check" | sed -n 's/.*; \([0-9]*\) switches, \([0-9]*\) samples$/\2/p')
mism=$(sed -n 's/^sampled stacks: .* \([0-9]*\) mismatched\(, [0-9]* not comparable\)\{0,1\}$/\1/p' "$tr.check")
if [ "$rc" -ne 0 ] || [ "$ring" != 1024 ]; then
    gr_bad "$name: the program exited $rc, ring '$ring' bytes"; gr_show "$tr.err" "$tr.out"
elif [ "$crc" -gt 1 ] || grep -q 'trailer counts' "$tr.check" || [ -z "$got_p" ] || [ "$got_p" -eq 0 ]; then
    gr_bad "$name: check --stall exited $crc, read '$got_p' samples (trailer and side channel must agree)"
    gr_show "$tr.check"
elif [ -z "$meta" ] || [ "$meta" -eq 0 ] || [ "$warned" != "$meta" ] || [ "$mism" != 0 ]; then
    gr_bad "$name: META lost_large '$meta', check --stall warned of '$warned', mismatched '$mism'"
    gr_show "$tr.check"
else
    gr_ok "$name: $meta over-large samples dropped and counted (META, warning), $got_p kept," \
          "trailer and side channel agree"
fi
# refused NAME WANT CMD...: CMD, run in $work, exits non-zero and the last
# line of its output is WANT (the ValueError that refuses a bad setting).
refused() {
    local name=$1 want=$2 out rc
    shift 2
    out=$(cd "$work" && "$@" 2>&1)
    rc=$?
    if [ "$rc" -ne 0 ] && [ "$(printf '%s\n' "$out" | tail -1)" = "$want" ]; then
        gr_ok "$name (ValueError)"
    else
        gr_bad "$name: exit $rc"; printf '%s\n' "$out" | gr_show /dev/stdin
    fi
}
for var in GREENREPLAY_SAMPLER_RING_MAX GREENREPLAY_SAMPLER_RING; do
    for v in 1023 67108865 12k -1 0 x; do
        refused "$var=$v refused" \
            "ValueError: $var=$v: must be a number of bytes from 1024 to 67108864" \
            env "$var=$v" timeout 60 "$PY" "$PROG/sidechan_idle.py" "$work/bad.grt" --idle 0
    done
done
for k in 8193 -1 4294967296; do
    refused "start(keep=$k) with the sampler refused" \
        "ValueError: keep=$k: must be a number of stacks per sample from 0 to 8192" \
        timeout 60 "$PY" -c 'import sys, greenreplay
greenreplay.start(sys.argv[1], sampler="two-phase", keep=int(sys.argv[2]))' "$work/keep.grt" "$k"
done
# keep=8192, the greatest: the sampler starts (its buffers allocated: no
# error counted in the trailer).
name="start(keep=8192) with the sampler records, sampler started"
if (cd "$work" && timeout 60 "$PY" -c 'import sys, greenreplay
greenreplay.start(sys.argv[1], sampler="two-phase", keep=8192)
greenreplay.stop()' "$work/keep.grt") >"$work/keep.out" 2>&1 &&
    "$GR_CLI" dump "$work/keep.grt" >"$work/keep.dump" 2>&1 &&
    grep -q '^# sampler: two-phase$' "$work/keep.dump" && grep -q ' errors=0 reason=stop$' "$work/keep.dump"; then
    gr_ok "$name"
else
    gr_bad "$name"; gr_show "$work/keep.out" "$work/keep.dump"
fi

gr_tally
