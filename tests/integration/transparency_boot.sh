#!/usr/bin/env bash
# tests/integration/transparency_boot.sh --python PY: the start of a
# recording leaves the program as it would be unrecorded
# (docs/recorder-start.md).
#  - programs/boot/probe.py prints what a program can see of the recorder:
#    sys.modules, sys.path, the GREENREPLAY_*/PYTHONHASHSEED environment,
#    hash randomization, cProfile's counts of a greenlet-heavy function and
#    of `import json`, and what a child process sees and gets from
#    greenreplay.start() without a path.  Recorded whole-program and
#    --manual, in both switch modes, it prints what it prints unrecorded.
#  - programs/boot/tracing_state.py prints the flags that gate profile
#    events, read from C: recorded whole-program (script and -m), they are
#    those of a profiler started in the program's first frame, on PY and on
#    each interpreter of GR_BOOT_PYTHONS (default: pyenv 3.9 to 3.13 where
#    installed; the extension is built for them if missing).
#  - the greenlet issue 256 class (the mut256 mutant: new greenlets start
#    with the root CFrame's flag, as greenlet 1.1.0's did; its venvs from
#    tests/mutants/run.sh --prepare): programs/boot/count_x.py prints
#    cProfile's count of x recorded as unrecorded, the seed fixture
#    recorded whole-program is flagged (blind_spot and propagation, check
#    exit 1), and `greenreplay conform --profiler cprofile` reports
#    cProfile's miss; with unmodified greenlet (PY) the seed is clean.
#  - programs/boot/own_calls.py calls greenreplay.start() and stop()
#    itself: recorded whole-program, no frame or C call of greenreplay's is
#    in the trace, and it round-trips through `script` + `diff --c-names
#    script`.
#  - CPython 3.13+ (of the interpreters above): PYTHON_JIT=1 at start gives
#    META jit and a line of `check` (a profile function keeps the JIT's
#    executors from running); without it, neither.
# One line per test, then "N passed, N failed".  Exit 1 if any failed.
set -u
. "$(dirname "$0")/lib.sh"
gr_script_init boot "$@"
PY=$GR_PY work=$GR_WORK
progs=$GR_ROOT/tests/integration/programs/boot
pkg=${BUILD:-$GR_ROOT/build}/python
cache=$(realpath -m "${GREENREPLAY_CACHE:-$HOME/.cache/greenreplay}")

# built PY: 0 if the recorder is built for PY, else builds it (make ext).
built() {
    PYTHONPATH=$pkg "$1" -c 'import greenreplay._greenreplay' 2>/dev/null && return 0
    echo "      (building the recorder for $1)"
    make -s -C "$GR_ROOT" ext PYTHON="$1" >"$work/make.log" 2>&1 &&
        PYTHONPATH=$pkg "$1" -c 'import greenreplay._greenreplay' 2>/dev/null
}

# same WHAT A B: pass if files A and B are equal, else show the difference.
same() {
    if cmp -s "$2" "$3"; then
        gr_ok "$1"
    else
        gr_bad "$1: recorded differs from unrecorded"
        diff "$2" "$3" | cut -c1-300 | sed -n '1,12p' | sed 's/^/      | /'
    fi
}

# 1. The probe, unrecorded and recorded in four modes.  PYTHONPATH names the
# package in both runs, as a program that imports greenreplay needs.
if "$PY" -c 'import greenlet' 2>/dev/null; then
    (cd "$progs" && PYTHONPATH=$pkg "$PY" probe.py >"$work/probe.plain" 2>&1)
    (cd "$progs" && PYTHONPATH=$pkg "$PY" probe.py manual >"$work/probe.plain-manual" 2>&1)
    for sw in passive callback; do
        for mode in whole manual; do
            args=() arg=
            [ $mode = manual ] && args=(--manual) arg=manual
            out=$work/probe.$mode-$sw
            (cd "$progs" && PYTHONPATH=$pkg "$GR_CLI" record "${args[@]}" --switches $sw -o "$out.grt" -- \
                "$PY" probe.py $arg >"$out" 2>&1)
            rc=$?
            if [ $rc -ne 0 ]; then
                gr_bad "probe ($mode, $sw): record exit $rc"; gr_show "$out"; continue
            fi
            same "probe ($mode, $sw): modules, sys.path, environment, cProfile counts, child" \
                "$work/probe.plain${arg:+-$arg}" "$out"
        done
    done
    grep -q "^child start(): ValueError\|child: .*child start(): ValueError" "$work/probe.whole-passive" &&
        gr_ok "a child's greenreplay.start() without a path: ValueError (not the parent's trace)" ||
        gr_bad "child of a recorded program: $(grep '^child' "$work/probe.whole-passive")"
    grep -q "^hash randomization: 1" "$work/probe.whole-passive" &&
        gr_ok "hash randomization on, as unrecorded" ||
        gr_bad "hash randomization: $(grep '^hash' "$work/probe.whole-passive")"
else
    echo "SKIP  probe: greenlet is not importable by $PY"
fi

# 2. The tracing flags, per interpreter.
pythons=$PY
if [ -n "${GR_BOOT_PYTHONS+x}" ]; then
    pythons="$pythons $GR_BOOT_PYTHONS"
elif command -v pyenv >/dev/null 2>&1; then
    for v in 3.9 3.10 3.11 3.12 3.13; do
        p=$(ls -d "$(pyenv root)"/versions/$v.*/bin/python3 2>/dev/null | tail -n 1)
        [ -n "$p" ] && pythons="$pythons $p"
    done
fi
for p in $pythons; do
    ver=$("$p" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || continue
    if ! built "$p"; then
        gr_bad "tracing flags on $ver: the recorder does not build for $p"; gr_show "$work/make.log"; continue
    fi
    for how in script module; do
        if [ $how = script ]; then run=(tracing_state.py); else run=(-m tracing_state); fi
        (cd "$progs" && PYTHONPATH=$pkg "$p" "${run[@]}" cprofile >"$work/ts.plain" 2>&1)
        (cd "$progs" && PYTHONPATH=$pkg "$GR_CLI" record -o "$work/ts.grt" -- "$p" "${run[@]}" \
            >"$work/ts.rec" 2>&1)
        same "tracing flags on $ver ($how): $(cat "$work/ts.plain"), as cProfile started in the first frame" \
            "$work/ts.plain" "$work/ts.rec"
    done
done

# 3. The greenlet issue 256 class, whole-program.
seed=$GR_ROOT/fixtures/seed.py
# flagged PY TAG WANT: record the seed whole-program; WANT 1: flagged with
# blind_spot and propagation (exit 1), 0: clean.
flagged() {
    local tr=$work/seed.$(printf '%s' "$2" | tr -c 'A-Za-z0-9.-' _)
    (cd "$GR_ROOT/fixtures" && PYTHONPATH=$pkg "$GR_CLI" record -o "$tr.grt" -- "$1" seed.py >"$tr.out" 2>&1)
    "$GR_CLI" check "$tr.grt" >"$tr.check" 2>&1
    local rc=$?
    if [ "$3" = 1 ]; then
        if [ $rc -eq 1 ] && grep -q blind_spot "$tr.check" && grep -q propagation "$tr.check"; then
            gr_ok "$2: seed recorded whole-program flagged (blind_spot, propagation, exit 1)"
        else
            gr_bad "$2: seed recorded whole-program: check exit $rc"; gr_show "$tr.check"
        fi
    elif [ $rc -eq 0 ]; then
        gr_ok "$2: seed recorded whole-program clean"
    else
        gr_bad "$2: seed recorded whole-program: check exit $rc, expected clean"; gr_show "$tr.check"
    fi
}
"$PY" -c 'import greenlet' 2>/dev/null && flagged "$PY" "unmodified greenlet ($PY)" 0
found=0
for mpy in "$cache"/matrix/venvs/mut256-*/bin/python; do
    [ -x "$mpy" ] || continue
    found=1
    tag=$(basename "$(dirname "$(dirname "$mpy")")")
    if ! built "$mpy"; then
        gr_bad "$tag: the recorder does not build for $mpy"; continue
    fi
    (cd "$progs" && "$mpy" count_x.py >"$work/x.plain" 2>&1)
    (cd "$progs" && PYTHONPATH=$pkg "$GR_CLI" record -o "$work/x.grt" -- "$mpy" count_x.py >"$work/x.rec" 2>&1)
    same "$tag: cProfile's count of x ($(cat "$work/x.plain"))" "$work/x.plain" "$work/x.rec"
    flagged "$mpy" "$tag" 1
    (cd "$GR_ROOT/fixtures" && PYTHONPATH=$pkg "$GR_CLI" conform --profiler cprofile -o "$work/cf.grt" -- \
        "$mpy" seed.py >"$work/cf.out" 2>&1)
    rc=$?
    if [ $rc -eq 1 ] && grep -q "blind_spot seed.py:x" "$work/cf.out"; then
        gr_ok "$tag: conform --profiler cprofile reports cProfile's miss of x (exit 1)"
    else
        gr_bad "$tag: conform --profiler cprofile: exit $rc"; gr_show "$work/cf.out"
    fi
done
[ $found = 1 ] || echo "SKIP  mut256: no mutant venv in $cache/matrix/venvs (tests/mutants/run.sh --prepare)"

# 4. The program, not the tool: programs/boot/own_calls.py calls start()
# and stop() itself; recorded whole-program, no code of greenreplay's is
# in its trace, and it round-trips through script + diff --c-names script.
if "$PY" -c 'import greenlet' 2>/dev/null; then
    rt=$work/own
    (cd "$progs" && PYTHONPATH=$pkg "$GR_CLI" record -o "$rt.grt" -- "$PY" own_calls.py >"$rt.out" 2>&1)
    "$GR_CLI" dump "$rt.grt" >"$rt.dump" 2>&1
    if grep -q '<greenreplay>\|greenreplay\._greenreplay\.\(stop\|start\|is_recording\|_whole_program\)' "$rt.dump"; then
        gr_bad "own start()/stop() recorded whole-program: greenreplay's frames in the trace"
        grep '<greenreplay>\|greenreplay\._greenreplay\.' "$rt.dump" | sed -n '1,8p' | sed 's/^/      | /'
    else
        gr_ok "own start()/stop() recorded whole-program: no frame or C call of greenreplay's in the trace"
    fi
    "$GR_CLI" script -o "$rt.script.py" "$rt.grt" 2>"$rt.notes" &&
        (cd "$progs" && PYTHONPATH=$pkg "$GR_CLI" record --manual -o "$rt.script.grt" -- "$PY" "$rt.script.py" \
            >"$rt.script.out" 2>&1)
    "$GR_CLI" diff --c-names script "$rt.grt" "$rt.script.grt" >"$rt.diff" 2>&1
    rc=$?
    [ $rc -eq 0 ] && gr_ok "own start()/stop(): script + diff --c-names script, $(tail -n 1 "$rt.diff")" ||
        { gr_bad "own start()/stop(): diff --c-names script exit $rc"; gr_show "$rt.diff"; }
fi

# 5. What recording turns off: CPython's JIT (3.13+).  PYTHON_JIT=1 at
# start gives META jit and a line of check; without it, neither.
for p in $pythons; do
    "$p" -c 'import sys; sys.exit(sys.version_info < (3, 13))' 2>/dev/null || continue
    built "$p" || continue
    ver=$("$p" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    printf 'def f():\n    return 1\n\nf()\n' >"$work/jit.py"
    PYTHON_JIT=1 "$GR_CLI" record -o "$work/jit.grt" -- "$p" "$work/jit.py" >/dev/null 2>&1
    env -u PYTHON_JIT "$GR_CLI" record -o "$work/nojit.grt" -- "$p" "$work/jit.py" >/dev/null 2>&1
    if [ -s "$work/nojit.grt" ] && "$GR_CLI" dump "$work/jit.grt" | grep -q '^# jit: \(enabled\|requested\)' &&
        "$GR_CLI" check "$work/jit.grt" | grep -q "^warning: jit: CPython's JIT was" &&
        ! "$GR_CLI" dump "$work/nojit.grt" | grep -q '^# jit' &&
        ! "$GR_CLI" check "$work/nojit.grt" | grep -q "^warning: jit"; then
        gr_ok "JIT on $ver: META jit and a line of check with PYTHON_JIT=1, neither without"
    else
        gr_bad "JIT on $ver: $("$GR_CLI" dump "$work/jit.grt" | grep '^# jit')"
    fi
done
gr_tally
