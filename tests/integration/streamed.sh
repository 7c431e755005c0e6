#!/usr/bin/env bash
# tests/integration/streamed.sh --python PY: `check`, `check --html` and
# `check --stall` read a trace one chunk at a time (docs/ARCHITECTURE.md,
# "Streaming"); `check --in-memory` reads it whole, the way they all did
# before.  Both must give the same report:
#   - every fixture (fixtures/*.py) recorded, then checked both ways: the
#     exit status, the JSON report and the HTML page are identical;
#   - the sampler stall scenario (fixtures/stall/stall.py) recorded with
#     the hold-lock sampler (must be flagged: stall_depth) and the
#     two-phase sampler (must not be), a few idle greenlets deep, then
#     `check --stall` both ways: same exit status, JSON, text and HTML;
#   - `diff` streamed and `diff --in-memory` (each fixture's trace with
#     itself and with the one before it, every hunk) print the same bytes;
#   - `dump` and `dump --in-memory` print the same bytes for a trace with
#     META records written at stop (GREENREPLAY_VERIFY_CONTINUED=1,
#     programs/meta_at_stop.py), recorded in small chunks (the METAs in a
#     later chunk than the first record) and in one chunk (the same one):
#     the METAs come after the last record line, just before the final
#     line, and the two recordings give the same dump (docs/FORMAT.md §6.1);
#     with --times too.
# One line per test, then "N passed, N failed".  Exit 1 if any failed.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
gr_script_init streamed "$@"
PY=$GR_PY cli=$GR_CLI work=$GR_WORK

# same NAME ARGS...: `check ARGS` streamed and with --in-memory give the
# same exit status and the same stdout; an --html page (written to
# $work/page.html by the caller's ARGS) is compared too.
same() {
    local name=$1 rc1 rc2
    shift
    "$cli" check "$@" >"$work/a.out" 2>"$work/a.err"
    rc1=$?
    [ -f "$work/page.html" ] && mv "$work/page.html" "$work/a.html"
    "$cli" check --in-memory "$@" >"$work/b.out" 2>"$work/b.err"
    rc2=$?
    [ -f "$work/page.html" ] && mv "$work/page.html" "$work/b.html"
    if [ "$rc1" -ne "$rc2" ]; then
        gr_bad "$name: exit $rc1 streamed, $rc2 in memory"; gr_show "$work/a.err" "$work/b.err"
    elif ! cmp -s "$work/a.out" "$work/b.out"; then
        gr_bad "$name: the reports differ"; diff "$work/a.out" "$work/b.out" | gr_show /dev/stdin
    elif [ -f "$work/a.html" ] && ! cmp -s "$work/a.html" "$work/b.html"; then
        gr_bad "$name: the HTML pages differ"
    else
        gr_ok "$name: same report streamed and in memory (exit $rc1)"
    fi
    rm -f "$work/a.html" "$work/b.html"
}

n=0
for f in "$GR_ROOT"/fixtures/*.py; do
    name=$(basename "$f" .py)
    t=$work/$name.grt
    gr_record "$PY" "fixtures/$name.py" "$t" "$work/$name.log" 120
    if [ ! -s "$t" ]; then
        continue # a fixture that does not record here (missing module): run.sh judges it
    fi
    n=$((n + 1))
    same "$name" --format json --html "$work/page.html" "$t"
done
[ "$n" -gt 0 ] || gr_bad "no fixture recorded (see $work/*.log)"

# same_diff NAME A B ARGS...: `diff` streamed and with --in-memory (both
# traces loaded, aligned globally) give the same exit status and bytes.
same_diff() {
    local name=$1 a=$2 b=$3 rc1 rc2
    shift 3
    "$cli" diff "$a" "$b" "$@" >"$work/d1.out" 2>"$work/d1.err"
    rc1=$?
    "$cli" diff --in-memory "$a" "$b" "$@" >"$work/d2.out" 2>"$work/d2.err"
    rc2=$?
    if [ "$rc1" -ne "$rc2" ] || [ "$rc1" -gt 1 ]; then
        gr_bad "diff $name: exit $rc1 streamed, $rc2 in memory"; gr_show "$work/d1.err" "$work/d2.err"
    elif ! cmp -s "$work/d1.out" "$work/d2.out"; then
        gr_bad "diff $name: the reports differ"; diff "$work/d1.out" "$work/d2.out" | gr_show /dev/stdin
    else
        gr_ok "diff $name: same report streamed and in memory (exit $rc1)"
    fi
}
# each recorded fixture against the one before it (different: the hunks,
# their stacks and lines) and against itself
prev=
for t in "$work"/*.grt; do
    [ -s "$t" ] || continue
    name=$(basename "$t" .grt)
    same_diff "$name with itself" "$t" "$t"
    [ -n "$prev" ] && same_diff "$(basename "$prev" .grt) with $name" "$prev" "$t" --max 0 --context 2
    prev=$t
done

export PYTHONPATH=${BUILD:-$GR_ROOT/build}/python${PYTHONPATH:+:$PYTHONPATH}
for mode in hold-lock two-phase; do
    t=$work/stall-$mode.grt
    if ! "$PY" "$GR_ROOT/fixtures/stall/stall.py" --mode "$mode" --idle 40 --depth 20 \
        --workers 4 --samples 20 --budget-s 20 --output "$t" >"$work/stall.log" 2>&1; then
        gr_bad "stall scenario $mode did not run"; gr_show "$work/stall.log"; continue
    fi
    same "stall $mode (json)" --stall --format json "$t"
    same "stall $mode (text, html)" --stall --html "$work/page.html" "$t"
    "$cli" check --stall --format json "$t" >"$work/s.json" 2>/dev/null
    depth=$("$PY" - "$work/s.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
t = d["traces"][0]
print(sum(1 for v in t.get("violations", []) if v.get("rule") == "stall_depth"))
EOF
)
    if [ "$mode" = hold-lock ] && [ "$depth" != 1 ]; then
        gr_bad "stall hold-lock: no stall_depth violation (got '$depth')"
    elif [ "$mode" = two-phase ] && [ "$depth" != 0 ]; then
        gr_bad "stall two-phase: stall_depth flagged (got '$depth')"
    else
        gr_ok "stall $mode: stall_depth $([ "$depth" = 1 ] && echo flagged || echo not flagged), as the design predicts"
    fi
done

# META records written at stop: the same place in every dump.
for chunk in 256 0; do
    t=$work/meta-$chunk.grt
    if ! GREENREPLAY_VERIFY_CONTINUED=1 GREENREPLAY_TIMES=1 \
        "$PY" "$GR_ROOT/tests/integration/programs/meta_at_stop.py" \
        "$t" "$chunk" >"$work/meta.log" 2>&1; then
        gr_bad "meta_at_stop (chunk $chunk) did not run"; gr_show "$work/meta.log"; continue
    fi
    "$cli" dump "$t" >"$work/meta-$chunk.dump" 2>"$work/meta.err"
    rc1=$?
    "$cli" dump --in-memory "$t" >"$work/meta-$chunk.mem" 2>>"$work/meta.err"
    rc2=$?
    chunks=$("$cli" stats "$t" 2>/dev/null | sed -n 's/^chunks: \([0-9]*\).*/\1/p')
    # the last three lines: continued_verified, continued_mismatch, trailer
    tail3=$(tail -n 3 "$work/meta-$chunk.dump" |
        sed 's/^\(# continued_[a-z]*: \)[0-9]*$/\1N/; s/^\(# trailer: \).*/\1.../' | tr '\n' '|')
    if [ "$rc1" -ne 0 ] || [ "$rc2" -ne 0 ]; then
        gr_bad "meta_at_stop (chunk $chunk): dump exit $rc1 streamed, $rc2 in memory"; gr_show "$work/meta.err"
    elif [ "$chunk" = 256 ] && ! [ "${chunks:-0}" -gt 1 ]; then
        gr_bad "meta_at_stop (chunk 256): ${chunks:-?} chunk(s), the test needs the METAs in a later one"
    elif [ "$chunk" = 0 ] && [ "${chunks:-0}" != 1 ]; then
        gr_bad "meta_at_stop (chunk 0): ${chunks:-?} chunks, the test needs one"
    elif ! cmp -s "$work/meta-$chunk.dump" "$work/meta-$chunk.mem"; then
        gr_bad "meta_at_stop ($chunks chunks): dump and dump --in-memory differ"
        diff "$work/meta-$chunk.dump" "$work/meta-$chunk.mem" | gr_show /dev/stdin
    elif ! "$cli" dump --times "$t" >"$work/meta-t.dump" 2>"$work/meta.err" ||
        ! "$cli" dump --times --in-memory "$t" >"$work/meta-t.mem" 2>>"$work/meta.err" ||
        ! cmp -s "$work/meta-t.dump" "$work/meta-t.mem"; then
        gr_bad "meta_at_stop ($chunks chunks): dump --times and dump --times --in-memory differ or fail"
        gr_show "$work/meta.err"
    elif [ "$tail3" != "# continued_verified: N|# continued_mismatch: N|# trailer: ...|" ]; then
        gr_bad "meta_at_stop ($chunks chunks): the METAs written at stop are not just before the final line (last lines: $tail3)"
    else
        gr_ok "meta_at_stop ($chunks chunk(s)): dump and dump --in-memory byte-identical (with --times too), the METAs written at stop before the final line"
    fi
done
if [ -s "$work/meta-256.dump" ] && [ -s "$work/meta-0.dump" ]; then
    if cmp -s "$work/meta-256.dump" "$work/meta-0.dump"; then
        gr_ok "meta_at_stop: the same dump in small chunks and in one chunk"
    else
        gr_bad "meta_at_stop: the dump depends on where the chunks end"
        diff "$work/meta-256.dump" "$work/meta-0.dump" | gr_show /dev/stdin
    fi
fi

gr_tally
