#!/usr/bin/env bash
# tests/integration/audit_hooks.sh --python PY: the program's own audit hook
# (sys.addaudithook) sees the same profile and trace events recorded and
# unrecorded (transparency): the recorder's own changes of the
# profile and trace slots raise no event it sees (tracer/compat.h, slots
# section), nor does threading's start of a thread without a program hook.
# tests/integration/programs/audit_events.py logs every sys.setprofile,
# sys.settrace and sys.monitoring.* event as it happens (cProfile enable,
# disable and create_stats, sys.setprofile, sys.settrace, threads with and
# without threading.setprofile, 3.12+ threading.setprofile_all_threads,
# the recorder's stop at exit) and prints cProfile's counts; the two runs
# must print the same lines (and the events its trace function saw in
# work()), and the recording must have seen the program
# (its calls of work() on each of its three threads).
# Run with PY and with every other interpreter found: GR_AUDIT_PYTHONS (a
# space-separated list), else pyenv's 3.9-3.13 (`pyenv root`/versions);
# the recorder is built for each (make ext PYTHON=...); one that is missing
# or does not build is skipped.  And in the Debian roots of ci/envs.sh
# (GR_AUDIT_ENVS, default bullseye-3.9 trixie-3.13 sid-3.14 sid-3.15) that
# are provisioned; the recorder is built there for this clone when needed.  Greenlet is not needed.
# On 3.12+ each also runs tests/integration/programs/foreign_change.py: a
# thread replaces every thread's profile function (sys._setprofileallthreads,
# as yappi 1.6+ does from each new thread) and the main thread runs before
# that thread has another event (forced with locks): all 50 calls of leaf()
# on the main thread recorded (none without the recorder's foreign
# foothold), a HOOK for it, no imbalance on it, and an imbalance elsewhere
# only with its cause (HOOK ran); the program's own profile function counts
# the same recorded and unrecorded.  The same with the change made by a
# thread the recorder does not follow (foreign_change.py stray), and so
# again after a change the main thread made itself (stray own): a HOOK of a
# change another thread made (ran, or by=) names no frame (FORMAT.md §4.2),
# not the frame of this thread's previous change.
# With each 3.12+ interpreter of that list: threading.setprofile_all_threads
# with a second thread alive (programs/profile_all_threads.py): prof sees
# the same calls recorded and not, the return of setprofile_all_threads
# after the None that puts the subject back is recorded (with every slot
# empty CPython's profile tool is off for it: the recorder writes it), and
# the one verdict per thread is the displaced subject's blind spot, on the
# calling thread naming sys._setprofileallthreads, on the other naming the
# calling thread too (HOOK by=t1; no imbalance).  Each thread's greenlet is
# g0 where greenlet cannot be imported, else the placeholder of its main
# greenlet (g1, g2: gl_load.c).
# One line per test, then "N passed, N failed".  Exit 1 if any failed.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
gr_script_init audit "$@"
prog=tests/integration/programs/audit_events.py

pythons=("$GR_PY")
if [ -n "${GR_AUDIT_PYTHONS+set}" ]; then
    read -r -a more <<<"$GR_AUDIT_PYTHONS"
else
    proot=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
    more=()
    for d in "$proot"/versions/3.9.* "$proot"/versions/3.1[0-3].*; do
        [ -d "$d" ] || continue
        v=$(basename "$d")
        more+=("$d/bin/python${v%.*}")
    done
fi
pythons+=("${more[@]}")

# compare LABEL OUT: OUT.plain (unrecorded output), OUT.log (recorded
# output) and OUT.grt (the trace), record's exit status in $rc.
compare() {
    local label=$1 out=$2 threads events
    grep -v '^greenreplay\|^envs: ' "$out.log" >"$out.rec"
    grep -v '^envs: ' "$out.plain" >"$out.plainf"
    "$GR_CLI" dump "$out.grt" >"$out.dump" 2>&1
    threads=$(awk '$2 == "CALL" && $5 == "work" { print $3 }' "$out.dump" | sort -u | wc -l)
    events=$(grep -c '^audit ' "$out.plainf")
    if [ "$rc" -ne 0 ]; then
        gr_bad "audit events with $label: record exit $rc"
        gr_show "$out.log"
    elif [ "$events" -lt 7 ] || ! grep -q '^work 1$' "$out.plainf"; then
        gr_bad "audit events with $label: the program did not run through unrecorded ($events events)"
        gr_show "$out.plainf"
    elif ! diff -u <(gr_quiet "${py:-}" "$out.plainf") <(gr_quiet "${py:-}" "$out.rec") >"$out.diff"; then
        gr_bad "audit events with $label: the program's audit hook saw other events recorded (- unrecorded, + recorded)"
        gr_show "$out.diff"
    elif [ "$threads" -ne 3 ]; then
        gr_bad "audit events with $label: the recording saw work() on $threads threads, expected 3"
    else
        gr_ok "audit events with $label: the same $events events and cProfile counts recorded and unrecorded; work() recorded on 3 threads"
    fi
}

# With each 3.12+ interpreter of that list, too: after the footholds of a
# sys._setprofileallthreads (the changing thread's own one first) are given
# back, no code is instrumented for line events (programs/
# foothold_instrumentation.py: a probe function's adaptive bytecode has no
# INSTRUMENTED_LINE, as unrecorded); and after stop() with the changing
# thread's own foothold still waiting (foothold_instrumentation.py atstop).
# foreign LABEL OUT: OUT.fplain, OUT.flog, OUT.fgrt of foreign_change.py.
foreign() {
    local label=$1 out=$2 leafs hooks bad_imb framed
    grep -v '^greenreplay\|^envs: ' "$out.flog" >"$out.frec"
    grep -v '^envs: ' "$out.fplain" >"$out.fplainf"
    if grep -q '^skip: ' "$out.fplainf"; then
        echo "SKIP  foreign profile change with $label: $(sed 's/^skip: //' "$out.fplainf")"
        return
    fi
    "$GR_CLI" dump "$out.fgrt" >"$out.fdump" 2>&1
    "$GR_CLI" check "$out.fgrt" >"$out.fcheck" 2>&1
    leafs=$(awk '$2 == "CALL" && $3 == "t1" && $5 == "leaf" { n++ } END { print n + 0 }' "$out.fdump")
    hooks=$(awk '$2 == "HOOK" && $3 == "t1" && $5 == "profile" && $6 == "set" { n++ } END { print n + 0 }' "$out.fdump")
    bad_imb=$(grep -c '^imbalance at event [0-9]* (t1 ' "$out.fcheck")
    bad_imb=$((bad_imb + $(grep '^imbalance at event' "$out.fcheck" | grep -vc 'cause: the recorder lost it')))
    framed=$(awk '$2 == "HOOK" && $3 == "t1" && / (ran|by=t[0-9]+) / && / frame=/ { n++ } END { print n + 0 }' "$out.fdump")
    if [ "$frc" -ne 0 ]; then
        gr_bad "foreign profile change with $label: record exit $frc"
        gr_show "$out.flog"
    elif ! grep -q '^leaf calls counted on the main thread: 50 total: 50$' "$out.fplainf" ||
         ! diff -u <(gr_quiet "${py:-}" "$out.fplainf") <(gr_quiet "${py:-}" "$out.frec") >"$out.fdiff"; then
        gr_bad "foreign profile change with $label: the program printed other lines recorded (- unrecorded, + recorded)"
        gr_show "$out.fdiff"
    elif [ "$leafs" -ne 50 ] || [ "$hooks" -lt 1 ] || [ "$bad_imb" -ne 0 ] || [ "$framed" -ne 0 ]; then
        gr_bad "foreign profile change with $label: $leafs of 50 calls of leaf on t1 recorded, $hooks HOOKs of t1 (want 1+), $bad_imb imbalances on t1 or without their cause, $framed HOOKs of another thread's change naming a frame (want 0)"
        grep '^greenreplay:' "$out.fdump"
        grep ' HOOK ' "$out.fdump" | head -5
        grep '^imbalance' "$out.fcheck" | head -3
    else
        gr_ok "foreign profile change with $label: all 50 calls of leaf on the main thread recorded, its HOOK written, no imbalance without its cause"
    fi
}

fprog=tests/integration/programs/foreign_change.py
n=0
all_py=()
for py in "${pythons[@]}"; do
    n=$((n + 1))
    if ! ver=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null); then
        echo "SKIP  audit events with $py: not an interpreter"
        continue
    fi
    if [ "$n" -gt 1 ] && ! make -C "$GR_ROOT" -s ext PYTHON="$py" >"$GR_WORK/build.$n.log" 2>&1; then
        echo "SKIP  audit events with $py ($ver): the recorder does not build for it"
        continue
    fi
    out=$GR_WORK/run.$n
    (cd "$GR_ROOT" && "$py" "$prog") >"$out.plain" 2>&1
    (cd "$GR_ROOT" && "$GR_CLI" record -o "$out.grt" -- "$py" "$prog") >"$out.log" 2>&1
    rc=$?
    compare "$ver" "$out"
    for mode in followed stray "stray own"; do
        # shellcheck disable=SC2086 # mode is the program's arguments
        (cd "$GR_ROOT" && "$py" "$fprog" $mode) >"$out.fplain" 2>&1
        # shellcheck disable=SC2086
        (cd "$GR_ROOT" && "$GR_CLI" record -o "$out.fgrt" -- "$py" "$fprog" $mode) >"$out.flog" 2>&1
        frc=$?
        foreign "$ver ($mode)" "$out"
    done
    case $ver in 3.[0-9].*|3.1[01].*) continue ;; esac
    all_py+=("$py")
done

# all_threads PY: programs/profile_all_threads.py recorded with PY (3.12+).
all_threads() {
    local py=$1 ver out verdicts ret
    ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    out=$GR_WORK/allthreads.$ver
    (cd "$GR_ROOT/tests/integration/programs" && "$py" profile_all_threads.py) >"$out.plain" 2>&1
    (cd "$GR_ROOT/tests/integration/programs" && "$GR_CLI" record -o "$out.grt" -- "$py" profile_all_threads.py) >"$out.log" 2>&1
    rc=$?
    "$GR_CLI" check "$out.grt" >"$out.check" 2>&1
    "$GR_CLI" dump "$out.grt" >"$out.dump" 2>&1
    verdicts=$(sed -n 's/^\((not failing) \)\{0,1\}\([a-z_]*\) at event [0-9]* (\(t[0-9]*\) g[0-9]*).*/\2 \3/p' "$out.check" | sort | tr '\n' ';')
    ret=$(grep -A1 ' HOOK  *t1 g[0-9]* profile restored subject=on during=sys._setprofileallthreads\( \|$\)' "$out.dump" |
          sed -n 's/^ *[0-9]* RETURN  *t1 g[0-9]* \(setprofile_all_threads\) .*/\1/p')
    if [ $rc -eq 0 ] && [ "$verdicts" = "displaced t1;displaced t2;" ] && [ "$ret" = setprofile_all_threads ] &&
       grep -q "^(not failing) displaced at event [0-9]* (t1 g[0-9]*): .*during sys._setprofileallthreads in setprofile_all_threads" "$out.check" &&
       grep -q "^(not failing) displaced at event [0-9]* (t2 g[0-9]*): .*, made by t1, during sys._setprofileallthreads; t2 was in " "$out.check" &&
       grep -qx "prof saw: \['work', 'work'\]" "$out.plain" &&
       diff -q <(gr_quiet "${py:-}" "$out.plain") <(gr_quiet "${py:-}" "$out.log" | grep -v '^greenreplay') >/dev/null; then
        gr_ok "setprofile_all_threads with $ver: its return recorded after the subject is back, verdicts '$verdicts'"
    else
        gr_bad "setprofile_all_threads with $ver: record exit $rc, verdicts '$verdicts' (want 'displaced t1;displaced t2;'), return after the restore '$ret'"
        gr_show "$out.plain" "$out.log" "$out.check"
    fi
}
[ ${#all_py[@]} -gt 0 ] || echo "SKIP  setprofile_all_threads: no 3.12+ interpreter with the recorder built (pyenv's, or GR_AUDIT_PYTHONS)"
for py in "${all_py[@]}"; do
    all_threads "$py"
done

# instrumented PY CASE: programs/foothold_instrumentation.py recorded with
# PY (3.12+); CASE "" or atstop (then the program starts and stops).
instrumented() {
    local py=$1 case=$2 ver out manual=
    ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    out=$GR_WORK/instrumented.$ver$case
    [ -n "$case" ] && manual=--manual
    (cd "$GR_ROOT/tests/integration/programs" && GREENREPLAY_OUTPUT=$out.plain.grt PYTHONPATH=${BUILD:-$GR_ROOT/build}/python \
        "$py" foothold_instrumentation.py $case) >"$out.plain" 2>&1
    (cd "$GR_ROOT/tests/integration/programs" && "$GR_CLI" record $manual -o "$out.grt" -- "$py" foothold_instrumentation.py $case) \
        >"$out.log" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && grep -qx 'probe instrumented for line events: False' "$out.plain" &&
       diff -q <(gr_quiet "${py:-}" "$out.plain" | grep -v '^greenreplay') <(gr_quiet "${py:-}" "$out.log" | grep -v '^greenreplay') >/dev/null; then
        gr_ok "footholds given back with $ver${case:+ ($case)}: no code instrumented for line events"
    else
        gr_bad "footholds given back with $ver${case:+ ($case)}: record exit $rc; unrecorded, then recorded:"
        gr_show "$out.plain" "$out.log"
    fi
}
for py in "${all_py[@]}"; do
    instrumented "$py" ""
    instrumented "$py" atstop
done

# Debian roots (ci/envs.sh) that are provisioned (their roots are not made
# here: about a minute each).  The recorder is built for this clone when its
# build is missing or older than tracer/ (ci/envs.sh build ID, about 20 s):
# an old build would test the old recorder.
for id in ${GR_AUDIT_ENVS-bullseye-3.9 trixie-3.13 sid-3.14 sid-3.15}; do
    state=$("$GR_ROOT/ci/envs.sh" list --json "$id" 2>/dev/null |
        "$GR_PY" -c 'import json, sys
e = json.load(sys.stdin)[0]
print(e["status"], "|", e.get("recorder") or "missing", "|", e.get("reason") or "")' 2>/dev/null)
    case $state in
    "ready | built |"*) ;;
    "ready | "*|*"| recorder "*)
        # the root is there; the recorder's build for this clone is old,
        # missing or not smoke-tested yet (provision does only that then)
        if ! "$GR_ROOT/ci/envs.sh" provision "$id" >"$GR_WORK/build.$id.log" 2>&1; then
            echo "SKIP  audit events in $id: the recorder does not build there ($(tail -n 1 "$GR_WORK/build.$id.log"))"
            continue
        fi ;;
    *)
        echo "SKIP  audit events in $id: ${state:-unknown environment} (ci/envs.sh provision $id)"
        continue ;;
    esac
    n=$((n + 1))
    out=$GR_WORK/run.$n
    (cd "$GR_ROOT" && ci/envs.sh run "$id" -- python "$prog") >"$out.plain" 2>&1
    (cd "$GR_ROOT" && ci/envs.sh record "$id" -o "$out.grt" -- "$prog") >"$out.log" 2>&1
    rc=$?
    compare "$id" "$out"
    for mode in followed stray "stray own"; do
        # shellcheck disable=SC2086 # mode is the program's arguments
        (cd "$GR_ROOT" && ci/envs.sh run "$id" -- python "$fprog" $mode) >"$out.fplain" 2>&1
        # shellcheck disable=SC2086
        (cd "$GR_ROOT" && ci/envs.sh record "$id" -o "$out.fgrt" -- "$fprog" $mode) >"$out.flog" 2>&1
        frc=$?
        foreign "$id ($mode)" "$out"
    done
done
gr_tally
