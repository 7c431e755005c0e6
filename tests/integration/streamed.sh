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
#     `check --stall` both ways: same exit status, JSON, text and HTML.
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

gr_tally
