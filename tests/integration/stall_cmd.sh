#!/usr/bin/env bash
# tests/integration/stall_cmd.sh [--python PY]: `greenreplay stall`'s
# interface (docs/stall.md), not its verdicts (timing: `make stall`
# checks those, a benchmark):
#  - a short run (N=10, 2 repetitions of 0.05 s, seqlock) writes --json
#    with the baseline and the sampler, their ratios and distributions;
#  - the workload's greenlets and their frames are the program's, in the
#    recording and in the reference sampler's reads (not greenreplay's own
#    code, which the recorder leaves out: the sampler's cost would then
#    not grow with N);
#  - an external sampler that exits before the measured phase is an error
#    (2) naming it;
#  - usage errors: exit 2, one line.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
gr_script_init stall_cmd "$@"
PY=$GR_PY
cd "$GR_ROOT" || exit 2
if ! "$PY" -c 'import greenlet' 2>/dev/null; then
    gr_skip_all "greenlet is not importable by $PY"
fi

"$GR_CLI" stall --python "$PY" --sampler seqlock --idle 10 --depth 5 --reps 2 --seconds 0.05 \
    --json "$GR_WORK/s.json" >"$GR_WORK/s.out" 2>"$GR_WORK/s.err"
rc=$?
if [ $rc -le 1 ] && "$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert d["idle"] == 10 and d["depth"] == 5 and d["reps"] == 2, d
s = d["samplers"]
assert [x["sampler"] for x in s] == ["off", "seqlock"], s
assert s[0]["verdict"] == "baseline" and s[1]["verdict"] in ("pass", "flagged"), s
for x in s:
    assert len(x["ratios"]) == 2 and all(r > 0 for r in x["ratios"]), x
    for k in ("n0", "n_idle"):
        assert x[k]["ready_ns_per_switch"] > 0 and x[k]["trip_p99_ns"] >= x[k]["trip_median_ns"] > 0, x
' "$GR_WORK/s.json" && grep -q '^seqlock ' "$GR_WORK/s.out"; then
    gr_ok "stall: a short run reports the baseline and the sampler, ratios and distributions"
else
    gr_bad "stall: short run: exit $rc"
    gr_show "$GR_WORK/s.out" "$GR_WORK/s.err"
fi

# The workload itself, N=10 idle greenlets 5 frames deep and 20 workers:
# the recording sees all 31 greenlets and the sampler reads the idle ones'
# frames (10 x 5 of them at least in a sample).
# Its package as `greenreplay stall` finds it (record.c, gr_record_package_dir).
pkg=${GREENREPLAY_PYTHONPATH:-}
if [ -z "$pkg" ]; then
    pkg=$(dirname "$GR_CLI")/python
    [ -d "$pkg" ] || pkg=$(dirname "$GR_CLI")/../lib/greenreplay/python
fi
PYTHONPATH=$pkg${PYTHONPATH:+:$PYTHONPATH} "$PY" -m greenreplay.stall --sampler hold-lock --idle 10 --depth 5 \
    --seconds 0.1 --interval-us 1000 --output "$GR_WORK/w.gr" >"$GR_WORK/w.out" 2>&1
rc=$?
"$GR_CLI" check --stall "$GR_WORK/w.gr" >"$GR_WORK/w.check" 2>&1
if [ $rc -eq 0 ] && grep -q 'seen  *1 thread, 31 greenlets' "$GR_WORK/w.check" &&
   grep -Eq '^stall_depth at event [0-9]+: sample [0-9]+ \(taken after event [0-9]+\) read ([5-9][0-9]|[1-9][0-9][0-9]+) of' \
       "$GR_WORK/w.check"; then
    gr_ok "stall: the workload's idle greenlets and their frames are in the recording and the samples"
else
    gr_bad "stall: workload greenlets: exit $rc"
    gr_show "$GR_WORK/w.out"
    grep -E 'seen|stall_depth at|frames read' "$GR_WORK/w.check"
fi

"$GR_CLI" stall --python "$PY" --attach 'false {pid}' --idle 10 --depth 5 --reps 2 --seconds 0.05 \
    >"$GR_WORK/a.out" 2>"$GR_WORK/a.err"
rc=$?
if [ $rc -eq 2 ] && grep -q "the sampler exited" "$GR_WORK/a.err" && grep -q "sampler false {pid} failed" "$GR_WORK/a.err"; then
    gr_ok "stall: an external sampler that exits at once is an error naming it"
else
    gr_bad "stall: --attach false: exit $rc"
    gr_show "$GR_WORK/a.err"
fi

bad=0
for args in "--sampler nope" "--reps 1" "--idle x" "--bogus" "extra"; do
    # shellcheck disable=SC2086
    "$GR_CLI" stall $args >"$GR_WORK/u.out" 2>"$GR_WORK/u.err"
    rc=$?
    if [ $rc -ne 2 ] || [ "$(wc -l <"$GR_WORK/u.err")" -ne 1 ] || [ -s "$GR_WORK/u.out" ]; then
        bad=1
        echo "      $args: exit $rc"
        gr_show "$GR_WORK/u.err"
    fi
done
if [ $bad = 0 ]; then gr_ok "stall: usage errors exit 2 with one line"; else gr_bad "stall: usage errors"; fi
gr_tally
