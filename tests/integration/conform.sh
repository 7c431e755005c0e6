#!/usr/bin/env bash
# tests/integration/conform.sh [--python PY]: `greenreplay conform` and its
# adapters (docs/conform.md).
#  - --list names the eleven built-in adapters, each "yes" or "no" with a
#    version or a reason;
#  - every fixture of fixtures/profilers/ with every adapter available for
#    PY gets the verdict its "# conform:" lines expect (exit status 0 pass,
#    1 fail, 2 error, 3 skip);
#  - transparency: each available adapter's results (but the sampling
#    profilers', which differ run to run) are identical with and
#    without recording (--no-record), on fixtures/profilers/spawn_bridge.py
#    (docs/conform.md: every fixture was checked once);
#  - the comparison can fail: a deliberately broken adapter (calls outside
#    the main greenlet dropped) exits 1 with a blind_spot naming the
#    function and the greenlet; the documented example adapter passes and
#    is the very file docs/conform.md shows;
#  - a program without greenlets passes with every available adapter;
#  - line_profiler's twins of byte-identical bytecode are a limitation
#    note, not a missing_lines difference;
#  - cprofile names C methods bound to a class as the trace does;
#  - the program's code that runs while the harness works at exit (after
#    its finish MARK) is not counted as the program's (a finaliser; another
#    thread while a profiler of every thread stops: a note), and the
#    harness itself calls none of it;
#  - a program that exits non-zero gives 2, recorded or not (--no-record);
#    sys.exit(130) is named as exit status 130, a program killed by SIGTERM
#    as signal 15, by SIGINT as signal 2 (waitpid's word, not the status
#    128+N); --json's program_signal is null, SIGTERM, SIGINT;
#  - a program that runs its own profiler (cProfile, sys.setprofile) where
#    the adapter's profiler is the profile function gets "unsupported" (2)
#    naming where, not false differences; the cprofile adapter reads the
#    program's own cProfile back and compares it; other adapters pass;
#  - a program ended by an uncaught exception gets the same cprofile results
#    recorded and unrecorded (the recorder's stop there is not counted), on
#    PY and on CPython 3.12 (GR_PY312; skipped with the reason if missing);
#  - --json holds the documented fields, --json - writes them to stdout
#    alone; outputs that cannot be written (or would overwrite the script,
#    the adapter file or each other) are refused before anything runs, a missing
#    interpreter gets a one-line hint; an unavailable profiler is a skip
#    (3), an adapter without results() and usage errors are errors (2);
#    every error once the options are read (usage, unreadable script,
#    unknown adapter, refused -o) writes the error verdict to --json - or
#    --json FILE (never over the script); --list with --json is such an
#    error (the table is no verdict).
# One line per test, then "N passed, N failed".  Exit 1 if any failed.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
gr_script_init conform "$@"
PY=$GR_PY
FIX=$GR_ROOT/fixtures/profilers
ADAPTERS=$here/conform
cd "$GR_ROOT" || exit 2

verdict_of() { case $1 in 0) echo pass ;; 1) echo fail ;; 2) echo error ;; 3) echo skip ;; *) echo "status $1" ;; esac; }

# --list
if "$GR_CLI" conform --list --python "$PY" >"$GR_WORK/list" 2>"$GR_WORK/list.err" &&
    [ "$(wc -l <"$GR_WORK/list")" -eq 11 ] &&
    [ "$(awk -F'\t' 'NF == 3 && ($2 == "yes" || $2 == "no") && $3 != ""' "$GR_WORK/list" | wc -l)" -eq 11 ]; then
    gr_ok "list: 11 adapters, each yes/no with a version or reason"
else
    gr_bad "list"
    gr_show "$GR_WORK/list" "$GR_WORK/list.err"
fi
# the interpreter after -- is the one asked, as --python's; the first
# stderr line names it (sys.executable, version), whatever was on PATH
exe=$("$PY" -c 'import sys; print(sys.executable)')
ver=$("$PY" -c 'import sys; print(sys.version.split()[0])')
"$GR_CLI" conform --list -- "$PY" >"$GR_WORK/list2" 2>"$GR_WORK/list2.err"
rc=$?
if [ $rc -eq 0 ] && cmp -s "$GR_WORK/list" "$GR_WORK/list2" &&
   [ "$(head -n 1 "$GR_WORK/list2.err")" = "greenreplay: conform: adapters as $exe (Python $ver) sees them; another interpreter: conform --list -- PY" ] &&
   [ "$(head -n 1 "$GR_WORK/list.err")" = "$(head -n 1 "$GR_WORK/list2.err")" ]; then
    gr_ok "list -- PY: the same table as --python PY; stderr's first line names the interpreter asked"
else
    gr_bad "list -- PY (exit $rc)"
    gr_show "$GR_WORK/list2" "$GR_WORK/list2.err"
fi
available=$(awk -F'\t' '$2 == "yes" { print $1 }' "$GR_WORK/list")
pyver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')

# Every fixture with every adapter: the expected verdict (two runs at a
# time; an adapter not available is a skip without a run: the skip path
# itself is tested below).
run_one() { # NAME ADAPTER FILE OUT
    timeout 120 "$GR_CLI" conform --profiler "$2" -- "$PY" "$3" >"$4.out" 2>&1
    echo $? >"$4.rc"
}
jobs_list=()
for f in "$FIX"/*.py; do
    name=$(basename "$f" .py)
    if ! reason=$(gr_missing_requirement "$PY" "$f"); then
        echo "SKIP  verdicts $name: $reason"
        continue
    fi
    expected=$(PYTHONPATH=$GR_ROOT/build/python "$PY" -m greenreplay.conform --expect "$f" "$pyver")
    while read -r adapter want; do
        [ -n "$adapter" ] || continue
        if ! printf '%s\n' "$available" | grep -qx -- "$adapter"; then
            [ "$want" = skip ] && gr_ok "verdict $name $adapter: skip (not available)" ||
                gr_bad "verdict $name $adapter: not available, expected $want"
            continue
        fi
        out=$GR_WORK/v.$name.$adapter
        jobs_list+=("$name $adapter $want $out")
        [ "$(jobs -r | wc -l)" -ge 2 ] && wait -n
        run_one "$name" "$adapter" "$f" "$out" &
    done <<<"$expected"
done
wait
for j in "${jobs_list[@]}"; do
    read -r name adapter want out <<<"$j"
    got=$(verdict_of "$(cat "$out.rc")")
    if [ "$got" = "$want" ]; then
        gr_ok "verdict $name $adapter: $got"
    else
        gr_bad "verdict $name $adapter: $got, expected $want"
        gr_show "$out.out"
    fi
done

# Transparency: the same results with and without recording.  The
# sampling profilers' results differ from run to run, recorded or not
# (which instants are sampled, which objects allocated): not compared here.
for adapter in $available; do
    case $adapter in pyinstrument|memray|austin|scalene) continue ;; esac
    for name in spawn_bridge; do
        "$GR_CLI" conform --profiler "$adapter" --no-record --results "$GR_WORK/a.json" \
            -- "$PY" "$FIX/$name.py" >"$GR_WORK/a.out" 2>&1
        "$GR_CLI" conform --profiler "$adapter" --results "$GR_WORK/b.json" \
            -- "$PY" "$FIX/$name.py" >"$GR_WORK/b.out" 2>&1
        if [ -s "$GR_WORK/a.json" ] && cmp -s "$GR_WORK/a.json" "$GR_WORK/b.json" &&
            ! grep -q '"error"' "$GR_WORK/a.json"; then
            gr_ok "transparent $adapter $name: identical results recorded and unrecorded"
        else
            gr_bad "transparent $adapter $name: results differ"
            diff "$GR_WORK/a.json" "$GR_WORK/b.json" | gr_show -
        fi
        rm -f "$GR_WORK/a.json" "$GR_WORK/b.json"
    done
done

# The comparison can fail: calls outside the main greenlet dropped.
"$GR_CLI" conform --profiler "$ADAPTERS/drop_greenlets.py" --json "$GR_WORK/broken.json" \
    -- "$PY" "$FIX/direct_then_run.py" >"$GR_WORK/broken.out" 2>&1
rc=$?
if [ $rc -eq 1 ] && "$PY" - "$GR_WORK/broken.json" <<'EOF'; then
import json, sys
d = json.load(open(sys.argv[1]))
assert d["verdict"] == "fail", d["verdict"]
hit = [x for x in d["differences"] if x["kind"] == "blind_spot" and x["function"] == "direct_then_run.py:worker"]
assert hit, d["differences"]
gl = hit[0]["greenlet"]
gl = gl if isinstance(gl, list) else [gl]
assert gl == ["thread 1 greenlet 2 (run: worker)", "thread 1 greenlet 3 (run: worker)"], gl
assert hit[0]["truth"] == 3 and hit[0]["profiler"] == 1, hit[0]
assert hit[0]["message"].endswith(": 2 calls uncounted, as many as ran outside the main greenlets: "
                                  "1 in thread 1 greenlet 2 (run: worker), 1 in thread 1 greenlet 3 (run: worker)"), hit[0]
EOF
    gr_ok "broken adapter: exit 1, blind_spot worker in thread 1 greenlets 2 and 3"
else
    gr_bad "broken adapter: exit $rc"
    gr_show "$GR_WORK/broken.out" "$GR_WORK/broken.json"
fi

# A program without greenlets: every available adapter passes (the profile
# module raised AssertionError at the return of <module>, which its
# adapter had not shown it called).
for adapter in $available; do
    "$GR_CLI" conform --profiler "$adapter" -- "$PY" "$ADAPTERS/no_greenlets.py" >"$GR_WORK/plain.out" 2>&1
    rc=$?
    gr_quiet "$PY" "$GR_WORK/plain.out" >"$GR_WORK/plain.q"   # without start-up noise
    if [ $rc -eq 0 ] && ! grep -q "Error\|^note:" "$GR_WORK/plain.q" && grep -qx 14 "$GR_WORK/plain.q"; then
        gr_ok "no greenlets, $adapter: pass"
    else
        gr_bad "no greenlets, $adapter: exit $rc"
        gr_show "$GR_WORK/plain.out"
    fi
done

# Twins of byte-identical bytecode under line_profiler: the second twin's
# lines are never counted (line_profiler keys by bytecode and registers a
# copy the program never runs): a named limitation note, not a
# missing_lines verdict.  The results must show the lost hits (else this
# proves nothing), and the twin must have run (cprofile counts it).
if printf '%s\n' "$available" | grep -qx line_profiler; then
    "$GR_CLI" conform --profiler line_profiler --json "$GR_WORK/twins.json" --results "$GR_WORK/twins.res" \
        -- "$PY" "$ADAPTERS/twins.py" >"$GR_WORK/twins.out" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && "$PY" - "$GR_WORK/twins.json" "$GR_WORK/twins.res" <<'EOF'; then
import json, sys
d = json.load(open(sys.argv[1]))
res = json.load(open(sys.argv[2]))
assert d["verdict"] == "pass" and d["differences"] == [], d["differences"]
notes = [n for n in d["notes"] if n["kind"] == "limitation"]
assert [n["function"] for n in notes] == ["twins.py:second"], d["notes"]
assert notes[0]["truth"] == 1, notes[0]
assert "second has the bytecode of first (line 10)" in notes[0]["message"], notes[0]["message"]
hits = {h["name"]: h["hits"] for h in res["line_hits"]}
assert hits["second"] == {} and hits["first"] and hits["third"], hits
assert [u["name"] for u in res["unmeasured"]] == ["second"], res["unmeasured"]
EOF
        gr_ok "twins, line_profiler: second's lost hits are a limitation note naming first, not missing_lines (pass)"
    else
        gr_bad "twins, line_profiler: exit $rc"
        gr_show "$GR_WORK/twins.out" "$GR_WORK/twins.json"
    fi
else
    echo "SKIP  twins, line_profiler: not available"
fi
"$GR_CLI" conform --profiler cprofile --results "$GR_WORK/twins.cp" -- "$PY" "$ADAPTERS/twins.py" >"$GR_WORK/twins.out" 2>&1
rc=$?
if [ $rc -eq 0 ] && "$PY" -c 'import json, sys; f = {x["name"]: x["calls"] for x in json.load(open(sys.argv[1]))["functions"]}; assert f["second"] == 1 and f["first"] == 3, f' "$GR_WORK/twins.cp"; then
    gr_ok "twins, cprofile: pass, second ran once, first three times"
else
    gr_bad "twins, cprofile: exit $rc"
    gr_show "$GR_WORK/twins.out"
fi

# C methods bound to a class (dict.fromkeys, object.__new__): the cprofile
# adapter names them as the trace does, without cProfile's address: pass.
# The trace must hold those calls from the program's function.
"$GR_CLI" conform --profiler cprofile -o "$GR_WORK/cm.grt" --results "$GR_WORK/cm.res" \
    -- "$PY" "$ADAPTERS/c_methods.py" >"$GR_WORK/cm.out" 2>&1
rc=$?
# (before the harness's finish MARK: what the harness does after it, its
# own imports included, is recorded but never compared)
seen=$("$GR_CLI" dump "$GR_WORK/cm.grt" 2>/dev/null | sed '/MARK .*"greenreplay-conform: finish"/q' |
    grep -cE ' C_CALL .* type\.(from_bytes|fromkeys|fromhex|__new__)$')
if [ $rc -eq 0 ] && [ "$seen" -eq 4 ] && "$PY" - "$GR_WORK/cm.res" <<'EOF'; then
import json, sys
c = {f["name"]: f["calls"] for f in json.load(open(sys.argv[1]))["c_functions"]}
for n in ("type.from_bytes", "type.fromkeys", "type.fromhex", "type.__new__"):
    assert c.get(n, 0) >= 1, (n, c)
assert not [n for n in c if "0x" in n], c
EOF
    gr_ok "C methods bound to a class, cprofile: named as the trace names them (4 calls), pass"
else
    gr_bad "C methods bound to a class, cprofile: exit $rc, $seen of 4 calls in the trace"
    gr_show "$GR_WORK/cm.out"
fi

# The harness's own work at exit (after its finish MARK) runs the
# program's code: a finaliser the collector calls from an audit hook at the
# first audit event after the program's last atexit hook (the profiler's
# stop, or the harness opening a file); not counted as the program's (a
# note where the profiler, stopping, may have counted it).  The trace must
# show such a call after the MARK, else the test proves nothing.  And the
# harness itself calls none of the program's code (a lazy module's
# __getattr__, when it reads the modules' __file__).
"$GR_CLI" conform --profiler cprofile -o "$GR_WORK/harness.grt" \
    -- "$PY" "$ADAPTERS/harness_calls.py" >"$GR_WORK/harness.out" 2>&1
rc=$?
"$GR_CLI" dump "$GR_WORK/harness.grt" 2>/dev/null | sed -n '/"greenreplay-conform: finish"/,$p' >"$GR_WORK/harness.late"
late=$(grep -c ' CALL .* Node.__del__ ' "$GR_WORK/harness.late")
lazy=$(grep -c ' CALL .* LazyModule.__getattr__ ' "$GR_WORK/harness.late")
if [ $rc -eq 0 ] && [ "$late" -ge 1 ] && [ "$lazy" -eq 0 ] &&
    grep -q ': pass, [0-9]* functions checked, 0 differences$' "$GR_WORK/harness.out"; then
    gr_ok "harness calls at exit: $late finaliser call(s) after the finish MARK, not counted (pass); the harness calls no __getattr__ of the program's"
else
    gr_bad "harness calls at exit: exit $rc, $late finaliser call(s) and $lazy __getattr__ call(s) after the finish MARK"
    gr_show "$GR_WORK/harness.out"
fi

# A program that fails: never a pass, with or without recording (2, one
# line naming its status); the results are still written.
for mode in record no-record; do
    opt=()
    [ $mode = no-record ] && opt=(--no-record)
    rm -f "$GR_WORK/fails.res"
    "$GR_CLI" conform --profiler cprofile "${opt[@]}" --results "$GR_WORK/fails.res" \
        -- "$PY" "$ADAPTERS/fails.py" >"$GR_WORK/fails.out" 2>"$GR_WORK/fails.err"
    rc=$?
    if [ $rc -eq 2 ] && [ "$(gr_quiet "$PY" "$GR_WORK/fails.err" | wc -l)" -eq 1 ] &&
        grep -q "^greenreplay: conform: .*the program exited with status 3" "$GR_WORK/fails.err" &&
        grep -qx "note: the program exited with status 3" "$GR_WORK/fails.out" &&
        "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert any(f["name"] == "work" and f["calls"] == 1 for f in d["functions"]), d' "$GR_WORK/fails.res"; then
        gr_ok "program fails, $mode: exit 2, its status named, results written"
    else
        gr_bad "program fails, $mode: exit $rc"
        gr_show "$GR_WORK/fails.out" "$GR_WORK/fails.err"
    fi
done

# Exit status 128+N is not a signal: sys.exit(130) is named as the status
# it is, a program killed by SIGTERM as signal 15, recorded or not; --json
# (recorded only) tells sys.exit(130) from SIGINT by program_signal.
json_signal() { # FILE STATUS SIGNAL|null: program_status and program_signal in --json FILE
    "$PY" - "$@" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
want = None if sys.argv[3] == "null" else sys.argv[3]
assert d["verdict"] == "error", d
assert d["program_status"] == int(sys.argv[2]), d
assert "program_signal" in d and d["program_signal"] == want, d
EOF
}
for mode in record no-record; do
    opt=()
    [ $mode = no-record ] && opt=(--no-record)
    [ $mode = record ] && opt=(--json "$GR_WORK/exit130.json")
    "$GR_CLI" conform --profiler cprofile "${opt[@]}" --results "$GR_WORK/exit130.res" \
        -- "$PY" "$ADAPTERS/exit130.py" >"$GR_WORK/exit130.out" 2>"$GR_WORK/exit130.err"
    rc=$?
    if [ $rc -eq 2 ] && grep -q "^greenreplay: conform: .*the program exited with status 130" "$GR_WORK/exit130.err" &&
        ! grep -q "signal" "$GR_WORK/exit130.err" &&
        { [ $mode = no-record ] || json_signal "$GR_WORK/exit130.json" 130 null; }; then
        gr_ok "sys.exit(130), $mode: exit 2, named as status 130, no signal$([ $mode = record ] && echo '; --json: program_signal null')"
    else
        gr_bad "sys.exit(130), $mode: exit $rc"
        gr_show "$GR_WORK/exit130.out" "$GR_WORK/exit130.err"
    fi
    [ $mode = record ] && opt=(--json "$GR_WORK/killed.json")
    "$GR_CLI" conform --profiler cprofile "${opt[@]}" --results "$GR_WORK/killed.res" \
        -- "$PY" "$ADAPTERS/killed.py" >"$GR_WORK/killed.out" 2>"$GR_WORK/killed.err"
    rc=$?
    if [ $rc -eq 2 ] && grep -qx "greenreplay: conform: the program was killed by signal 15 (SIGTERM, .*)" "$GR_WORK/killed.err" &&
        ! grep -q "exited with status" "$GR_WORK/killed.err" "$GR_WORK/killed.out" &&
        { [ $mode = no-record ] || json_signal "$GR_WORK/killed.json" 143 SIGTERM; }; then
        gr_ok "SIGTERM, $mode: exit 2, named as signal 15$([ $mode = record ] && echo '; --json: program_signal SIGTERM')"
    else
        gr_bad "SIGTERM, $mode: exit $rc"
        gr_show "$GR_WORK/killed.out" "$GR_WORK/killed.err"
    fi
    [ $mode = record ] && opt=(--json "$GR_WORK/sigint.json")
    "$GR_CLI" conform --profiler cprofile "${opt[@]}" --results "$GR_WORK/sigint.res" \
        -- "$PY" "$ADAPTERS/sigint.py" >"$GR_WORK/sigint.out" 2>"$GR_WORK/sigint.err"
    rc=$?
    # (record's own line names conform's temporary trace as such, once)
    if [ $rc -eq 2 ] && grep -q "^greenreplay: conform: the program was killed by signal 2 (SIGINT, .*)" "$GR_WORK/sigint.err" &&
        { [ $mode = no-record ] || { json_signal "$GR_WORK/sigint.json" 130 SIGINT &&
            grep -qx "greenreplay: record: the program was killed by signal 2 (.*); the temporary trace (conform deletes it; --keep keeps it) is complete (recording stopped before)" "$GR_WORK/sigint.err"; }; }; then
        gr_ok "SIGINT, $mode: exit 2, named as signal 2$([ $mode = record ] && echo '; --json: status 130 as sys.exit(130), program_signal SIGINT')"
    else
        gr_bad "SIGINT, $mode: exit $rc"
        gr_show "$GR_WORK/sigint.out" "$GR_WORK/sigint.err" "$GR_WORK/sigint.json"
    fi
done

# A program that ends by an uncaught exception: the recorder stops at
# sys.excepthook's audit event, while the profiler still runs; what that
# stop runs (_thread._count, the stop itself) is hidden from the profiler:
# the same results recorded and unrecorded (cProfile counted _thread._count
# in the recorded run only).  On PY and on a CPython 3.12 (GR_PY312,
# default pyenv's 3.12.1: cProfile on sys.monitoring there), skipped with
# the reason when there is none or the recorder does not build for it.
uncaught_case() { # PY LABEL
    local py=$1 label=$2 mode rc ok=1
    for mode in record no-record; do
        opt=()
        [ $mode = no-record ] && opt=(--no-record)
        rm -f "$GR_WORK/unc.$mode.res"
        "$GR_CLI" conform --profiler cprofile "${opt[@]}" --results "$GR_WORK/unc.$mode.res" \
            -- "$py" "$ADAPTERS/uncaught.py" >"$GR_WORK/unc.$mode.out" 2>&1
        rc=$?
        [ $rc -eq 2 ] && grep -qx "note: the program exited with status 1" "$GR_WORK/unc.$mode.out" || ok=0
    done
    if [ $ok = 1 ] && cmp -s "$GR_WORK/unc.record.res" "$GR_WORK/unc.no-record.res" &&
        "$py" - "$GR_WORK/unc.record.res" <<'EOF'; then
import json, sys
d = json.load(open(sys.argv[1]))
f = {x["name"]: x["calls"] for x in d["functions"]}
assert f.get("step") == 6 and f.get("run") == 2, f
c = [x["name"] for x in d["c_functions"]]
assert "_thread._count" not in c, c
EOF
        gr_ok "uncaught exception, cprofile, $label: identical results recorded and unrecorded (no _thread._count), exit 2"
    else
        gr_bad "uncaught exception, cprofile, $label: results differ or wrong status"
        diff "$GR_WORK/unc.no-record.res" "$GR_WORK/unc.record.res" | gr_show - "$GR_WORK/unc.record.out"
    fi
}
uncaught_case "$PY" "Python $pyver"
PY312=${GR_PY312:-$HOME/.pyenv/versions/3.12.1/bin/python3.12}
v312=$("$PY312" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
if [ "$v312" != 3.12 ]; then
    echo "SKIP  uncaught exception, cprofile, Python 3.12: no CPython 3.12 at $PY312 (GR_PY312)"
elif [ "$v312" = "$pyver" ]; then
    : # PY is a 3.12: done above
elif ! make -C "$GR_ROOT" -s ext PYTHON="$PY312" ${BUILD:+BUILD="$BUILD"} >"$GR_WORK/build312.log" 2>&1; then
    echo "SKIP  uncaught exception, cprofile, Python 3.12: the recorder does not build for $PY312"
else
    uncaught_case "$PY312" "Python 3.12"
fi

# A program that runs its own profiler (cProfile, or sys.setprofile) while
# the adapter's profiler is the thread's profile function displaces it:
# "unsupported" naming where (exit 2), never false differences (exit 1);
# except the cprofile adapter on the program's own cProfile, which it reads
# back and compares (conform_programs.sh for the gevent middleware).
# A profiler of another slot is not displaced and passes: coverage and
# line_profiler (the trace function), cProfile on 3.12+ (sys.monitoring,
# where the program's own cProfile cannot start: own_profiler.py goes on
# without it).  yappi only before 3.12 (its 3.12+ all-threads install is
# not checked here).
old_py=$("$PY" -c 'import sys; print(int(sys.version_info < (3, 12)))')
for how in cprofile setprofile; do
    for a in cprofile profile yappi coverage line_profiler; do
        printf '%s\n' "$available" | grep -qx "$a" || continue
        [ "$a" = yappi ] && [ "$old_py" = 0 ] && continue
        want=pass
        case $a in
        profile | yappi) [ $how = setprofile ] || [ "$old_py" = 1 ] && want=unsupported ;;
        cprofile) [ "$old_py" = 1 ] && want=unsupported ;;
        esac
        # The cprofile adapter reads the program's own cProfile back and
        # compares it (docs/conform.md): right, as it saw only its owner.
        [ $a = cprofile ] && [ $how = cprofile ] && [ "$old_py" = 1 ] && want=programs
        during=sys.setprofile
        [ $how = cprofile ] && during=_lsprof.Profiler.enable
        "$GR_CLI" conform --profiler "$a" --json "$GR_WORK/own.json" -- "$PY" "$ADAPTERS/own_profiler.py" "$how" \
            >"$GR_WORK/own.out" 2>"$GR_WORK/own.err"
        rc=$?
        if [ $want = unsupported ] && [ $rc -eq 2 ] && [ ! -s "$GR_WORK/own.out" ] &&
            grep -qx "greenreplay: conform: unsupported: the program installs its own profiler at own_profiler.py:<module> ($during, event [0-9]*) on thread 1, displacing the profiler under test there (a thread has one profile function): its counts would differ falsely, so nothing is compared (the cprofile adapter reads back the program's own cProfile objects instead, not other profilers; \`greenreplay check\` on the trace, -o, lists what each of the program's profilers saw: rule attribution)" "$GR_WORK/own.err" &&
            "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["verdict"] == "error" and d["reason"].startswith("unsupported: the program installs its own profiler at ") and d["differences"] == [], d' "$GR_WORK/own.json"; then
            gr_ok "own profiler ($how), $a: unsupported, exit 2, where it was installed"
        elif [ $want = programs ] && [ $rc -eq 0 ] &&
            grep -q "^right P2 cprofile (cProfile.Profile) of thread 1 (thread-wide), enabled in <module> (own_profiler.py:1): counted what it was given: 4 Python calls of its owner, 0 of other greenlets; missed 0 of its owner's$" "$GR_WORK/own.out" &&
            "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["verdict"] == "pass" and [p["status"] for p in d["profilers"]] == ["right"], d' "$GR_WORK/own.json"; then
            gr_ok "own profiler ($how), $a: the program's cProfile read back and compared, right"
        elif [ $want = pass ] && [ $rc -eq 0 ]; then
            gr_ok "own profiler ($how), $a: pass (the adapter's profiler is not the profile function)"
        else
            gr_bad "own profiler ($how), $a: exit $rc (want $want)"
            gr_show "$GR_WORK/own.out" "$GR_WORK/own.err"
        fi
    done
done

# Another thread runs while the harness stops a profiler of every thread
# (yappi, made deterministic by the adapter stop_window.py): the calls it
# makes then, after the finish MARK, are counted by the profiler but not as
# the program's: a note naming them, not a miscount.  yappi must have
# counted them (else this proves nothing).
if printf '%s\n' "$available" | grep -qx yappi; then
    "$GR_CLI" conform --profiler "$ADAPTERS/stop_window.py" --json "$GR_WORK/late.json" --results "$GR_WORK/late.res" \
        -- "$PY" "$ADAPTERS/late_thread.py" >"$GR_WORK/late.out" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && "$PY" - "$GR_WORK/late.json" "$GR_WORK/late.res" <<'EOF'; then
import json, sys
d = json.load(open(sys.argv[1]))
res = json.load(open(sys.argv[2]))
assert d["verdict"] == "pass" and d["differences"] == [], d["differences"]
calls = {f["name"]: f["calls"] for f in res["functions"]}
assert calls["tick"] == 3, calls
tick = [n for n in d["notes"] if n["function"] == "late_thread.py:tick"]
assert len(tick) == 1 and tick[0]["kind"] == "unverified", d["notes"]
assert tick[0]["truth"] == 1 and tick[0]["profiler"] == 3, tick[0]
assert "; 2 more ran after the finish mark while the profiler was stopping, which it may have counted: not a verdict" \
    in tick[0]["message"], tick[0]["message"]
EOF
        gr_ok "late thread, yappi: 2 calls while the profiler stopped, counted by it: a note, pass"
    else
        gr_bad "late thread, yappi: exit $rc"
        gr_show "$GR_WORK/late.out" "$GR_WORK/late.json"
    fi
else
    echo "SKIP  late thread, yappi: not available"
fi

# The documented example adapter: passes, and is the file the docs show.
"$GR_CLI" conform --profiler "$ADAPTERS/callcount.py" -- "$PY" "$FIX/direct_then_run.py" \
    >"$GR_WORK/example.out" 2>&1
rc=$?
sed -n '/^<!-- example: tests\/integration\/conform\/callcount.py -->$/,/^```$/p' docs/conform.md |
    sed '1,2d;$d' >"$GR_WORK/example.md"
if [ $rc -eq 0 ] && cmp -s "$GR_WORK/example.md" "$ADAPTERS/callcount.py"; then
    gr_ok "example adapter: passes, and docs/conform.md shows it verbatim"
else
    gr_bad "example adapter: exit $rc (or docs/conform.md differs from callcount.py)"
    gr_show "$GR_WORK/example.out"
    diff "$GR_WORK/example.md" "$ADAPTERS/callcount.py" | gr_show -
fi

# --json fields of a pass.
"$GR_CLI" conform --profiler cprofile --json "$GR_WORK/pass.json" -- "$PY" "$ADAPTERS/no_greenlets.py" \
    >"$GR_WORK/pass.out" 2>&1
rc=$?
if [ $rc -eq 0 ] && "$PY" - "$GR_WORK/pass.json" "$pyver" <<'EOF'; then
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("profiler", "profiler_version", "python", "greenlet", "verdict", "reason",
          "functions_checked", "differences", "notes", "timing", "program_status", "program_signal",
          "compared", "not_compared"):
    assert k in d, k
assert d["profiler"] == "cprofile" and d["verdict"] == "pass" and d["differences"] == []
assert d["program_status"] == 0 and d["program_signal"] is None, d
assert d["python"].startswith(sys.argv[2] + "."), d["python"]
assert d["functions_checked"] >= 5, d["functions_checked"]
assert d["timing"]["recorded_run_s"] > 0 and d["timing"]["comparison_s"] >= 0
EOF
    gr_ok "json: documented fields of a pass"
else
    gr_bad "json: exit $rc"
    gr_show "$GR_WORK/pass.out" "$GR_WORK/pass.json"
fi

# Skip, adapter errors, usage errors: one line each.
check_status() { # WANT LABEL CMD...
    local want=$1 label=$2
    shift 2
    "$@" >"$GR_WORK/s.out" 2>"$GR_WORK/s.all"
    local rc=$? lines
    gr_quiet "$PY" "$GR_WORK/s.all" >"$GR_WORK/s.err"   # without start-up noise
    lines=$(cat "$GR_WORK/s.out" "$GR_WORK/s.err" | wc -l)
    if [ $rc -eq "$want" ] && [ "$lines" -eq 1 ]; then
        gr_ok "$label: exit $want, one line ($(cat "$GR_WORK/s.out" "$GR_WORK/s.err"))"
    else
        gr_bad "$label: exit $rc (want $want), $lines lines"
        gr_show "$GR_WORK/s.out" "$GR_WORK/s.err"
    fi
}
check_status 3 "skip" "$GR_CLI" conform --profiler "$ADAPTERS/unavailable.py" -- "$PY" "$FIX/direct_then_run.py"
check_status 2 "adapter without results()" "$GR_CLI" conform --profiler "$ADAPTERS/incomplete.py" \
    -- "$PY" "$FIX/direct_then_run.py"
check_status 2 "unknown adapter" "$GR_CLI" conform --profiler no-such-profiler -- "$PY" "$FIX/direct_then_run.py"
check_status 2 "no --profiler" "$GR_CLI" conform -- "$PY" "$FIX/direct_then_run.py"
check_status 2 "no program" "$GR_CLI" conform --profiler cprofile
check_status 2 "interpreter option" "$GR_CLI" conform --profiler cprofile -- "$PY" -c pass

# Outputs conform could not write at the end, or that would overwrite the
# program or each other, are refused before anything runs: the interpreter
# is a wrapper that leaves a file when it runs (the probe included).
prog=$GR_WORK/prog.py
cp "$ADAPTERS/no_greenlets.py" "$prog"
printf '#!/bin/sh\ntouch "%s/ran"\nexec "%s" "$@"\n' "$GR_WORK" "$PY" >"$GR_WORK/markpy"
chmod +x "$GR_WORK/markpy"
printf 'not a trace\n' >"$GR_WORK/notes.txt"
refused() { # LABEL PATTERN OPTIONS...: exit 2, one line matching PATTERN, nothing ran
    local label=$1 pattern=$2
    shift 2
    rm -f "$GR_WORK/ran"
    "$GR_CLI" conform --profiler "${refused_profiler:-cprofile}" "$@" -- "$GR_WORK/markpy" "$prog" \
        >"$GR_WORK/s.out" 2>"$GR_WORK/s.all"
    local rc=$? lines
    gr_quiet "$PY" "$GR_WORK/s.all" >"$GR_WORK/s.err"   # without start-up noise
    lines=$(cat "$GR_WORK/s.out" "$GR_WORK/s.err" | wc -l)
    if [ $rc -eq 2 ] && [ "$lines" -eq 1 ] && grep -q -- "$pattern" "$GR_WORK/s.err" && [ ! -e "$GR_WORK/ran" ] &&
        cmp -s "$prog" "$ADAPTERS/no_greenlets.py"; then
        gr_ok "refused up front: $label ($(cat "$GR_WORK/s.err"))"
    else
        gr_bad "refused up front: $label: exit $rc, $lines lines$([ -e "$GR_WORK/ran" ] && echo ', the interpreter ran')"
        gr_show "$GR_WORK/s.out" "$GR_WORK/s.err"
    fi
}
refused "--json in a missing directory" "^greenreplay: conform: --json $GR_WORK/no/v.json: cannot write it: " \
    --json "$GR_WORK/no/v.json"
refused "--json a directory" "^greenreplay: conform: --json $GR_WORK: cannot write it: Is a directory" --json "$GR_WORK"
refused "-o in a missing directory" "^greenreplay: conform: -o $GR_WORK/no/t.grt: cannot create it in " -o "$GR_WORK/no/t.grt"
refused "-o a file that is not a trace" "^greenreplay: conform: -o $GR_WORK/notes.txt: exists and is not a greenreplay trace" \
    -o "$GR_WORK/notes.txt"
refused "--results in a missing directory" "^greenreplay: conform: --results $GR_WORK/no/r.json: cannot write it: " \
    --results "$GR_WORK/no/r.json"
refused "--results the script" "^greenreplay: conform: --results $prog: is the program's script" --results "$prog"
refused "--json the script" "^greenreplay: conform: --json $prog: is the program's script" --json "$prog"
refused "--json and -o one file" "^greenreplay: conform: --json and -o name the same file" \
    --json "$GR_WORK/same" -o "$GR_WORK/./same"
[ -e "$GR_WORK/same" ] && gr_bad "--json and -o one file: $GR_WORK/same was created"
# The adapter file of --profiler PATH.py: --results is removed before the
# run and --json written after it, so either would lose the adapter.
cp "$ADAPTERS/callcount.py" "$GR_WORK/adapter.py"
for opt in --results --json; do
    refused_profiler=$GR_WORK/adapter.py refused "$opt the adapter file" \
        "^greenreplay: conform: $opt $GR_WORK/./adapter.py: is the --profiler adapter; refusing to overwrite it" \
        "$opt" "$GR_WORK/./adapter.py"
    cmp -s "$GR_WORK/adapter.py" "$ADAPTERS/callcount.py" || gr_bad "$opt the adapter file: the adapter was changed"
done

# A missing interpreter: one line saying where the interpreter goes; the
# error verdict in --json.
check_status 2 "missing interpreter" "$GR_CLI" conform --profiler cprofile --json "$GR_WORK/nopy.json" \
    -- "$GR_WORK/no-python" "$prog"
if grep -q "interpreter not found or not executable: $GR_WORK/no-python (the first word after -- is the interpreter, e.g. \`-- python3 SCRIPT\`)" "$GR_WORK/s.err" &&
    "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["verdict"] == "error" and "no-python" in d["reason"], d' "$GR_WORK/nopy.json"; then
    gr_ok "missing interpreter: the hint, and the error verdict in --json"
else
    gr_bad "missing interpreter: hint or --json"
    gr_show "$GR_WORK/s.err" "$GR_WORK/nopy.json"
fi
check_status 2 "script where the interpreter goes" "$GR_CLI" conform --profiler cprofile -- "$prog" arg
grep -q "$prog is not an interpreter: .*\`-- python3 $prog\`" "$GR_WORK/s.err" &&
    gr_ok "script where the interpreter goes: the line shows -- python3 SCRIPT" ||
    gr_bad "script where the interpreter goes: no hint"
check_status 2 "--list with two interpreters" "$GR_CLI" conform --list --python "$PY" -- "$PY"
check_status 2 "--list with a missing --python" "$GR_CLI" conform --list --python "$GR_WORK/no-python"
grep -q "(--python names the interpreter" "$GR_WORK/s.err" && gr_ok "--list with a missing --python: the hint" ||
    gr_bad "--list with a missing --python: no hint"

# --json -: stdout is the JSON document alone (the program's output and
# the summary line go to stderr).
"$GR_CLI" conform --profiler cprofile --json - -- "$PY" "$prog" >"$GR_WORK/j.out" 2>"$GR_WORK/j.err"
rc=$?
if [ $rc -eq 0 ] && [ ! -e ./- ] && "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["verdict"] == "pass", d' "$GR_WORK/j.out" &&
    grep -qx 14 "$GR_WORK/j.err" && grep -q "^conform: cprofile .*: pass, " "$GR_WORK/j.err"; then
    gr_ok "--json -: the JSON alone on stdout, the program's output and the summary on stderr"
else
    gr_bad "--json -: exit $rc"
    gr_show "$GR_WORK/j.out" "$GR_WORK/j.err"
fi
# Every error once the options are read writes the error verdict to
# --json (a CI job reading it never finds nothing): usage errors, a bad
# option wherever --json is, a script that cannot be read, an unknown
# adapter, a refused -o; stdout holds the JSON alone, stderr the one line.
json_error() { # LABEL REASON-PATTERN OPTIONS...
    local label=$1 pattern=$2
    shift 2
    "$GR_CLI" conform "$@" >"$GR_WORK/je.out" 2>"$GR_WORK/je.err"
    local rc=$?
    if [ $rc -eq 2 ] && [ "$(wc -l <"$GR_WORK/je.err")" -eq 1 ] &&
        "$PY" - "$GR_WORK/je.out" "$pattern" "$(cat "$GR_WORK/je.err")" <<'EOF'; then
import json, re, sys
d = json.load(open(sys.argv[1]))
assert d["verdict"] == "error", d
assert re.search(sys.argv[2], d["reason"]), (d["reason"], sys.argv[2])
assert d["functions_checked"] == 0 and d["differences"] == [] and d["program_status"] is None, d
assert d["program_signal"] is None, d
EOF
        gr_ok "--json - on an early error: $label ($(cat "$GR_WORK/je.err"))"
    else
        gr_bad "--json - on an early error: $label: exit $rc"
        gr_show "$GR_WORK/je.out" "$GR_WORK/je.err"
    fi
}
json_error "no --profiler" '^--profiler NAME\|PATH\.py is required' --json - -- "$PY" "$prog"
json_error "no program" '^need, after --, PYTHON SCRIPT' --profiler cprofile --json -
json_error "no script" '^need, after PYTHON, the SCRIPT' --json - --profiler cprofile -- "$PY"
json_error "unknown option after --json" '^unknown option --bogus$' --json - --bogus --profiler cprofile -- "$PY" "$prog"
json_error "unknown option before --json" '^unknown option --bogus$' --bogus --json - --profiler cprofile -- "$PY" "$prog"
json_error "bad --switches" "^--switches: 'x' is not passive or callback" --json - --switches x --profiler cprofile \
    -- "$PY" "$prog"
json_error "interpreter option" '^the program must be a SCRIPT file \(not -c' --json - --profiler cprofile -- "$PY" -c pass
json_error "unreadable script" "^cannot read the script $GR_WORK/nosuch.py: " --json - --profiler cprofile \
    -- "$PY" "$GR_WORK/nosuch.py"
json_error "unknown adapter" '^--profiler no-such-profiler: not a built-in adapter' --json - --profiler no-such-profiler \
    -- "$PY" "$prog"
json_error "--no-record with --json" '^--no-record writes no trace and no verdict' --json - --no-record \
    --results "$GR_WORK/nr.json" --profiler cprofile -- "$PY" "$prog"
[ -e "$GR_WORK/nr.json" ] && gr_bad "--no-record with --json: results were written"
json_error "--list with --json" '^--list prints the adapters. table, not a verdict: --json is refused' --list \
    --json - --python "$PY"
json_error "--list with --json, a bad option too" '^unknown option --bogus$' --list --json - --bogus
json_error "-o refused" "^-o $GR_WORK/no/t.grt: refused as the trace" --json - -o "$GR_WORK/no/t.grt" \
    --profiler cprofile -- "$PY" "$prog"
# --json FILE too, when FILE is none of the other paths; never over the
# words after the options (a usage error may not know which is the script).
rm -f "$GR_WORK/usage.json"
"$GR_CLI" conform --json "$GR_WORK/usage.json" --bogus --profiler cprofile -- "$PY" "$prog" >"$GR_WORK/je.out" 2>&1
rc=$?
if [ $rc -eq 2 ] &&
    "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["verdict"] == "error" and d["reason"] == "unknown option --bogus", d' "$GR_WORK/usage.json"; then
    gr_ok "--json FILE on a usage error: the error verdict in FILE"
else
    gr_bad "--json FILE on a usage error: exit $rc"
    gr_show "$GR_WORK/je.out" "$GR_WORK/usage.json"
fi
rm -f "$GR_WORK/list.json"
"$GR_CLI" conform --list --python "$PY" --json "$GR_WORK/list.json" >"$GR_WORK/je.out" 2>"$GR_WORK/je.err"
rc=$?
if [ $rc -eq 2 ] && [ ! -s "$GR_WORK/je.out" ] && [ "$(wc -l <"$GR_WORK/je.err")" -eq 1 ] &&
    "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["verdict"] == "error" and d["reason"].startswith("--list prints"), d' "$GR_WORK/list.json"; then
    gr_ok "--list --json FILE: refused, one line, no table, the error verdict in FILE"
else
    gr_bad "--list --json FILE: exit $rc"
    gr_show "$GR_WORK/je.out" "$GR_WORK/je.err" "$GR_WORK/list.json"
fi
"$GR_CLI" conform --json "$prog" --bogus --profiler cprofile -- "$PY" "$prog" >"$GR_WORK/je.out" 2>&1
rc=$?
if [ $rc -eq 2 ] && cmp -s "$prog" "$ADAPTERS/no_greenlets.py"; then
    gr_ok "--json naming the script on a usage error: the script is left alone"
else
    gr_bad "--json naming the script on a usage error: exit $rc, script changed"
    cp "$ADAPTERS/no_greenlets.py" "$prog"
fi
if "$GR_CLI" conform --help | grep -q "^Exit status: 0 the profiler agrees"; then
    gr_ok "help: documents the exit status"
else
    gr_bad "help"
fi
gr_tally
