#!/usr/bin/env bash
# tests/integration/observer.sh --python PY: the recorder must not change
# what it measures (observe without disturbing).
#  - every fixture in passive mode (the default: no greenlet trace callback)
#    and in callback mode gets the same verdict; a difference is reported as
#    an observer effect (greenlet's callback recomputes the target's
#    tracing state and heals the greenlet issue 256 class, so on a greenlet
#    with that bug the two modes differ, and that is the point of passive
#    mode; on a correct greenlet they must agree);
#  - programs print the same lines recorded and unrecorded
#    (fixtures/profile_save_restore.py, fixtures/cprofile_midway.py: the
#    program's own profile functions and cProfile's counts are undisturbed);
#  - fork with and without the sampler: the child neither hangs nor records;
#  - cProfile under a traced audit hook of the program's loses nothing and
#    counts the same (tests/integration/programs/traced_audit_hook.py);
#  - greenlet's deferred cleanup runs at the program's own API call, not at
#    the recorder's (tests/integration/programs/deferred_cleanup.py).
# One line per test, then "N passed, N failed".  Exit 1 if any failed.
set -u
PY=/usr/bin/python3
while [ $# -gt 0 ]; do
    case "$1" in
        --python) PY=$2; shift 2 ;;
        *) echo "usage: $0 [--python PY]" >&2; exit 2 ;;
    esac
done
here=$(cd "$(dirname "$0")" && pwd)
GR_ROOT=$(cd "$here/../.." && pwd)
GR_CLI=${BUILD:-$GR_ROOT/build}/greenreplay
GR_PY=$PY
# shellcheck source=lib.sh
. "$here/lib.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/gr-observer.XXXXXX")
trap 'rm -rf "$work"' EXIT
pass=0 fail=0 skipped=0
ok() { echo "PASS  $*"; pass=$((pass + 1)); }
bad() { echo "FAIL  $*"; fail=$((fail + 1)); }
skip() { echo "SKIP  $*"; skipped=$((skipped + 1)); }

# verdict MODE FIXTURE: "crash" or the sorted rule set ("clean").
verdict() {
    local mode=$1 f=$2 name
    name=$(basename "$f" .py)
    GREENREPLAY_SWITCHES=$mode gr_record "$PY" "fixtures/$name.py" "$work/$name.$mode.grt" \
        "$work/$name.$mode.log" 120
    local rc=$?
    "$GR_CLI" check --format json "$work/$name.$mode.grt" >"$work/$name.$mode.json" 2>/dev/null
    local rules
    rules=$(gr_json_rules "$work/$name.$mode.json" 2>/dev/null)
    [ "$rc" -gt 128 ] && rules="crash${rules:+,$rules}"
    printf '%s\n' "${rules:-clean}"
}

for f in "$GR_ROOT"/fixtures/*.py; do
    name=$(basename "$f" .py)
    if ! reason=$(gr_missing_requirement "$PY" "$f"); then
        skip "modes $name: $reason"
        continue
    fi
    a=$(verdict passive "$f")
    b=$(verdict callback "$f")
    if [ "$a" = "$b" ]; then
        ok "modes $name: passive and callback agree ($a)"
    else
        bad "modes $name: observer effect: passive gives $a, callback gives $b"
    fi
done

# Same output recorded and unrecorded.
for name in profile_save_restore cprofile_midway; do
    f=$GR_ROOT/fixtures/$name.py
    if ! reason=$(gr_missing_requirement "$PY" "$f"); then
        skip "output $name: $reason"
        continue
    fi
    gr_plain "$PY" "$f" "$work/$name.plain"
    if diff -u <(gr_quiet "$PY" "$work/$name.plain") <(gr_quiet "$PY" "$work/$name.passive.log" | grep -v '^greenreplay') >"$work/$name.odiff"; then
        ok "output $name: the same lines recorded and unrecorded ($(tr '\n' ' ' <"$work/$name.plain" | cut -c1-90))"
    else
        bad "output $name: the program printed other lines under recording"
        head -20 "$work/$name.odiff"
    fi
done

# Fork, with and without the sampler.
if "$PY" -c 'import greenlet' 2>/dev/null; then
    for mode in none two-phase; do
        out=$work/fork-$mode
        (cd "$GR_ROOT" && timeout 60 "$GR_CLI" record --manual -o "$out.grt" -- "$PY" \
            tests/integration/programs/forks.py "$mode") >"$out.log" 2>&1
        rc=$?
        "$GR_CLI" check "$out.grt" >"$out.check" 2>&1
        crc=$?
        if [ "$rc" -eq 0 ] && grep -q "child exit status: 7" "$out.log" && [ "$crc" -eq 0 ]; then
            ok "fork ($mode sampler): the child stops recording and exits by itself; the parent's trace is clean"
        else
            bad "fork ($mode sampler): record exit $rc, check exit $crc"
            cat "$out.log" "$out.check" | head -20
        fi
    done
else
    skip "fork: greenlet is not importable by $PY"
fi

# greenlet's deferred cleanup (issues 251/252 of its tracker): a greenlet
# dropped by another thread is cleaned up at its own thread's next greenlet
# API call, never at a call of the recorder's (passive detection asks
# greenlet only when the switch witness changed).  Same line recorded and
# unrecorded; the trace is clean.
if "$PY" -c 'import greenlet' 2>/dev/null; then
    prog=tests/integration/programs/deferred_cleanup.py
    out=$work/cleanup
    (cd "$GR_ROOT" && "$PY" "$prog") >"$out.plain" 2>&1
    (cd "$GR_ROOT" && "$GR_CLI" record -o "$out.grt" -- "$PY" "$prog") >"$out.log" 2>&1
    rc=$?
    "$GR_CLI" check "$out.grt" >"$out.check" 2>&1
    crc=$?
    if [ "$rc" -eq 0 ] && [ "$crc" -eq 0 ] && diff -q <(gr_quiet "$PY" "$out.plain") <(gr_quiet "$PY" "$out.log" | grep -v '^greenreplay') >/dev/null; then
        ok "deferred cleanup: the recorder does not run greenlet's cleanup ($(cat "$out.plain")), clean"
    else
        bad "deferred cleanup: record exit $rc, check exit $crc; unrecorded: $(cat "$out.plain"); recorded: $(grep -v '^greenreplay' "$out.log" | tr '\n' ' ')"
    fi
else
    skip "deferred cleanup: greenlet is not importable by $PY"
fi

# 1,000 threads with suspended greenlets at stop: half of the threads ended
# (abandoned greenlets), half alive (greenlets suspended on another thread).
if "$PY" -c 'import greenlet' 2>/dev/null; then
    out=$work/many
    (cd "$GR_ROOT" && timeout 300 "$GR_CLI" record --manual -o "$out.grt" -- "$PY" \
        tests/integration/programs/many_threads.py 1000) >"$out.log" 2>&1
    rc=$?
    "$GR_CLI" check "$out.grt" >"$out.check" 2>&1
    crc=$?
    if [ "$rc" -eq 0 ] && [ "$crc" -eq 0 ]; then
        ok "1000 threads with suspended greenlets at stop: clean ($(grep -c 'abandoned\|^  t' "$out.check") lines of notes)"
    else
        bad "1000 threads with suspended greenlets at stop: record exit $rc, check exit $crc"
        grep -m5 ' at event' "$out.check"
    fi
else
    skip "1000 threads: greenlet is not importable by $PY"
fi

# Thread churn (bounded memory): 3000 threads in waves of 50, a tenth of them
# leaving a suspended greenlet behind.  The recorder's per-thread entries
# follow the live threads (at most max(64, 2 x live) between sweeps), the
# abandoned greenlets are still reported under their own threads, and the
# verdict is clean.
if "$PY" -c 'import greenlet' 2>/dev/null; then
    out=$work/churn
    (cd "$GR_ROOT" && "$GR_CLI" record -o "$out.grt" -- "$PY" \
        tests/integration/programs/thread_churn.py 3000) >"$out.log" 2>&1
    rc=$?
    most=$(sed -n 's/^most per-thread entries held by the recorder: //p' "$out.log")
    "$GR_CLI" check "$out.grt" >"$out.check" 2>&1
    crc=$?
    ended=$("$GR_CLI" dump "$out.grt" | grep -c 'STACK .*flags=thread_ended')
    if [ "$rc" -eq 0 ] && [ "$crc" -eq 0 ] && [ -n "$most" ] && [ "$most" -le 128 ] && [ "$ended" -eq 300 ]; then
        ok "3000 threads over a run: at most $most per-thread entries held, 300 abandoned greenlets reported, clean"
    else
        bad "3000 threads over a run: record exit $rc, check exit $crc, at most ${most:-?} per-thread entries (want <= 128), $ended abandoned STACK records (want 300)"
        tail -n 3 "$out.log"; grep -m5 ' at event' "$out.check"
    fi
else
    skip "thread churn: greenlet is not importable by $PY"
fi

# A profile slot taken over without the audit event (a C extension writing
# the thread state directly, as yappi does per thread): the recorder finds
# it at the next mark, chains the new function and writes a HOOK marked
# unannounced; the checker names that cause once, as the rule displaced (no
# cascade of stack differences). The same program through sys.setprofile (announced) is seen
# at once and loses nothing.
for m in swap announced; do
    out=$work/unannounced-$m
    (cd "$GR_ROOT" && "$GR_CLI" record -o "$out.grt" -- "$PY" \
        tests/integration/programs/unannounced.py $m) >"$out.log" 2>&1
    rc=$?
    "$GR_CLI" check --format json "$out.grt" >"$out.json" 2>/dev/null
    rules=$(gr_json_rules "$out.json" 2>/dev/null)
    nviol=$("$PY" -c 'import json,sys; d = json.load(open(sys.argv[1])); print(d["findings"], d["violations"])' "$out.json" 2>/dev/null)
    leafs=$("$GR_CLI" dump "$out.grt" | grep -c 'CALL .* leaf ')
    hook=$("$GR_CLI" dump "$out.grt" | grep -c 'HOOK .* unannounced\( \|$\)')
    if [ $m = swap ]; then want_leafs=2 want_hook=1 want_text="without the audit event"
    else want_leafs=5 want_hook=0 want_text="replaced by the program"; fi
    if [ "$rc" -eq 0 ] && [ "$rules" = displaced ] && [ "$nviol" = "1 0" ] && [ "$leafs" -eq $want_leafs ] &&
       [ "$hook" -eq $want_hook ] && grep -q "$want_text" "$out.json"; then
        ok "profile slot taken over ($m): $hook unannounced HOOK, $leafs calls of leaf recorded, one finding naming the cause (displaced: not failing)"
    else
        bad "profile slot taken over ($m): record exit $rc, rules '$rules', findings and violations $nviol (want 1 0), $leafs calls of leaf (want $want_leafs), $hook unannounced HOOK (want $want_hook)"
    fi
done

# A thread pool as gevent's: before each task sys.setprofile(threading.
# _profile_hook), after it sys.setprofile(None), on a thread started with
# _thread.start_new_thread.  threading._profile_hook is the program's (None)
# while recording too, so no profiler reaches the worker: nothing of it is
# recorded (never twice), one unreached names the call site that started
# the thread, and the program prints the same lines recorded and unrecorded.
out=$work/pool
(cd "$GR_ROOT" && "$PY" tests/integration/programs/pool_hook.py 20) >"$out.plain" 2>&1
(cd "$GR_ROOT" && "$GR_CLI" record -o "$out.grt" -- "$PY" tests/integration/programs/pool_hook.py 20) >"$out.log" 2>&1
rc=$?
"$GR_CLI" check --format json "$out.grt" >"$out.json" 2>/dev/null
rules=$(gr_json_rules "$out.json" 2>/dev/null)
nviol=$("$PY" -c 'import json,sys; d = json.load(open(sys.argv[1])); print(d["findings"], d["violations"])' "$out.json" 2>/dev/null)
nwarn=$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["traces"][0]["warnings"]))' "$out.json" 2>/dev/null)
calls=$("$GR_CLI" dump "$out.grt" | grep -c 'CALL .* task ')
if [ "$rc" -eq 0 ] && cmp -s <(gr_quiet "$PY" "$out.plain") <(gr_quiet "$PY" "$out.log") && [ "$rules" = displaced ] && [ "$nviol" = "1 0" ] &&
   [ "$nwarn" = 1 ] && grep -q '19 more times' "$out.json" && [ "$calls" -eq 20 ] &&
   ! grep -q 'no profiler saw' "$out.json"; then
    ok "thread pool giving each task threading._profile_hook: $calls calls of task recorded once each, one displaced finding, one warning for the other 19 removals, the worker not reported unreached"
else
    bad "thread pool giving each task threading._profile_hook: record exit $rc, rules '$rules', findings and violations $nviol (want 1 0), $nwarn warnings, $calls calls of task (want 20)"
    diff <(gr_quiet "$PY" "$out.plain") <(gr_quiet "$PY" "$out.log") | head -5
    grep -o '"message": "[^"]*' "$out.json" | head -3
fi

# cProfile under an audit hook of the program's that is itself traced
# (__cantrace__): the hook runs after the recorder's, before the profile
# function changes (3.9-3.11).  Nothing may be lost after it: every call of
# after and work recorded, each change of cProfile's a HOOK naming its C
# call (never "unannounced", which the recorder found only at stop, every
# event after the first change lost), no record after the stop's STACK
# (the hook, traced, ran in the recorder's own uninstall), no recorder
# error; cProfile counts the same recorded and unrecorded.  On 3.12+
# cProfile changes no profile slot: no HOOK.
out=$work/audit
(cd "$GR_ROOT" && "$PY" tests/integration/programs/traced_audit_hook.py) >"$out.plain" 2>&1
(cd "$GR_ROOT" && "$GR_CLI" record -o "$out.grt" -- "$PY" tests/integration/programs/traced_audit_hook.py) >"$out.log" 2>&1
rc=$?
"$GR_CLI" dump "$out.grt" >"$out.dump" 2>&1
afters=$(grep -c ' CALL .* after (' "$out.dump")
works=$(grep -c ' CALL .* work (' "$out.dump")
hooks=$(grep -c ' HOOK .* profile ' "$out.dump")
named=$(grep -c ' HOOK .* profile .* during=_lsprof\.Profiler\.\(enable\|disable\)\( \|$\)' "$out.dump")
unann=$(grep -c ' HOOK .* unannounced\( \|$\)' "$out.dump")
last=$(grep '^ *[0-9]' "$out.dump" | tail -n 1 | awk '{print $2}')
want_hooks=4
[ "$("$PY" -c 'import sys; print(int(sys.version_info >= (3, 12)))')" = 1 ] && want_hooks=0
if [ "$rc" -eq 0 ] && [ -n "$(gr_quiet "$PY" "$out.plain")" ] && cmp -s <(gr_quiet "$PY" "$out.plain") <(gr_quiet "$PY" "$out.log") && [ "$afters" -eq 2 ] &&
   [ "$works" -eq 3 ] && [ "$hooks" -eq $want_hooks ] && [ "$named" -eq $want_hooks ] && [ "$unann" -eq 0 ] &&
   [ "$last" = STACK ] && grep -q '^# trailer: .* errors=0 ' "$out.dump"; then
    ok "cProfile under a traced audit hook: nothing lost (2 after, 3 work), $hooks HOOKs each naming cProfile's call, none unannounced, nothing after the stop's STACK, same counts recorded and unrecorded"
else
    bad "cProfile under a traced audit hook: record exit $rc, $afters after (want 2), $works work (want 3), $hooks HOOKs ($named named, want $want_hooks), $unann unannounced, last record $last"
    diff <(gr_quiet "$PY" "$out.plain") <(gr_quiet "$PY" "$out.log") | head -5
    grep ' HOOK \|^# trailer' "$out.dump" | head -8
fi

echo "$pass passed, $fail failed${skipped:+, $skipped skipped}"
[ "$fail" -eq 0 ]
