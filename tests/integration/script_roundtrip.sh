#!/usr/bin/env bash
# tests/integration/script_roundtrip.sh - `greenreplay script`, `diff` and
# `reduce` on real recordings.
#
# usage: tests/integration/script_roundtrip.sh --python PY [NAME...|mpkg]
#
# For each fixtures/NAME.py (or only the NAMEs given), in fresh processes:
#   roundtrip NAME   record it, `greenreplay script` the trace, record the
#                    script with the same interpreter, and `greenreplay diff
#                    --c-names script` the two traces: same structure
#                    (exit 0), every record of both compared but the
#                    interpreter's exit, no frame of greenreplay's in the
#                    trace.  Qualnames are
#                    compared, not files and lines; C functions by the
#                    names the script reproduces.
# Then (all fixtures only, or the NAME mpkg alone):
#   -m               the package tests/integration/programs/mpkg recorded as
#                    `python -m mpkg` (whole program) and `python -m
#                    mpkg.manual` (--manual): script says -m in its header
#                    and makes none of runpy's launch frames, its recording
#                    has the same schedule (diff --c-names script, exit 0),
#                    and the two programs' traces differ (exit 1); the
#                    --manual one's script --anonymize holds none of its
#                    names and has the same structure up to renaming; the
#                    same again with the interpreters of trixie-3.13 and
#                    sid-3.14 (ci/envs.sh; skipped, with the reason, where
#                    not provisioned)
# Then (all fixtures only):
#   anonymize        gevent_spawn (20 greenlets): `script --anonymize` holds
#                    none of the trace's qualnames, file names or labels
#                    (tests/integration/script_names.py), and its recording
#                    has the same structure up to renaming (diff --rename)
#   cache            gevent_spawn: the script of the file (dead greenlets
#                    spilled to a temporary file) is the one a pipe gives;
#                    with a cache of 2 bodies (GREENREPLAY_SCRIPT_CACHE=2)
#                    it has more defs and its recording the same structure;
#                    a temporary file that cannot be written (a file size
#                    limit) makes exit 2 with a message naming it
#   notes            script says what it cannot reproduce: a trace without
#                    the SWITCH into a greenlet, and a two-thread trace
#   refuse           a trace of greenlets run inside the program's own
#                    profile function (programs/switch_in_profile.py),
#                    passive and callback: script exits 2, names why, and
#                    writes nothing
#   diff             finds a dropped CALL (exit 1, a `-` line), rejects
#                    traces of different format versions and corrupt ones
#                    (exit 2, one line with file and offset); script too
#   ignore           --ignore with ids and with fixtures/known-issues.ini
#   reduce           the script of tests/integration/blindspot_noise.py (a
#                    blind spot amid 16 greenlets of noise) reduced to at
#                    most a fifth of its size, and recording the reduced
#                    script still gives a blind_spot violation
# Output: one line per test (PASS / FAIL / SKIP), details indented below a
# failure, and a last line "N passed, N failed[, N skipped]".
# Exit status: 0 all passed, 1 a test failed, 2 bad usage.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
GR_ROOT=$ROOT
GR_CLI=${GREENREPLAY_CLI:-$ROOT/build/greenreplay}
# shellcheck source=lib.sh
. "$ROOT/tests/integration/lib.sh"

usage() {
    sed -n '4,5p' "${BASH_SOURCE[0]}" | sed 's/^# //' >&2
    exit 2
}

GR_PY=""
ONLY=()
while [ $# -gt 0 ]; do
    case $1 in
        --python) [ $# -ge 2 ] || usage; GR_PY=$2; shift 2 ;;
        --python=*) GR_PY=${1#--python=}; shift ;;
        -h|--help) sed -n '2,49p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "script_roundtrip.sh: unknown option $1" >&2; usage ;;
        *) ONLY+=("$1"); shift ;;
    esac
done
[ -n "$GR_PY" ] || usage
# script_names.py reads traces (zstd chunks through the host's zstd): it
# runs on the host's interpreter also when a root's records the trace.
HOST_PY=$GR_PY
if [ ! -x "$GR_CLI" ]; then
    echo "script_roundtrip.sh: $GR_CLI is missing; build it first (make)" >&2
    exit 2
fi
if ! "$GR_PY" -c 'import sys' 2>/dev/null; then
    echo "script_roundtrip.sh: $GR_PY is not a usable Python interpreter" >&2
    exit 2
fi

WORK=$ROOT/build/traces/.work/script.$$
rm -rf "$WORK"
mkdir -p "$WORK"
NPASS=0 NFAIL=0 NSKIP=0
pass() { NPASS=$((NPASS + 1)); printf 'PASS  %s\n' "$*"; }
fail() { NFAIL=$((NFAIL + 1)); printf 'FAIL  %s\n' "$*"; }
skip() { NSKIP=$((NSKIP + 1)); printf 'SKIP  %s\n' "$*"; }
detail() {
    local max=${1:-40}
    awk -v max="$max" 'NR <= max { print "      | " $0 } NR == max + 1 { print "      | ..." }'
}

# script_and_record TRACE OUT_BASE [SCRIPT OPTIONS...]: OUT_BASE.py (the
# script), OUT_BASE.notes (its stderr), OUT_BASE.grt (its recording),
# OUT_BASE.log.  Returns record's status, or 99 when script failed.
script_and_record() {
    local trace=$1 base=$2
    shift 2
    "$GR_CLI" script "$@" -o "$base.py" "$trace" 2>"$base.notes" || return 99
    gr_record "$GR_PY" "$base.py" "$base.grt" "$base.log"
}

# ---------------------------------------------------------------- roundtrip

roundtrip() {
    local f=$1 name reason
    name=$(basename "$f" .py)
    if ! reason=$(gr_missing_requirement "$GR_PY" "$f"); then
        skip "roundtrip $name: $reason"
        return
    fi
    # "# roundtrip: no (WHY)": a trace a script cannot reproduce.
    if gr_header_present "$f" roundtrip; then
        skip "roundtrip $name: $(gr_header "$f" roundtrip)"
        return
    fi
    local t=$WORK/$name.grt
    gr_record "$GR_PY" "fixtures/$name.py" "$t" "$WORK/$name.log"
    if [ ! -s "$t" ]; then
        fail "roundtrip $name: recording the fixture wrote no trace"
        tail -n 10 "$WORK/$name.log" | detail
        return
    fi
    local rc
    script_and_record "$t" "$WORK/$name.repro"
    rc=$?
    if [ "$rc" -eq 99 ]; then
        fail "roundtrip $name: script failed"
        detail <"$WORK/$name.repro.notes"
        return
    elif [ "$rc" -ne 0 ]; then
        fail "roundtrip $name: recording the script exited $rc"
        tail -n 15 "$WORK/$name.repro.log" | detail
        return
    fi
    local out=$WORK/$name.diff
    "$GR_CLI" diff --c-names script "$t" "$WORK/$name.repro.grt" >"$out" 2>&1
    rc=$?
    local last
    last=$(tail -n 1 "$out")
    # Every record compared, none left over on either side but the
    # interpreter's exit after <module> returned (a program that never
    # calls stop(): threading's _shutdown), and no frame of greenreplay's
    # in the --manual recording (start(), stop(), the stop at exit) that a
    # script would not reproduce.
    if [ "$rc" -eq 0 ] && [[ $last =~ ^same\ structure\ \(([0-9]+)\ records\ of\ A,\ ([0-9]+)\ of\ B ]] &&
       { [ "${BASH_REMATCH[1]}" != "${BASH_REMATCH[2]}" ] ||
         grep '^# not compared' "$out" |
             grep -qv "^# not compared: [0-9]* records of A and [0-9]* of B after the program's <module> returned (interpreter exit, which a script does not reproduce)\$" ||
         "$GR_CLI" dump "$t" | grep -q '<greenreplay>/'; }; then
        fail "roundtrip $name: records left out of the comparison: $last"
        detail 50 <"$out"
    elif [ "$rc" -eq 0 ]; then
        pass "roundtrip $name: $last"
    else
        fail "roundtrip $name: diff --c-names script exited $rc"
        detail 50 <"$out"
        sed 's/^/note: /' "$WORK/$name.repro.notes" | detail 10
    fi
}

# ---------------------------------------------------------------- -m

# record_m OUT LOG [--manual] MODULE: record `GR_PY -m MODULE` from
# tests/integration/programs (names relative to it).
record_m() {
    local out=$1 log=$2
    shift 2
    rm -f "$out"
    (cd "$ROOT/tests/integration/programs" && timeout --kill-after=10 300 \
        "$GR_CLI" record --root . -o "$out" "${@:1:$#-1}" -- "$GR_PY" -m "${@: -1}") >"$log" 2>&1
}

# test_module_m [ENV]: the -m tests with GR_PY, or with the interpreter of
# the environment ENV of ci/envs.sh (runpy differs by version: a .py file
# on 3.9/3.10, frozen since 3.11); skipped with ci/envs.sh's reason when ENV
# is not provisioned.  The tests' names and scratch files carry ENV.
test_module_m() {
    local env=${1:-} tag="-m" dir=$WORK
    if [ -n "$env" ]; then
        local envpy
        if ! envpy=$("$ROOT/ci/envs.sh" python "$env" 2>"$WORK/envs-$env.err"); then
            skip "-m in $env: $(head -n 1 "$WORK/envs-$env.err")"
            return
        fi
        tag="-m [$env]" dir=$WORK/$env
        mkdir -p "$dir"
        local GR_PY=$envpy # seen by record_m and script_and_record too
    fi
    if ! "$GR_PY" -c 'import greenlet' 2>/dev/null; then
        skip "$tag: requires greenlet"
        return
    fi
    local mod how base rc
    for mod in mpkg mpkg.manual; do
        how="whole program"
        base=$dir/m-$mod
        if [ "$mod" = mpkg.manual ]; then
            how="--manual"
            record_m "$base.grt" "$base.orig.log" --manual "$mod"
        else
            record_m "$base.grt" "$base.orig.log" "$mod"
        fi
        if [ ! -s "$base.grt" ]; then
            fail "$tag $mod ($how): recording wrote no trace"
            tail -n 10 "$base.orig.log" | detail
            continue
        fi
        "$GR_CLI" dump "$base.grt" >"$base.dump" 2>&1
        if ! grep -q "stack=_run_module_as_main .* > _run_code " "$base.dump"; then
            fail "$tag $mod ($how): the trace has no runpy launch frames below the module"
            head -n 8 "$base.dump" | detail
            continue
        fi
        script_and_record "$base.grt" "$base.repro"
        rc=$?
        if [ "$rc" -eq 99 ]; then
            fail "$tag $mod ($how): script failed"
            detail <"$base.repro.notes"
            continue
        fi
        if grep -q "^# The program was launched with -m" "$base.repro.py" &&
            ! awk '!/^#/ && /_run_code|_run_module_as_main/ { f = 1 } END { exit !f }' "$base.repro.py" &&
            [ ! -s "$base.repro.notes" ]; then
            pass "$tag $mod ($how): the script says -m in its header, has no runpy frame and no note"
        else
            fail "$tag $mod ($how): script header, runpy frames or notes"
            { head -n 25 "$base.repro.py"; cat "$base.repro.notes"; } | detail
        fi
        if [ "$rc" -ne 0 ]; then
            fail "$tag $mod ($how): recording the script exited $rc"
            tail -n 15 "$base.repro.log" | detail
            continue
        fi
        "$GR_CLI" diff --c-names script "$base.grt" "$base.repro.grt" >"$base.diff" 2>&1
        rc=$?
        # the whole program's trace ends with the launch frames' returns
        if [ "$rc" -eq 0 ] && { [ "$mod" = mpkg.manual ] || grep -q "returning from runpy's launch frames" "$base.diff"; }; then
            pass "$tag $mod ($how): its script's recording has the same schedule ($(tail -n 1 "$base.diff"))"
        else
            fail "$tag $mod ($how): diff --c-names script exited $rc"
            detail 50 <"$base.diff"
        fi
    done
    # --anonymize: none of the trace's names (runpy's either), same
    # structure up to renaming
    local t=$dir/m-mpkg.manual.grt anon=$dir/m-anon
    if [ -s "$t" ]; then
        script_and_record "$t" "$anon" --anonymize
        rc=$?
        if [ "$rc" -eq 0 ] && "$HOST_PY" "$ROOT/tests/integration/script_names.py" "$t" "$anon.py" >"$anon.names" 2>&1 &&
            "$GR_CLI" diff --rename --c-names script "$t" "$anon.grt" >"$anon.diff" 2>&1; then
            pass "$tag mpkg.manual --anonymize: none of the trace's names ($(tail -n 1 "$anon.names")), same structure up to renaming"
        else
            fail "$tag mpkg.manual --anonymize: script/record exit $rc, names or diff"
            cat "$anon.notes" "$anon.names" "$anon.diff" 2>/dev/null | detail 40
        fi
    fi
    local a=$dir/m-mpkg.grt b=$dir/m-mpkg.manual.repro.grt
    if [ -s "$a" ] && [ -s "$b" ]; then
        "$GR_CLI" diff --c-names script "$a" "$b" >"$dir/m-cross.diff" 2>&1
        rc=$?
        if [ "$rc" -eq 1 ]; then
            pass "$tag: the whole-program trace against the --manual one's script: different (exit 1)"
        else
            fail "$tag: the whole-program trace against the --manual one's script: exit $rc, expected 1"
            detail <"$dir/m-cross.diff"
        fi
    fi
}

# The -m tests with GR_PY, then in each of M_ENVS (ci/envs.sh) where it is
# provisioned: the launch-prefix rule (replay/repro/launch.c) on the runpy
# of other CPython versions than the host's.
M_ENVS="trixie-3.13 sid-3.14"
test_module_m_envs() {
    local e
    test_module_m
    for e in $M_ENVS; do
        test_module_m "$e"
    done
}

fixtures=()
ONLY_M=0
if [ ${#ONLY[@]} -gt 0 ]; then
    for n in "${ONLY[@]}"; do
        n=$(basename "$n" .py)
        if [ "$n" = mpkg ]; then ONLY_M=1; continue; fi
        if [ -f "$ROOT/fixtures/$n.py" ]; then fixtures+=("$ROOT/fixtures/$n.py")
        else echo "script_roundtrip.sh: no fixture fixtures/$n.py" >&2; exit 2; fi
    done
else
    for f in "$ROOT"/fixtures/*.py; do [ -f "$f" ] && fixtures+=("$f"); done
fi
echo "== greenreplay script/diff/reduce tests: $GR_PY, ${#fixtures[@]} fixtures"
for f in "${fixtures[@]}"; do
    roundtrip "$f"
done

finish() {
    if [ "$NFAIL" -eq 0 ]; then
        rm -rf "$WORK"
    else
        echo "(scratch files of the failed tests kept in ${WORK#"$ROOT"/})"
    fi
    local summary="$NPASS passed, $NFAIL failed"
    [ "$NSKIP" -gt 0 ] && summary="$summary, $NSKIP skipped"
    echo "$summary"
    [ "$NFAIL" -eq 0 ]
    exit
}
if [ ${#ONLY[@]} -gt 0 ]; then
    [ "$ONLY_M" -eq 1 ] && test_module_m_envs
    finish
fi

# ---------------------------------------------------------------- anonymize

test_anonymize() {
    local name="anonymize gevent_spawn" reason
    if ! reason=$(gr_missing_requirement "$GR_PY" "$ROOT/fixtures/gevent_spawn.py"); then
        skip "$name: $reason"
        return
    fi
    local t=$WORK/gevent_spawn.grt
    [ -s "$t" ] || gr_record "$GR_PY" fixtures/gevent_spawn.py "$t" "$WORK/gevent_spawn.log"
    local base=$WORK/gevent_anon rc
    script_and_record "$t" "$base" --anonymize
    rc=$?
    if [ "$rc" -eq 99 ]; then
        fail "$name: script --anonymize failed"
        detail <"$base.notes"
        return
    fi
    local greenlets
    greenlets=$("$GR_CLI" dump "$t" | awk '$2 == "GREENLET"' | wc -l)
    if "$HOST_PY" "$ROOT/tests/integration/script_names.py" "$t" "$base.py" >"$base.names" 2>&1; then
        pass "$name: the anonymized script holds none of the trace's names ($(tail -n 1 "$base.names"); $greenlets greenlets)"
    else
        fail "$name: the anonymized script holds names of the trace"
        detail <"$base.names"
    fi
    if [ "$rc" -ne 0 ]; then
        fail "$name: recording the anonymized script exited $rc"
        tail -n 15 "$base.log" | detail
        return
    fi
    if "$GR_CLI" diff --rename --c-names script "$t" "$base.grt" >"$base.diff" 2>&1; then
        pass "$name: its recording has the same structure up to renaming"
    else
        fail "$name: diff --rename --c-names script found differences"
        detail 50 <"$base.diff"
    fi
}

# ---------------------------------------------------------------- cache

# script spills each dead greenlet's frames to a temporary file and reads
# them back to render them: the program is the one the loaded path (a
# pipe) writes, but for the source named in its header.  Its cache of
# bodies (identical bodies share one def) starts over when full: with a
# cache of 2 the script has more defs, and its recording has the same
# structure all the same.
test_cache() {
    local name="cache gevent_spawn" reason
    if ! reason=$(gr_missing_requirement "$GR_PY" "$ROOT/fixtures/gevent_spawn.py"); then
        skip "$name: $reason"
        return
    fi
    local t=$WORK/gevent_spawn.grt
    [ -s "$t" ] || gr_record "$GR_PY" fixtures/gevent_spawn.py "$t" "$WORK/gevent_spawn.log"
    local base=$WORK/gevent_cache rc full
    "$GR_CLI" script -q -o "$base.full.py" "$t" 2>"$base.notes"
    "$GR_CLI" script -q /dev/stdin <"$t" >"$base.pipe.py" 2>>"$base.notes"
    if [ -s "$base.full.py" ] && cmp -s <(sed 3d "$base.full.py") <(sed 3d "$base.pipe.py"); then
        pass "$name: the script of the file (greenlets spilled) is the one a pipe gives"
    else
        fail "$name: the script of the file differs from the one a pipe gives"
        diff <(sed 3d "$base.full.py") <(sed 3d "$base.pipe.py") | detail
    fi
    # A temporary file that cannot be written (here over a file size
    # limit, as on a full disk; the program goes to a pipe, which the limit
    # does not cover) is named, not blamed on the output.
    local err
    err=$( (trap '' XFSZ; ulimit -f 1; "$GR_CLI" script -q "$t" 2>&1 >/dev/null; echo "exit $?") )
    if printf '%s\n' "$err" | grep -q 'temporary file (\$TMPDIR, else /tmp).* failed' &&
        printf '%s\n' "$err" | grep -qx 'exit 2' && ! printf '%s\n' "$err" | grep -q 'writing the script'; then
        pass "$name: a temporary file over a 1 KB file size limit: exit 2, the message names it"
    else
        fail "$name: a temporary file over a 1 KB file size limit: not said so"
        printf '%s\n' "$err" | detail
    fi
    GREENREPLAY_SCRIPT_CACHE=2 script_and_record "$t" "$base" -q
    rc=$?
    full=$(grep -c '^def ' "$base.full.py")
    local small
    small=$(grep -c '^def ' "$base.py" 2>/dev/null)
    if [ "$rc" -ne 0 ]; then
        fail "$name: with a cache of 2 bodies, script or recording it exited $rc"
        tail -n 15 "$base.log" 2>/dev/null | detail
        return
    fi
    if [ "${small:-0}" -gt "$full" ] &&
        "$GR_CLI" diff --c-names script "$t" "$base.grt" >"$base.diff" 2>&1; then
        pass "$name: with a cache of 2 bodies, $small defs (against $full), the same structure recorded"
    else
        fail "$name: with a cache of 2 bodies, $small defs (against $full), or diff found differences"
        detail 50 <"$base.diff"
    fi
}

# ---------------------------------------------------------------- notes

test_notes() {
    local seed=$WORK/seed.grt
    [ -s "$seed" ] || gr_record "$GR_PY" fixtures/seed.py "$seed" "$WORK/seed.log"
    if [ ! -s "$seed" ]; then
        skip "notes: no seed trace (fixture skipped)"
        return
    fi
    # Without the SWITCH into the new greenlet, its events come from a
    # greenlet that is not running: script says so and writes the rest.
    local sw out=$WORK/seed-noswitch
    sw=$("$GR_CLI" dump "$seed" | awk '$2 == "SWITCH" && $4 == "g1->g2" { print $1; exit }')
    "$GR_CLI" edit --drop "$sw" -o "$out.grt" "$seed" 2>/dev/null
    "$GR_CLI" script -o "$out.py" "$out.grt" 2>"$out.notes"
    local rc=$?
    if [ "$rc" -eq 0 ] && grep -q "note: .*not the running one" "$out.notes" &&
        grep -q "Not reproduced:" "$out.py" && "$GR_PY" -c "import ast,sys; ast.parse(open(sys.argv[1]).read())" "$out.py"; then
        pass "notes: a lost SWITCH: script exits 0, says what it cannot reproduce ($(head -n 1 "$out.notes" | cut -c1-90)...) and writes the rest"
    else
        fail "notes: a lost SWITCH: script exited $rc"
        detail <"$out.notes"
    fi
    local tt=$WORK/two_threads.grt reason
    if ! reason=$(gr_missing_requirement "$GR_PY" "$ROOT/fixtures/two_threads.py"); then
        skip "notes: two threads: $reason"
        return
    fi
    [ -s "$tt" ] || gr_record "$GR_PY" fixtures/two_threads.py "$tt" "$WORK/two_threads.log"
    "$GR_CLI" script -o "$WORK/tt.py" "$tt" 2>"$WORK/tt.notes"
    if grep -q "note: 3 threads" "$WORK/tt.notes" && grep -q "#   - 3 threads" "$WORK/tt.py"; then
        pass "notes: three threads: said on stderr and in the script's header"
    else
        fail "notes: three threads: no note about threads"
        detail <"$WORK/tt.notes"
    fi
}

# --------------------------------------------------------------- refuse

# Greenlets run inside the program's own profile function: no record says
# what they ran (CPython runs it with tracing on), so script refuses with
# the reason and writes nothing, in both switch modes (passive: META
# switches_in_profile_function on 3.9-3.11, where the program's function
# is chained; callback: the SWITCH records made there).  The same program
# without that switch inside is scripted (the fixtures' roundtrips).
test_refuse() {
    local prog=tests/integration/programs/switch_in_profile.py reason mode
    if ! reason=$(gr_missing_requirement "$GR_PY" "$ROOT/$prog"); then
        skip "refuse: $reason"
        return
    fi
    for mode in passive callback; do
        local base=$WORK/sip-$mode want="switch was made inside the program's own profile function"
        [ "$mode" = passive ] && want="greenlets ran inside the program's own profile function"
        (cd "$ROOT" && timeout 300 "$GR_CLI" record --switches "$mode" --root "$ROOT" -o "$base.grt" -- \
            "$GR_PY" "$prog") >"$base.log" 2>&1
        if [ "$mode" = passive ] && ! "$GR_CLI" dump "$base.grt" | grep -q '^# switches_in_profile_function: '; then
            skip "refuse ($mode): no META switches_in_profile_function here (3.12+: not counted)"
            continue
        fi
        rm -f "$base.py"
        "$GR_CLI" script -o "$base.py" "$base.grt" 2>"$base.err"
        local rc=$?
        if [ "$rc" -eq 2 ] && [ ! -e "$base.py" ] && grep -q "$want" "$base.err" &&
            grep -q "nothing written" "$base.err"; then
            pass "refuse ($mode): script exits 2, writes nothing, says why ($(cut -c1-100 "$base.err")...)"
        else
            fail "refuse ($mode): script exited $rc$([ -e "$base.py" ] && echo ', wrote a script')"
            detail <"$base.err"
        fi
    done
}

# ---------------------------------------------------------------- diff

test_diff() {
    local seed=$WORK/seed.grt
    if [ ! -s "$seed" ]; then
        skip "diff: no seed trace"
        return
    fi
    local call out=$WORK/seed-nocall
    call=$("$GR_CLI" dump "$seed" | awk '$2 == "CALL" && $4 == "g2" { print $1; exit }')
    "$GR_CLI" edit --drop "$call" -o "$out.grt" "$seed" 2>/dev/null
    "$GR_CLI" diff "$seed" "$out.grt" >"$out.diff" 2>&1
    local rc=$?
    if [ "$rc" -eq 1 ] && grep -qE "^- +$call CALL +t1 g2 x " "$out.diff" && grep -q "^@@ -" "$out.diff"; then
        pass "diff: a dropped CALL (record $call) is a divergence: exit 1, hunk with '-$call CALL'"
    else
        fail "diff: a dropped CALL: exit $rc"
        detail <"$out.diff"
    fi
    if "$GR_CLI" diff "$seed" "$seed" >"$out.same" 2>&1; then
        pass "diff: a trace against itself: exit 0 ($(tail -n 1 "$out.same"))"
    else
        fail "diff: a trace against itself differs"
        detail <"$out.same"
    fi
    # Another format version: minor (offset 10) and major (offset 8).  1.1
    # to 1.4 differ in encoding and HOOK details only and are compared; a
    # later minor not.
    local v=$WORK/seed-minor.grt err=$WORK/version.err
    cp "$seed" "$v"
    printf '\005' | dd of="$v" bs=1 seek=10 count=1 conv=notrunc 2>/dev/null
    "$GR_CLI" diff "$seed" "$v" >/dev/null 2>"$err"
    rc=$?
    if [ "$rc" -eq 2 ] && [ "$(wc -l <"$err")" -eq 1 ] && grep -q "different format versions" "$err"; then
        pass "diff: traces of format 1.4 and 1.5: exit 2, $(cut -c1-80 "$err")..."
    else
        fail "diff: traces of different minor versions: exit $rc"
        detail <"$err"
    fi
    cp "$seed" "$v"
    printf '\002' | dd of="$v" bs=1 seek=8 count=1 conv=notrunc 2>/dev/null
    "$GR_CLI" diff "$seed" "$v" >/dev/null 2>"$err"
    rc=$?
    if [ "$rc" -eq 2 ] && [ "$(wc -l <"$err")" -eq 1 ] && grep -qF "$v: offset 8" "$err"; then
        pass "diff: a trace of format 2: exit 2, $(cat "$err")"
    else
        fail "diff: a trace of another major version: exit $rc"
        detail <"$err"
    fi
    # Corrupt: a byte flipped in the first chunk's payload.
    local c=$WORK/seed-corrupt.grt
    cp "$seed" "$c"
    local at=$((16 + 9 + 20)) byte
    byte=$(od -An -tu1 -j "$at" -N 1 "$c" | tr -d ' ')
    printf "$(printf '\\%03o' $((byte ^ 0xff)))" | dd of="$c" bs=1 seek="$at" count=1 conv=notrunc 2>/dev/null
    local which
    for which in diff script; do
        if [ "$which" = diff ]; then
            "$GR_CLI" diff "$seed" "$c" >/dev/null 2>"$err"
        else
            "$GR_CLI" script -o "$WORK/corrupt.py" "$c" >/dev/null 2>"$err"
        fi
        rc=$?
        if [ "$rc" -eq 2 ] && [ "$(wc -l <"$err")" -eq 1 ] && grep -qF "$c: offset 16" "$err"; then
            pass "$which: a corrupt trace: exit 2, $(cat "$err")"
        else
            fail "$which: a corrupt trace: exit $rc"
            detail <"$err"
        fi
    done
}

# ---------------------------------------------------------------- ignore

test_ignore() {
    # Two generators traces from different interpreters, when an environment
    # of the other kind is ready (the host is 3.9-3.12, it 3.13+, or the
    # other way round).
    local env other_py host_v
    host_v=$("$GR_PY" -c 'import sys; print("%d%02d" % sys.version_info[:2])')
    if [ "$host_v" -ge 313 ]; then env=bullseye-3.9; else env=trixie-3.13; fi
    local status
    status=$("$ROOT/ci/envs.sh" list "$env" 2>/dev/null)
    if ! other_py=$("$ROOT/ci/envs.sh" python "$env" 2>/dev/null) ||
        ! printf '%s\n' "$status" | grep -q " ready"; then
        skip "ignore: environment $env is not ready (ci/envs.sh provision $env)"
        return
    fi
    local a=$WORK/gen-host.grt b=$WORK/gen-other.grt out=$WORK/gen.diff rc
    gr_record "$GR_PY" fixtures/generators.py "$a" "$WORK/gen-host.log"
    gr_record "$other_py" fixtures/generators.py "$b" "$WORK/gen-other.log"
    if [ ! -s "$a" ] || [ ! -s "$b" ]; then
        skip "ignore: generators could not be recorded in both"
        return
    fi
    "$GR_CLI" diff "$a" "$b" >"$out" 2>&1
    rc=$?
    if [ "$rc" -eq 1 ] && grep -qE "^[-+] +[0-9]+ (CALL|RETURN) .*counter" "$out"; then
        pass "ignore: generators, host vs $env: the generator finalization pairs differ (exit 1)"
    else
        fail "ignore: generators, host vs $env: exit $rc, expected 1 with counter CALL/RETURN lines"
        detail <"$out"
    fi
    "$GR_CLI" diff --ignore cpython-113728 "$a" "$b" >"$out" 2>&1
    rc=$?
    if [ "$rc" -eq 0 ]; then
        pass "ignore: --ignore cpython-113728: same structure ($(grep '^# ignored' "$out"))"
    else
        fail "ignore: --ignore cpython-113728: exit $rc"
        detail <"$out"
    fi
}

test_ignore_file() {
    local f=$ROOT/fixtures/known-issues.ini seed=$WORK/seed.grt out=$WORK/ignore-file.out rc
    if [ ! -f "$f" ] || [ ! -s "$seed" ]; then
        skip "ignore: fixtures/known-issues.ini or the seed trace missing"
        return
    fi
    "$GR_CLI" diff --ignore "$f" "$seed" "$seed" >"$out" 2>&1
    rc=$?
    if [ "$rc" -eq 0 ] && grep -q "^# ignored (--ignore c-return-without-c-call)" "$out"; then
        pass "ignore: --ignore fixtures/known-issues.ini selects c-return-without-c-call (cpython-122029)"
    else
        fail "ignore: --ignore fixtures/known-issues.ini: exit $rc"
        detail <"$out"
    fi
    "$GR_CLI" diff --ignore no-such-issue "$seed" "$seed" >"$out" 2>&1
    rc=$?
    if [ "$rc" -eq 2 ] && grep -q "unknown issue id 'no-such-issue'" "$out"; then
        pass "ignore: an unknown id: exit 2 ($(cut -c1-70 "$out")...)"
    else
        fail "ignore: an unknown id: exit $rc"
        detail <"$out"
    fi
}

# ---------------------------------------------------------------- reduce

test_reduce() {
    local name="reduce: the blind spot of tests/integration/blindspot_noise.py"
    if ! "$GR_PY" -c 'import greenlet' 2>/dev/null; then
        skip "$name: requires greenlet"
        return
    fi
    local t=$WORK/noise.grt base=$WORK/noise rc
    gr_record "$GR_PY" tests/integration/blindspot_noise.py "$t" "$WORK/noise.log"
    if ! "$GR_CLI" check "$t" >"$WORK/noise.check" 2>&1 && grep -q "^blind_spot at" "$WORK/noise.check"; then
        :
    else
        fail "$name: the scenario gives no blind_spot"
        detail <"$WORK/noise.check"
        return
    fi
    "$GR_CLI" script -q -o "$base.py" "$t"
    "$GR_CLI" reduce "$base.py" --python "$GR_PY" --rule blind_spot --workdir "$WORK" \
        -o "$base.reduced.py" 2>"$base.reduce.log"
    rc=$?
    if [ "$rc" -ne 0 ]; then
        fail "$name: reduce exited $rc"
        tail -n 20 "$base.reduce.log" | detail
        return
    fi
    local before after
    before=$(wc -c <"$base.py")
    after=$(wc -c <"$base.reduced.py")
    if [ $((after * 5)) -le "$before" ]; then
        pass "$name: $after of $before bytes ($((after * 100 / before))%), $(grep -c '^reduce: run' "$base.reduce.log") runs"
    else
        fail "$name: reduced to $after of $before bytes, more than a fifth"
        tail -n 5 "$base.reduce.log" | detail
    fi
    gr_record "$GR_PY" "$base.reduced.py" "$base.reduced.grt" "$base.reduced.log"
    rc=$?
    "$GR_CLI" check --format json "$base.reduced.grt" >"$base.reduced.json" 2>/dev/null
    local rules
    rules=$(gr_json_rules "$base.reduced.json" 2>/dev/null)
    if [ "$rc" -eq 0 ] && printf '%s\n' "$rules" | tr ',' '\n' | grep -qx blind_spot; then
        pass "$name: the reduced script still fails the same way (record exit 0, check: $rules)"
    else
        fail "$name: the reduced script: record exit $rc, check rules '${rules:-none}'"
        cat "$base.reduced.py" | detail 60
    fi
}

test_module_m_envs
test_anonymize
test_cache
test_notes
test_refuse
test_diff
test_ignore_file
test_ignore
test_reduce
finish
