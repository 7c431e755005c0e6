#!/usr/bin/env bash
# tests/integration/threads.sh --python PY: threads and forks of a recorded
# program (docs/FORMAT.md section 3 "Threads", META threads_unreached).
#   fork        children never write into the parent's trace, in file mode,
#               --max-size, --switches callback and --ring: a program whose
#               own after-fork hook runs before greenreplay's and makes more
#               calls than a chunk holds, forks from the main thread, from a
#               thread, and through subprocess with preexec_fn; the trace is
#               readable and clean.  GR_FORKS=N (default 100) plain forks in
#               file mode on top (5000 reproduce the original report).
#   hooks       threading's setprofile, getprofile, setprofile_all_threads,
#               settrace, gettrace, _profile_hook and _trace_hook are the
#               program's while recording; sys.getprofile() in new threads is
#               None; threading.setprofile(threading._profile_hook) and
#               (threading.getprofile()) round trips; a thread started after
#               threading.setprofile(prof) runs under prof: the program prints
#               the same lines recorded and unrecorded, whole-program and
#               --manual; every thread threading starts is followed (each
#               work() call recorded once), and prof's takeover is one HOOK
#               and one displaced finding (not failing), as
#               sys.setprofile(prof) in the thread; --fail-on displaced
#               makes it fail.
#   unreached   threads started with _thread.start_new_thread are not
#               followed: check names their call site with no mark
#               (fixtures/raw_thread_unmarked.py, unreached); threads of
#               threading only are clean (fixtures/threading_threads_only.py).
#               With gevent: its thread pool's workers are reported, naming
#               gevent/threadpool.py (SKIP without gevent).
#   fresh-thread  a thread's recording state starts with every field set:
#               a followed thread that clears its profile function twice
#               keeps the subject removed (two HOOKs cleared, one
#               displaced), under PYTHONMALLOC=debug (new memory filled with
#               0xCD) and the default allocator.
#   greenlet-late  a thread started before the program imports greenlet
#               switches after the import (the recorder waits for that
#               import, tracer/gl_load.c): clean, its switches recorded, in
#               callback mode by the callback (none inferred).
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
cli=${BUILD:-$top/build}/greenreplay
progs=$here/programs
work=$(mktemp -d "${TMPDIR:-/tmp}/gr-threads.XXXXXX")
trap 'rm -rf "$work"' EXIT
pass=0 fail=0 skip=0
ok() { echo "PASS  $*"; pass=$((pass + 1)); }
bad() { echo "FAIL  $*"; fail=$((fail + 1)); }
skipped() { echo "SKIP  $*"; skip=$((skip + 1)); }

# rec NAME ARGS...: record (ARGS: record options, then -- and the program)
# into $work/NAME.grt, the run's output in $work/NAME.log; returns record's
# status.
rec() {
    local name=$1
    shift
    rm -f "$work/$name.grt"
    (cd "$top" && timeout --kill-after=10 900 "$cli" record --root "$top" -o "$work/$name.grt" "$@") \
        >"$work/$name.log" 2>&1
}
# verdict NAME: check's exit status for $work/NAME.grt, its output in
# $work/NAME.check.
verdict() {
    "$cli" check "$work/$1.grt" >"$work/$1.check" 2>&1
}

# ---- fork ------------------------------------------------------------------
for mode in file max-size callback ring; do
    case $mode in
        file) opts=() ;;
        max-size) opts=(--max-size 500M) ;;
        callback) opts=(--switches callback) ;;
        ring) opts=(--ring 100000) ;;
    esac
    name=fork-$mode
    if ! rec "$name" --manual "${opts[@]}" -- "$PY" "$progs/fork_storm.py" 3 noisy; then
        bad "$name: record failed: $(tail -n 2 "$work/$name.log")"
        continue
    fi
    verdict "$name"
    rc=$?
    if [ $rc -ne 0 ]; then
        bad "$name: check exit $rc, want 0 (clean, readable): $(tail -n 2 "$work/$name.check")"
    elif ! grep -q "children that failed: 0" "$work/$name.log"; then
        bad "$name: a child was recorded (saw a profile function): $(tail -n 1 "$work/$name.log")"
    else
        ok "$name: forks with a noisy after-fork hook leave a clean, readable trace"
    fi
done
n=${GR_FORKS:-100}
if rec fork-many --manual -- "$PY" "$progs/fork_storm.py" "$n" && verdict fork-many; then
    ok "fork-many: $n forks importing threading, file mode: clean, readable"
else
    bad "fork-many: $n forks: $(tail -n 2 "$work/fork-many.log" "$work/fork-many.check" 2>/dev/null)"
fi

# ---- hooks -------------------------------------------------------------------
prog=$progs/thread_hooks.py
(cd "$top" && "$PY" "$prog" 5) >"$work/hooks.plain" 2>&1
for how in whole manual; do
    name=hooks-$how
    if [ $how = whole ]; then
        rec "$name" -- "$PY" "$prog" 5
    else
        rec "$name" --manual -- "$PY" -c "import greenreplay, runpy, sys; sys.argv = ['$prog', '5']; greenreplay.start(); runpy.run_path('$prog', run_name='__main__'); greenreplay.stop()"
    fi
    rc=$?
    verdict "$name"
    crc=$?
    works=$("$cli" dump "$work/$name.grt" 2>/dev/null | grep -cE 'CALL .* work ')
    # 3.12+: prof stays in the slot, the recorder watches beside it (no
    # `chained`); before, it is chained.
    if "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then
        hook=$("$cli" dump "$work/$name.grt" 2>/dev/null | grep ' HOOK .* profile set subject=off' | grep -vc ' chained')
    else
        hook=$("$cli" dump "$work/$name.grt" 2>/dev/null | grep -c ' HOOK .* profile set subject=off chained')
    fi
    if [ $rc -ne 0 ]; then
        bad "$name: record exit $rc: $(tail -n 2 "$work/$name.log")"
    elif ! cmp -s "$work/hooks.plain" "$work/$name.log"; then
        bad "$name: the program saw something else recorded: $(diff "$work/hooks.plain" "$work/$name.log" | head -n 4 | tr '\n' ' ')"
    elif [ "$works" -ne 6 ] || [ "$hook" -ne 1 ]; then
        bad "$name: $works calls of work recorded (want 6: one per thread), $hook HOOKs of prof (want 1)"
    elif [ $crc -ne 0 ] || ! grep -q "^(not failing) displaced at .*replaced by the program's own profile function" "$work/$name.check" ||
         [ "$(grep -c ' at event ' "$work/$name.check")" -ne 1 ] ||
         ! grep -q '^program changes to the profiler: 1 ' "$work/$name.check"; then
        bad "$name: check exit $crc, want 0 with one displaced for prof's takeover: $(grep -E '^(.*displaced|blind_spot|imbalance|result)' "$work/$name.check" | head -n 3 | tr '\n' ' ')"
    elif "$cli" check --fail-on displaced "$work/$name.grt" >/dev/null 2>&1; [ $? -ne 1 ]; then
        bad "$name: check --fail-on displaced did not exit 1"
    else
        ok "$name: threading's hooks untouched, same output, every thread followed once, prof's takeover one HOOK and one displaced (failing with --fail-on)"
    fi
done

# ---- unreached -------------------------------------------------------------
rec unreached --manual -- "$PY" "$top/fixtures/raw_thread_unmarked.py"
verdict unreached
rc=$?
if [ $rc -eq 1 ] && grep -q '^unreached at .*3 threads ran Python code no profiler saw: started by start_pool (fixtures/raw_thread_unmarked.py:[0-9]*) at line [0-9]* via _thread.start_new_thread' "$work/unreached.check" &&
   [ "$(grep -c ' at event ' "$work/unreached.check")" -eq 1 ]; then
    ok "unreached: 3 raw threads without a mark are one unreached naming start_pool"
else
    bad "unreached: check exit $rc, want 1 naming start_pool: $(grep -E '^(unreached|blind_spot|result)' "$work/unreached.check" | head -n 3 | tr '\n' ' ')"
fi
rec threading-only --manual -- "$PY" "$top/fixtures/threading_threads_only.py"
if verdict threading-only; then
    ok "threading-only: threads of threading only, one started from another thread: clean"
else
    bad "threading-only: check says: $(grep -E '^(blind_spot|imbalance|result)' "$work/threading-only.check" | head -n 3 | tr '\n' ' ')"
fi
if "$PY" -c "import gevent" 2>/dev/null; then
    rec gevent-pool -- "$PY" "$progs/gevent_pool_raw.py"
    verdict gevent-pool
    rc=$?
    # gevent 20.12+ hands each task threading's profile hook (None here:
    # the subject) and clears it after: the recorder comes in with the
    # hook, the removals are one note, no worker is unreached.  Before
    # 20.12 the workers never get a profiler: all 4 are unreached.
    if "$PY" -c 'import sys, gevent; sys.exit(tuple(int(x) for x in gevent.__version__.split(".")[:2]) < (20, 12))' 2>/dev/null; then
        if [ $rc -eq 0 ] && grep -q "^note: .*gevent's thread pool" "$work/gevent-pool.check" &&
           ! grep -q 'no profiler saw' "$work/gevent-pool.check"; then
            ok "gevent-pool: gevent's pool workers get the recorder with threading's hook before each task: clean, one note"
        else
            bad "gevent-pool: check exit $rc, want 0 with a note naming gevent's thread pool: $(grep -E '^(note|unreached|displaced|result)' "$work/gevent-pool.check" | head -n 3 | tr '\n' ' ')"
        fi
    elif [ $rc -eq 1 ] && grep -q '^unreached at .*4 threads ran Python code no profiler saw: started by .*(<site>/gevent/threadpool.py:[0-9]*) at line [0-9]* via _thread.start_new_thread' "$work/gevent-pool.check"; then
        ok "gevent-pool: gevent's 4 pool workers reported unreached, naming gevent/threadpool.py"
    else
        bad "gevent-pool: check exit $rc: $(grep -E '^(unreached|blind_spot|result)' "$work/gevent-pool.check" | head -n 3 | tr '\n' ' ')"
    fi
else
    skipped "gevent-pool: gevent not importable by $PY"
fi

# ---- fresh thread state ------------------------------------------------------
# PYTHONMALLOC=debug fills new memory with 0xCD: a field of the thread's
# state that the recorder never set reads non-zero there (before the fix,
# hook.by_hook made the second clear a restore).
for alloc in debug default; do
    name=fresh-$alloc
    if [ $alloc = debug ]; then
        PYTHONMALLOC=debug rec "$name" --manual -- "$PY" "$progs/thread_clear_twice.py"
    else
        rec "$name" --manual -- "$PY" "$progs/thread_clear_twice.py"
    fi
    rc=$?
    verdict "$name"
    crc=$?
    cleared=$("$cli" dump "$work/$name.grt" 2>/dev/null | grep -c ' HOOK  *t2 .* profile cleared subject=off')
    restored=$("$cli" dump "$work/$name.grt" 2>/dev/null | grep -c ' HOOK .* restored')
    if [ $rc -ne 0 ]; then
        bad "$name: record exit $rc: $(tail -n 2 "$work/$name.log")"
    elif [ "$cleared" -ne 2 ] || [ "$restored" -ne 0 ]; then
        bad "$name: $cleared HOOKs cleared on t2 (want 2), $restored restored (want 0)"
    elif [ $crc -ne 0 ] || ! grep -q '^(not failing) displaced at .*task' "$work/$name.check" ||
         [ "$(grep -c ' at event ' "$work/$name.check")" -ne 1 ]; then
        bad "$name: check exit $crc, want 0 with one displaced naming task: $(grep -E '^(.*displaced|blind_spot|imbalance|result)' "$work/$name.check" | head -n 3 | tr '\n' ' ')"
    else
        ok "$name: a thread clearing its profile function twice keeps the subject removed: two HOOKs cleared, one displaced"
    fi
done

# ---- greenlet imported late ------------------------------------------------
if "$PY" -c "import greenlet" 2>/dev/null; then
    for mode in passive callback; do
        rec "late-$mode" --switches "$mode" -- "$PY" "$progs/greenlet_late_thread.py"
        verdict "late-$mode"
        rc=$?
        # The thread seen before the import (t2) asks greenlet once it
        # runs greenlet's code; in callback mode its callback is installed
        # at its next event, so its switches come from the callback (not
        # inferred).
        t2=$("$cli" dump "$work/late-$mode.grt" | grep -c ' SWITCH  *t2 ')
        inferred=$("$cli" dump "$work/late-$mode.grt" | grep ' SWITCH  *t2 ' | grep -c ' inferred')
        want=0
        [ "$mode" = passive ] && want=$t2
        if [ $rc -eq 0 ] && grep -qx '\[2\] 7' "$work/late-$mode.log" && [ "$t2" -ge 3 ] && [ "$inferred" -eq "$want" ]; then
            ok "greenlet-late ($mode): a thread seen before greenlet's import switches: $t2 switches on it, $inferred inferred, clean"
        else
            bad "greenlet-late ($mode): check exit $rc, $t2 switches on t2 ($inferred inferred, want $want): $(tail -n 2 "$work/late-$mode.log" | tr '\n' ' ')"
        fi
    done
else
    skipped "greenlet-late: greenlet not importable by $PY"
fi

echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
