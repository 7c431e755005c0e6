#!/usr/bin/env bash
# tests/integration/check_verdicts.sh --python PY: `greenreplay check` never
# passes a trace in which nothing was checked, says what was checkable, and
# fails fast on a file that is not a trace.
#
#   - an empty file, a 16-byte header, a recording whose every record was
#     dropped (--max-size 100), a recording killed before it wrote a
#     record, and a recording of start(); stop() alone: exit 2, "nothing
#     checked" in text, JSON (status nothing_checked) and JUnit (an error
#     of type nothing_checked), one line on stderr;
#   - a recording with marks: clean, blind spots checkable; the same
#     program without marks: clean, and the coverage section says blind
#     spots were not checkable;
#   - /dev/zero and a 3 GB sparse file: exit 2 at once, "offset 0: bad
#     magic", without reading the file.
# One line per test, then "N passed, N failed".  Exit 1 if any failed.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
gr_script_init verdicts "$@"
PY=$GR_PY cli=$GR_CLI work=$GR_WORK

# expect_nothing NAME TRACE WHY: check exits 2 and every format says
# "nothing checked" with WHY.
expect_nothing() {
    local name=$1 t=$2 why=$3 rc
    "$cli" check "$t" >"$work/out.txt" 2>"$work/err.txt"
    rc=$?
    if [ "$rc" -ne 2 ]; then
        gr_bad "$name: check exited $rc, expected 2"; gr_show "$work/out.txt" "$work/err.txt"; return
    fi
    if grep -q 'result: clean' "$work/out.txt" || ! grep -q "^result: nothing checked (.*$why" "$work/out.txt"; then
        gr_bad "$name: no 'result: nothing checked ($why...)' line"; gr_show "$work/out.txt"; return
    fi
    if [ "$(wc -l <"$work/err.txt")" -ne 1 ] || ! grep -qF "$t: nothing checked: " "$work/err.txt"; then
        gr_bad "$name: stderr is not one line naming the file"; gr_show "$work/err.txt"; return
    fi
    "$cli" check --format json --junit "$work/j.xml" "$t" >"$work/out.json" 2>/dev/null
    rc=$?
    if [ "$rc" -ne 2 ] || ! "$PY" - "$work/out.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
t = d["traces"][0]
assert d["exit_code"] == 2, d["exit_code"]
assert t["status"] == "nothing_checked", t["status"]
assert t["coverage"]["checked"] is False
assert t["coverage"]["nothing_checked"]
EOF
    then
        gr_bad "$name: JSON report (exit $rc) does not say nothing_checked"; gr_show "$work/out.json"; return
    fi
    if ! grep -q '<error type="nothing_checked" message="nothing checked: ' "$work/j.xml"; then
        gr_bad "$name: JUnit report has no nothing_checked error"; gr_show "$work/j.xml"; return
    fi
    gr_ok "$name: exit 2, nothing checked ($why) in text, JSON and JUnit"
}

: >"$work/empty.grt"
expect_nothing "empty file" "$work/empty.grt" "the file is empty"

cat >"$work/marks.py" <<'EOF'
import sys
import greenreplay

def child():
    greenreplay.mark("in child")

def main():
    greenreplay.start()
    child()
    if len(sys.argv) > 1 and sys.argv[1] == "kill":
        import os, signal
        os.kill(os.getpid(), signal.SIGKILL)
    greenreplay.stop()

main()
EOF
sed 's/greenreplay.mark("in child")/pass/' "$work/marks.py" >"$work/nomarks.py"
cat >"$work/startstop.py" <<'EOF'
import greenreplay
greenreplay.start()
greenreplay.stop()
EOF
rec() { (cd "$work" && "$cli" record --manual -o "$1" -- "$PY" "${@:2}") >"$work/rec.log" 2>&1; }

rec full.grt marks.py
if [ -s "$work/full.grt" ]; then
    head -c 16 "$work/full.grt" >"$work/header.grt"
    expect_nothing "header-only trace (16 bytes)" "$work/header.grt" "the file holds only its header"
else
    gr_bad "recording marks.py wrote no trace"; gr_show "$work/rec.log"
fi

rec killed.grt marks.py kill
size=$(wc -c <"$work/killed.grt" 2>/dev/null || echo 0)
if [ "$size" -eq 16 ]; then
    expect_nothing "recording killed before its first chunk ($size bytes)" "$work/killed.grt" \
        "the file holds only its header"
else
    gr_bad "recording killed before its first chunk: $size bytes, expected the 16-byte header"
fi

(cd "$work" && "$cli" record --manual --max-size 100 -o cap.grt -- "$PY" marks.py) >"$work/rec.log" 2>&1
expect_nothing "record --max-size 100 (every record dropped)" "$work/cap.grt" "every record was"

rec startstop.grt startstop.py
expect_nothing "start(); stop() only" "$work/startstop.grt" "no event of the program"

# A trace with marks: clean, blind spots checkable.
"$cli" check "$work/full.grt" >"$work/full.txt" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && grep -q '^result: clean' "$work/full.txt" &&
    grep -q '^  blind spots          checkable at 1 ground-truth point$' "$work/full.txt" &&
    grep -q '^  ended by             stop() (reason stop)$' "$work/full.txt"; then
    gr_ok "trace with a mark: clean, coverage says blind spots checkable at 1 point"
else
    gr_bad "trace with a mark: exit $rc or coverage missing"; gr_show "$work/full.txt"
fi

# The same program without a mark: clean, but said to be blind to blind spots.
rec nomarks.grt nomarks.py
"$cli" check "$work/nomarks.grt" >"$work/nomarks.txt" 2>&1
rc=$?
"$cli" check --format json "$work/nomarks.grt" >"$work/nomarks.json" 2>&1
if [ "$rc" -eq 0 ] && grep -q '^result: clean' "$work/nomarks.txt" &&
    grep -q '^  blind spots          not checkable (no MARK and no ground-truth stack)' "$work/nomarks.txt" &&
    "$PY" -c 'import json,sys; c=json.load(open(sys.argv[1]))["traces"][0]["coverage"]; assert c["blind_spots"]=="not_checkable" and c["marks"]==0' "$work/nomarks.json"; then
    gr_ok "trace without marks: clean, coverage says blind spots not checkable"
else
    gr_bad "trace without marks: exit $rc or no 'not checkable' coverage"; gr_show "$work/nomarks.txt"
fi

# Not a trace: fail at the header, without reading the file (memory is
# limited to 512 MB so that reading the 3 GB file whole would fail; not
# for an AddressSanitizer build, whose shadow memory needs more).
limit="ulimit -v 524288"
ldd "$cli" 2>/dev/null | grep -q libasan && limit=:
for f in /dev/zero "$work/big.bin"; do
    [ "$f" = "$work/big.bin" ] && truncate -s 3G "$f"
    start=$(date +%s%N)
    ($limit; exec timeout 20 "$cli" check "$f") >"$work/nt.out" 2>"$work/nt.err"
    rc=$?
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    if [ "$rc" -eq 2 ] && grep -qF "$f: offset 0: bad magic" "$work/nt.err" &&
        [ "$(wc -l <"$work/nt.err")" -eq 1 ]; then
        gr_ok "check $(basename "$f") (not a trace): exit 2, offset 0: bad magic (${ms} ms)"
    else
        gr_bad "check $f: exit $rc after ${ms} ms"; gr_show "$work/nt.err"
    fi
    rm -f "$work/big.bin"
done

gr_tally
