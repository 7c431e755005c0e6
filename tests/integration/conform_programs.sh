#!/usr/bin/env bash
# tests/integration/conform_programs.sh --python PY: `greenreplay conform
# --profiler cprofile` on programs that enable cProfile profilers of their
# own (docs/conform.md, "A program with profilers of its own"), against
# `greenreplay check`'s rule attribution on the same trace and against what
# the program's own pstats print.
#  - per-request cProfile middleware on a loopback gevent server, 8
#    clients x 5 requests, interleaving (tests/integration/programs/
#    profiler_middleware.py): exit 1, cause "program"; the profilers not
#    "right" are exactly those check finds missed or foreign calls for;
#    the summary's count of differences says they are functions of N
#    profilers whose lines are above (not one line each);
#    each profiler's count of compute() is check's own+foreign and the
#    request's own pstats count; no profiler "wrong"; folded text;
#  - the same without interleaving: pass, 40 profilers right;
#  - the per-greenlet design (greenlet.settrace switches the profilers):
#    pass, 4 profilers right;
#  - a broken adapter that hands each profiler's counts to another id
#    (conform/profilers_swapped.py) on the interleaving middleware: exit 1,
#    cause "profiler", a blind_spot or miscount of compute().
# cProfile changes the profile slot on 3.9-3.11 only (3.12+ runs it on
# sys.monitoring: no HOOK, and the program's own enable() is refused while
# the adapter's profiler runs): skipped on 3.12+.
# One line per test, then "N passed, N failed".  Exit 1 if any failed.
set -u
. "$(dirname "$0")/lib.sh"
gr_script_init conform_programs "$@"
PY=$GR_PY work=$GR_WORK
progs=$GR_ROOT/tests/integration/programs
export GR_PROFILERS_DIR=$GR_ROOT/tracer/greenreplay/profilers
"$PY" -c 'import gevent' 2>/dev/null || gr_skip_all "conform_programs: gevent is not importable by $PY"
"$PY" -c 'import sys; sys.exit(sys.version_info >= (3, 12))' ||
    gr_skip_all "conform_programs: cProfile runs on sys.monitoring on this Python (no profile slot to share)"

# conf NAME ADAPTER PROGRAM [ARG]: conform into $work/NAME.{json,out,err,grt,rc},
# then check's JSON of that trace into $work/NAME.check.json.
conf() {
    local n=$work/$1 adapter=$2 prog=$3
    shift 3
    (cd "$progs" && timeout 120 "$GR_CLI" conform --profiler "$adapter" --json "$n.json" -o "$n.grt" \
        -- "$PY" "$prog.py" "$@") >"$n.out" 2>"$n.err"
    echo $? >"$n.rc"
    "$GR_CLI" check --format json "$n.grt" >"$n.check.json" 2>/dev/null
}

# agree NAME: conform's profilers against check's and the program's pstats
# lines ("request K seen=N"); prints "ok" or what differs.
agree() {
    "$PY" - "$work/$1" <<'PYEOF'
import json, sys
n = sys.argv[1]
conf = json.load(open(n + ".json"))
doc = json.load(open(n + ".check.json"))
chk = doc["traces"][0]["profilers"] if isinstance(doc, dict) else doc[0]["profilers"]
out = [l.split() for l in open(n + ".out") if l.startswith("request ")]
def fn(a, which, name):
    return sum(f["count"] for f in a[which + "_functions"]
               if f["function"] and f["function"].split(" ")[0] == name)
adapter = {int(x["function"][1:]) for x in conf["notes"] if x["kind"] == "not_compared"}
bad = {a["id"] for a in chk if (a["missed"] or a["foreign"]) and a["id"] not in adapter}
mis = {p["id"] for p in conf["profilers"] if p["status"] != "right"}
counted = {p["id"]: sum(f["counted"] for f in p["functions"] if f["function"].endswith(":compute"))
           for p in conf["profilers"]}
given = {a["id"]: fn(a, "own", "compute") + fn(a, "foreign", "compute") for a in chk if a["id"] not in adapter}
pstats = {int(w[1]): int(w[2].split("=")[1]) for w in out}
order = sorted(counted)
problems = []
if bad != mis:
    problems.append("not right: conform %s, check %s" % (sorted(mis), sorted(bad)))
if counted != given:
    problems.append("compute: conform %s, check %s" % (counted, given))
if [counted[i] for i in order] != [pstats[k] for k in sorted(pstats)]:
    problems.append("compute: conform %s, pstats %s" % ([counted[i] for i in order], pstats))
if len(conf["profilers"]) != len(pstats):
    problems.append("%d profilers compared, %d requests" % (len(conf["profilers"]), len(pstats)))
if any(p["status"] == "wrong" for p in conf["profilers"]):
    problems.append("a profiler wrong")
print("; ".join(problems) or "ok %d" % len(mis))
PYEOF
}

field() {
    "$PY" -c 'import json, sys; print(eval(sys.argv[2], {"d": json.load(open(sys.argv[1]))}))' "$work/$1.json" "$2"
}

conf mw cprofile profiler_middleware interleave
got=$(agree mw)
line=$(grep -n '^def profiled' "$progs/profiler_middleware.py" | cut -d: -f1)
n=${got#ok }
if [ "$(cat "$work/mw.rc")" = 1 ] && [ "${got%% *}" = ok ] && [ "$n" -ge 1 ] &&
   [ "$(field mw 'd["cause"], d["verdict"]')" = "('program', 'fail')" ] &&
   { grep -q "^misattributed: $n of 40 cprofile (cProfile.Profile) profilers enabled in profiled (profiler_middleware.py:$line) counted what they were given, which is not their owner's work" "$work/mw.out" ||
     { [ "$n" -le 3 ] && grep -q "^misattributed P[0-9]* " "$work/mw.out"; }; } &&
   grep -q "^why: $n of 40 profilers of the program are not their owner's numbers: each counted what it was given" "$work/mw.out"; then
    gr_ok "middleware, interleaving: fail (cause program), $n of 40 misattributed as check finds them; each profiler's compute() count is check's own+foreign and its request's pstats"
else
    gr_bad "middleware, interleaving: exit $(cat "$work/mw.rc"), agreement: $got"
    gr_show "$work/mw.out" "$work/mw.err"
fi
# its summary counts differences (one per profiler and function, as in
# --json) while the lines above are one per profiler or group: it says so
nd=$(field mw 'len(d["differences"])')
np=$(field mw 'len({x["profiler_id"] for x in d["differences"]})')
if grep -q "^conform: .*: fail, [0-9]* functions checked, $nd differences: functions miscounted by $np profilers of the program (their lines above; --json lists each function)$" "$work/mw.out"; then
    gr_ok "middleware, interleaving: the summary's $nd differences are said to be functions of $np profilers, whose lines are above"
else
    gr_bad "middleware, interleaving: the summary does not say what its $nd differences are ($np profilers)"
    gr_show "$work/mw.out"
fi

conf seq cprofile profiler_middleware sequential
got=$(agree seq)
if [ "$(cat "$work/seq.rc")" = 0 ] && [ "$got" = "ok 0" ] &&
   grep -q "^right: 40 of 40 cprofile (cProfile.Profile) profilers enabled in profiled (profiler_middleware.py:$line) counted their owner's calls, and only those" "$work/seq.out" &&
   [ "$(field seq 'd["verdict"], d["cause"], len(d["profilers"])')" = "('pass', None, 40)" ]; then
    gr_ok "middleware, sequential: pass, 40 profilers right, as check finds them"
else
    gr_bad "middleware, sequential: exit $(cat "$work/seq.rc"), agreement: $got"
    gr_show "$work/seq.out" "$work/seq.err"
fi

conf pg cprofile profiler_per_greenlet
if [ "$(cat "$work/pg.rc")" = 0 ] && grep -q "^right: 4 of 4 cprofile (cProfile.Profile) profilers enabled in request " "$work/pg.out" &&
   [ "$(field pg '[p["status"] for p in d["profilers"]]')" = "['right', 'right', 'right', 'right']" ]; then
    gr_ok "per-greenlet profilers (greenlet.settrace): pass, 4 right"
else
    gr_bad "per-greenlet profilers: exit $(cat "$work/pg.rc")"
    gr_show "$work/pg.out" "$work/pg.err"
fi

conf swapped "$GR_ROOT/tests/integration/conform/profilers_swapped.py" profiler_middleware interleave
if [ "$(cat "$work/swapped.rc")" = 1 ] && [ "$(field swapped 'd["cause"]')" = profiler ] &&
   [ "$(field swapped 'any(x["kind"] in ("blind_spot", "miscount") and x["function"].endswith(":compute") for x in d["differences"])')" = True ] &&
   grep -q "^why: [0-9]* of 40 profilers of the program counted other than the recording delivered to them (the profiler's fault)" "$work/swapped.out"; then
    gr_ok "broken adapter (each profiler's counts under another id): fail, cause profiler, compute() miscounted"
else
    gr_bad "broken adapter (profilers swapped): exit $(cat "$work/swapped.rc")"
    gr_show "$work/swapped.out" "$work/swapped.err"
fi

gr_tally
