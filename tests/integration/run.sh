#!/usr/bin/env bash
# tests/integration/run.sh - record every fixture and compare it with its
# golden dump, its expected check outcome and a second recording.
#
# usage: tests/integration/run.sh --python PY [--update] [--known FILE] [NAME...]
#
# For each fixtures/NAME.py (or only the NAMEs given), in a fresh process
# each time:
#   check NAME        record it (`greenreplay record --manual`) into
#                     build/traces/ENV/NAME.grt, run `greenreplay check` and
#                     compare the outcome with the fixture's "# expect:" line
#                     and the known issues (fixtures/known-issues.ini, or
#                     --known FILE), as the matrix does (ci/matrix-report.py
#                     verdict): a difference an entry for this Python and
#                     greenlet explains passes as KNOWN; a fixture an entry
#                     names that gives its expected outcome fails as STALE
#                     (narrow or remove the entry)
#   golden NAME       `greenreplay dump` of the trace against
#                     fixtures/golden/ENV/NAME.txt (unified diff on mismatch)
#   determinism NAME  record it again: the two traces must be byte-identical
# ENV comes from the trace's META records: python and greenlet major.minor,
# e.g. py3.11-greenlet2.0.  A fixture whose "# requires:" modules PY cannot
# import is skipped with the reason.  Then the tests of damaged input:
# seed traces edited with `greenreplay edit --drop` (a lost CALL must give a
# blind_spot at the MARK, a lost RETURN an imbalance, a lost SWITCH a
# switch_consistency violation, at indices taken from the dumps), truncated
# and killed recordings, a corrupt trace and a missing interpreter.
#
# --update rewrites the golden dumps instead of comparing them (`make
# golden`); review `git diff fixtures/golden` before committing.
#
# Output: one line per test (PASS / FAIL / SKIP), details indented below a
# failure, and a last line "N passed, N failed[, N skipped]".
# Exit status: 0 all passed, 1 a test failed, 2 bad usage or nothing to run.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
GR_ROOT=$ROOT
GR_CLI=${GREENREPLAY_CLI:-$ROOT/build/greenreplay}
# shellcheck source=lib.sh
. "$ROOT/tests/integration/lib.sh"

usage() {
    sed -n '3,4p' "${BASH_SOURCE[0]}" | sed 's/^# //' >&2
    exit 2
}

GR_PY=""
UPDATE=0
KNOWN=$ROOT/fixtures/known-issues.ini
ONLY=()
while [ $# -gt 0 ]; do
    case $1 in
        --python) [ $# -ge 2 ] || usage; GR_PY=$2; shift 2 ;;
        --python=*) GR_PY=${1#--python=}; shift ;;
        --update) UPDATE=1; shift ;;
        --known) [ $# -ge 2 ] || usage; KNOWN=$2; shift 2 ;;
        -h|--help) sed -n '2,28p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "run.sh: unknown option $1" >&2; usage ;;
        *) ONLY+=("$1"); shift ;;
    esac
done
[ -n "$GR_PY" ] || usage
if [ ! -x "$GR_CLI" ]; then
    echo "run.sh: $GR_CLI is missing; build it first (make)" >&2
    exit 2
fi
if ! "$GR_PY" -c 'import sys' 2>/dev/null; then
    echo "run.sh: $GR_PY is not a usable Python interpreter" >&2
    exit 2
fi

TRACES=$ROOT/build/traces
# Scratch files of this run; removed at the end unless a test failed.
WORK=$TRACES/.work/run.$$
rm -rf "$WORK"
mkdir -p "$WORK"
NPASS=0 NFAIL=0 NSKIP=0

pass() { NPASS=$((NPASS + 1)); printf 'PASS  %s\n' "$*"; }
fail() { NFAIL=$((NFAIL + 1)); printf 'FAIL  %s\n' "$*"; }
skip() { NSKIP=$((NSKIP + 1)); printf 'SKIP  %s\n' "$*"; }
# detail [MAX] < text: indented lines under a FAIL (at most MAX, default 40).
detail() {
    local max=${1:-40}
    awk -v max="$max" 'NR <= max { print "      | " $0 } NR == max + 1 { print "      | ..." }'
}

# ---------------------------------------------------------------- fixtures

# Whether PY is a debug build (known issues of build = debug).
PY_DEBUG=$("$GR_PY" -c 'import sys; print(int(hasattr(sys, "gettotalrefcount")))' 2>/dev/null)

# known_verdict NAME CHECK_JSON DUMP WANT_RULES WANT_CRASH CRASHED RC CRC:
# "OUTCOME<TAB>KNOWN IDS<TAB>TEXT" of ci/matrix-report.py verdict (pass,
# known, xpass, fail), with the Python and greenlet versions of the
# trace's META records.
known_verdict() {
    local name=$1 json=$2 dump=$3 want=$4 want_crash=$5 crashed=$6 rc=$7 crc=$8 pyv glv
    pyv=$(sed -n 's/^# python: //p' "$dump" | head -n 1)
    glv=$(sed -n 's/^# greenlet: //p' "$dump" | head -n 1)
    [ -n "$pyv" ] || pyv=$("$GR_PY" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null)
    local args=(verdict "$json" --known "$KNOWN" --fixture "$name" --python "$pyv" --greenlet "${glv:-none}"
                --want "$want" --rc "$rc" --check-rc "$crc")
    [ "$want_crash" = 1 ] && args+=(--want-crash)
    [ "$crashed" = 1 ] && args+=(--crashed)
    [ "$PY_DEBUG" = 1 ] && args+=(--debug)
    /usr/bin/python3 "$ROOT/ci/matrix-report.py" "${args[@]}" 2>&1 | head -n 1
}

declare -A ENV_OF   # fixture name -> environment of its trace

run_fixture() {
    local f=$1 name expect want want_crash want_rules reason
    name=$(basename "$f" .py)
    if ! gr_header_present "$f" expect; then
        fail "check $name: the fixture has no '# expect:' header line"
        return
    fi
    expect=$(gr_header "$f" expect)
    want=$(gr_normalize_expect "$expect")
    want_crash=0
    case ",$want," in *,crash,*) want_crash=1 ;; esac
    want_rules=$(printf '%s\n' "$want" | tr ',' '\n' | sed '/^crash$/d; /^$/d' | paste -sd, -)
    if ! reason=$(gr_missing_requirement "$GR_PY" "$f"); then
        skip "$name: $reason"
        return
    fi

    # First recording, in the work directory until its environment is known.
    local t1=$WORK/$name.grt log1=$WORK/$name.log rc
    gr_record "$GR_PY" "fixtures/$name.py" "$t1" "$log1"
    rc=$?
    local dump=$WORK/$name.txt env
    "$GR_CLI" dump "$t1" >"$dump" 2>"$WORK/$name.dump.err"
    local dump_rc=$?
    env=$(gr_env_from_meta <"$dump") || env=$(gr_env_of_python "$GR_PY" | gr_env_from_meta)
    [ -n "$env" ] || env=unknown
    ENV_OF[$name]=$env
    local dir=$TRACES/$env
    mkdir -p "$dir"
    local trace=$dir/$name.grt
    rm -f "$trace" "$dir/$name.txt" "$dir/$name.log"
    [ -f "$t1" ] && mv "$t1" "$trace"
    mv "$dump" "$dir/$name.txt"
    mv "$log1" "$dir/$name.log"
    dump=$dir/$name.txt

    # --- check: recording outcome and checker outcome vs "# expect:"
    local crashed=0 problem=""
    if [ "$rc" -eq 124 ]; then
        problem="recording timed out"
    elif [ "$rc" -ge 128 ]; then
        crashed=1
    elif [ "$rc" -ne 0 ]; then
        problem="record exited with status $rc"
    fi
    if [ -z "$problem" ] && [ "$want_crash" = 1 ] && [ "$crashed" = 0 ]; then
        problem="expected a crash, but the program exited with status $rc"
    fi
    if [ -z "$problem" ] && [ ! -f "$trace" ]; then
        problem="no trace was written"
    fi
    local json=$dir/$name.check.json crc rules="" failing=""
    if [ -z "$problem" ]; then
        "$GR_CLI" check --format json "$trace" >"$json" 2>"$dir/$name.check.err"
        crc=$?
        if [ "$crc" -eq 2 ]; then
            problem="check could not use the trace: $(head -n 1 "$dir/$name.check.err")"
        elif [ "$crc" -ne 0 ] && [ "$crc" -ne 1 ]; then
            problem="check exited with status $crc"
        elif ! rules=$(gr_json_rules "$json") || ! failing=$(gr_json_failing "$json"); then
            problem="check --format json printed no valid JSON"
        elif { [ "$crc" -eq 0 ] && [ -n "$failing" ]; } || { [ "$crc" -eq 1 ] && [ -z "$failing" ]; }; then
            problem="check exit status $crc disagrees with its JSON report (rules: ${rules:-none})"
        fi
    fi
    local got verdict="" outcome ids
    got=$(gr_describe "$rules" "$crashed")
    [ -z "$problem" ] && verdict=$(known_verdict "$name" "$json" "$dump" "$want_rules" "$want_crash" "$crashed" "$rc" "$crc")
    outcome=${verdict%%$'\t'*}
    ids=${verdict#*$'\t'}
    ids=${ids%%$'\t'*}
    if [ -n "$problem" ]; then
        fail "check $name: $problem"
        tail -n 15 "$dir/$name.log" | detail
    elif [ "$outcome" = known ]; then
        pass "check $name: KNOWN $got, expected $(gr_describe "$want_rules" "$want_crash"), as $ids explains [$env]"
    elif [ "$outcome" = xpass ]; then
        fail "check $name: STALE $got, as expected although $ids should affect it: narrow or remove it in ${KNOWN#"$ROOT"/} [$env]"
    elif [ "$rules" != "$want_rules" ] || [ "$crashed" != "$want_crash" ] || [ "$outcome" != pass ]; then
        fail "check $name: got $got, expected $(gr_describe "$want_rules" "$want_crash")${ids:+ (known issues $ids explain part of it)} [$env]"
        [ "$outcome" = pass ] || [ -z "$verdict" ] || printf '%s\n' "${verdict##*$'\t'}" | detail 3
        [ "$crashed" = 1 ] && tail -n 5 "$dir/$name.log" | detail
        "$GR_CLI" check "$trace" 2>&1 | detail 40
    else
        pass "check $name: $got, as expected [$env]"
    fi

    # --- golden dump
    local golden=$ROOT/fixtures/golden/$env/$name.txt
    if [ "$dump_rc" -ne 0 ]; then
        fail "golden $name: dump failed: $(head -n 1 "$WORK/$name.dump.err")"
    elif [ "$UPDATE" = 1 ]; then
        mkdir -p "$(dirname "$golden")"
        if [ -f "$golden" ] && cmp -s "$dump" "$golden"; then
            pass "golden $name: unchanged (fixtures/golden/$env/$name.txt)"
        else
            cp "$dump" "$golden"
            pass "golden $name: written fixtures/golden/$env/$name.txt"
        fi
    elif [ ! -f "$golden" ]; then
        fail "golden $name: no fixtures/golden/$env/$name.txt (record it with: make golden)"
    elif diff -u --label "fixtures/golden/$env/$name.txt" --label "dump of build/traces/$env/$name.grt" \
            "$golden" "$dump" >"$dir/$name.diff"; then
        pass "golden $name: dump matches fixtures/golden/$env/$name.txt"
    else
        fail "golden $name: dump differs from fixtures/golden/$env/$name.txt (make golden to accept)"
        detail 60 <"$dir/$name.diff"
    fi

    # --- determinism: a second recording in a fresh process
    local t2=$WORK/$name.again.grt rc2
    gr_record "$GR_PY" "fixtures/$name.py" "$t2" "$WORK/$name.again.log"
    rc2=$?
    if [ ! -f "$trace" ] || [ ! -f "$t2" ]; then
        fail "determinism $name: a recording wrote no trace (status $rc, then $rc2)"
        tail -n 15 "$WORK/$name.again.log" | detail
    elif [ "$rc2" -ne "$rc" ]; then
        fail "determinism $name: exit status $rc the first time, $rc2 the second"
        tail -n 15 "$WORK/$name.again.log" | detail
    elif cmp -s "$trace" "$t2"; then
        pass "determinism $name: second recording byte-identical ($(wc -c <"$trace") bytes)"
    else
        fail "determinism $name: second recording differs: $(cmp "$trace" "$t2" 2>&1 | head -n 1)"
        "$GR_CLI" dump "$t2" 2>&1 | diff -u --label first --label second "$dump" - | detail 30
    fi
    rm -f "$t2" "$WORK/$name.again.log" "$WORK/$name.dump.err"
}

fixtures=()
if [ ${#ONLY[@]} -gt 0 ]; then
    for n in "${ONLY[@]}"; do
        n=$(basename "$n" .py)
        if [ -f "$ROOT/fixtures/$n.py" ]; then fixtures+=("$ROOT/fixtures/$n.py")
        else echo "run.sh: no fixture fixtures/$n.py" >&2; exit 2; fi
    done
else
    for f in "$ROOT"/fixtures/*.py; do [ -f "$f" ] && fixtures+=("$f"); done
fi
if [ ${#fixtures[@]} -eq 0 ]; then
    echo "run.sh: no fixtures found in $ROOT/fixtures" >&2
    exit 2
fi
echo "== greenreplay integration tests: $GR_PY, ${#fixtures[@]} fixtures$([ "$UPDATE" = 1 ] && echo ', updating goldens')"
for f in "${fixtures[@]}"; do
    run_fixture "$f"
done

# ------------------------------------------------------- damaged input

# With NAMEs given, only those fixtures run.
if [ ${#ONLY[@]} -gt 0 ]; then
    [ "$NFAIL" -eq 0 ] && rm -rf "$WORK"
    echo "$NPASS passed, $NFAIL failed$([ "$NSKIP" -gt 0 ] && echo ", $NSKIP skipped")"
    [ "$NFAIL" -eq 0 ]
    exit
fi

# chunks FILE: "OFFSET TAG LENGTH" for every chunk whose 9-byte header is
# complete (docs/FORMAT.md section 2), read with the interpreter under test.
# A compressed records chunk (tag 0xC5, FORMAT §2.1) is listed as E too.
chunks() {
    "$GR_PY" -c '
import struct, sys
data = open(sys.argv[1], "rb").read()
off = 16
while off + 9 <= len(data):
    tag = chr(data[off] & 0x7F)
    (n,) = struct.unpack_from("<I", data, off + 1)
    print(off, tag, n)
    off += 9 + n
' "$1"
}

# (a) The seed trace without the CALL of x inside the new greenlet: the
# MARK there must be reported as a blind spot, at its index in the edited
# trace.  Every index comes from the dumps.
test_seed_edit() {
    local name="edit: seed without CALL x in the new greenlet -> blind_spot at its MARK"
    local env=${ENV_OF[seed]:-}
    if [ -z "$env" ] || [ ! -f "$TRACES/$env/seed.grt" ]; then
        skip "$name (no seed trace: fixture skipped or failed)"
        return
    fi
    local src=$TRACES/$env/seed.grt dump=$TRACES/$env/seed.txt
    # The MARK "in x" in a greenlet other than the first one, and the CALL
    # of x in that greenlet before it.
    local mark_line gid mark_idx call_idx
    mark_line=$(awk '$2 == "MARK" && $4 != "g1" && /"in x"/ { print; exit }' "$dump")
    gid=$(printf '%s\n' "$mark_line" | awk '{ print $4 }')
    mark_idx=$(printf '%s\n' "$mark_line" | awk '{ print $1 }')
    call_idx=$(awk -v g="$gid" -v m="$mark_idx" \
        '$1 < m && $2 == "CALL" && $4 == g && $5 == "x" { c = $1 } END { print c }' "$dump")
    if [ -z "$mark_idx" ] || [ -z "$call_idx" ]; then
        fail "$name: no MARK \"in x\" with a CALL of x before it in a new greenlet in $dump"
        return
    fi
    local out=$WORK/seed-no-call.grt edited=$WORK/seed-no-call.txt json=$WORK/seed-no-call.json
    if ! "$GR_CLI" edit --drop "$call_idx" -o "$out" "$src" 2>"$WORK/edit.err"; then
        fail "$name: edit --drop $call_idx failed: $(head -n 1 "$WORK/edit.err")"
        return
    fi
    "$GR_CLI" dump "$out" >"$edited" 2>/dev/null
    # The MARK's index in the edited trace, from its dump.
    local want
    want=$(awk -v g="$gid" '$2 == "MARK" && $4 == g && /"in x"/ { print $1; exit }' "$edited")
    if [ "$want" != $((mark_idx - 1)) ]; then
        fail "$name: after dropping $call_idx the MARK is at ${want:-nowhere}, not $((mark_idx - 1))"
        return
    fi
    if awk -v i="$call_idx" -v g="$gid" '$1 == i && $2 == "CALL" && $4 == g && $5 == "x"' "$edited" | grep -q .; then
        fail "$name: the edited trace still has CALL x at $call_idx"
        return
    fi
    "$GR_CLI" check --format json "$out" >"$json" 2>"$WORK/edit-check.err"
    local crc=$? got
    got=$(gr_json_indices "$json" blind_spot 2>/dev/null | paste -sd, -)
    if [ "$crc" -ne 1 ]; then
        fail "$name: check exited $crc, expected 1"
        "$GR_CLI" check "$out" 2>&1 | detail
    elif ! printf '%s\n' "$got" | tr ',' '\n' | grep -qx "$want"; then
        fail "$name: blind_spot at [${got:-none}], expected at $want (dropped CALL $call_idx, MARK was $mark_idx)"
        "$GR_CLI" check "$out" 2>&1 | detail
    else
        pass "$name (dropped $call_idx; blind_spot at $want)"
    fi
}

# edit_expect NAME RULE DROP_AWK WANT_AWK: drop from the seed trace the
# record that DROP_AWK prints the index of (run on the seed dump, with the
# gid of the new greenlet in g), and require a RULE violation at the index
# WANT_AWK prints (run on the edited dump).  Shows that `check` flags what
# a profiler that lost that event would have missed.
edit_expect() {
    local name=$1 rule=$2 drop_awk=$3 want_awk=$4
    local env=${ENV_OF[seed]:-}
    if [ -z "$env" ] || [ ! -f "$TRACES/$env/seed.grt" ]; then
        skip "$name (no seed trace: fixture skipped or failed)"
        return
    fi
    local src=$TRACES/$env/seed.grt dump=$TRACES/$env/seed.txt gid drop
    gid=$(awk '$2 == "GREENLET" && $4 != "g1" { print $4; exit }' "$dump")
    drop=$(awk -v g="$gid" "$drop_awk" "$dump")
    if [ -z "$gid" ] || [ -z "$drop" ]; then
        fail "$name: record to drop not found in $dump"
        return
    fi
    local base=$WORK/seed-drop-$drop
    if ! "$GR_CLI" edit --drop "$drop" -o "$base.grt" "$src" 2>"$base.err"; then
        fail "$name: edit --drop $drop failed: $(head -n 1 "$base.err")"
        return
    fi
    "$GR_CLI" dump "$base.grt" >"$base.txt" 2>/dev/null
    local want got crc
    want=$(awk -v g="$gid" "$want_awk" "$base.txt")
    "$GR_CLI" check --format json "$base.grt" >"$base.json" 2>"$base.err"
    crc=$?
    got=$(gr_json_indices "$base.json" "$rule" 2>/dev/null | paste -sd, -)
    if [ -z "$want" ]; then
        fail "$name: expected record not found in the edited dump $base.txt"
    elif [ "$crc" -ne 1 ]; then
        fail "$name: check exited $crc, expected 1"
        "$GR_CLI" check "$base.grt" 2>&1 | detail
    elif ! printf '%s\n' "$got" | tr ',' '\n' | grep -qx "$want"; then
        fail "$name: $rule at [${got:-none}], expected at $want (dropped $drop)"
        "$GR_CLI" check "$base.grt" 2>&1 | detail
    else
        pass "$name (dropped $drop; $rule at $want)"
    fi
}

# A multi-chunk trace made with 4 KiB chunks by tests/integration/loop.py.
LONG=$WORK/long.grt
make_long_trace() {
    gr_record "$GR_PY" tests/integration/loop.py "$LONG" "$WORK/long.log" 120 \
        && [ "$(chunks "$LONG" | grep -c ' E ')" -ge 3 ]
}

# (b1) A trace cut with head -c inside a chunk: read up to its last complete
# chunk, exit 0 or 1, and a message with the byte offset where it ends.
test_truncated() {
    local what=$1 name="truncated trace ($1): checked up to the last complete chunk"
    local second off len cut
    second=$(chunks "$LONG" | awk '$2 == "E"' | sed -n 2p)
    off=${second%% *}
    len=${second##* }
    case $what in
        mid-payload) cut=$((off + 9 + len / 2)) ;;
        mid-header) cut=$((off + 4)) ;;
    esac
    local out=$WORK/long-$what.grt
    head -c "$cut" "$LONG" >"$out"
    local text=$WORK/long-$what.check.txt crc
    "$GR_CLI" check "$out" >"$text" 2>&1
    crc=$?
    if [ "$crc" -ne 0 ] && [ "$crc" -ne 1 ]; then
        fail "$name: check exited $crc (cut at byte $cut, chunk at $off)"
        detail <"$text"
    elif ! grep -q "byte $off\b" "$text"; then
        fail "$name: no message saying the trace ends at byte $off (cut at $cut)"
        detail <"$text"
    else
        pass "$name (cut at $cut, ends at byte $off, exit $crc)"
    fi
}

# (b2) A recording killed with SIGKILL while it runs: record reports the
# signal, the trace holds the chunks written before, check reads them.
test_killed() {
    local name="recording killed by SIGKILL: checked up to the last complete chunk"
    local out=$WORK/killed.grt pidfile=$WORK/killed.pid log=$WORK/killed.log
    rm -f "$out" "$pidfile"
    (cd "$ROOT" && exec "$GR_CLI" record --manual --root "$ROOT" -o "$out" -- \
        "$GR_PY" tests/integration/loop.py --forever "$pidfile") >"$log" 2>&1 &
    local rec=$! waited=0
    # Wait until the program has written at least three 4 KiB chunks.
    while [ "$waited" -lt 300 ]; do
        if [ -s "$pidfile" ] && [ -f "$out" ] && [ "$(wc -c <"$out")" -ge $((16 + 3 * 4096)) ]; then
            break
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
    local pid
    pid=$(cat "$pidfile" 2>/dev/null)
    if [ -z "$pid" ] || [ "$waited" -ge 300 ]; then
        [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
        kill "$rec" 2>/dev/null
        wait "$rec" 2>/dev/null
        fail "$name: the looping program did not write 3 chunks within 30 s"
        detail <"$log"
        return
    fi
    kill -KILL "$pid"
    wait "$rec"
    local rrc=$?
    if [ "$rrc" -ne 137 ]; then
        fail "$name: record exited $rrc, expected 137 (128 + SIGKILL)"
        detail <"$log"
        return
    fi
    local size last end
    size=$(wc -c <"$out")
    # Where the valid part ends: after the last complete chunk.
    last=$(chunks "$out" | awk -v size="$size" '$1 + 9 + $3 <= size { end = $1 + 9 + $3 } END { print end }')
    end=${last:-16}
    local text=$WORK/killed.check.txt crc
    "$GR_CLI" check "$out" >"$text" 2>&1
    crc=$?
    if [ "$crc" -ne 0 ] && [ "$crc" -ne 1 ]; then
        fail "$name: check exited $crc"
        detail <"$text"
    elif ! grep -q "byte $end\b" "$text"; then
        fail "$name: no message saying the trace ends at byte $end ($size bytes)"
        detail <"$text"
    else
        pass "$name (record exit 137, $size bytes, ends at byte $end, check exit $crc)"
    fi
}

# (c) One byte flipped inside a chunk payload: exit 2 and one line naming
# the file and the offset of the damaged chunk.
test_corrupt() {
    local name="corrupt trace (byte flipped in a chunk payload): exit 2, one line with file and offset"
    local second off len at
    second=$(chunks "$LONG" | awk '$2 == "E"' | sed -n 2p)
    off=${second%% *}
    len=${second##* }
    at=$((off + 9 + len / 3))
    local out=$WORK/corrupt.grt
    cp "$LONG" "$out"
    local byte
    byte=$(od -An -tu1 -j "$at" -N 1 "$out" | tr -d ' ')
    printf "$(printf '\\%03o' $((byte ^ 0xff)))" |
        dd of="$out" bs=1 seek="$at" count=1 conv=notrunc 2>/dev/null
    local err=$WORK/corrupt.err crc lines
    "$GR_CLI" check "$out" >"$WORK/corrupt.out" 2>"$err"
    crc=$?
    lines=$(wc -l <"$err")
    if [ "$crc" -ne 2 ]; then
        fail "$name: check exited $crc"
        cat "$WORK/corrupt.out" "$err" | detail
    elif [ "$lines" -ne 1 ]; then
        fail "$name: $lines lines on stderr, expected 1"
        detail <"$err"
    elif ! grep -qF "$out" "$err" || ! grep -q "offset $off\b" "$err"; then
        fail "$name: the message does not name $out and offset $off (byte flipped at $at)"
        detail <"$err"
    else
        pass "$name (flipped byte $at, chunk at $off)"
    fi
}

# (d) record with an interpreter that does not exist.
test_missing_python() {
    local name="record with a missing interpreter: exit 2 and a clear message"
    local missing=$WORK/no-such-dir/python3 err=$WORK/missing.err rc
    (cd "$ROOT" && "$GR_CLI" record --manual -o "$WORK/missing.grt" -- "$missing" fixtures/seed.py) \
        >"$WORK/missing.out" 2>"$err"
    rc=$?
    if [ "$rc" -ne 2 ]; then
        fail "$name: exit $rc"
        cat "$WORK/missing.out" "$err" | detail
    elif ! grep -qF "$missing" "$err"; then
        fail "$name: stderr does not name $missing"
        detail <"$err"
    else
        pass "$name ($(head -n 1 "$err"))"
    fi
}

test_seed_edit
# Without the RETURN of x in the new greenlet, it dies with x still open.
edit_expect "edit: seed without RETURN x in the new greenlet -> imbalance at its DEAD" imbalance \
    '$2 == "RETURN" && $4 == g && $5 == "x" { print $1; exit }' \
    '$2 == "DEAD" && $4 == g { print $1; exit }'
# Without the SWITCH into the new greenlet, its first event comes from a
# greenlet that is not running.
edit_expect "edit: seed without the SWITCH into the new greenlet -> switch_consistency at its CALL" \
    switch_consistency \
    '$2 == "SWITCH" && $3 == "t1" && $4 ~ ("->" g "$") { print $1; exit }' \
    '$2 == "CALL" && $4 == g { print $1; exit }'
if make_long_trace; then
    test_truncated mid-payload
    test_truncated mid-header
    test_corrupt
else
    fail "multi-chunk trace from tests/integration/loop.py could not be recorded"
    detail <"$WORK/long.log"
fi
test_killed
test_missing_python

if [ "$NFAIL" -eq 0 ]; then
    rm -rf "$WORK"
else
    echo "(scratch files of the failed tests kept in ${WORK#"$ROOT"/})"
fi
summary="$NPASS passed, $NFAIL failed"
[ "$NSKIP" -gt 0 ] && summary="$summary, $NSKIP skipped"
echo "$summary"
[ "$NFAIL" -eq 0 ]
