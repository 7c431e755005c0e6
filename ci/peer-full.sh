#!/usr/bin/env bash
# ci/peer-full.sh - greenlet's own test suite recorded (ci/peer.sh) in every
# trace mode and environment: `make peer-full`.
#
# usage: ci/peer-full.sh [--envs ID[,ID...]] [--modes ring,file] [--quick]
#                        [-- PEER OPTIONS / MODULES]
#
# Runs ci/peer.sh once per environment and trace mode:
#   ring  --ring 100000 (make peer's mode: the recorder does all its work,
#         keeps the last records in memory, writes them at exit)
#   file  --max-size 256M (the trace is written to the file as recorded, in
#         64 KiB chunks, until the cap; forks and at-fork paths then matter,
#         which ring mode hides)
# Default environments: host-3.11 trixie-3.13 sid-3.14 sid-3.15 (Debian
# roots must be provisioned: ci/envs.sh provision ID).  Results go to
# build/peer/ID-MODE.  --quick: the bounded subset .ci/run can afford,
# file mode on the host with the modules whose tests the recorder is most
# likely to change (leaks of ended threads, tracing, gc); about 1 minute
# on a quiet machine.
# Prints one line per run and a summary table.  Exit status: 0 every run
# that could run passed; 1 some run found a test the recorder changes (or
# failed); 2 bad usage.  An environment that is not provisioned (ci/peer.sh
# exit 3) is reported `unavailable` and does not fail the run.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
ENVS=(host-3.11 trixie-3.13 sid-3.14 sid-3.15) MODES=(ring file) EXTRA=()
QUICK_MODULES=(greenlet.tests.test_leaks greenlet.tests.test_tracing greenlet.tests.test_gc)
while [ $# -gt 0 ]; do
    case $1 in
        -h|--help) sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        --envs) [ $# -ge 2 ] || { echo "peer-full: --envs needs a value" >&2; exit 2; }
                IFS=, read -r -a ENVS <<<"$2"; shift 2 ;;
        --modes) [ $# -ge 2 ] || { echo "peer-full: --modes needs a value" >&2; exit 2; }
                 IFS=, read -r -a MODES <<<"$2"; shift 2 ;;
        --quick) ENVS=(host-3.11) MODES=(file) EXTRA+=("${QUICK_MODULES[@]}"); shift ;;
        --) shift; EXTRA+=("$@"); break ;;
        *) echo "peer-full: unknown argument $1 (--help)" >&2; exit 2 ;;
    esac
done
for m in "${MODES[@]}"; do
    case $m in ring|file) ;; *) echo "peer-full: unknown mode $m (ring, file)" >&2; exit 2 ;; esac
done
declare -A RESULT=()
status=0
for id in "${ENVS[@]}"; do
    for m in "${MODES[@]}"; do
        case $m in ring) opt=(--ring 100000) ;; file) opt=(--max-size 256M) ;; esac
        echo "== peer: $id, $m mode (${opt[*]})"
        "$ROOT/ci/peer.sh" --env "$id" "${opt[@]}" --out "$ROOT/build/peer/$id-$m" "${EXTRA[@]}"
        rc=$?
        case $rc in
            0) RESULT[$id/$m]=pass ;;
            3) RESULT[$id/$m]=unavailable ;;
            *) RESULT[$id/$m]="FAIL (exit $rc)"; status=1 ;;
        esac
    done
done
printf '\n%-14s' environment; for m in "${MODES[@]}"; do printf ' %-18s' "$m"; done; echo
for id in "${ENVS[@]}"; do
    printf '%-14s' "$id"; for m in "${MODES[@]}"; do printf ' %-18s' "${RESULT[$id/$m]}"; done; echo
done
exit $status
