#!/usr/bin/env bash
# tests/integration/habits.sh - greenreplay used the way users of other
# Python tools use them:
#   python -m greenreplay: --help is the tool's help (exit 0, not an
#     environment error); `record -o T -- x.py` runs x.py with that
#     interpreter and gives the same trace as `record -o T -- PYTHON x.py`;
#     `check` runs; an unknown command is one usage line, exit 2; the older
#     form (GREENREPLAY_OUTPUT set, a script) still records; `import
#     greenreplay` imports nothing more than before (no __main__, no _cli)
#
# usage: tests/integration/habits.sh [--python PY]
# Output: one line per test (PASS / FAIL / SKIP), then "N passed, N failed".
# Exit status: 0 all passed, 1 a test failed, 2 bad usage.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gr_script_init habits "$@"
cli=$GR_CLI
W=$GR_WORK
PYPATH=${BUILD:-$GR_ROOT/build}/python
NSKIP=0
skip() { echo "SKIP  $*"; NSKIP=$((NSKIP + 1)); }
pym() { PYTHONPATH=$PYPATH "$GR_PY" -m greenreplay "$@"; }

if ! "$GR_PY" -c 'import greenlet' 2>/dev/null; then
    gr_skip_all "greenlet is not importable by $GR_PY"
fi
cat >"$W/x.py" <<'PY'
import greenlet
def child():
    main.switch(1)
main = greenlet.getcurrent()
g = greenlet.greenlet(child)
g.switch()
g.switch()
print("done")
PY

# ---- 1. python -m greenreplay
pym --help >"$W/h.out" 2>"$W/h.err"; rc=$?
if [ $rc -eq 0 ] && grep -q '^usage: greenreplay COMMAND' "$W/h.out" && ! grep -q GREENREPLAY_OUTPUT "$W/h.err"; then
    gr_ok "python -m greenreplay --help prints the tool's help"
else
    gr_bad "python -m greenreplay --help: exit $rc"; gr_show "$W/h.out" "$W/h.err"
fi
pym check --help >"$W/h.out" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q '^usage: greenreplay check' "$W/h.out"; then
    gr_ok "python -m greenreplay check --help"
else
    gr_bad "python -m greenreplay check --help: exit $rc"; gr_show "$W/h.out"
fi
(cd "$W" && pym record -o a.grt -- x.py >a.out 2>a.err); rc=$?
# the same PYTHONPATH for both: it is part of what the program sees
(cd "$W" && PYTHONPATH=$PYPATH "$cli" record -o b.grt -- "$GR_PY" x.py >b.out 2>b.err); rc2=$?
if [ $rc -eq 0 ] && [ $rc2 -eq 0 ] && [ "$(cat "$W/a.out")" = done ] && cmp -s "$W/a.grt" "$W/b.grt"; then
    gr_ok "python -m greenreplay record -o T -- x.py: the same trace as record -- PYTHON x.py"
else
    gr_bad "python -m greenreplay record -- x.py: exit $rc/$rc2, or traces differ"; gr_show "$W/a.out" "$W/a.err"
fi
(cd "$W" && pym record -o c.grt -- "$GR_PY" x.py >c.out 2>&1); rc=$?
if [ $rc -eq 0 ] && cmp -s "$W/c.grt" "$W/b.grt"; then
    gr_ok "python -m greenreplay record -- PYTHON x.py keeps the named interpreter"
else
    gr_bad "python -m greenreplay record -- PYTHON x.py: exit $rc"; gr_show "$W/c.out"
fi
pym check -q "$W/a.grt" >"$W/q.out" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q 'a.grt: clean' "$W/q.out"; then
    gr_ok "python -m greenreplay check"
else
    gr_bad "python -m greenreplay check: exit $rc"; gr_show "$W/q.out"
fi
pym frobnicate >"$W/u.out" 2>"$W/u.err"; rc=$?
if [ $rc -eq 2 ] && [ ! -s "$W/u.out" ] && grep -q "unknown command 'frobnicate'" "$W/u.err"; then
    gr_ok "python -m greenreplay with an unknown command: usage, exit 2"
else
    gr_bad "python -m greenreplay frobnicate: exit $rc"; gr_show "$W/u.err"
fi
(cd "$W" && GREENREPLAY_OUTPUT=$W/d.grt pym x.py >d.out 2>&1); rc=$?
if [ $rc -eq 0 ] && "$cli" check -q "$W/d.grt" >/dev/null 2>&1; then
    gr_ok "GREENREPLAY_OUTPUT=T python -m greenreplay x.py still records"
else
    gr_bad "GREENREPLAY_OUTPUT=T python -m greenreplay x.py: exit $rc"; gr_show "$W/d.out"
fi
mods=$(PYTHONPATH=$PYPATH "$GR_PY" -c 'import sys; b = set(sys.modules); import greenreplay; print(" ".join(sorted(set(sys.modules) - b)))')
if [ "$mods" = "greenreplay greenreplay._greenreplay" ]; then
    gr_ok "import greenreplay imports only the package and its extension"
else
    gr_bad "import greenreplay imported: $mods"
fi
# A stray .pth file (one whose import fails, as a killed test run of
# coverage.py leaves one) makes site print an error at every start-up.
# The recorded program prints it as often as unrecorded (once): the boot
# processes no site directory again.  (A Python launcher, pip's console
# script or python -m greenreplay, prints its own copy first: docs/USAGE.md.)
ub=$W/userbase
site=$(PYTHONUSERBASE=$ub "$GR_PY" -c 'import site; print(site.getusersitepackages())')
mkdir -p "$site"
echo 'import gr_stray_pth_module_missing' > "$site/gr_stray.pth"
(cd "$W" && PYTHONUSERBASE=$ub "$GR_PY" x.py >pth.out 2>pth.plain)
(cd "$W" && PYTHONUSERBASE=$ub "$cli" record -o pth.grt -- "$GR_PY" x.py >pth.out 2>pth.rec); rc=$?
n=$(grep -c '^Error processing line 1 of .*gr_stray.pth' "$W/pth.plain")
if [ "$n" = 1 ] && [ $rc -eq 0 ] && cmp -s "$W/pth.plain" "$W/pth.rec"; then
    gr_ok "a stray .pth file: the recorded program prints its error once, as unrecorded"
elif [ "$n" != 1 ]; then
    skip "a stray .pth file: $GR_PY printed its error $n times unrecorded (no user site?)"
else
    gr_bad "a stray .pth file: record exit $rc, stderr differs from the unrecorded run's"
    diff "$W/pth.plain" "$W/pth.rec" | sed 's/^/    /' | head -n 20
fi
rm -rf "$ub"

# ---- 2. the pytest plugin from the project's own files
if ! "$GR_PY" -c 'import pytest' 2>/dev/null; then
    skip "pytest plugin: pytest is not importable by $GR_PY (Debian: python3-pytest)"
else
    P=$W/proj
    mkdir -p "$P"
    cat >"$P/test_clean.py" <<'PY'
import greenlet


def test_one():
    assert greenlet.greenlet(lambda: 1).switch() == 1


def test_two():
    assert True
PY
    pyt() {
        (cd "$P" && PYTHONPATH=$PYPATH GREENREPLAY_CLI=$cli "$GR_PY" -m pytest -q \
            -p greenreplay.pytest_plugin -p no:cacheprovider "$@") >"$W/pt.out" 2>&1
    }
    printf '[tool.pytest.ini_options]\ngreenreplay = true\n' >"$P/pyproject.toml"
    pyt test_clean.py; rc=$?
    line=$(grep '^greenreplay:' "$W/pt.out")
    if [ $rc -eq 0 ] && [ "$line" = "greenreplay: 2 tests recorded and checked, no violations, no traces kept" ] &&
            [ ! -e "$P/greenreplay-traces" ]; then
        gr_ok "pytest with greenreplay = true in pyproject.toml: summary line, no empty trace directory"
    else
        gr_bad "pytest with greenreplay = true: exit $rc, line '$line', or greenreplay-traces/ left"; gr_show "$W/pt.out"
    fi
    printf '[tool.pytest.ini_options]\ngreenreplay = true\ngreenreplay_keep = "all"\ngreenreplay_dir = "tr"\n' \
        >"$P/pyproject.toml"
    pyt test_clean.py; rc=$?
    if [ $rc -eq 0 ] && grep -q "^greenreplay: 2 tests recorded and checked, no violations, 2 traces kept in $P/tr\$" "$W/pt.out" &&
            [ "$(ls "$P/tr" | grep -c '\.grt$')" = 2 ]; then
        gr_ok "greenreplay_keep = all and greenreplay_dir in the ini: both traces kept there"
    else
        gr_bad "greenreplay_keep/greenreplay_dir from the ini: exit $rc"; gr_show "$W/pt.out"; ls "$P" "$P/tr" 2>&1 | gr_show /dev/stdin
    fi
    rm -rf "$P/tr"
    cp "$GR_ROOT/tests/integration/pytest_demo/test_demo.py" "$P/"
    printf '[tool.pytest.ini_options]\ngreenreplay = true\n' >"$P/pyproject.toml"
    pyt test_demo.py -k test_blind_spot; rc=$?
    if [ $rc -eq 1 ] && grep -q "^greenreplay: 1 test recorded and checked, 1 with violations, 1 trace kept in $P/greenreplay-traces\$" "$W/pt.out"; then
        gr_ok "a test with a blind spot fails; the summary counts it and names the trace directory"
    else
        gr_bad "blind spot under greenreplay = true: exit $rc"; gr_show "$W/pt.out"
    fi
    rm -rf "$P/greenreplay-traces"
    printf '[tool.pytest.ini_options]\ngreenreplay = true\ngreenreplay_allow = ["blind_spot"]\n' >"$P/pyproject.toml"
    pyt test_demo.py -k test_blind_spot; rc=$?
    if [ $rc -eq 0 ] && grep -q "^greenreplay: 1 test recorded and checked, no violations" "$W/pt.out"; then
        gr_ok "greenreplay_allow in the ini tolerates the rule"
    else
        gr_bad "greenreplay_allow = blind_spot: exit $rc"; gr_show "$W/pt.out"
    fi
    rm -rf "$P/greenreplay-traces"
    printf '[tool.pytest.ini_options]\ngreenreplay = false\n' >"$P/pyproject.toml"
    pyt test_demo.py -k test_blind_spot; rc=$?
    if [ $rc -eq 0 ] && ! grep -q '^greenreplay' "$W/pt.out"; then
        gr_ok "greenreplay = false: the plugin stays off"
    else
        gr_bad "greenreplay = false: exit $rc"; gr_show "$W/pt.out"
    fi
fi

# ---- 3. a window of a running program
cat >"$W/svc.py" <<'PY'
import signal
import sys
import time

import greenlet

own = lambda signum, frame: None  # noqa: E731
signal.signal(signal.SIGUSR2, own)
before = sys.getprofile()


def work():
    while True:
        time.sleep(0.002)
        main.switch()


main = greenlet.getcurrent()
g = greenlet.greenlet(work)
print("ready", flush=True)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    g.switch()
print("done", before is None, signal.getsignal(signal.SIGUSR2) is own, flush=True)
PY
# run_window SECONDS SIGNALS...: record svc.py for SECONDS with --start-on
# USR2 --for 1, sending USR2 at each of the times SIGNALS (seconds after
# "ready"); exit status in $W/win.rc
run_window() {
    local secs=$1 t at=0
    shift
    rm -f "$W/win.grt"
    (cd "$W" && exec "$cli" record --start-on USR2 --for 1 -o win.grt -- "$GR_PY" svc.py "$secs") \
        >"$W/win.out" 2>"$W/win.err" &
    local rp=$!
    for _ in $(seq 100); do grep -q ready "$W/win.out" 2>/dev/null && break; sleep 0.1; done
    for t in "$@"; do
        sleep "$(awk -v a="$at" -v b="$t" 'BEGIN { print b - a }')"
        at=$t
        kill -USR2 "$rp" 2>/dev/null
    done
    wait "$rp"
    echo $? >"$W/win.rc"
}
run_window 3 0.3 2
"$cli" dump "$W/win.grt" >"$W/win.dump" 2>&1
starts=$(awk '$2 == "START"' "$W/win.dump" | wc -l)
seed=$(awk '$2 == "GREENLET" && /flags=main/' "$W/win.dump" | head -n 1)
"$cli" check -q "$W/win.grt" >"$W/win.chk" 2>&1; crc=$?
if [ "$(cat "$W/win.rc")" = 0 ] && [ "$(tail -n 1 "$W/win.out")" = "done True True" ] && [ "$starts" = 1 ] &&
        printf '%s' "$seed" | grep -q '<module> (svc.py:1)' &&
        ! grep -q 'CALL  *t1 g[0-9]* <module>' "$W/win.dump" &&
        grep -q '^# trailer: .*reason=stop' "$W/win.dump" && grep -q 'C_CALL .*time.sleep' "$W/win.dump" &&
        [ $crc -eq 0 ] && grep -q ': clean, ' "$W/win.chk"; then
        gr_ok "record --start-on USR2 --for 1: one window from mid-program, checks clean; a second USR2 does nothing; the program's own handler kept"
else
    gr_bad "record --start-on: exit $(cat "$W/win.rc"), $starts START, seed '$seed', check $crc"
    gr_show "$W/win.out" "$W/win.err" "$W/win.chk"
fi
run_window 1
if [ "$(cat "$W/win.rc")" = 0 ] && [ "$(tail -n 1 "$W/win.out")" = "done True True" ] &&
        ! "$cli" dump "$W/win.grt" 2>/dev/null | grep -q START; then
    gr_ok "record --start-on without the signal: the program runs unrecorded, as it would"
else
    gr_bad "record --start-on without the signal: exit $(cat "$W/win.rc")"; gr_show "$W/win.out" "$W/win.err"
fi
"$cli" record --for 1 -o "$W/x.grt" -- "$GR_PY" "$W/svc.py" 0 >/dev/null 2>"$W/e1"; r1=$?
"$cli" record --manual --start-on USR2 -o "$W/x.grt" -- "$GR_PY" "$W/svc.py" 0 >/dev/null 2>"$W/e2"; r2=$?
if [ $r1 -eq 2 ] && [ $r2 -eq 2 ] && grep -q -- "--for needs --start-on" "$W/e1" && grep -q "not with --manual" "$W/e2"; then
    gr_ok "record --for without --start-on, --start-on with --manual: refused"
else
    gr_bad "record window usage errors: $r1 $r2"; gr_show "$W/e1" "$W/e2"
fi

# ---- 4. reduce in plain words, lines renumbered
if [ -s "$W/bs.grt" ] || (cd "$GR_ROOT" && "$cli" record -o "$W/bs.grt" -- "$GR_PY" fixtures/switch_in_tracefunc.py) >/dev/null 2>&1; then
    "$cli" script "$W/bs.grt" -o "$W/bs.py" 2>/dev/null
    "$cli" reduce "$W/bs.py" --python "$GR_PY" --rule blind_spot --max-runs 4 -o "$W/small.py" 2>"$W/red.log"; rc=$?
    bad_claims=$("$GR_PY" - "$W/small.py" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
defs = {}
for n, l in enumerate(lines, 1):
    m = re.match(r"def (_v\d+)\(\):  # (.*?)  #@", l)
    if m:
        defs[n] = m.group(2)
bad = []
for l in lines:
    m = re.match(r"_fn\((_v\d+), '([^']*)', (\d+)\)", l)
    if m and defs.get(int(m.group(3))) != m.group(2).rpartition(".")[2] and \
            defs.get(int(m.group(3))) != m.group(2):
        bad.append(l)
print(len(bad) if bad or not defs else "ok")
PY
)
    if [ $rc -eq 0 ] && grep -q '^reduce: run .*\(still fails\|no longer fails\); now .* at most [0-9]* runs, ~[0-9]* s more' "$W/red.log" &&
            ! grep -q 'passes' "$W/red.log" && [ "$bad_claims" = ok ]; then
        gr_ok "reduce: still fails / no longer fails with an estimate; the reduced script's lines are its own"
    else
        gr_bad "reduce: exit $rc, claims $bad_claims"; gr_show "$W/red.log"
    fi
else
    gr_bad "reduce: no trace of fixtures/switch_in_tracefunc.py"
fi

# ---- 5. help texts: short, ending with examples
for c in "" record check conform export; do
    "$cli" $c --help >"$W/help.txt" 2>&1
    n=$(wc -l <"$W/help.txt")
    ex=$(sed -n '/^EXAMPLES$/,$p' "$W/help.txt" | sed 1d)
    if [ "$n" -le 80 ] && [ -n "$ex" ] && printf '%s\n' "$ex" | grep -q "greenreplay ${c:-record}" &&
            ! printf '%s\n' "$ex" | grep -qv '^  '; then
        gr_ok "greenreplay${c:+ $c} --help: $n lines, ends with EXAMPLES"
    else
        gr_bad "greenreplay${c:+ $c} --help: $n lines, examples '$ex'"
    fi
done

# ---- 6. check's report in plain words
if (cd "$GR_ROOT" && "$cli" record -o "$W/bs.grt" -- "$GR_PY" fixtures/switch_in_tracefunc.py) >"$W/bs.log" 2>&1; then
    "$cli" check --color=never "$W/bs.grt" >"$W/bs.txt" 2>&1; rc=$?
    legend=$(sed -n '/^how to read the records above/,/^$/p' "$W/bs.txt" | awk 'NR > 1 && NF {print $1}' | paste -sd' ' -)
    quoted=$(grep -E '^  [> ]  +[0-9]+ ' "$W/bs.txt")
    missing=
    for w in $legend; do
        case $w in
            GREENLET|shadow:) grep -q -- "$w" "$W/bs.txt" || missing="$missing $w" ;;
            *) printf '%s\n' "$quoted" | grep -q -- "$w" || missing="$missing $w" ;;
        esac
    done
    if [ $rc -eq 1 ] && [ -n "$legend" ] && [ -z "$missing" ] &&
            printf ' %s ' "$legend" | grep -q ' prof=ours .*use_tracing=0 .*inferred ' &&
            ! printf ' %s ' "$legend" | grep -q 'subject=' &&
            grep -q '^what was checked:$' "$W/bs.txt" && ! grep -q '^coverage:' "$W/bs.txt"; then
        gr_ok "check explains the words of the records it quotes, and only those ($legend)"
    else
        gr_bad "check's legend: exit $rc, legend '$legend', not quoted:$missing"; gr_show "$W/bs.txt"
    fi
    "$cli" check --color=never "$W/a.grt" >"$W/clean.txt" 2>&1
    if ! grep -q '^how to read' "$W/clean.txt" && grep -q '^what was checked:$' "$W/clean.txt"; then
        gr_ok "a clean report has no legend"
    else
        gr_bad "a clean report has a legend or no 'what was checked'"; gr_show "$W/clean.txt"
    fi
else
    gr_bad "record fixtures/switch_in_tracefunc.py"; gr_show "$W/bs.log"
fi
cat >"$W/own.py" <<'PY'
import greenlet
import greenreplay

greenreplay.start("own.grt")


def f():
    greenreplay.mark("in f")
    main.switch()


main = greenlet.getcurrent()
g = greenlet.greenlet(f)  # kept: suspended in f at exit
g.switch()
PY
if (cd "$W" && PYTHONPATH=$PYPATH "$GR_PY" own.py) >"$W/own.log" 2>&1; then
    "$cli" check --color=never "$W/own.grt" >"$W/own.txt" 2>&1; rc=$?
    "$cli" check --format json "$W/own.grt" >"$W/own.json" 2>&1
    # The recorder leaves its own frames (the stop at exit) out of the
    # trace in every mode: neither report names them, and the text has no
    # "(N frames of greenreplay's own left out)" line to show.
    if [ $rc -eq 0 ] && grep -q '^  t1 g2: f (own.py:7) > greenlet.greenlet.switch$' "$W/own.txt" &&
            ! grep -q '<greenreplay>\|greenreplay\._greenreplay\.stop' "$W/own.txt" &&
            ! grep -q "greenreplay's own left out" "$W/own.txt" &&
            ! grep -q '<greenreplay>/' "$W/own.json"; then
        gr_ok "open at stop lists the program's frames only (greenreplay's own are in no record)"
    else
        gr_bad "greenreplay's own frames in the text report: exit $rc"; gr_show "$W/own.txt"
    fi
else
    gr_bad "own.py did not run"; gr_show "$W/own.log"
fi

echo "$GR_NOK passed, $GR_NBAD failed$([ $NSKIP -gt 0 ] && echo ", $NSKIP skipped")"
[ "$GR_NBAD" -eq 0 ]
