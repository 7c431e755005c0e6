#!/usr/bin/env bash
# tests/integration/record_modes.sh --python PY: `greenreplay record` on real
# programs: -m module, a size cap, ring mode (its program records survive
# the STACK records written at exit; edit of a ring trace keeps its GAP),
# the flush signal.  One line per
# test, then "N passed, N failed".  Exit 1 if any failed.
set -u
PY=/usr/bin/python3
while [ $# -gt 0 ]; do
    case "$1" in
        --python) PY=$2; shift 2 ;;
        *) echo "usage: $0 [--python PY]" >&2; exit 2 ;;
    esac
done
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cli=${BUILD:-$top/build}/greenreplay
work=$(mktemp -d "${TMPDIR:-/tmp}/gr-modes.XXXXXX")
trap 'rm -rf "$work"' EXIT
pass=0 fail=0
ok() { echo "PASS  $*"; pass=$((pass + 1)); }
bad() { echo "FAIL  $*"; fail=$((fail + 1)); }

if ! "$PY" -c 'import greenlet' 2>/dev/null; then
    echo "SKIP  record modes: greenlet is not importable by $PY"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi

# -m module: the module's greenlet and mark are recorded and check is clean.
(cd "$here/programs" && "$cli" record -o "$work/mod.grt" -- "$PY" -m modmain) >"$work/mod.out" 2>&1
if "$cli" check "$work/mod.grt" >"$work/mod.check" 2>&1 &&
   "$cli" dump "$work/mod.grt" | grep -q 'MARK .*"in module greenlet"'; then
    ok "record -m module: recorded, mark present, check clean"
else
    bad "record -m module (see $work/mod.check)"; cat "$work/mod.out" "$work/mod.check" | head -20
fi

# A program written for --manual, recorded whole: its own start() and
# stop() change nothing (it runs to the end, every mark is recorded), and
# its raw thread, never profiled, is one blind_spot (its mark) and one
# unreached (its start), with its open frame a note (kind unobserved), not
# also an imbalance.
"$cli" record -o "$work/api.grt" -- "$PY" "$here/programs/manual_api.py" >"$work/api.out" 2>&1
rc=$?
"$cli" check --format json "$work/api.grt" >"$work/api.json" 2>&1
crc=$?
marks=$("$cli" dump "$work/api.grt" | grep -c 'MARK .*"\(before start\|in raw thread\|in greenlet\|after stop\)"')
if [ $rc -eq 0 ] && [ $crc -eq 1 ] && [ "$marks" -eq 4 ] &&
   grep -qx 'start returned None' "$work/api.out" && grep -qx 'stop returned None' "$work/api.out" &&
   grep -qx 'recording after stop: True' "$work/api.out" &&
   "$PY" - "$work/api.json" <<'PYEOF'
import json, sys
doc = json.load(open(sys.argv[1]))
text = json.dumps(doc)
rules = sorted({v["rule"] for t in doc["traces"] for v in t.get("violations", [])})
assert rules == ["blind_spot", "unreached"], rules
assert '"unobserved"' in text, "no unobserved note"
PYEOF
then
    ok "whole-program record of a --manual program: start()/stop() change nothing, 4 marks, raw thread: blind_spot + unreached + unobserved note"
else
    bad "whole-program record of a --manual program: record exit $rc, check exit $crc, $marks marks, json below"
    cat "$work/api.out" | head -10; head -c 1500 "$work/api.json"
fi

# Size cap: the file stays under the cap (plus the trailer), the trailer says
# size-cap, the dropped records are counted, and the trace is still usable.
"$cli" record --max-size 20k -o "$work/cap.grt" -- "$PY" "$here/programs/service.py" >/dev/null 2>&1
size=$(stat -c %s "$work/cap.grt" 2>/dev/null || echo 0)
"$cli" check "$work/cap.grt" >"$work/cap.check" 2>&1
rc=$?
if [ "$size" -le $((20 * 1024 + 64)) ] && [ "$size" -gt 16 ] && [ $rc -ne 2 ] &&
   "$cli" dump "$work/cap.grt" | grep -q 'reason=size-cap' && grep -q 'size cap' "$work/cap.check"; then
    ok "record --max-size 20k: $size bytes, trailer reason size-cap, check exit $rc"
else
    bad "record --max-size 20k: $size bytes, check exit $rc"; head -5 "$work/cap.check"
fi

# Ring mode: only about the last N records are kept, with a GAP counting the
# others, and the trace checks without errors.
"$cli" record --ring 1000 -o "$work/ring.grt" -- "$PY" "$here/programs/service.py" >/dev/null 2>&1
n=$("$cli" dump "$work/ring.grt" | grep -c '^ *[0-9]')
"$cli" check "$work/ring.grt" >"$work/ring.check" 2>&1
rc=$?
if [ "$n" -ge 1000 ] && [ "$n" -le 3000 ] && "$cli" dump "$work/ring.grt" | grep -q '^# ring: [0-9]* earlier records dropped' &&
   [ $rc -eq 0 ]; then
    ok "record --ring 1000: $n records kept, GAP recorded, check clean"
else
    bad "record --ring 1000: $n records, check exit $rc"; head -8 "$work/ring.check"
fi

# A ring smaller than the STACK records written at exit (3001 live
# greenlets, --ring 1000): the program's last records stay in the ring
# after them, so its check still checks events of the program (JSON
# coverage program_events), and finds them clean.
"$cli" record --ring 1000 -o "$work/ringp.grt" -- "$PY" "$here/programs/ring_many_parked.py" >/dev/null 2>&1
"$cli" check --format json "$work/ringp.grt" >"$work/ringp.json" 2>/dev/null
rc=$?
got=$("$PY" - "$work/ringp.json" <<'PYEOF' 2>/dev/null
import json, sys
t = json.load(open(sys.argv[1]))["traces"][0]
c = t["coverage"]
print(c["program_events"], c["stacks_at_stop"], t["status"])
PYEOF
)
set -- $got
if [ $rc -eq 0 ] && [ "${1:-0}" -gt 0 ] && [ "${2:-0}" -ge 3001 ]; then
    ok "record --ring 1000 with 3001 live greenlets at exit: $1 program events kept and checked, $2 STACK records"
else
    bad "record --ring 1000 with 3001 live greenlets at exit: check exit $rc, program events/STACKs/status '$got' (the ring holds no program record)"
fi
set --

# edit keeps the ring's GAP: the ring trace without its first record (and
# one more) counts the same records lost, in check's line and dump's.
lost() { "$cli" check "$1" 2>&1 | grep '^  records lost'; }
"$cli" edit --drop 0,5 -o "$work/ring-edit.grt" "$work/ring.grt" 2>"$work/ring-edit.err"
rc=$?
want=$(lost "$work/ring.grt")
got=$(lost "$work/ring-edit.grt")
ring_line=$("$cli" dump "$work/ring.grt" | grep '^# ring:')
if [ $rc -eq 0 ] && [ -n "$ring_line" ] && [[ $want == *"ring gap "[1-9]* ]] && [ "$got" = "$want" ] &&
   [ "$("$cli" dump "$work/ring-edit.grt" | grep '^# ring:')" = "$ring_line" ]; then
    ok "edit --drop 0,5 of the ring trace keeps its GAP:$(printf '%s' "$got" | tr -s ' ')"
else
    bad "edit of the ring trace: exit $rc, records lost '$got', want '$want'"; cat "$work/ring-edit.err"
fi

# Flush signal: the program checks that the file grew when it signalled
# itself, in plain and in ring mode; the final trace is complete.
for mode in plain ring; do
    extra=()
    [ $mode = ring ] && extra=(--ring 1000)
    out=$("$cli" record --flush-signal USR1 "${extra[@]}" -o "$work/flush-$mode.grt" -- "$PY" \
          "$here/programs/service.py" "$work/flush-$mode.grt" USR1 ${extra[0]:+ring} 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && printf '%s' "$out" | grep -q '^flushed:' &&
       "$cli" dump "$work/flush-$mode.grt" | grep -q 'reason=exit'; then
        ok "record --flush-signal USR1 ($mode): $(printf '%s' "$out" | grep '^flushed:')"
    else
        bad "record --flush-signal USR1 ($mode): exit $rc: $out"
    fi
done

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
