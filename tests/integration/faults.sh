#!/usr/bin/env bash
# tests/integration/faults.sh --python PY: `greenreplay record` under faults,
# what docs/USAGE.md "Under faults" promises:
#   disk full       a small tmpfs (mounted here; needs root, else SKIP with
#                   the reason): the program's exit status passes through,
#                   one line on stderr, trailer reason write-error with the
#                   count of dropped records, check names the loss
#   SIGKILL         of the program while recording: record exits 137, the
#                   trace stays readable (dump and check read it, truncated)
#   SIGINT/SIGTERM  sent to record: forwarded, the program's handler runs,
#                   its exit status passes through; the flush signal sent to
#                   record is forwarded and record lives on
#   option errors   exit 2 and one line on stderr naming the option, for bad
#                   --max-size, --ring, --flush-signal, -o, interpreter options;
#                   every command's --help has the same sections and an
#                   unknown option the same one-line message
#   -o              a file that is not a trace is refused (and kept), --force
#                   overwrites it; the program's own script is always refused;
#                   an old trace is emptied before the program starts
#   whole program   -c CODE and interpreter options work; the trace starts at
#                   the program's <module> (no runner frames, no traceback.py);
#                   the bytes do not depend on the working directory
# One line per test (PASS/FAIL/SKIP), then "N passed, N failed, N skipped".
# Exit status: 0 all passed or skipped, 1 a test failed, 2 bad usage.
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
# shellcheck source=lib.sh
. "$here/lib.sh"   # gr_quiet
cli=${BUILD:-$top/build}/greenreplay
prog=$here/programs/faulty.py
work=$(mktemp -d "${TMPDIR:-/tmp}/gr-faults.XXXXXX")
mounted=""
cleanup() {
    [ -n "$mounted" ] && umount "$mounted" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
pass=0 fail=0 skip=0
ok() { echo "PASS  $*"; pass=$((pass + 1)); }
bad() { echo "FAIL  $*"; fail=$((fail + 1)); }
skipped() { echo "SKIP  $*"; skip=$((skip + 1)); }
# wait_for FILE: up to 30 s for FILE to exist.
wait_for() {
    local i
    for i in $(seq 300); do [ -e "$1" ] && return 0; sleep 0.1; done
    return 1
}
# child_of PID: the pid of PID's child (the program `record` runs).
child_of() { pgrep -P "$1" | head -n 1; }

# ---- disk full -------------------------------------------------------------
mkdir -p "$work/full"
if mount -t tmpfs -o size=192k tmpfs "$work/full" 2>"$work/mount.err"; then
    mounted=$work/full
    # Uncompressed: compressed, the program's trace would fit in the tmpfs
    # (the write-error path is the same for both).
    "$cli" record --no-compress -o "$work/full/t.grt" -- "$PY" "$prog" busy >"$work/full.out" 2>"$work/full.err"
    rc=$?
    "$cli" check "$work/full/t.grt" >"$work/full.check" 2>&1
    trailer=$("$cli" dump "$work/full/t.grt" 2>&1 | tail -n 1)
    dropped=$(printf '%s' "$trailer" | sed -n 's/.*dropped=\([0-9]*\).*/\1/p')
    if [ $rc -eq 0 ] && grep -q '^program done' "$work/full.out" &&
       [ "$(gr_quiet "$PY" "$work/full.err" | wc -l)" -eq 1 ] && grep -q 'not written completely' "$work/full.err" &&
       printf '%s' "$trailer" | grep -q 'reason=write-error' && [ "${dropped:-0}" -gt 0 ] &&
       grep -q "write error.*: $dropped records lost" "$work/full.check"; then
        ok "disk full: program exit 0 passed through, one line on stderr, trailer write-error, $dropped records lost (check says so)"
    else
        bad "disk full: record exit $rc, trailer: $trailer"
        cat "$work/full.out" "$work/full.err" | head -5
        grep -i 'write' "$work/full.check" | head -3
    fi
    umount "$work/full" && mounted=""
else
    skipped "disk full: cannot mount a tmpfs ($(head -n 1 "$work/mount.err"); needs root)"
fi

# ---- SIGKILL of the program while recording ---------------------------------
rm -f "$work/ready"
"$cli" record -o "$work/kill.grt" -- "$PY" "$prog" spin "$work/ready" >/dev/null 2>"$work/kill.err" &
rpid=$!
if wait_for "$work/ready"; then
    sleep 0.5
    kill -KILL "$(child_of $rpid)"
fi
wait $rpid
rc=$?
"$cli" dump "$work/kill.grt" >"$work/kill.dump" 2>&1
drc=$?
"$cli" check "$work/kill.grt" >"$work/kill.check" 2>&1
crc=$?
if [ $rc -eq 137 ] && [ $drc -eq 0 ] && grep -q '^# truncated: [0-9]* bytes, ' "$work/kill.dump" &&
   [ "$(grep -c '^ *[0-9]' "$work/kill.dump")" -gt 0 ] && [ $crc -ne 2 ]; then
    ok "SIGKILL while recording: record exit 137, trace readable ($(grep -c '^ *[0-9]' "$work/kill.dump") records, truncated), check exit $crc"
else
    bad "SIGKILL while recording: record exit $rc, dump exit $drc, check exit $crc"
    tail -n 2 "$work/kill.dump"
fi

# ---- SIGINT and SIGTERM sent to record --------------------------------------
for sig in INT TERM; do
    want=$([ $sig = INT ] && echo 3 || echo 4)
    rm -f "$work/ready"
    "$cli" record -o "$work/sig$sig.grt" -- "$PY" "$prog" wait "$work/ready" >"$work/sig$sig.out" 2>&1 &
    rpid=$!
    wait_for "$work/ready" && kill -$sig $rpid
    wait $rpid
    rc=$?
    if [ $rc -eq $want ] && grep -q "^handler SIG$sig" "$work/sig$sig.out" &&
       "$cli" dump "$work/sig$sig.grt" | grep -q 'reason=exit' && [ -z "$(child_of $rpid)" ]; then
        ok "SIG$sig to record: forwarded, the program's handler ran, exit status $rc passed through, trace complete"
    else
        bad "SIG$sig to record: exit $rc (want $want)"; head -5 "$work/sig$sig.out"
    fi
done

# The flush signal sent to record: forwarded (the trace grows while the
# program runs) and record lives on.
rm -f "$work/ready"
"$cli" record --flush-signal USR1 -o "$work/flush.grt" -- "$PY" "$prog" wait "$work/ready" >"$work/flush.out" 2>&1 &
rpid=$!
if wait_for "$work/ready"; then
    sleep 0.3
    kill -USR1 $rpid
    sleep 1
fi
size=$(stat -c %s "$work/flush.grt" 2>/dev/null || echo 0)
alive=0
kill -0 $rpid 2>/dev/null && alive=1
kill -TERM $rpid 2>/dev/null
wait $rpid
rc=$?
if [ $alive = 1 ] && [ "$size" -gt 16 ] && [ $rc -eq 4 ]; then
    ok "--flush-signal USR1 to record: forwarded ($size bytes on disk while running), record lived on, exit $rc"
else
    bad "--flush-signal USR1 to record: alive=$alive, $size bytes while running, exit $rc"
fi

# ---- option errors: exit 2, one line naming the option ----------------------
# "OPTION-NAME|ARGS..." (ARGS split on spaces; '' is an empty argument)
while IFS='|' read -r name args; do
    eval "set -- $args"
    label=${args//$prog/faulty.py}; label=${label//$work/W}; label=${label//$PY/PY}
    "$cli" record "$@" >"$work/opt.out" 2>"$work/opt.err"
    rc=$?
    if [ $rc -eq 2 ] && [ "$(wc -l <"$work/opt.err")" -eq 1 ] && grep -q -- "$name" "$work/opt.err" &&
       [ ! -s "$work/opt.out" ]; then
        ok "option error (record $label): exit 2, one line naming $name"
    else
        bad "option error (record $label): exit $rc, stderr: $(head -n 3 "$work/opt.err")"
    fi
done <<EOF
--max-size|--max-size abc -o $work/o.grt -- $PY $prog raise
--max-size|--max-size 10X -o $work/o.grt -- $PY $prog raise
--max-size|--max-size -5 -o $work/o.grt -- $PY $prog raise
--max-size|--max-size 0 -o $work/o.grt -- $PY $prog raise
--max-size|--max-size '' -o $work/o.grt -- $PY $prog raise
--ring|--ring abc -o $work/o.grt -- $PY $prog raise
--ring|--ring -3 -o $work/o.grt -- $PY $prog raise
--flush-signal|--flush-signal FOO -o $work/o.grt -- $PY $prog raise
--flush-signal|--flush-signal KILL -o $work/o.grt -- $PY $prog raise
--bogus|--bogus -o $work/o.grt -- $PY $prog raise
-o|--times -o $work -- $PY $prog raise
-o|--times -o $work/no/such/dir/t.grt -- $PY $prog raise
-I|-o $work/o.grt -- $PY -I $prog raise
-E|-o $work/o.grt -- $PY -E $prog raise
EOF

# Every command's --help has the same sections, and an unknown option gives
# the same one line and exit 2.
helpbad=""
for c in "" record check dump stats edit script diff reduce; do
    h=$("$cli" $c --help 2>&1)
    for sect in '^usage: greenreplay' '^options:' '^exit status: '; do
        printf '%s\n' "$h" | grep -q "$sect" || helpbad+=" ${c:-greenreplay}:$sect"
    done
    "$cli" $c --no-such-option >/dev/null 2>"$work/unk.err"
    rc=$?
    want="greenreplay: ${c:+$c: }unknown option --no-such-option (\`greenreplay ${c:+$c }--help\` shows the usage)"
    [ $c ] || want="greenreplay: unknown command '--no-such-option' (\`greenreplay --help\` shows the usage)"
    { [ $rc -eq 2 ] && [ "$(cat "$work/unk.err")" = "$want" ]; } || helpbad+=" ${c:-greenreplay}:unknown-option($rc: $(head -c 80 "$work/unk.err"))"
done
if [ -z "$helpbad" ]; then
    ok "help texts: usage, options and exit status sections in every command; one message for an unknown option"
else
    bad "help texts:$helpbad"
fi

# An interpreter the recorder is not built for: exit 2, the make hint.
GREENREPLAY_PYTHONPATH=$work/empty-pkg
mkdir -p "$GREENREPLAY_PYTHONPATH"
GREENREPLAY_PYTHONPATH=$GREENREPLAY_PYTHONPATH "$cli" record -o "$work/o.grt" -- "$PY" "$prog" raise \
    >/dev/null 2>"$work/unbuilt.err"
rc=$?
if [ $rc -eq 2 ] && [ "$(wc -l <"$work/unbuilt.err")" -eq 1 ] && grep -q "make PYTHON=$PY" "$work/unbuilt.err"; then
    ok "interpreter the recorder is not built for: exit 2, one line with \`make PYTHON=$PY\`"
else
    bad "unbuilt interpreter: exit $rc: $(cat "$work/unbuilt.err")"
fi

# ---- -o --------------------------------------------------------------------
cp "$prog" "$work/victim.py"
printf 'precious data\n' >"$work/notes.txt"
"$cli" record -o "$work/notes.txt" -- "$PY" "$prog" raise >/dev/null 2>"$work/o1.err"
rc1=$?
"$cli" record -o "$work/victim.py" -- "$PY" "$work/victim.py" raise >/dev/null 2>"$work/o2.err"
rc2=$?
"$cli" record --force -o "$work/victim.py" -- "$PY" "$work/victim.py" raise >/dev/null 2>"$work/o3.err"
rc3=$?
if [ $rc1 -eq 2 ] && grep -q 'not a greenreplay trace' "$work/o1.err" && grep -q '^precious data$' "$work/notes.txt" &&
   [ $rc2 -eq 2 ] && [ $rc3 -eq 2 ] && grep -q "is the program's script" "$work/o3.err" &&
   cmp -s "$prog" "$work/victim.py"; then
    ok "-o over a file that is not a trace: refused, file kept; the program's own script refused even with --force"
else
    bad "-o over a non-trace: exits $rc1 $rc2 $rc3"; cat "$work/o1.err" "$work/o2.err" "$work/o3.err"
fi
"$cli" record --force -o "$work/notes.txt" -- "$PY" "$prog" raise >/dev/null 2>&1
if [ "$(head -c 6 "$work/notes.txt")" = GRRPLY ]; then
    ok "--force: -o over a file that is not a trace writes the trace"
else
    bad "--force did not write the trace over notes.txt"
fi

# An old trace is emptied before the program starts: a run killed before it
# starts recording (--manual, start() never reached) leaves no old trace.
"$cli" record -o "$work/old.grt" -- "$PY" "$prog" raise >/dev/null 2>&1
before=$(stat -c %s "$work/old.grt")
printf 'import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n' >"$work/early.py"
"$cli" record --manual -o "$work/old.grt" -- "$PY" "$work/early.py" >/dev/null 2>&1
rc=$?
after=$(stat -c %s "$work/old.grt" 2>/dev/null || echo missing)
if [ $rc -eq 137 ] && [ "$before" -gt 16 ] && [ "$after" = 0 ]; then
    ok "old trace ($before bytes) emptied at launch: a run killed before start() leaves 0 bytes"
else
    bad "old trace at launch: exit $rc, $before bytes before, $after after"
fi

# ---- whole program -----------------------------------------------------------
"$cli" record -o "$work/c.grt" -- "$PY" -X dev -u -X faulthandler -W error -c \
    'import sys; print("flags", sys.flags.dev_mode, sys.argv[1:])' a b >"$work/c.out" 2>&1
rc=$?
first=$("$cli" dump "$work/c.grt" 2>&1 | grep -m 1 ' CALL ')
if [ $rc -eq 0 ] && grep -q "^flags True \['a', 'b'\]" "$work/c.out" &&
   printf '%s' "$first" | grep -q 'CALL .*<module> (<string>:1)' && "$cli" check "$work/c.grt" >/dev/null 2>&1; then
    ok "-c CODE with -X dev -u -X faulthandler -W error: ran, first call <module> (<string>:1), check clean"
else
    bad "-c CODE: exit $rc, first call: $first"; head -5 "$work/c.out"
fi

"$cli" record -o "$work/raise.grt" -- "$PY" "$prog" raise >"$work/raise.out" 2>&1
rc=$?
"$cli" dump "$work/raise.grt" >"$work/raise.dump" 2>&1
if [ $rc -eq 1 ] && grep -q 'ValueError: faulty.py raises' "$work/raise.out" &&
   grep -q 'excepthook untouched: True' "$work/raise.out" &&
   ! grep -q '__main__.py' "$work/raise.out" &&
   grep -q 'GREENLET .* depth=0 stack=-' "$work/raise.dump" &&
   ! grep -q 'traceback.py\|<greenreplay>/__main__' "$work/raise.dump" &&
   [ "$(awk '/RETURN .*<module> \(faulty.py/ { n = 0; seen = 1; next } seen && /^ *[0-9]/ { n++ }
             END { print n + 0 }' "$work/raise.dump")" -eq 2 ]; then
    ok "whole program that raises: exit 1, sys.excepthook untouched, seed stack empty, no runner frames, no traceback.py (after <module>'s return only STOP and STACK)"
else
    bad "whole program that raises: exit $rc"; head -8 "$work/raise.dump"
fi

# Default --root: the script's directory, whatever the working directory.
(cd / && "$cli" record -o "$work/root1.grt" -- "$PY" "$prog" raise) >/dev/null 2>&1
(cd "$work" && "$cli" record -o "$work/root2.grt" -- "$PY" "$prog" raise) >/dev/null 2>&1
mkdir -p "$work/sub"
printf 'import greenreplay\ndef f():\n    pass\ngreenreplay.start()\nf()\ngreenreplay.stop()\n' >"$work/sub/manual.py"
(cd / && "$cli" record --manual -o "$work/root3.grt" -- "$PY" "$work/sub/manual.py") >/dev/null 2>&1
if cmp -s "$work/root1.grt" "$work/root2.grt" && "$cli" dump "$work/root1.grt" | grep -q '(faulty.py:' &&
   "$cli" dump "$work/root3.grt" | grep -q 'CALL .* f (manual.py:2)'; then
    ok "default --root: the script's directory in both modes; bytes independent of the working directory"
else
    bad "default --root: traces from / and from $work differ, or file names not relative to the script"
fi

# diff with a trace that holds no record (empty, header only) is not "the
# same structure": one line naming the file, exit 2.
: >"$work/empty.grt"
head -c 16 "$work/root1.grt" >"$work/header.grt"
"$cli" diff "$work/root1.grt" "$work/empty.grt" >"$work/dempty.out" 2>"$work/dempty.err"
r1=$?
"$cli" diff "$work/header.grt" "$work/header.grt" >/dev/null 2>"$work/dheader.err"
r2=$?
if [ $r1 -eq 2 ] && [ $r2 -eq 2 ] && [ ! -s "$work/dempty.out" ] &&
   [ "$(wc -l <"$work/dempty.err")" -eq 1 ] && grep -q 'empty.grt: no record to compare' "$work/dempty.err" &&
   grep -q 'header.grt: no record to compare' "$work/dheader.err"; then
    ok "diff with an empty or header-only trace: exit 2, one line naming the file"
else
    bad "diff with an empty trace: exit $r1 / $r2"; cat "$work/dempty.out" "$work/dempty.err" | head -5
fi

echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
