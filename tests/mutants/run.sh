#!/usr/bin/env bash
# tests/mutants/run.sh - each mutant greenlet of ci/matrix-greenlet.conf shows
# its bug class to a plain sys.setprofile program, with no recorder, and the
# unmodified build of the same sources does not (`make mutants`).
#
# usage: tests/mutants/run.sh [--prepare] [NAME...]
#   --prepare  build the venvs first (ci/matrix-greenlet.sh prepare; about
#              15 s per venv); without it, a venv not built yet is SKIP
#   NAME       environments of ci/matrix-greenlet.conf (default: every mutant
#              and the unmodified 2.0 builds beside them)
# One line per program and environment: PASS/FAIL/SKIP, what it printed.
# `make integration` runs it without --prepare (venvs not built: SKIP).
# Exit status 0 when nothing failed, 1 otherwise, 2 bad usage.
#
# What each program must give (exit status: 1 = the bug class shows):
#                      new_greenlet   new_greenlet  resumed_greenlet  resumed_greenlet  callback
#                      _tracing       --callback    _tracing          --callback        _guard
#   unmodified (-)     0              0             0                 0                 0
#   mut256             1              0 (healed)    1                 0 (healed)        0
#   mutnosave          0              0             1                 0 (healed)        0
#   mutguard           0              0             0                 0                 1
# "healed": greenlet's trace callback runs inside PyThreadState_LeaveTracing,
# which recomputes the tracing flag (field notes, "Observer effects").
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
GB=$top/ci/matrix-greenlet.sh
CACHE=$(realpath -m "${GREENREPLAY_CACHE:-$HOME/.cache/greenreplay}")
prepare=0
names=()
while [ $# -gt 0 ]; do
    case $1 in
        --prepare) prepare=1; shift ;;
        -h|--help) sed -n "2,$(($(grep -n '^set -u$' "${BASH_SOURCE[0]}" | cut -d: -f1) - 1))p" "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "usage: tests/mutants/run.sh [--prepare] [NAME...]" >&2; exit 2 ;;
        *) names+=("$1"); shift ;;
    esac
done
declare -A MUT=() SRC=()
while read -r n _ src _ m; do MUT[$n]=$m SRC[$n]=$src; done < <("$GB" list) || exit 2
if [ ${#names[@]} -eq 0 ]; then
    for n in "${!MUT[@]}"; do
        # mutants, and unmodified builds of the same sources (the controls)
        if [ "${MUT[$n]}" != - ] || [ "${SRC[$n]}" = deb:bookworm ]; then names+=("$n"); fi
    done
    mapfile -t names < <(printf '%s\n' "${names[@]}" | sort)
fi
for n in "${names[@]}"; do
    [ -n "${MUT[$n]:-}" ] || { echo "tests/mutants/run.sh: unknown environment $n (ci/matrix-greenlet.sh list)" >&2; exit 2; }
done
if [ $prepare = 1 ]; then
    "$GB" prepare "${names[@]}" >/dev/null || { echo "tests/mutants/run.sh: ci/matrix-greenlet.sh prepare failed" >&2; exit 1; }
fi

expected() {   # MUTANT PROGRAM-WITH-ARGS: the exit status it must give
    case "$1:$2" in
        mut256:new_greenlet_tracing.py|mut256:resumed_greenlet_tracing.py) echo 1 ;;
        mutnosave:resumed_greenlet_tracing.py) echo 1 ;;
        mutguard:callback_guard.py) echo 1 ;;
        *) echo 0 ;;
    esac
}
pass=0 fail=0 skip=0
for n in "${names[@]}"; do
    py=$CACHE/matrix/venvs/$n/bin/python
    if [ ! -x "$py" ]; then
        echo "SKIP  $n: venv not built (tests/mutants/run.sh --prepare $n)"
        skip=$((skip + 1)); continue
    fi
    for prog in "new_greenlet_tracing.py" "new_greenlet_tracing.py --callback" \
                "resumed_greenlet_tracing.py" "resumed_greenlet_tracing.py --callback" "callback_guard.py"; do
        # shellcheck disable=SC2086
        out=$(cd "$here" && timeout 60 "$py" $prog 2>&1)
        rc=$?
        out=$(printf '%s' "$out" | tr '\n' ' ')
        want=$(expected "${MUT[$n]}" "${prog%% *}")
        case $prog in *--callback) want=0 ;; esac   # healed by the callback
        if [ "$rc" = "$want" ]; then
            echo "PASS  $n (${MUT[$n]}): $prog -> $rc: $out"; pass=$((pass + 1))
        else
            echo "FAIL  $n (${MUT[$n]}): $prog -> $rc, expected $want: $out"; fail=$((fail + 1))
        fi
    done
done
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
