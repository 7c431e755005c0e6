#!/usr/bin/env bash
# tests/integration/conform_stacks.sh [--python PY]: the sampled-stack
# comparison of `greenreplay conform` (results "stacks", docs/conform.md),
# with the test sampler tests/integration/conform/stacks_sampler.py (a
# thread reading the starting thread's frame chain):
#  - the right sampler passes on conform/sampled_switches.py in 20 runs in
#    a row (the false-alarm count is printed: it must be 0);
#  - sampled inside greenlets but put on the switching frame (fault
#    parent): fail, wrong_stack naming the greenlet's function;
#  - a sampled function that never ran (fault ghost): fail, never_ran;
#  - pyinstrument and austin, where PY has them, pass sampled_switches and
#    conform/sampled_broken.py (their greenlets' stacks put on the
#    switching frame) fails with wrong_stack;
#  - memray, where PY has it, passes sampled_switches and
#    fixtures/profilers/never_resumed.py: the recorder leaves greenlet's
#    loading to the program, so memray's dlopen hook sees it (a recorder
#    that loads greenlet first makes memray follow no switch: both fail
#    with wrong_stack).  A program that fails under memray unrecorded too
#    (`conform --no-record`: memray 1.17 is killed by SIGSEGV on
#    sampled_switches, as under `memray run --trace-python-allocators`)
#    is memray's own fault: reported, not failed;
#  - the austin and pyinstrument adapters parse their profilers' formats
#    (austin 3's FILE:FUNCTION:LINE, austin 1 and 2's FUNCTION (FILE);LN,
#    pyinstrument's frame identifiers), checked without the profilers.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
gr_script_init conform_stacks "$@"
PY=$GR_PY
ADAPTERS=$here/conform
cd "$GR_ROOT" || exit 2
if ! "$PY" -c 'import greenlet' 2>/dev/null; then
    gr_skip_all "greenlet is not importable by $PY"
fi

prog=$ADAPTERS/sampled_switches.py
alarms=0 runs=20 nsamp=0
for i in $(seq 1 $runs); do
    GR_STACKS_FAULT='' "$GR_CLI" conform --profiler "$ADAPTERS/stacks_sampler.py" --json "$GR_WORK/ok.json" \
        -- "$PY" "$prog" >"$GR_WORK/ok.out" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then
        alarms=$((alarms + 1))
        cp "$GR_WORK/ok.out" "$GR_WORK/alarm.out"
    fi
done
echo "      false alarms of the right sampler: $alarms in $runs runs"
if [ $alarms -eq 0 ]; then
    gr_ok "stacks: the right sampler passes $runs runs in a row"
else
    gr_bad "stacks: the right sampler failed $alarms of $runs runs"
    gr_show "$GR_WORK/alarm.out"
fi

GR_STACKS_FAULT=parent "$GR_CLI" conform --profiler "$ADAPTERS/stacks_sampler.py" --json "$GR_WORK/bad.json" \
    -- "$PY" "$prog" >"$GR_WORK/bad.out" 2>&1
rc=$?
if [ $rc -eq 1 ] && "$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
w = [x for x in d["differences"] if x["kind"] == "wrong_stack"]
assert w and all(x["kind"] == "wrong_stack" for x in d["differences"]), d["differences"]
assert any(x["function"] == "sampled_switches.py:worker" for x in w), w
assert any("run: worker" in g for x in w for g in x["greenlet"]), w' "$GR_WORK/bad.json"; then
    gr_ok "stacks: a greenlet's samples put on the switching frame: wrong_stack naming worker and its greenlets"
else
    gr_bad "stacks: fault parent: exit $rc"
    gr_show "$GR_WORK/bad.out"
fi

GR_STACKS_FAULT=ghost "$GR_CLI" conform --profiler "$ADAPTERS/stacks_sampler.py" --json "$GR_WORK/ghost.json" \
    -- "$PY" "$prog" >"$GR_WORK/ghost.out" 2>&1
rc=$?
if [ $rc -eq 1 ] && "$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert d["differences"] and all(x["kind"] == "never_ran" for x in d["differences"]), d["differences"]
assert all(":never_called:" in x["function"] for x in d["differences"]), d["differences"]' "$GR_WORK/ghost.json"; then
    gr_ok "stacks: a sampled function that never ran: never_ran"
else
    gr_bad "stacks: fault ghost: exit $rc"
    gr_show "$GR_WORK/ghost.out"
fi

# The sampling profilers themselves, where PY has them: right on
# sampled_switches, and failed by conform/sampled_broken.py (their stacks
# from a greenlet put on the switching frame).
avail=$("$GR_CLI" conform --list --python "$PY" 2>/dev/null | awk -F'\t' '$2 == "yes" { print $1 }')
for base in pyinstrument austin; do
    if ! printf '%s\n' "$avail" | grep -qx "$base"; then
        echo "      ($base not available for $PY: its cells are skipped)"
        continue
    fi
    "$GR_CLI" conform --profiler "$base" -- "$PY" "$prog" >"$GR_WORK/$base.out" 2>&1
    rc1=$?
    GR_SAMPLED_BASE=$base "$GR_CLI" conform --profiler "$ADAPTERS/sampled_broken.py" --json "$GR_WORK/$base.json" \
        -- "$PY" "$prog" >"$GR_WORK/$base-broken.out" 2>&1
    rc2=$?
    if [ $rc1 -eq 0 ] && [ $rc2 -eq 1 ] && "$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert any(x["kind"] == "wrong_stack" and x["function"] == "sampled_switches.py:worker" for x in d["differences"]), d' \
        "$GR_WORK/$base.json"; then
        gr_ok "stacks: $base passes sampled_switches, its broken variant fails with wrong_stack"
    else
        gr_bad "stacks: $base: exit $rc1, broken variant exit $rc2"
        gr_show "$GR_WORK/$base.out" "$GR_WORK/$base-broken.out"
    fi
done

if printf '%s\n' "$avail" | grep -qx memray; then
    bad="" own="" passed=0
    for p in "$prog" "$GR_ROOT/fixtures/profilers/never_resumed.py"; do
        if "$GR_CLI" conform --profiler memray -- "$PY" "$p" >"$GR_WORK/memray.out" 2>&1; then
            passed=$((passed + 1))
            continue
        fi
        if ! "$GR_CLI" conform --no-record --results "$GR_WORK/memray-unrecorded.json" --profiler memray \
                -- "$PY" "$p" >"$GR_WORK/memray-unrecorded.out" 2>&1; then
            own="$own $(basename "$p")"
            continue
        fi
        bad="$bad $(basename "$p")"
        break
    done
    if [ -n "$own" ]; then
        echo "      (memray fails unrecorded too, its own fault:$own; $(grep -m1 'conform:' "$GR_WORK/memray-unrecorded.out"))"
    fi
    if [ -n "$bad" ]; then
        gr_bad "stacks: memray fails$bad"
        gr_show "$GR_WORK/memray.out"
    elif [ "$passed" -gt 0 ]; then
        gr_ok "stacks: memray passes sampled_switches and never_resumed (it follows the switches) where it runs unrecorded"
    fi
else
    echo "      (memray not available for $PY: its cells are skipped)"
fi

if "$PY" - "$GR_ROOT/tracer/greenreplay/profilers" <<'PYEOF' >"$GR_WORK/parse.out" 2>&1
import importlib.util, os, sys
def load(name):
    s = importlib.util.spec_from_file_location("t_" + name, os.path.join(sys.argv[1], name + ".py"))
    m = importlib.util.module_from_spec(s)
    s.loader.exec_module(m)
    return m
a = load("austin")
fr, n = a.parse_line("P42;T0:7f12;/w/p.py:<module>:40;/w/p.py:main:30;/w/p.py:busy:12 1000\n")
assert [(f["file"], f["name"], f["line"]) for f in fr] == [
    ("/w/p.py", "<module>", 40), ("/w/p.py", "main", 30), ("/w/p.py", "busy", 12)], fr
fr, n = a.parse_line("Thread 0x7f12;<module> (/w/p.py);L40;main (/w/p.py);L30 500\n")
assert [(f["file"], f["name"], f["line"]) for f in fr] == [("/w/p.py", "<module>", 40), ("/w/p.py", "main", 30)], fr
assert a.parse_line("# austin: 3.7.0\n") is None
p = load("pyinstrument")
f = p.parse_identifier("busy\x00/w/p.py\x0010\x01l12\x01cK")
assert f == {"file": "/w/p.py", "line": 12, "name": "busy", "first": 10}, f
PYEOF
then
    gr_ok "stacks: austin's formats (3; 1 and 2) and pyinstrument's frame identifiers parse"
else
    gr_bad "stacks: adapter parsers"
    gr_show "$GR_WORK/parse.out"
fi
gr_tally
