#!/usr/bin/env bash
# tests/integration/continued_adversary.sh --python PY: adversarial programs against
# passive mode's continued switches (tracer/switches.c, "Continued
# switches"; docs/FORMAT.md §4).  Each tests/integration/programs/
# continued_*.py is recorded twice with PY and the self-check
# GREENREPLAY_VERIFY_CONTINUED=1 (greenlet asked at every continued switch):
# once by default (switch_stacks "needed") and once with
# GREENREPLAY_SWITCH_STACKS=every (the real stack at every switch).  Per
# program, one line each:
#   - the self-check found no continued switch naming the wrong greenlet
#     (META continued_mismatch 0), and the default recording made some
#     (continued_verified > 0; a program with a "# continued: none" header
#     is expected to make none, and says how many switches it made; on
#     3.12+ none is made: compat.h GR_CONTINUED_SWITCHES);
#   - `check --format json` gives the same verdict for both (status,
#     counts, each violation's rule, index and message);
#   - `diff` of the two shows the same structure (a continued switch
#     compares as the stack its records give, replay/repro/diff.c);
#   - the real stack at each switch that the default recording wrote as
#     continued agrees with the shadow: the "every" trace has no violation
#     at those indices.
# Program headers: "# requires: MOD" (skipped when PY cannot import it),
# "# record: --manual" (the program starts recording itself),
# "# continued: none ..." and "# known-failing: 3.N+ ..." (from CPython
# 3.N on the program shows a defect that was reported and is not fixed:
# its failures are printed as "FAIL (known: ...)" and still counted).
# One line per test, then "N passed, N failed[, N skipped]"; exit 1 if any
# failed.  GR_CONTINUED_PROGRAMS="a b" limits the run to those names
# (without continued_ and .py).
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
gr_script_init continued_adversary "$@"
PY=$GR_PY cli=$GR_CLI work=$GR_WORK progs=$GR_ROOT/tests/integration/programs
HOSTPY=/usr/bin/python3
nskip=0
pyminor=$("$PY" -c 'import sys; print(sys.version_info[1])' 2>/dev/null)
"$PY" -c 'import greenlet' 2>/dev/null || gr_skip_all "continued switches: greenlet not importable by $PY"

# json_verdict JSON: the verdict of one trace as one line per item.
json_verdict() {
    "$HOSTPY" -c '
import json, sys
doc = json.load(open(sys.argv[1]))
for t in doc.get("traces", []):
    print("status", t.get("status"))
    print("counts", json.dumps(t.get("counts"), sort_keys=True))
    for v in t.get("violations", []):
        print("violation", v.get("rule"), v.get("index"), v.get("message"))
' "$1"
}

# at_continued DUMP JSON: violations of JSON (the "every" trace) at the
# indices of DUMP's continued switches (the default trace), one a line.
at_continued() {
    "$HOSTPY" -c '
import json, sys
idx = set()
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) > 2 and f[1] in ("SWITCH", "THROW") and f[-1] == "continued" or " continued" in line and len(f) > 2 and f[1] in ("SWITCH", "THROW"):
        idx.add(int(f[0]))
doc = json.load(open(sys.argv[2]))
for t in doc.get("traces", []):
    for v in t.get("violations", []):
        if v.get("index") in idx:
            print(v.get("rule"), v.get("index"), v.get("message"))
' "$1" "$2"
}

meta() { sed -n "s/^# $2: //p" "$1" | head -n 1; }

for prog in "$progs"/continued_*.py; do
    # (continued_cases.py belongs to continued.sh)
    sed -n '1,12p' "$prog" | grep -q 'continued_adversary\.sh' || continue
    name=$(basename "$prog" .py)
    short=${name#continued_}
    if [ -n "${GR_CONTINUED_PROGRAMS:-}" ] && ! printf ' %s ' "$GR_CONTINUED_PROGRAMS" | grep -q " $short "; then
        continue
    fi
    if why=$(gr_missing_requirement "$PY" "$prog"); then :; else
        echo "SKIP  $name: $why"
        nskip=$((nskip + 1))
        continue
    fi
    manual=$(gr_header "$prog" record)
    known=$(gr_header "$prog" known-failing)
    bad() { gr_bad "$@"; }
    if [ -n "$known" ]; then
        since=$(printf '%s\n' "$known" | sed -n 's/^3\.\([0-9]*\)+.*/\1/p')
        if [ -n "$since" ] && [ -n "$pyminor" ] && [ "$pyminor" -ge "$since" ]; then
            bad() { gr_bad "(known: ${known}) $*"; }
        fi
    fi
    ok=1
    for mode in needed every; do
        # shellcheck disable=SC2086
        (cd "$GR_ROOT" && GREENREPLAY_VERIFY_CONTINUED=1 GREENREPLAY_SWITCH_STACKS=$mode \
            timeout --kill-after=10 300 "$cli" record $manual --root "$GR_ROOT" \
            -o "$work/$name-$mode.grt" -- "$PY" "$prog") >"$work/$name-$mode.log" 2>&1
        rc=$?
        if [ "$rc" -ne 0 ]; then
            gr_bad "$name ($mode): record exit $rc"
            gr_show "$work/$name-$mode.log"
            ok=0
            continue
        fi
        "$cli" dump "$work/$name-$mode.grt" >"$work/$name-$mode.dump" 2>&1
        "$cli" check --format json "$work/$name-$mode.grt" >"$work/$name-$mode.json" 2>&1
        json_verdict "$work/$name-$mode.json" >"$work/$name-$mode.verdict"
    done
    [ "$ok" = 1 ] || continue
    d=$work/$name-needed.dump e=$work/$name-every.dump
    verified=$(meta "$d" continued_verified) mismatch=$(meta "$d" continued_mismatch)
    switches=$(grep -cE '^ *[0-9]+ (SWITCH|THROW) ' "$d")
    if [ "$mismatch" != 0 ] || [ "$(meta "$e" continued_mismatch)" != 0 ]; then
        bad "$name: the self-check found ${mismatch:-?} continued switch(es) naming the wrong greenlet ($(meta "$d" continued_mismatch_first))"
    elif [ -z "$verified" ]; then
        gr_bad "$name: no continued_verified META: GREENREPLAY_VERIFY_CONTINUED did not reach the recorder"
    elif gr_header_present "$prog" continued; then
        if [ "$verified" = 0 ]; then
            gr_ok "$name: no continued switch, as expected ($switches switches: $(gr_header "$prog" continued))"
        else
            gr_ok "$name: self-check: $verified of $switches switches continued, all named the running greenlet"
        fi
    elif [ "$verified" -gt 0 ]; then
        gr_ok "$name: self-check: $verified of $switches switches continued, all named the running greenlet"
    elif [ -n "$pyminor" ] && [ "$pyminor" -ge 12 ]; then
        gr_ok "$name: no continued switch on 3.$pyminor ($switches switches: compat.h GR_CONTINUED_SWITCHES keeps them to 3.9-3.11)"
    else
        gr_bad "$name: no continued switch made ($switches switches): the program no longer tests them"
    fi
    if cmp -s "$work/$name-needed.verdict" "$work/$name-every.verdict"; then
        gr_ok "$name: same verdict with switch_stacks needed and every ($(sed -n 's/^status //p' "$work/$name-needed.verdict"))"
    else
        bad "$name: the verdict differs between switch_stacks needed (-) and every (+)"
        diff "$work/$name-needed.verdict" "$work/$name-every.verdict" | sed -n '1,12p' | sed 's/^/      | /'
    fi
    "$cli" diff "$work/$name-needed.grt" "$work/$name-every.grt" >"$work/$name.diff" 2>&1
    rc=$?
    if [ "$rc" -eq 0 ]; then
        gr_ok "$name: diff of the two recordings: same structure"
    else
        bad "$name: diff of the two recordings: exit $rc"
        sed -n '1,16p' "$work/$name.diff" | sed 's/^/      | /'
    fi
    at_continued "$d" "$work/$name-every.json" >"$work/$name.at"
    if [ ! -s "$work/$name.at" ]; then
        gr_ok "$name: the real stacks where the default recording continued agree with the shadow"
    else
        bad "$name: where the default recording wrote a continued switch, the real stack disagrees:"
        sed -n '1,6p' "$work/$name.at" | sed 's/^/      | /'
    fi
done
echo "$GR_NOK passed, $GR_NBAD failed, $nskip skipped"
[ "$GR_NBAD" -eq 0 ]
