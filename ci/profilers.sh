#!/usr/bin/env bash
# ci/profilers.sh - the profiler axis of the compatibility matrix: fixtures x
# environments x profilers, each cell `greenreplay conform` run in the
# environment (docs/conform.md, docs/matrix.md "Profiler axis").
#
# usage: ci/profilers.sh [OPTIONS]                    run the axis (make profilers)
#        ci/profilers.sh list [OPTIONS]               what a run would cover
#        ci/profilers.sh report PROFILERS.json [--out DIR] [--docs FILE]
#
# A run: provisions the environments (`ci/envs.sh provision`: Debian roots
# with their suite's python3-yappi, python3-coverage, python3-line-profiler,
# python3-pyinstrument, python3-memray, austin, python3-scalene where the
# suite has them, see docs/ENVIRONMENTS.md), then for every environment, fixture and
# profiler runs
#     build/greenreplay conform --profiler P --json CELL.json -- ENVPYTHON FIXTURE
# (ENVPYTHON is the environment's wrapper, `ci/envs.sh python ID`: in a root
# it runs the interpreter inside the root) and classifies its result:
#   pass    conform exit 0: the profiler's own results agree with the
#           recording; or the exit status the fixture's "# conform:" lines
#           expect of P on this Python (P=fail: differences the fixture is
#           written to show; P=error: conform exit 2; docs/conform.md)
#   known   exit 1, and every difference is explained by an entry of
#           fixtures/known-issues.ini whose `profilers` field names P
#   xpass   exit 0, but such an entry names this fixture explicitly
#   fail    exit 1 with an unexplained difference, another exit status than
#           the fixture expects, a program that exited with a non-zero status
#           (conform's program_status), exit 2 (conform could not
#           run: its first error line is the reason), a timeout or a crash
#   skip    exit 3 (the profiler is not available in the environment: the
#           reason conform printed, e.g. the suite has no python3-yappi or
#           its extension is not built for this interpreter), or the
#           fixture's "# requires:" module does not import there
# One progress line per cell.
#
# Options:
#   -e, --envs ID[,ID...]       environments (shell patterns allowed); default:
#                               host-3.11 bullseye-3.9 trixie-3.13 sid-3.14 sid-3.15
#   -f, --fixtures NAME[,...]   fixtures (patterns; profilers/NAME for the
#                               profiler fixtures); default: fixtures/profilers/*.py
#   --env NAME=COMMAND          a user environment (an interpreter path or command
#                               prefix, e.g. a venv's python with your profiler
#                               installed), passed to ci/envs.sh; may repeat; name
#                               it in --envs
#   --matrix-file FILE          user environments, one "NAME COMMAND..." a line
#   -p, --profilers NAME[,...]  profilers (a built-in adapter of `greenreplay
#                               conform --list`, or an adapter PATH.py);
#                               default: every built-in adapter
#   --quick                     the bounded subset .ci/run runs: every default
#                               environment, cprofile plus every Debian
#                               profiler (yappi, coverage, line_profiler), the
#                               fixtures profilers/direct_then_run and
#                               profilers/enabled_while_suspended (40 cells,
#                               about 3 minutes; the full axis, 332 cells, about 5)
#   --known FILE                known issues (default fixtures/known-issues.ini)
#   --out DIR                   cells and reports (default build/matrix/profilers;
#                               the matrix page build/matrix/index.html shows them)
#   --docs FILE | --no-docs     write the "Profiler axis" section of FILE
#                               (default docs/matrix.md, when every default
#                               environment ran)
#   --no-provision              run what is ready; do not provision
#   --no-mutants                leave out the mutant cells of
#                               ci/profilers-mutants.conf (by default they run
#                               when their fixture and profiler are selected
#                               and --envs is not given or names them; their
#                               greenlet is built by ci/matrix-greenlet.sh)
#   --timeout SEC               limit per cell (default 120)
#
# Output: DIR/profilers.json, DIR/profilers.md, DIR/index.html, and the
# section of docs/matrix.md.  Exit status: 0 no cell is `fail`; 1 some cell
# is `fail`; 2 bad usage (or build/greenreplay has no `conform` command).
set -uo pipefail
shopt -s nullglob

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GR_ROOT=$ROOT
GR_CLI=${GREENREPLAY_CLI:-$ROOT/build/greenreplay}
# shellcheck source=../tests/integration/lib.sh
. "$ROOT/tests/integration/lib.sh"
ENVS_SH=$ROOT/ci/envs.sh
REPORT=$ROOT/ci/profilers-report.py
if [ -n "${GREENREPLAY_HOST_PYTHON:-}" ]; then HOST_PY=$GREENREPLAY_HOST_PYTHON
elif [ -x /usr/bin/python3 ]; then HOST_PY=/usr/bin/python3
else HOST_PY=python3; fi

DEFAULT_ENVS=(host-3.11 bullseye-3.9 trixie-3.13 sid-3.14 sid-3.15)
# Only fixtures that leave starting the recorder to `greenreplay conform`
# (which records the whole program): every fixtures/*.py starts it itself
# (greenreplay.start()): a no-op in conform's recorded run, but a real
# recording in its unrecorded one, so none of them is in the default
# selection (docs/profiler-axis.md).
DEFAULT_FIXTURES=('profilers/*')
# --quick (.ci/run): two profiler fixtures, the one every profiler should
# pass (several root frames on one thread) and the 3.12+ blind spot of a
# greenlet suspended before enable(); missing ones are left out.
QUICK_FIXTURES=(profilers/direct_then_run profilers/enabled_while_suspended)
# The profilers Debian packages (python3-yappi, python3-coverage,
# python3-line-profiler) and the standard library's cProfile.
QUICK_PROFILERS=(cprofile yappi coverage line_profiler)

say() { printf '%s\n' "$*"; }
die() { printf 'profilers: %s\n' "$2" >&2; exit "$1"; }
usage() { sed -n '6,8p' "${BASH_SOURCE[0]}" | sed 's/^# //' >&2; echo "(ci/profilers.sh --help for the options)" >&2; exit 2; }

LIST_ONLY=0
case "${1:-}" in
    -h|--help|help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"; exit 0 ;;
    report) shift; [ $# -ge 1 ] || usage; exec "$HOST_PY" "$REPORT" render "$@" ;;
    list) shift; LIST_ONLY=1 ;;
    run) shift ;;
esac

SEL_ENVS=() SEL_FIX=() SEL_PROF=() ENV_ARGS=() KNOWN=$ROOT/fixtures/known-issues.ini OUT=$ROOT/build/matrix/profilers
DOCS=auto PROVISION=1 TIMEOUT=120 QUICK=0 MUTANTS=1
need() { [ $# -ge 2 ] || die 2 "$1 needs a value"; }
while [ $# -gt 0 ]; do
    case $1 in
        -e|--envs) need "$@"; IFS=, read -r -a a <<<"$2"; SEL_ENVS+=("${a[@]}"); shift 2 ;;
        --envs=*) IFS=, read -r -a a <<<"${1#*=}"; SEL_ENVS+=("${a[@]}"); shift ;;
        -f|--fixtures) need "$@"; IFS=, read -r -a a <<<"$2"; SEL_FIX+=("${a[@]}"); shift 2 ;;
        --fixtures=*) IFS=, read -r -a a <<<"${1#*=}"; SEL_FIX+=("${a[@]}"); shift ;;
        --env) need "$@"; case $2 in *=*) ;; *) die 2 "--env needs NAME=COMMAND, got '$2'" ;; esac
               ENV_ARGS+=(--env "$2"); shift 2 ;;
        --env=*) ENV_ARGS+=(--env "${1#--env=}"); shift ;;
        --matrix-file|--envs-file) need "$@"; [ -f "$2" ] || die 2 "matrix file not found: $2"
               ENV_ARGS+=(--envs-file "$(realpath "$2")"); shift 2 ;;
        -p|--profilers) need "$@"; IFS=, read -r -a a <<<"$2"; SEL_PROF+=("${a[@]}"); shift 2 ;;
        --profilers=*) IFS=, read -r -a a <<<"${1#*=}"; SEL_PROF+=("${a[@]}"); shift ;;
        --quick) QUICK=1; shift ;;
        --known) need "$@"; KNOWN=$(realpath -m "$2"); shift 2 ;;
        --out) need "$@"; OUT=$(realpath -m "$2"); shift 2 ;;
        --docs) need "$@"; DOCS=$(realpath -m "$2"); shift 2 ;;
        --no-docs) DOCS=none; shift ;;
        --no-provision) PROVISION=0; shift ;;
        --no-mutants) MUTANTS=0; shift ;;
        --timeout) need "$@"; TIMEOUT=$2; shift 2 ;;
        *) printf 'profilers: unknown argument %s\n' "$1" >&2; usage ;;
    esac
done
[ -f "$KNOWN" ] || die 2 "known-issues file not found: $KNOWN"
"$HOST_PY" "$ROOT/ci/matrix-report.py" known "$KNOWN" >/dev/null || die 2 "fix $KNOWN first"
FULL=0
[ ${#SEL_ENVS[@]} -eq 0 ] && [ ${#SEL_FIX[@]} -eq 0 ] && [ ${#SEL_PROF[@]} -eq 0 ] && [ $QUICK = 0 ] && FULL=1
if [ $QUICK = 1 ]; then
    if [ ${#SEL_FIX[@]} -eq 0 ]; then
        for p in "${QUICK_FIXTURES[@]}"; do [ -f "$ROOT/fixtures/$p.py" ] && SEL_FIX+=("$p"); done
        [ ${#SEL_FIX[@]} -gt 0 ] || SEL_FIX=('profilers/*')
    fi
    [ ${#SEL_PROF[@]} -gt 0 ] || SEL_PROF=("${QUICK_PROFILERS[@]}")
fi
ENVS_GIVEN=${#SEL_ENVS[@]}
[ ${#SEL_ENVS[@]} -gt 0 ] || SEL_ENVS=("${DEFAULT_ENVS[@]}")
[ ${#SEL_FIX[@]} -gt 0 ] || SEL_FIX=("${DEFAULT_FIXTURES[@]}")

# The C CLI (conform).
if ! make -s -C "$ROOT" all >"${TMPDIR:-/tmp}/profilers-make.$$.log" 2>&1; then
    cat "${TMPDIR:-/tmp}/profilers-make.$$.log" >&2; rm -f "${TMPDIR:-/tmp}/profilers-make.$$.log"
    die 2 "cannot build $GR_CLI (make all); see above"
fi
rm -f "${TMPDIR:-/tmp}/profilers-make.$$.log"
BUILTIN=$("$GR_CLI" conform --list 2>/dev/null) ||
    die 2 "$GR_CLI has no working 'conform' command (greenreplay conform --list failed)"
mapfile -t BUILTIN < <(printf '%s\n' "$BUILTIN" | awk 'NF { print $1 }')

# Fixtures: NAME (fixtures/NAME.py) or profilers/NAME (fixtures/profilers/NAME.py).
FIXTURES=()
for f in "$ROOT"/fixtures/profilers/*.py "$ROOT"/fixtures/*.py; do
    n=${f#"$ROOT"/fixtures/}; n=${n%.py}
    for p in "${SEL_FIX[@]}"; do
        # shellcheck disable=SC2053
        if [[ $n == ${p%.py} ]]; then FIXTURES+=("$n"); break; fi
    done
done
for p in "${SEL_FIX[@]}"; do
    hit=0
    for n in "${FIXTURES[@]}"; do [[ $n == ${p%.py} ]] && hit=1; done
    [ $hit = 1 ] || [ "$p" = 'profilers/*' ] || die 2 "no fixture matches '$p' (fixtures/*.py, fixtures/profilers/*.py)"
done
[ ${#FIXTURES[@]} -gt 0 ] || die 2 "no fixtures selected (fixtures/profilers/ is empty?)"

# Profilers: built-in names or adapter files.
PROFILERS=()
if [ ${#SEL_PROF[@]} -eq 0 ]; then
    PROFILERS=("${BUILTIN[@]}")
else
    for p in "${SEL_PROF[@]}"; do
        case $p in
            *.py) [ -f "$p" ] || die 2 "adapter not found: $p"; PROFILERS+=("$(realpath "$p")") ;;
            *) [[ " ${BUILTIN[*]} " == *" $p "* ]] ||
                   die 2 "unknown profiler '$p' (greenreplay conform --list: ${BUILTIN[*]})"
               PROFILERS+=("$p") ;;
        esac
    done
fi

mkdir -p "$OUT" || die 2 "cannot create $OUT"
ENVS_JSON=$OUT/envs.json

# Mutant cells (ci/profilers-mutants.conf): only the (fixture, profiler)
# pairs listed there run in a mutant environment, each expecting the
# verdict of the line.  The mutant's venv is built by ci/matrix-greenlet.sh
# and added as a user environment, as ci/matrix.sh does.
declare -A MUT_WANT=() MUT_NOTE=() MUT_ENV=()
if [ $MUTANTS = 1 ] && [ $LIST_ONLY = 0 ]; then
    while read -r mid mfx mprof mverdict mrest; do
        case "$mid" in ''|'#'*) continue ;; esac
        if [ "$ENVS_GIVEN" -gt 0 ]; then
            hit=0
            # shellcheck disable=SC2053
            for p in "${SEL_ENVS[@]}"; do [[ $mid == $p ]] && hit=1; done
            [ $hit = 1 ] || continue
        fi
        [[ " ${FIXTURES[*]} " == *" $mfx "* ]] && [[ " ${PROFILERS[*]} " == *" $mprof "* ]] || continue
        MUT_ENV[$mid]=1
        MUT_WANT[$mid/$mfx/$mprof]=$mverdict
        if [ "${mrest%% *}" = known ]; then
            mrest=${mrest#known }
            MUT_WANT[$mid/$mfx/$mprof]=${mrest%% *}
            MUT_NOTE[$mid/$mfx/$mprof]="known: $mverdict expected of the mutant, ${mrest%% *} today: ${mrest#* }"
        fi
    done <"$ROOT/ci/profilers-mutants.conf"
    if [ ${#MUT_ENV[@]} -gt 0 ]; then
        while IFS=$'\t' read -r mid mstate mpy; do
            if [ "$mstate" = ready ]; then
                ENV_ARGS+=(--env "$mid=$mpy"); SEL_ENVS+=("$mid")
            else
                say "(mutant $mid is $mstate: $mpy; its cells are left out)"
            fi
        done < <("$ROOT/ci/matrix-greenlet.sh" prepare "${!MUT_ENV[@]}" 2>"$OUT/mutants-prepare.log")
    fi
fi
"$ENVS_SH" "${ENV_ARGS[@]}" list --json >"$ENVS_JSON.tmp" 2>"$OUT/list.err" ||
    { cat "$OUT/list.err" >&2; die 2 "ci/envs.sh list failed (a bad --env or matrix file?)"; }
mv "$ENVS_JSON.tmp" "$ENVS_JSON"
mapfile -t SEL_IDS < <("$HOST_PY" "$ROOT/ci/matrix-report.py" envs "$ENVS_JSON" "${SEL_ENVS[@]}" | cut -f1) || exit 2
[ ${#SEL_IDS[@]} -gt 0 ] || die 2 "no environment selected"

if [ $LIST_ONLY = 1 ]; then
    say "environments (${#SEL_IDS[@]}): ${SEL_IDS[*]}"
    say "fixtures (${#FIXTURES[@]}): ${FIXTURES[*]}"
    say "profilers (${#PROFILERS[@]}): ${PROFILERS[*]}"
    say "cells: $(( ${#SEL_IDS[@]} * ${#FIXTURES[@]} * ${#PROFILERS[@]} ))"
    exit 0
fi

T0=$SECONDS
elapsed() { local s=$((SECONDS - T0)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }
mkdir -p "$OUT/logs"
if [ $PROVISION = 1 ]; then
    say "== provision ($(elapsed)): ${SEL_IDS[*]}"
    "$ENVS_SH" "${ENV_ARGS[@]}" provision "${SEL_IDS[@]}" >"$OUT/logs/provision.log" 2>&1 ||
        say "(some environment is not ready: $OUT/logs/provision.log; its cells are skip)"
    "$ENVS_SH" "${ENV_ARGS[@]}" list --json >"$ENVS_JSON" 2>/dev/null
fi

rm -rf "$OUT/cells"
mkdir -p "$OUT/cells"
W=8
for n in "${FIXTURES[@]}"; do [ ${#n} -gt $W ] && W=${#n}; done
PW=8
for p in "${PROFILERS[@]}"; do p=$(basename "$p"); [ ${#p} -gt $PW ] && PW=${#p}; done
NC=0
for id in "${SEL_IDS[@]}"; do
    if [ -n "${MUT_ENV[$id]:-}" ]; then
        for k in "${!MUT_WANT[@]}"; do [ "${k%%/*}" = "$id" ] && NC=$((NC + 1)); done
    else
        NC=$((NC + ${#FIXTURES[@]} * ${#PROFILERS[@]}))
    fi
done
say "== profiler axis ($(elapsed)): ${#SEL_IDS[@]} environment(s) x ${#FIXTURES[@]} fixture(s) x ${#PROFILERS[@]} profiler(s) = $NC cells"

# cell ENV PROFILER FIXTURE KEY=VALUE...: write a cell file, print its outcome.
ci=0
cell_file() { printf '%s/cells/%s/%s--%s.cell\n' "$OUT" "$1" "$(basename "${2%.py}")" "${3//\//__}"; }
# finish_cell CELLFILE T0: the progress line, from conform's exit status
# (the verdict, known issues included, is classified once at the end by
# ci/profilers-report.py collect: one host Python start, not one per cell).
finish_cell() {
    local c=$1 rc o text=""
    printf 'duration=%s\n' "$(awk -v a="$2" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')" >>"$c"
    rc=$(sed -n 's/^rc=//p' "$c")
    case "$(sed -n 's/^state=//p' "$c"):$rc" in
        skip:*) o=skip text=$(sed -n 's/^skip_reason=//p' "$c") ;;
        *:0) o=agree ;;
        *:1) o=differs text=$(grep -v '^[[:space:]]*$' "${c%.cell}.log" | tail -n 1) ;;
        *:3) o=skip text=$(sed -n 's/^skip: //p' "${c%.cell}.log" | head -n 1) ;;
        *) o=error text="exit $rc: $(sed -n 's/^problem=//p' "$c")$(grep -v '^[[:space:]]*$' "${c%.cell}.log" | tail -n 1)" ;;
    esac
    printf '%-7s %5.1fs %7s  %s\n' "$o" "$(sed -n 's/^duration=//p' "$c")" "$(elapsed)" "$(echo "$text" | cut -c1-100)"
}

# expectation FIXTURE PYTHON_VERSION PROFILER: the verdict (pass, fail,
# error, skip) the fixture's "# conform:" and "# conform[py...]:" lines
# expect of PROFILER on that Python, or "none"; read by greenreplay.conform
# itself (`python -m greenreplay.conform --expect`, docs/conform.md).
expectation() {
    local v
    v=$(PYTHONPATH=$ROOT/build/python "$HOST_PY" -m greenreplay.conform --expect "$1" "$2" "$3" 2>/dev/null) ||
        v=$(gr_header "$1" conform | tr ' ' '\n' | sed -n "s/^$3=//p" | head -n 1)
    printf '%s\n' "${v:-none}"
}

for id in "${SEL_IDS[@]}"; do
    mkdir -p "$OUT/cells/$id"
    pyver=$("$HOST_PY" -c 'import json,sys
e=[e for e in json.load(open(sys.argv[1])) if e["id"]==sys.argv[2]][0]
print(e.get("python_version") or e.get("python") or "?")' "$ENVS_JSON" "$id")
    st=$("$HOST_PY" -c 'import json,sys
e=[e for e in json.load(open(sys.argv[1])) if e["id"]==sys.argv[2]][0]
print(e["status"] + ("" if e["status"] == "ready" else ": " + (e.get("reason") or "?")))' "$ENVS_JSON" "$id")
    py=""
    if [ "$st" = ready ]; then
        py=$("$ENVS_SH" "${ENV_ARGS[@]}" python "$id" 2>/dev/null) || { st="no interpreter"; py=""; }
    fi
    say "[$id] $st${py:+ ($py)}"
    declare -A REQ=()
    for name in "${FIXTURES[@]}"; do
        f=$ROOT/fixtures/$name.py
        # The fixture's "# requires:" modules, once per environment.
        why=""
        if [ "$st" != ready ]; then
            why="environment $id not ready: ${st#*: }"
        elif [ -z "${REQ[$name]+x}" ]; then
            REQ[$name]=$(gr_missing_requirement "$py" "$f")
            why=${REQ[$name]}
        else
            why=${REQ[$name]}
        fi
        for prof in "${PROFILERS[@]}"; do
            if [ -n "${MUT_ENV[$id]:-}" ] && [ -z "${MUT_WANT[$id/$name/$(basename "${prof%.py}")]:-}" ]; then
                continue   # a mutant runs only its listed pairs
            fi
            ci=$((ci + 1))
            pn=$(basename "${prof%.py}")
            c=$(cell_file "$id" "$prof" "$name")
            base=${c%.cell}
            printf '  [%3d/%d %s] %-*s %-*s ' "$ci" "$NC" "$id" "$W" "$name" "$PW" "$pn"
            tc=$(date +%s.%N)
            want=$(expectation "$f" "$pyver" "$pn")
            [ -n "${MUT_ENV[$id]:-}" ] && want=${MUT_WANT[$id/$name/$pn]}
            printf 'env=%s\nfixture=%s\nprofiler=%s\nexpect=%s\n' "$id" "$name" "$pn" "${want:-none}" >"$c"
            [ -z "${MUT_ENV[$id]:-}" ] ||
                printf 'note=expectation of ci/profilers-mutants.conf%s\n' "${MUT_NOTE[$id/$name/$pn]:+; ${MUT_NOTE[$id/$name/$pn]}}" >>"$c"
            if [ -n "$why" ]; then
                printf 'state=skip\nskip_reason=%s\n' "$why" >>"$c"
                finish_cell "$c" "$tc"
                continue
            fi
            rm -f "$base.json"
            (cd "$ROOT" && timeout --kill-after=10 "$TIMEOUT" "$GR_CLI" conform --profiler "$prof" \
                --json "$base.json" -- "$py" "fixtures/$name.py") >"$base.log" 2>&1
            rc=$?
            printf 'state=ran\nrc=%s\n' "$rc" >>"$c"
            [ "$rc" -eq 124 ] && printf 'problem=conform timed out after %ss\n' "$TIMEOUT" >>"$c"
            finish_cell "$c" "$tc"
        done
    done
    unset REQ
done

docs_arg=()
if [ "$DOCS" = auto ]; then
    [ $FULL = 1 ] && docs_arg=(--docs "$ROOT/docs/matrix.md")
elif [ "$DOCS" != none ]; then
    docs_arg=(--docs "$DOCS")
fi
commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
say "== reports ($(elapsed))"
"$HOST_PY" "$REPORT" collect --out "$OUT" --known "$KNOWN" --envs "$ENVS_JSON" "${docs_arg[@]}" \
    --meta "commit=$commit" --meta "elapsed_s=$((SECONDS - T0))" --meta "quick=$QUICK"
rc=$?
say "profilers: done in $(elapsed) (exit $rc)"
exit $rc
