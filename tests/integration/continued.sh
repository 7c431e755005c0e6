#!/usr/bin/env bash
# tests/integration/continued.sh --python PY: passive mode's continued
# switches (docs/FORMAT.md section 4, state bit 9).  Each case of
# tests/integration/programs/continued_cases.py is recorded with
# switch_stacks="needed" (the default) and "every"; the SWITCH/THROW
# records, in order, must be exactly the expected kinds:
#   N new greenlet (real stack), R real stack, D real stack, origin dead,
#   C continued SWITCH, c continued THROW, r real THROW;
# with "every" (and on 3.12+) no switch is continued (C -> R, c -> r); META
# switch_stacks says so; both traces check clean; two recordings of a case
# are identical (whether a switch is continued never depends on addresses).
# One line per test, then "N passed, N failed".  Exit 1 if any failed.
set -u
. "$(dirname "$0")/lib.sh"
gr_script_init continued "$@"
PY=$GR_PY BUILD=${BUILD:-$GR_ROOT/build} work=$GR_WORK

"$PY" -c 'import greenlet' 2>/dev/null || gr_skip_all "continued: greenlet is not importable by $PY"
# greenlet < 0.4.15 moves no switch witness: greenlet is asked at every event, nothing is continued.
"$PY" -c 'import sys, greenlet; v = tuple(int(x) for x in greenlet.__version__.split(".")[:3]); sys.exit(v < (0, 4, 15))' ||
    gr_skip_all "continued: greenlet older than 0.4.15"
export PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH}
# 3.12+ writes a real stack at every switch (compat.h GR_CONTINUED_SWITCHES).
old_py=1
"$PY" -c 'import sys; sys.exit(sys.version_info >= (3, 12))' || old_py=0
prog=$GR_ROOT/tests/integration/programs/continued_cases.py

# kinds TRACE: the SWITCH/THROW records as letters.
kinds() {
    "$GR_CLI" dump "$1" | awk '
        $2 == "SWITCH" || $2 == "THROW" {
            thr = $2 == "THROW"; k = "R"
            if ($0 ~ / continued/) k = "C"
            else if ($0 ~ / new /) k = "N"
            else if ($0 ~ / origin_dead /) k = "D"
            if (thr) k = tolower(k)
            s = s k
        }
        END { print s }'
}

while read -r case want; do
    [ -n "$case" ] || continue
    every=$(printf '%s' "$want" | tr Cc Rr)
    for mode in needed every; do
        tr=$work/$case-$mode.grt
        exp=$want
        [ "$mode" = every ] || [ "$old_py" = 0 ] && exp=$every
        (cd "$GR_ROOT" && timeout 60 "$PY" "$prog" "$case" "$tr" "$mode") >"$tr.out" 2>&1
        rc=$?
        got=$(kinds "$tr" 2>/dev/null)
        "$GR_CLI" check -q "$tr" >"$tr.check" 2>&1
        crc=$?
        meta=$("$GR_CLI" dump "$tr" 2>/dev/null | sed -n 's/^# switch_stacks: //p')
        want_meta=
        [ "$mode" = every ] && want_meta=every
        if [ "$rc" -eq 0 ] && [ "$got" = "$exp" ] && [ "$crc" -eq 0 ] && [ "$meta" = "$want_meta" ]; then
            gr_ok "$case ($mode): switches $got, check clean"
        else
            gr_bad "$case ($mode): program exit $rc, switches '$got' (want '$exp'), check exit $crc, META switch_stacks '$meta'"
            gr_show "$tr.out" "$tr.check"
        fi
    done
done <<'CASES'
round_trip     NCCCCCCCCCCD
unseen_between NRCD
hook_between   NCCRCRCD
throw          NCcCcCCD
origin_ends    NDNCCD
context_run    NCCCCD
CASES

# Deterministic: the same program, the same bytes.
a=$work/det-a.grt b=$work/det-b.grt
(cd "$GR_ROOT" && "$PY" "$prog" hook_between "$a" needed && "$PY" "$prog" hook_between "$b" needed) >/dev/null 2>&1
if cmp -s "$a" "$b"; then
    gr_ok "two recordings of hook_between are identical"
else
    gr_bad "two recordings of hook_between differ"
fi

gr_tally
