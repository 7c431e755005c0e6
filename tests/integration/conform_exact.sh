#!/usr/bin/env bash
# tests/integration/conform_exact.sh [--python PY]: what `greenreplay
# conform` compares exactly, and that it says so (docs/conform.md).
#  - executed lines: a stackless line tracer passes the greenlet bridge
#    tests/integration/conform/await_bridge.py; coverage's default tracer
#    fails it, naming the lines after the resumed awaits (coverage.py issue
#    2245), where coverage loses them (its C and Python tracers: 6.5 on the
#    host, 7.6 on trixie), and its sys.monitoring core (7.6 on trixie's
#    3.13) passes it; lines_broken.py
#    shows each line check fail: missing_lines, extra_lines (a branch not
#    taken; a function that never ran), no_such_line (past the end);
#  - a program that starts the profiler itself gets no reference run, and
#    the verdict says exact lines were not compared;
#  - primitive calls: two greenlets running one recursive function
#    interleaved (interleaved_recursion.py) fail cprofile (one stack per
#    thread: the second greenlet's outermost call counted as recursive) and
#    pass yappi's greenlet backend;
#  - caller edges: a program without greenlets passes cprofile with its
#    edges compared; cprofile fails spawn_bridge.py on callers alone;
#    counts_broken.py shows primitive_calls and caller_calls fail;
#  - every verdict prints "compared: ...; not compared: ..." and --json
#    holds them as "compared" and "not_compared".
# One line per test, then "N passed, N failed".  Exit 1 if any failed.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
gr_script_init conform_exact "$@"
PY=$GR_PY
A=$here/conform
cd "$GR_ROOT" || exit 2
export GR_PROFILERS_DIR=$GR_ROOT/tracer/greenreplay/profilers

# run NAME ADAPTER PROGRAM [ENV=VALUE...]: conform's output in $GR_WORK/NAME.out, status in $rc
run() {
    local name=$1 adapter=$2 prog=$3
    shift 3
    last=$name
    env "$@" timeout 120 "$GR_CLI" conform --profiler "$adapter" --json "$GR_WORK/$name.json" -- "$PY" "$prog" \
        >"$GR_WORK/$name.out" 2>"$GR_WORK/$name.err"
    rc=$?
}
# expect TEST STATUS PATTERN...: the last run's status and every (grep -E)
# pattern in its output
expect() {
    local name=$1 want=$2 p out=$GR_WORK/$last.out err=$GR_WORK/$last.err
    shift 2
    if [ "$rc" -ne "$want" ]; then
        gr_bad "$name: exit $rc, expected $want"
        gr_show "$out" "$err"
        return
    fi
    for p in "$@"; do
        if ! grep -Eq -- "$p" "$out"; then
            gr_bad "$name: no line matching: $p"
            gr_show "$out" "$err"
            return
        fi
    done
    gr_ok "$name"
}
has() { "$PY" -c "import $1" 2>/dev/null; }

if ! has greenlet; then
    gr_skip_all "greenlet is not importable by $PY"
fi

# Executed lines.
run exact "$A/lines_exact.py" "$A/await_bridge.py"
expect "lines: a stackless line tracer passes the bridge, exactly" 0 \
    '^compared: exact executed lines of [1-9][0-9]* functions'
for fault in lost extra eof never; do
    run "broken_$fault" "$A/lines_broken.py" "$A/await_bridge.py" GR_LINES_FAULT=$fault
    case $fault in
        lost) expect "lines: a lost line is missing_lines" 1 '^missing_lines await_bridge.py:handler: line 51 of handler ran' ;;
        extra) expect "lines: a branch not taken is extra_lines" 1 '^extra_lines await_bridge.py:orm_work: line 36 of orm_work' ;;
        eof) expect "lines: a line past the end is no_such_line" 1 '^no_such_line await_bridge.py: line 1054 recorded as executed in await_bridge.py, which has 54 lines' ;;
        never) expect "lines: a function that never ran is extra_lines" 1 '^extra_lines await_bridge.py:never_called: line 44 of never_called' ;;
    esac
done
if has coverage; then
    cv=$("$PY" -c 'import coverage; print(coverage.__version__)')
    for a in coverage coverage-py; do
        run "bridge_$a" "$a" "$A/await_bridge.py"
        if [ "$rc" -eq 3 ]; then
            echo "SKIP  $a: $(cat "$GR_WORK/bridge_$a.out")"
            continue
        fi
        # The C and Python tracers lose them: coverage 5.1 (bullseye's 3.9),
        # 6.5 (the host's 3.11, also handler's lines 49-51), 7.6 (trixie's
        # 3.13, the same).
        expect "lines: $a $cv fails the bridge, naming the lines after the resumed awaits" 1 \
            '^missing_lines await_bridge.py:greenlet_spawn: line 26 of greenlet_spawn ran'
    done
    # coverage 7.4+ on 3.12+: the sys.monitoring core records them
    # (coverage 7.6.0 on trixie's 3.13).
    run bridge_sysmon coverage-monitoring "$A/await_bridge.py"
    if [ "$rc" -eq 3 ]; then
        echo "SKIP  coverage-monitoring: $(cat "$GR_WORK/bridge_sysmon.out")"
    else
        expect "lines: coverage-monitoring $cv records the lines after the resumed awaits" 0 \
            '^compared: exact executed lines of [1-9][0-9]* functions'
    fi
    run manual coverage fixtures/profilers/enabled_while_suspended.py
    expect "lines: manual start, no reference run, and the verdict says so" 0 \
        'not compared: .*exact lines \(no reference run: the program starts the profiler itself'
else
    echo "SKIP  coverage: not importable by $PY"
fi

# Primitive calls and caller edges.
run rec_cprofile cprofile "$A/interleaved_recursion.py"
expect "primitive: cprofile counts the second greenlet's outermost call as recursive" 1 \
    '^primitive_calls interleaved_recursion.py:descend: the profiler counts 1 primitive call of descend \(line 11\), the recording 2'
if has yappi; then
    run rec_yappi yappi "$A/interleaved_recursion.py"
    if [ "$rc" -eq 2 ] && grep -q "displaced the recorder" "$GR_WORK/rec_yappi.err"; then
        # yappi 1.0 (bullseye) writes the thread's profile function directly
        # (docs/conform.md): no ground truth, an error.
        echo "SKIP  yappi: $(head -1 "$GR_WORK/rec_yappi.err")"
    else
        expect "primitive: yappi's greenlet backend counts them right" 0 \
            '^compared: total calls of 4 functions, primitive calls of 4 functions, 3 caller edges'
    fi
fi
run plain cprofile "$A/no_greenlets.py"
expect "callers: cprofile passes a program without greenlets, its edges compared" 0 \
    '^compared: total calls of [0-9]+ functions, primitive calls of [0-9]+ functions, [1-9][0-9]* caller edges' \
    'not compared: .*times'
run bridge_cprofile cprofile fixtures/profilers/spawn_bridge.py
if [ "$rc" -eq 1 ] && ! grep -Eq '^(blind_spot|miscount|primitive_calls) ' "$GR_WORK/bridge_cprofile.out"; then
    expect "callers: cprofile fails spawn_bridge on its callers alone" 1 \
        '^caller_calls spawn_bridge.py:combine: the profiler counts 0 calls of combine \(line [0-9]+\) from spawn_bridge.py:sync_work'
else
    gr_bad "callers: cprofile on spawn_bridge: exit $rc, or a difference other than caller_calls"
    gr_show "$GR_WORK/bridge_cprofile.out"
fi
run broken_primitive "$A/counts_broken.py" "$A/no_greenlets.py" GR_COUNTS_FAULT=primitive
expect "primitive: one primitive call short is primitive_calls" 1 '^primitive_calls no_greenlets.py:square: the profiler counts 3 primitive calls of square'
run broken_callers "$A/counts_broken.py" "$A/no_greenlets.py" GR_COUNTS_FAULT=callers
expect "callers: a caller named wrong is caller_calls, both ways" 1 \
    '^caller_calls no_greenlets.py:square: the profiler counts 0 calls of square \(line 7\) from no_greenlets.py:squares' \
    '^caller_calls no_greenlets.py:square: .*which the recording never saw call it'

# --json: what was compared.
if "$PY" - "$GR_WORK/plain.json" "$GR_WORK/exact.json" <<'PYEOF'; then
import json, sys
for path in sys.argv[1:]:
    d = json.load(open(path))
    assert isinstance(d["compared"], list) and d["compared"], d
    assert isinstance(d["not_compared"], list), d
plain = json.load(open(sys.argv[1]))
assert any("caller edge" in x for x in plain["compared"]), plain["compared"]
assert "times" in plain["not_compared"], plain["not_compared"]
PYEOF
    gr_ok "--json: compared and not_compared"
else
    gr_bad "--json: compared and not_compared"
fi
gr_tally
