#!/usr/bin/env bash
# tests/integration/attribution.sh --python PY: check's attribution rule
# (docs/RULES.md) on programs that use their own profilers the ways users
# do (tests/integration/programs/profiler_*.py), against what those
# profilers report themselves.
#  - per-request cProfile middleware on a loopback gevent server, 8
#    clients x 5 requests (profiler_middleware.py): interleaving, each
#    request's pstats count of compute() equals what check says its
#    profiler saw of compute (own + foreign), its own compute() is either
#    seen or missed, the finding counts the profilers that missed their
#    owner's calls, and --fail-on attribution makes it exit 1; without
#    interleaving (sequential), no finding, 40 profilers listed clean.
#  - a profiler enabled in one greenlet and disabled in another: foreign
#    calls of the other greenlet, as many as its pstats show.
#  - a pyinstrument-style sys.setprofile profiler started and stopped in
#    one request greenlet: the other request's calls foreign, as many as
#    the profiler recorded (every Python version).
#  - threading.setprofile with greenlets on 3 threads: one thread-wide
#    profiler, installed 3 times, clean.
#  - nested cProfile profilers: the outer one missed the block (the inner
#    got it) and what followed (none), as its pstats show.
#  - an APM-style sys.setprofile chain calling the previous profiler:
#    clean, the APM's profiler chains the base one.
#  - a per-greenlet design (greenlet.settrace switches the profilers):
#    clean, every profiler listed, each request's pstats count its own
#    compute once; the same bytes recorded twice.
# cProfile changes the profile slot on 3.9-3.11 only (3.12+ runs it on
# sys.monitoring, no HOOK): its tests are skipped on 3.12+.
# One line per test, then "N passed, N failed".  Exit 1 if any failed.
set -u
. "$(dirname "$0")/lib.sh"
gr_script_init attribution "$@"
PY=$GR_PY work=$GR_WORK
progs=$GR_ROOT/tests/integration/programs
"$PY" -c 'import gevent' 2>/dev/null || gr_skip_all "attribution: gevent is not importable by $PY"
cprofile_slot=$("$PY" -c 'import sys; print(int(sys.version_info < (3, 12)))')

# rec NAME [ARG]: record programs/NAME.py [ARG] into $work/NAME[-ARG].grt,
# its output in .out, check's text in .check (exit in .crc), JSON in .json.
rec() {
    local tr=$work/$1${2:+-$2}
    (cd "$progs" && timeout 120 "$GR_CLI" record -o "$tr.grt" -- "$PY" "$1.py" ${2:+"$2"}) >"$tr.out" 2>"$tr.err"
    "$GR_CLI" check "$tr.grt" >"$tr.check" 2>&1
    echo $? >"$tr.crc"
    "$GR_CLI" check --format json "$tr.grt" >"$tr.json" 2>/dev/null
}

# profilers FILE.json PYTHON-EXPR: evaluate EXPR with `p` the trace's
# profiler list (each a dict of check's JSON) and `fn(a, list, name)` the
# count of function NAME in a's list ("own", "missed", "foreign").
profilers() {
    "$PY" - "$1" "$2" <<'PYEOF'
import json, sys
doc = json.load(open(sys.argv[1]))
p = doc["traces"][0]["profilers"] if isinstance(doc, dict) else doc[0]["profilers"]
def fn(a, which, name):
    return sum(f["count"] for f in a[which + "_functions"]
               if f["function"] and f["function"].split(" ")[0] == name)
print(eval(sys.argv[2]))
PYEOF
}

if [ "$cprofile_slot" = 1 ]; then
    rec profiler_middleware interleave
    tr=$work/profiler_middleware-interleave
    # request K seen=N (pstats) against P(K+1) of check
    got=$(profilers "$tr.json" "' '.join('request %d seen=%d' % (a['id'] - 1, fn(a, 'own', 'compute') + fn(a, 'foreign', 'compute')) for a in p)")
    want=$(grep '^request ' "$tr.out" | tr '\n' ' ' | sed 's/ $//')
    whole=$(profilers "$tr.json" "all(fn(a, 'own', 'compute') + fn(a, 'missed', 'compute') == 1 for a in p) and len(p) == 40")
    nmissed=$(profilers "$tr.json" "sum(a['missed'] > 0 for a in p)")
    lacking=$(profilers "$tr.json" "sum(fn(a, 'own', 'compute') == 0 for a in p)")
    line=$(grep -n '^def profiled' "$progs/profiler_middleware.py" | cut -d: -f1)
    if [ "$got" = "$want" ] && [ -n "$want" ] && [ "$whole" = True ] && [ "$nmissed" -ge 1 ] &&
       grep -q "attribution at event [0-9]* (t1 g[0-9]*): $nmissed of 40 cprofile profilers (cProfile.Profile) enabled in profiled (profiler_middleware.py:$line) missed Python calls of their owner" "$tr.check" &&
       [ "$(cat "$tr.crc")" = 0 ]; then
        gr_ok "middleware, interleaving: 40 profilers; each request's pstats count of compute() is check's own+foreign; $lacking lack their own compute(), $nmissed of 40 missed their owner's calls (one finding, advisory)"
    else
        gr_bad "middleware, interleaving: check '$got' vs pstats '$want', whole=$whole, $nmissed missed, exit $(cat "$tr.crc")"
        gr_show "$tr.check" "$tr.err"
    fi
    "$GR_CLI" check --fail-on attribution "$tr.grt" >/dev/null 2>&1
    rc=$?
    "$GR_CLI" check --html "$work/mw.html" "$tr.grt" >/dev/null 2>&1
    if [ "$rc" = 1 ] && grep -q "program profilers (attribution): 40;" "$work/mw.html" &&
       grep -q "P40 cprofile (cProfile.Profile)" "$work/mw.html"; then
        gr_ok "middleware, interleaving: --fail-on attribution exits 1; the HTML report lists the 40 profilers"
    else
        gr_bad "middleware, interleaving: --fail-on attribution exit $rc (want 1), or the HTML report lacks the profiler list"
    fi

    rec profiler_middleware sequential
    tr=$work/profiler_middleware-sequential
    got=$(profilers "$tr.json" "' '.join('request %d seen=%d' % (a['id'] - 1, fn(a, 'own', 'compute')) for a in p)")
    want=$(grep '^request ' "$tr.out" | tr '\n' ' ' | sed 's/ $//')
    clean=$(profilers "$tr.json" "len(p) == 40 and all(a['missed'] == 0 and a['foreign'] == 0 and fn(a, 'own', 'compute') == 1 for a in p)")
    if [ "$got" = "$want" ] && [ "$clean" = True ] && ! grep -q "^(not failing) attribution" "$tr.check" &&
       grep -q "program profilers (attribution): 40; 0 missed calls of their owner, 0 counted other greenlets' calls" "$tr.check"; then
        gr_ok "middleware, sequential: no finding; 40 profilers listed clean, each saw its own compute() once, as its pstats"
    else
        gr_bad "middleware, sequential: check '$got' vs pstats '$want', clean=$clean"
        gr_show "$tr.check" "$tr.err"
    fi

    rec profiler_handoff
    tr=$work/profiler_handoff
    got=$(profilers "$tr.json" "'work_b seen=%d' % fn(p[0], 'foreign', 'work_b') if len(p) == 1 and p[0]['missed'] == 0 else 'wrong'")
    if [ "$got" = "$(cat "$tr.out")" ] &&
       grep -q "P1, a cprofile profiler (cProfile.Profile) enabled in a (profiler_handoff.py:[0-9]*), counted 2 Python calls of other greenlets as its own (first g[0-9]*: b (profiler_handoff.py:[0-9]*) 1, work_b" "$tr.check"; then
        gr_ok "enabled in one greenlet, disabled in another: the other's calls foreign ($got, as its pstats)"
    else
        gr_bad "enabled in one greenlet, disabled in another: check '$got', program '$(cat "$tr.out")'"
        gr_show "$tr.check" "$tr.err"
    fi

    rec profiler_nested
    tr=$work/profiler_nested
    got=$(profilers "$tr.json" "'outer block=%d after=%d' % (fn(p[0], 'own', 'block'), fn(p[0], 'own', 'after'))")
    if [ "$got" = "$(cat "$tr.out")" ] &&
       grep -q "P1, a cprofile profiler (cProfile.Profile) enabled in <module> (profiler_nested.py:1), missed 2 Python calls of its thread t1 (thread-wide) while enabled but not installed (block (profiler_nested.py:[0-9]*) 1, after (profiler_nested.py:[0-9]*) 1); P2 got 1, no profiler of the program was installed for 1" "$tr.check"; then
        gr_ok "nested profilers: the outer one missed the block (P2 got it) and what followed ($got, as its pstats)"
    else
        gr_bad "nested profilers: check '$got', program '$(cat "$tr.out")'"
        gr_show "$tr.check" "$tr.err"
    fi

    rec profiler_per_greenlet
    tr=$work/profiler_per_greenlet
    got=$(profilers "$tr.json" "' '.join('request %d compute=%d' % (a['id'] - 1, fn(a, 'own', 'compute')) for a in p if not a['missed'] and not a['foreign'])")
    want=$(tr '\n' ' ' <"$tr.out" | sed 's/ $//')
    (cd "$progs" && timeout 120 "$GR_CLI" record -o "$work/again.grt" -- "$PY" profiler_per_greenlet.py) >/dev/null 2>&1
    if [ "$got" = "$want" ] && [ "$(cat "$tr.crc")" = 0 ] && ! grep -q "^(not failing) attribution" "$tr.check" &&
       [ "$(grep -c '^  P[0-9]* cprofile .*: clean$' "$tr.check")" = 4 ] && cmp -s "$tr.grt" "$work/again.grt"; then
        gr_ok "per-greenlet profilers (greenlet.settrace): clean, 4 listed, each saw its own compute() ($want); the same bytes twice"
    else
        gr_bad "per-greenlet profilers: check '$got', program '$want', exit $(cat "$tr.crc")"
        gr_show "$tr.check" "$tr.err"
    fi
else
    echo "SKIP  cProfile programs: on $("$PY" -c 'import sys; print(sys.version.split()[0])') cProfile runs on sys.monitoring and changes no profile slot (no HOOK)"
fi

rec profiler_setprofile_request
tr=$work/profiler_setprofile_request
got=$(profilers "$tr.json" "'work_b in sampler=%d' % fn(p[0], 'foreign', 'work_b') if len(p) == 1 and not p[0]['thread_wide'] and p[0]['kind'] == 'function' else 'wrong'")
if [ "$got" = "$(cat "$tr.out")" ] && [ "$got" != "work_b in sampler=0" ] &&
   grep -q "P1, a function profiler (sampler (profiler_setprofile_request.py:[0-9]*)) enabled in handle_a (profiler_setprofile_request.py:[0-9]*), counted [0-9]* Python calls\{0,1\} of other greenlets as its own" "$tr.check"; then
    gr_ok "sys.setprofile inside one request greenlet: the other request's calls foreign ($got, as the profiler recorded)"
else
    gr_bad "sys.setprofile inside one request greenlet: check '$got', program '$(cat "$tr.out")'"
    gr_show "$tr.check" "$tr.err"
fi

rec profiler_threads
tr=$work/profiler_threads
if grep -q "^  P1 function (counter (profiler_threads.py:[0-9]*)) owner t[0-9]* (thread-wide) enabled in Thread._bootstrap_inner (<stdlib>/threading.py:[0-9]*): installed 3x, .*missed 0: clean$" "$tr.check" &&
   ! grep -q "^(not failing) attribution" "$tr.check"; then
    gr_ok "threading.setprofile with greenlets on 3 threads: one thread-wide profiler, installed 3 times, clean"
else
    gr_bad "threading.setprofile with greenlets on 3 threads"
    gr_show "$tr.check" "$tr.err"
fi

rec profiler_apm_chain
tr=$work/profiler_apm_chain
if grep -q "^  P2 function (install_apm.<locals>.apm (profiler_apm_chain.py:[0-9]*)) owner t1 (thread-wide) enabled in install_apm (profiler_apm_chain.py:[0-9]*) chains P1: .*: clean$" "$tr.check" &&
   grep -q "^  P1 function (base (profiler_apm_chain.py:[0-9]*)) .*missed 0: clean$" "$tr.check" &&
   ! grep -q "^(not failing) attribution" "$tr.check"; then
    gr_ok "APM-style chain calling the previous profiler: the chain is seen, base missed nothing, clean"
else
    gr_bad "APM-style chain calling the previous profiler"
    gr_show "$tr.check" "$tr.err"
fi

gr_tally
