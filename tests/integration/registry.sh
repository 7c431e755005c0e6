#!/usr/bin/env bash
# tests/integration/registry.sh --python PY: the sampler registry recycles
# the slots of dead greenlets (tracer/registry.h), so its capacity
# (start(max_greenlets=M): M - 1 live greenlets) bounds the greenlets
# alive at once, not those created over the run.
#  - 3,000 greenlets, 30 alive at once, through a registry of 63 slots, in
#    callback mode (two-phase) and passive mode (seqlock): none untracked,
#    the registry's memory fixed, its slots reused; greenlets created late
#    (greenlet numbers far above 63) are sampled under their own numbers
#    (the program reads the side channel's 'P' chunks), and every sampled stack
#    equals the checker's shadow stack of the greenlet it names (greenlet i
#    is 1 + i % 7 frames deep: a stack given to the wrong greenlet
#    mismatches); check --stall exits 0 with no warning;
#  - 100 alive at once in the same 63 slots: the greenlets that found every
#    slot taken are counted (META sampler_untracked_greenlets) and
#    check --stall warns: loud, never silent.
# Program: tests/integration/programs/registry_reuse.py.  One line per
# test, then "N passed, N failed".  Exit 1 if any failed.
set -u
. "$(dirname "$0")/lib.sh"
gr_script_init registry "$@"
PY=$GR_PY BUILD=${BUILD:-$GR_ROOT/build} work=$GR_WORK

"$PY" -c 'import greenlet' 2>/dev/null || gr_skip_all "registry: greenlet is not importable by $PY"
export PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH}

# judge OUT_JSON TRACE CHECK_JSON COUNT MAXG: prints problems, one a line
# (nothing when all is well), then "gids N max M" on the last line.
judge() {
    "$PY" - "$@" <<'EOF'
import json, sys
out, trace, chk, count, maxg = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
probs = []
with open(out) as f:
    run = [json.loads(l) for l in f if l.startswith("{")][-1]
first, last = run["first"], run["last"]
if last["untracked"]:
    probs.append("%d greenlets untracked" % last["untracked"])
if last["peak_live"] > last["capacity"] or last["capacity"] != maxg - 1:
    probs.append("peak_live %d, capacity %d" % (last["peak_live"], last["capacity"]))
if last["bytes"] != first["bytes"]:
    probs.append("registry bytes %d at start, %d at the end" % (first["bytes"], last["bytes"]))
if last["reused"] < count - last["capacity"]:
    probs.append("only %d slots reused for %d greenlets" % (last["reused"], count))
sm = run["sampled"]
if sm["gids"] < 0.9 * count:
    probs.append("%d greenlets sampled of %d" % (sm["gids"], count))
if not sm["gids_above"] or sm["max_gid"] < count - 100:
    probs.append("no late greenlet sampled (greatest gid %d)" % sm["max_gid"])
with open(chk) as f:
    t = json.load(f)["traces"][0]
st = t["stall"]["stacks"]
if st["mismatched"] or st["unusable"] or st["equal"] < sm["gids"] or st["total"] != sm["stacks"]:
    probs.append("sampled stacks %s" % json.dumps(st))
if t["warnings"]:
    probs.append("warnings: %s" % "; ".join(t["warnings"]))
for p in probs:
    print(p)
print("gids %d max %d (%d above %d), %d stacks equal, %d slots reused, registry %d bytes" % (
    sm["gids"], sm["max_gid"], sm["gids_above"], 10 * maxg, st["equal"], last["reused"], last["bytes"]))
EOF
}

for cfg in "two-phase callback" "seqlock passive"; do
    set -- $cfg
    mode=$1 sw=$2 tr=$work/reuse-$1.grt
    name="registry reuse ($mode, $sw mode): 3000 greenlets, 30 alive, 63 slots"
    (cd "$work" && timeout 120 "$PY" "$GR_ROOT/tests/integration/programs/registry_reuse.py" \
        --count 3000 --live 30 --max-greenlets 64 --mode "$mode" --switches "$sw" \
        --above 640 --output "$tr") >"$tr.out" 2>"$tr.err"
    rc=$?
    "$GR_CLI" check --stall --format json "$tr" >"$tr.json" 2>"$tr.check.err"
    crc=$?
    if [ "$rc" -ne 0 ]; then
        gr_bad "$name: the program exited $rc"; head -5 "$tr.err"
    elif [ "$crc" -ne 0 ]; then
        gr_bad "$name: check --stall exited $crc"; "$GR_CLI" check --stall "$tr" 2>&1 | head -20
    else
        res=$(judge "$tr.out" "$tr" "$tr.json" 3000 64 2>"$tr.judge.err"; gr_quiet "$PY" "$tr.judge.err")
        if [ "$(printf '%s\n' "$res" | wc -l)" -eq 1 ] && printf '%s\n' "$res" | grep -q '^gids '; then
            gr_ok "$name: $res"
        else
            gr_bad "$name:"; printf '%s\n' "$res" | sed 's/^/      | /'
        fi
    fi
done

# More alive at once than the slots: counted and warned about.
tr=$work/over.grt
name="registry full (100 alive, 63 slots): untracked greenlets counted, check --stall warns"
(cd "$work" && timeout 120 "$PY" "$GR_ROOT/tests/integration/programs/registry_reuse.py" \
    --count 300 --live 100 --max-greenlets 64 --wait-samples 1 --output "$tr") >"$tr.out" 2>"$tr.err"
rc=$?
meta=$("$GR_CLI" dump "$tr" 2>/dev/null | sed -n 's/^# sampler_untracked_greenlets: //p')
want=$("$PY" -c '
import json, sys
with open(sys.argv[1]) as f:
    print([json.loads(l) for l in f if l.startswith("{")][-1]["last"]["untracked"])' "$tr.out" 2>/dev/null)
"$GR_CLI" check --stall "$tr" >"$tr.check" 2>&1
crc=$?
if [ "$rc" -eq 0 ] && [ -n "$meta" ] && [ "$meta" = "$want" ] && [ "$meta" -gt 0 ] && [ "$crc" -eq 0 ] &&
    grep -q "greenlets were past the sampler registry's capacity" "$tr.check"; then
    gr_ok "$name ($meta untracked)"
else
    gr_bad "$name: program exit $rc, META '${meta}', registry '${want}', check exit $crc"
    head -5 "$tr.err" "$tr.check"
fi

gr_tally
