#!/usr/bin/env bash
# tests/hostile/run.sh - traces from someone else are untrusted input.
#
# names.py records hostile strings (quotes, triple quotes, backslashes,
# newlines, CR, U+2028/9, NUL, lone surrogates, bidi overrides, terminal
# escapes, encoding cookies) as function names, mark labels and file names;
# each tries to end a literal or comment of a generated script and create a
# file CANARY.  The trace is written under a folder and a file name that
# hold an encoding cookie ("coding=unicode_escape", which once made Python
# decode a generated script's escapes back into code).  Then every command
# runs on it: check (text, -q, JSON, JUnit, HTML), dump, stats, diff,
# export (both formats), script with and without --anonymize, and the
# scripts are run under `record --manual`.  Asserted:
#   - no CANARY file, ever;
#   - no raw control, bidi or separator character in what a terminal shows
#     (stdout and stderr of every command), nor in the scripts;
#   - every script compiles, declares UTF-8 on line 2 and holds no string of
#     the trace or the command line on lines 1-2;
#   - the same verdicts (exit status) as the tame recording (TAME=1);
#   - a 70,000-character label, a label under --max-size 8K and --ring, a
#     NUL in a label, a module in a non-UTF-8 directory, a script with a
#     non-UTF-8 name: a readable trace, the replaced strings counted in
#     the trailer and reported by check and record.
# And around traces: kill -- -PGID reaches a recorded program once; a
# program that dies by SIGSEGV or SIGABRT leaves its records up to the
# crash (faulthandler still prints, the exit status stays); hand-made
# traces (craft.py): --anonymize names no extension's C function, a mark
# with an empty stack, a 100,000-deep recursion and 100,000 threads; a
# 4 M-event synthetic trace (tests/bench/gentrace.c) scripted under a
# 150 MB address-space cap.
set -u
. "$(dirname "$0")/../integration/lib.sh"
gr_script_init hostile "$@"
HERE=$GR_ROOT/tests/hostile
G=$GR_CLI
W=$GR_WORK
RAW=("$GR_PY" "$HERE/rawctl.py")

canary() { # canary WHAT: fails when a CANARY file appeared anywhere in W
    if [ -n "$(find "$W" -name CANARY -print -quit)" ]; then
        gr_bad "$1: a CANARY file was created"
        find "$W" -name CANARY -delete
    fi
}

# rec NAME DIR OUT [OPTIONS...] -- records names.py into DIR/OUT
rec() {
    local env=$1 dir=$2 out=$3
    shift 3
    mkdir -p "$dir"
    (cd "$dir" && env $env "$G" record --manual "$@" -o "$out" -- "$GR_PY" "$HERE/names.py") \
        >"$W/rec.log" 2>&1
}

COOKIE_DIR="$W/bug_coding=unicode_escape"
COOKIE_OUT="report coding=unicode_escape (1).grt"
rec TAME=0 "$COOKIE_DIR" "$COOKIE_OUT" && [ -s "$COOKIE_DIR/$COOKIE_OUT" ] ||
    { gr_bad "record the hostile names"; gr_show "$W/rec.log"; gr_tally; exit 1; }
rec TAME=1 "$W/tame" tame.grt ||
    { gr_bad "record the tame names"; gr_show "$W/rec.log"; gr_tally; exit 1; }
H="$COOKIE_DIR/$COOKIE_OUT"
T="$W/tame/tame.grt"
gr_ok "record hostile and tame names"

# Every command on both traces: same exit status, no raw control characters.
i=0
same() { # same LABEL ARGS...: ARGS with @T replaced by each trace
    local label=$1
    shift
    local a=() b=() x
    for x in "$@"; do
        a+=("${x//@T/$H}")
        b+=("${x//@T/$T}")
    done
    i=$((i + 1))
    (cd "$COOKIE_DIR" && "$G" "${a[@]}") >"$W/h$i.out" 2>"$W/h$i.err"
    local rh=$?
    (cd "$W/tame" && "$G" "${b[@]}") >"$W/t$i.out" 2>"$W/t$i.err"
    local rt=$?
    canary "$label"
    if [ "$rh" != "$rt" ]; then
        gr_bad "$label: exit $rh, tame $rt"
        gr_show "$W/h$i.out" "$W/h$i.err"
    elif ! "${RAW[@]}" ${SGR:-} "$W/h$i.out" "$W/h$i.err" >"$W/raw.log"; then
        gr_bad "$label: raw control characters"
        gr_show "$W/raw.log"
    else
        gr_ok "$label (exit $rh)"
    fi
}
same "check" check @T
same "check -q" check -q @T
SGR=--sgr same "check --color=always" check --color=always @T
same "check --format json" check --format json @T
same "check --junit" check --junit "$W/j$i.xml" @T
same "check --html" check --html "$W/h$i.html" @T
same "dump" dump @T
same "stats" stats @T
same "stats --format json" stats --format json @T
same "diff with itself" diff @T @T
same "export chrome" export --format chrome @T -o "$W/e$i.json"
same "export speedscope" export --format speedscope @T -o "$W/s$i.json"
same "script" script @T -o "$W/x$i.py"
same "missing file" check "@T.missing"

# A file name from the command line reaches the terminal escaped: check,
# check -q, stats, dump, diff, script, and the error line of a missing and
# of a corrupt file.
NAME="$W/ev"$'\x1b[2J\xe2\x80\xae\xc2\x9b'".grt"
cp "$T" "$NAME"
printf 'x' >"$NAME.bad"
k=0
for args in "check @" "check -q @" "stats @" "dump @" "diff @ @" "script @" "check @.missing" \
    "check -q @.bad" "stats @.bad" "dump @.bad" "check --format=json @" "stats --format=json @"; do
    k=$((k + 1))
    set -f
    cmd=()
    for x in $args; do cmd+=("${x//@/$NAME}"); done
    set +f
    "$G" "${cmd[@]}" >"$W/n$k.out" 2>&1
    if "${RAW[@]}" "$W/n$k.out" >"$W/raw.log"; then
        gr_ok "file name with controls, ${args//@/NAME}: escaped"
    else
        gr_bad "file name with controls, ${args//@/NAME}: raw control characters"
        gr_show "$W/raw.log"
    fi
done

# Scripts: compile, line 2 declares UTF-8, lines 1-2 hold nothing of the
# trace; run under record --manual, nothing but the recorded program runs.
for anon in "" --anonymize; do
    for where in dir out; do
        S="$COOKIE_DIR/script${anon} coding=unicode_escape.py"
        if [ $where = dir ]; then
            (cd "$COOKIE_DIR" && "$G" script $anon "$COOKIE_OUT" >"$S") 2>"$W/script.err"
        else
            (cd "$COOKIE_DIR" && "$G" script $anon -o "$S" "$COOKIE_OUT") 2>"$W/script.err"
        fi
        rc=$?
        what="script ${anon:-(names kept)} to $where"
        if [ $rc -ne 0 ]; then
            gr_bad "$what: exit $rc"
            gr_show "$W/script.err"
            continue
        fi
        if [ "$(sed -n 2p "$S")" != "# -*- coding: utf-8 -*-" ] ||
            sed -n 1,2p "$S" | grep -q "unicode_escape\|CANARY\|report"; then
            gr_bad "$what: lines 1-2"
            sed -n 1,3p "$S" | gr_show /dev/stdin
            continue
        fi
        if ! "${RAW[@]}" "$S" "$W/script.err" >"$W/raw.log"; then
            gr_bad "$what: raw control characters"
            gr_show "$W/raw.log"
            continue
        fi
        if ! "$GR_PY" -c 'import sys; compile(open(sys.argv[1], "rb").read(), sys.argv[1], "exec")' "$S" \
            >"$W/compile.log" 2>&1; then
            gr_bad "$what: does not compile"
            gr_show "$W/compile.log"
            continue
        fi
        (cd "$COOKIE_DIR" && "$G" record --manual -o "rerun coding=unicode_escape.grt" -- "$GR_PY" "$S") \
            >"$W/rerun.log" 2>&1
        rc=$?
        canary "$what, run"
        if [ $rc -ne 0 ]; then
            gr_bad "$what: running it exits $rc"
            gr_show "$W/rerun.log"
            continue
        fi
        # the run acts out the same structure
        if ! (cd "$COOKIE_DIR" && "$G" diff --c-names script ${anon:+--rename} "$COOKIE_OUT" \
            "rerun coding=unicode_escape.grt") >"$W/diff.log" 2>&1; then
            gr_bad "$what: the run differs from the original"
            gr_show "$W/diff.log"
            continue
        fi
        gr_ok "$what: compiles, UTF-8 on line 2, runs nothing else, same structure"
    done
done

# Strings the trace cannot hold as they are: kept readable, counted.
P="$W/strings"
mkdir -p "$P" "$P/lib"$'\xe9'
cat >"$P/long.py" <<'PY'
import greenreplay
def f():
    greenreplay.mark("x" * 70000)
    greenreplay.mark("y" * 1500)
greenreplay.start()
f()
greenreplay.stop()
PY
printf 'import greenreplay\ndef h():\n    greenreplay.mark("a\\x00b")\n' >"$P/lib"$'\xe9'/modx.py
printf 'import sys\nsys.path.insert(0, "lib\\udce9")\nimport modx, greenreplay\ngreenreplay.start()\nmodx.h()\ngreenreplay.stop()\n' \
    >"$P/prog"$'\xe9'.py
strings_case() { # LABEL REPLACED SCRIPT [RECORD OPTIONS...]
    local label=$1 want=$2 prog=$3
    shift 3
    (cd "$P" && "$G" record --manual "$@" -o s.grt -- "$GR_PY" "$prog") >"$W/s.log" 2>&1
    local rc=$?
    (cd "$P" && "$G" check s.grt) >"$W/c.out" 2>&1
    local crc=$?
    if [ $rc -ne 0 ] || [ $crc -ne 0 ]; then
        gr_bad "$label: record exit $rc, check exit $crc"
        gr_show "$W/s.log" "$W/c.out"
    elif ! grep -q "replaced=$want " "$W/c.out" || ! grep -q "^warning: trailer reports $want string" "$W/c.out"; then
        gr_bad "$label: check does not report $want replaced strings"
        gr_show "$W/c.out"
    elif ! grep -q "$want strings\? written other than recorded" "$W/s.log"; then
        gr_bad "$label: record does not say so"
        gr_show "$W/s.log"
    elif ! "${RAW[@]}" "$W/c.out" "$W/s.log" >"$W/raw.log"; then
        gr_bad "$label: raw control characters"
        gr_show "$W/raw.log"
    else
        gr_ok "$label: readable, $want replaced, reported"
    fi
}
strings_case "a 70,000-character label" 1 long.py
strings_case "labels under --max-size 8K" 2 long.py --max-size 8K
strings_case "labels under --ring" 1 long.py --ring 1000
strings_case "non-UTF-8 module directory and script name" 2 "prog"$'\xe9'.py
if (cd "$P" && "$G" dump s.grt) | grep -q 'MARK .*"a\\x00b"'; then
    gr_ok "a NUL in a label is kept"
else
    gr_bad "a NUL in a label is kept"
    (cd "$P" && "$G" dump s.grt) | grep MARK | gr_show /dev/stdin
fi

# A signal to record's whole process group (kill -- -PGID) reaches the
# program once: one that stops gracefully on its first SIGTERM and forcibly
# on its second exits 0 recorded, as it does unrecorded.
for how in plain recorded; do
    rm -f "$W/ready"
    if [ $how = plain ]; then
        st=$("$GR_PY" "$HERE/killpg.py" "$W/ready" "$GR_PY" "$HERE/twice.py" "$W/ready")
    else
        st=$("$GR_PY" "$HERE/killpg.py" "$W/ready" "$G" record --manual -o "$W/twice.grt" -- \
            "$GR_PY" "$HERE/twice.py" "$W/ready" 2>"$W/twice.err")
    fi
    if [ "$st" = 0 ]; then
        gr_ok "kill -- -PGID, $how: the program got SIGTERM once (exit 0)"
    else
        gr_bad "kill -- -PGID, $how: exit $st (1: SIGTERM delivered twice)"
        [ $how = recorded ] && gr_show "$W/twice.err"
    fi
done

# A program killed by its own SIGSEGV or SIGABRT 10 ms after start: the
# trace holds its records up to the crash, check says it crashed; the
# process still dies by that signal, and faulthandler still prints.
for kind in segv:11 abort:6; do
    sig=${kind#*:}
    for fh in "" "-X faulthandler"; do
        what="${kind%:*}${fh:+ with $fh}"
        "$G" record --manual -o "$W/crash.grt" -- "$GR_PY" $fh "$HERE/crash.py" "${kind%:*}" \
            >"$W/crash.out" 2>"$W/crash.err"
        rc=$?
        "$G" check "$W/crash.grt" >"$W/crash.check" 2>&1
        crc=$?
        marks=$("$G" dump "$W/crash.grt" 2>/dev/null | grep -c 'MARK .*"before the crash')
        if [ $rc -ne $((128 + sig)) ]; then
            gr_bad "crash $what: record exits $rc, not $((128 + sig))"
            gr_show "$W/crash.err"
        elif [ $crc -ne 0 ] || [ "$marks" != 3 ] ||
            ! grep -q "reason=crash" "$W/crash.check" ||
            ! grep -q "the program crashed (fatal signal $sig)" "$W/crash.check"; then
            gr_bad "crash $what: check exit $crc, $marks of 3 marks"
            gr_show "$W/crash.check"
        elif [ -n "$fh" ] && ! grep -q "Fatal Python error" "$W/crash.err"; then
            gr_bad "crash $what: faulthandler's report is gone"
            gr_show "$W/crash.err"
        elif ! grep -q "holds the records up to the crash" "$W/crash.err"; then
            gr_bad "crash $what: record does not say the trace holds the crash"
            gr_show "$W/crash.err"
        else
            gr_ok "crash $what: records up to the crash, checked, dies by signal $sig"
        fi
    done
done

# The same after compressed chunks: the handler writes the records it
# holds uncompressed (zstd may allocate), after the compressed chunks;
# every chunk reads.
"$G" record --manual -o "$W/crash.grt" -- "$GR_PY" "$HERE/crash.py" segv-chunks \
    >"$W/crash.out" 2>"$W/crash.err"
rc=$?
"$G" check "$W/crash.grt" >"$W/crash.check" 2>&1
crc=$?
calls=$("$G" dump "$W/crash.grt" 2>/dev/null | grep -c ' CALL .* leaf ')
tags=$("$GR_PY" -c '
import struct, sys
d = open(sys.argv[1], "rb").read()
off, out = 16, []
while off + 9 <= len(d):
    out.append("%02x" % d[off])
    off += 9 + struct.unpack_from("<I", d, off + 1)[0]
print(" ".join(out))' "$W/crash.grt")
if [ $rc -ne 139 ] || [ $crc -ne 0 ] || [ "$calls" != 20000 ] ||
    ! grep -q "reason=crash" "$W/crash.check"; then
    gr_bad "crash after compressed chunks: record exit $rc, check exit $crc, $calls of 20000 calls"
    gr_show "$W/crash.check"
elif ! printf '%s\n' "$tags" | grep -qE '^(c5 )+45 5a$'; then
    gr_bad "crash after compressed chunks: chunk tags $tags, expected c5 ... c5 45 5a"
else
    gr_ok "crash after compressed chunks: $(printf '%s\n' "$tags" | wc -w) chunks, the last records chunk uncompressed, all $calls calls read"
fi

# Hand-made traces: an extension's C function in a note stays unnamed
# under --anonymize (script's notes and stderr); a mark with an empty stack.
"$GR_PY" "$HERE/craft.py" "$T" c_return "$W/cret.grt"
"$G" script --anonymize "$W/cret.grt" >"$W/cret.py" 2>"$W/cret.err"
rc=$?
if [ $rc -ne 0 ] || ! grep -q "c_return of C function c2" "$W/cret.py"; then
    gr_bad "anonymized note of an extension's C function (exit $rc)"
    gr_show "$W/cret.py" "$W/cret.err"
elif grep -q acme "$W/cret.py" "$W/cret.err"; then
    gr_bad "anonymized script names the extension's C function"
    grep -n acme "$W/cret.py" "$W/cret.err" | gr_show /dev/stdin
elif ! "$G" script "$W/cret.grt" 2>&1 >/dev/null | grep -q "acme_secret_billing.len"; then
    gr_bad "a script with names kept names the C function in its note"
else
    gr_ok "anonymized script: an extension's C function unnamed in notes and on stderr"
fi
"$GR_PY" "$HERE/craft.py" "$T" empty_mark "$W/emark.grt"
if "$G" script "$W/emark.grt" >"$W/emark.py" 2>"$W/emark.err" &&
    "$GR_PY" -c 'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec")' "$W/emark.py"; then
    gr_ok "script of a mark with an empty stack"
else
    gr_bad "script of a mark with an empty stack"
    gr_show "$W/emark.err"
fi

# Two records with the same -o at once: the second is refused (exit 2,
# one line) before it empties anything; the first's trace stays whole.
rm -f "$W/ready" "$W/release"
"$G" record --manual -o "$W/same.grt" -- "$GR_PY" "$HERE/hold.py" "$W/ready" "$W/release" \
    >"$W/same1.err" 2>&1 &
first=$!
for _ in $(seq 6000); do [ -e "$W/ready" ] && break; sleep 0.01; done
"$G" record --manual -o "$W/same.grt" -- "$GR_PY" "$HERE/hold.py" "$W/ready2" "$W/release" \
    >"$W/same2.err" 2>&1
rc2=$?
touch "$W/release"
wait $first
rc1=$?
if [ $rc2 -eq 2 ] && grep -q "another greenreplay record is writing it" "$W/same2.err" &&
    [ ! -e "$W/ready2" ] && [ $rc1 -eq 0 ] && "$G" check "$W/same.grt" >/dev/null 2>&1; then
    gr_ok "record -o SAME twice at once: the second refused, the first's trace whole"
else
    gr_bad "record -o SAME twice at once: exits $rc1 and $rc2"
    gr_show "$W/same1.err" "$W/same2.err"
fi

# Large inputs: script handles a 100,000-deep recursion on a 1 MiB stack
# and 100,000 threads (it was quadratic in threads: 10,000 took minutes;
# the timeout only catches a hang, nothing here is timed).
"$GR_PY" "$HERE/craft.py" "$T" deep:100000 "$W/deep.grt"
"$GR_PY" "$HERE/craft.py" "$T" threads:100000 "$W/threads.grt"
(ulimit -s 1024 && timeout 300 "$G" script "$W/deep.grt") >"$W/deep.py" 2>"$W/deep.err"
rc=$?
if [ $rc -eq 0 ] && [ "$(grep -c '^ *_v0()' "$W/deep.py")" -ge 1 ]; then
    gr_ok "script of a 100,000-deep recursion with a 1 MiB stack"
else
    gr_bad "script of a 100,000-deep recursion with a 1 MiB stack: exit $rc"
    gr_show "$W/deep.err"
fi
(ulimit -s 1024 && timeout 300 "$G" script "$W/threads.grt") >"$W/threads.py" 2>"$W/threads.err"
rc=$?
n=$(grep -c "_thread.start_new_thread" "$W/threads.py")
if [ $rc -eq 0 ] && [ "$n" -eq 100000 ]; then
    gr_ok "script of 100,000 threads"
else
    gr_bad "script of 100,000 threads: exit $rc, $n threads started"
    gr_show "$W/threads.err"
fi

# Memory: script reads a trace file as a stream, spills each dead greenlet
# to a temporary file, keeps a bounded cache of bodies and writes the
# program as it is made, so a 4 M-event trace (4.19 M records, 16,085
# greenlets; about 80 MB peak) scripts under a 150 MB address-space cap,
# which the shape held whole did not fit in (245 MB peak); the program is
# the one the loaded path (a pipe) writes, but for the source named in its
# header.  Not timed.
gen_build=$(realpath -m "${BUILD:-$GR_ROOT/build}")
gentrace=$gen_build/bench/gentrace
if [ -x "$gentrace" ] || make -s -C "$GR_ROOT" BUILD="$gen_build" "$gentrace" >/dev/null 2>&1; then
    "$gentrace" "$W/big.grt" 4000000 >/dev/null
    (ulimit -v 150000 && timeout 300 "$G" script -q "$W/big.grt") >"$W/big.py" 2>"$W/big.err"
    rc=$?
    timeout 300 "$G" script -q /dev/stdin <"$W/big.grt" >"$W/big-pipe.py" 2>>"$W/big.err"
    if [ $rc -eq 0 ] && [ -s "$W/big.py" ] &&
        cmp -s <(sed 3d "$W/big.py") <(sed 3d "$W/big-pipe.py"); then
        gr_ok "script of a 4 M-event trace under a 150 MB address-space cap: the program a pipe gives"
    else
        gr_bad "script of a 4 M-event trace under a 150 MB address-space cap: exit $rc, or not the program a pipe gives"
        gr_show "$W/big.err"
    fi
    rm -f "$W/big.grt" "$W/big.py" "$W/big-pipe.py"
else
    gr_bad "script of a 4 M-event trace: $gentrace cannot be built"
fi

gr_tally
