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
#  - pyinstrument, austin, memray and scalene, where PY has them, pass
#    sampled_switches and conform/sampled_broken.py over each (its
#    greenlets' stacks put on the switching frame) fails with wrong_stack;
#    where PY lacks one, the reason is printed and its cells skipped;
#  - memray also passes fixtures/profilers/never_resumed.py: the recorder
#    leaves greenlet's loading to the program, so memray's dlopen hook sees
#    it (a recorder that loads greenlet first makes memray follow no
#    switch: both fail with wrong_stack).  A program that fails under
#    memray unrecorded too (`conform --no-record`: memray 1.17 is killed by
#    SIGSEGV on sampled_switches, as under `memray run
#    --trace-python-allocators`) is memray's own fault: reported, not
#    failed, and its broken variant is not run there;
#  - scalene also passes with its frames claimed adjacent and no stack
#    moved (GR_SAMPLED_FAULT=none): its broken variant claims that too, so
#    this shows its failure comes from the move; and conform/program_args.py
#    gets its arguments "--cpu -h --outfile x plain" under scalene (else it
#    exits with status 3: conform's scalene adapter puts them after "---");
#  - a launcher adapter's word "{script}" places the script before the
#    words after it (conform/launch_args.py wants "---" there, as scalene
#    does: program_args.py gets its arguments), and without it the
#    launcher refuses its words: error;
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

# Launcher words: "{script}" places the script, the words after it come
# before the script's arguments (conform/launch_args.py runs the program
# itself, as scalene does, and wants "---" there); without them the
# launcher refuses the words and conform gives an error.
"$GR_CLI" conform --profiler "$ADAPTERS/launch_args.py" --json "$GR_WORK/launch.json" \
    -- "$PY" "$ADAPTERS/program_args.py" --cpu -h --outfile x plain >"$GR_WORK/launch.out" 2>&1
rc1=$?
GR_LAUNCH_WORDS=plain "$GR_CLI" conform --profiler "$ADAPTERS/launch_args.py" \
    -- "$PY" "$ADAPTERS/program_args.py" --cpu -h --outfile x plain >"$GR_WORK/launch-plain.out" 2>&1
rc2=$?
if [ $rc1 -eq 0 ] && [ $rc2 -eq 2 ] && "$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert d["functions_checked"] == 2, d' "$GR_WORK/launch.json"; then
    gr_ok "stacks: a launcher's {script} word: the program gets its arguments after ---"
else
    gr_bad "stacks: launcher words: exit $rc1 (want 0), without {script} and --- exit $rc2 (want 2)"
    gr_show "$GR_WORK/launch.out" "$GR_WORK/launch-plain.out"
fi

# The sampling profilers themselves, where PY has them: right on
# sampled_switches (memray also on never_resumed), and failed by
# conform/sampled_broken.py (their stacks from a greenlet put on the
# switching frame); where PY lacks one, the reason conform --list gives.
list=$("$GR_CLI" conform --list --python "$PY" 2>/dev/null)
wrong_worker='import json, sys
d = json.load(open(sys.argv[1]))
assert any(x["kind"] == "wrong_stack" and x["function"] == "sampled_switches.py:worker" for x in d["differences"]), d'
for base in pyinstrument austin memray scalene; do
    if ! printf '%s\n' "$list" | awk -F'\t' -v b="$base" '$1 == b && $2 == "yes" { f = 1 } END { exit !f }'; then
        why=$(printf '%s\n' "$list" | awk -F'\t' -v b="$base" '$1 == b { print $3 }')
        echo "      ($base not available for $PY: ${why:-not listed}: its cells are skipped)"
        continue
    fi
    right="$prog"
    [ "$base" = memray ] && right="$prog $GR_ROOT/fixtures/profilers/never_resumed.py"
    bad="" own=""
    for p in $right; do
        "$GR_CLI" conform --profiler "$base" -- "$PY" "$p" >"$GR_WORK/$base.out" 2>&1 && continue
        if [ "$base" = memray ] && ! "$GR_CLI" conform --no-record --results "$GR_WORK/$base-unrecorded.json" \
                --profiler "$base" -- "$PY" "$p" >"$GR_WORK/$base-unrecorded.out" 2>&1; then
            own="$own $(basename "$p")"
            continue
        fi
        bad="$bad $(basename "$p")"
        break
    done
    if [ -n "$own" ] && [ -z "$bad" ]; then
        echo "      ($base fails unrecorded too, its own fault:$own; $(grep -m1 'conform:' "$GR_WORK/$base-unrecorded.out"))"
        continue
    fi
    if [ "$base" = scalene ] && [ -z "$bad" ]; then
        # the control: frames claimed adjacent, nothing moved (sampled_broken.py)
        GR_SAMPLED_FAULT=none GR_SAMPLED_BASE=$base "$GR_CLI" conform --profiler "$ADAPTERS/sampled_broken.py" \
            -- "$PY" "$prog" >"$GR_WORK/$base.out" 2>&1 || bad=" sampled_switches.py (frames claimed adjacent)"
    fi
    if [ "$base" = scalene ] && [ -z "$bad" ]; then
        # the program's arguments reach it, scalene's own options among them
        # (the adapter puts them after "---"); in a directory of its own,
        # where "--outfile x" taken by scalene would leave a file x
        mkdir -p "$GR_WORK/args"
        (cd "$GR_WORK/args" && "$GR_CLI" conform --profiler scalene -- "$PY" "$ADAPTERS/program_args.py" \
            --cpu -h --outfile x plain) >"$GR_WORK/$base.out" 2>&1 || bad=" program_args.py --cpu -h --outfile x plain"
        [ -e "$GR_WORK/args/x" ] && bad="$bad (scalene wrote x)"
    fi
    GR_SAMPLED_BASE=$base "$GR_CLI" conform --profiler "$ADAPTERS/sampled_broken.py" --json "$GR_WORK/$base.json" \
        -- "$PY" "$prog" >"$GR_WORK/$base-broken.out" 2>&1
    rc2=$?
    if [ -z "$bad" ] && [ $rc2 -eq 1 ] && "$PY" -c "$wrong_worker" "$GR_WORK/$base.json"; then
        extra=""
        [ "$base" = scalene ] && extra=" (and program_args.py with its arguments)"
        gr_ok "stacks: $base passes ${right//$GR_ROOT\//}$extra, its broken variant fails with wrong_stack"
    else
        gr_bad "stacks: $base: the right runs failed on:${bad:- none}; the broken variant exited $rc2"
        gr_show "$GR_WORK/$base.out" "$GR_WORK/$base-broken.out"
    fi
done

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
