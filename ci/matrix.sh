#!/usr/bin/env bash
# ci/matrix.sh - the compatibility matrix: every fixture in every test
# environment, each in a fresh process, with one outcome per cell.
#
# usage: ci/matrix.sh [OPTIONS]                       run the matrix (make matrix)
#        ci/matrix.sh merge A.json B.json ... -o OUT.json [--docs FILE]
#        ci/matrix.sh report MATRIX.json [--out DIR] [--docs FILE]
#        ci/matrix.sh list [OPTIONS]                  what a run would cover
#        ci/matrix.sh known [FILE]                    check and list the known issues
#
# A run: provisions the environments (`ci/envs.sh provision`; the first time
# on a machine this builds Debian roots, about 6 minutes), builds greenlet
# from source for the environments of ci/matrix-greenlet.conf (CPython 3.10
# and 3.12, which no Debian suite builds greenlet for), builds the recorder
# in each environment (`ci/envs.sh build`), then records every fixture in
# every environment with `greenreplay record --manual`, dumps and checks the
# trace (`greenreplay check --format json`), compares the outcome with the
# fixture's "# expect:" line and fixtures/known-issues.ini, and the dump with
# its golden (fixtures/golden/ENV/NAME.txt, when one was recorded with the
# same Python and greenlet versions).  One progress line per cell.
#
# Outcomes: pass, known (differs from "# expect:" only as known issues
# explain), xpass (a known issue that names the fixture did not show), fail,
# skip (with the reason: "greenlet unavailable", "gevent broken in this env",
# "environment ... unavailable").  In a mutant environment (a greenlet built
# with a patch of ci/mutants/) a cell is killed (the checker or the run
# tells it from unmodified greenlet: what would be fail elsewhere) or
# survived (it came out as the fixture expects of unmodified greenlet); the
# fixtures that the "# fixtures:" line of ci/mutants/MUTANT.patch names are
# aimed at it and should kill it.  See docs/matrix.md.  A program that dies
# by a signal it was not expected to: the cell names the signal and the
# assertion or fatal error the interpreter printed (file, line, expression),
# and the trace written up to the crash is still checked; a known issue
# with "crash" in its rules (and a message.crash pattern) makes it `known`.
# Its golden is not compared (the trace ends at the crash).
#
# Options:
#   -e, --envs ID[,ID...]     environments (shell patterns allowed, e.g. 'sid-*');
#                             default: every one of `ci/envs.sh list` and
#                             ci/matrix-greenlet.conf, plus user environments
#   -f, --fixtures NAME[,...] fixtures (patterns allowed); default: fixtures/*.py
#   --env NAME=COMMAND        a user environment (an interpreter path or command
#                             prefix), passed to ci/envs.sh; may repeat
#   --matrix-file FILE        user environments, one "NAME COMMAND..." a line
#                             (ci/envs.sh --envs-file; default ci/matrix.conf)
#   --known FILE              known issues (default fixtures/known-issues.ini)
#   --out DIR                 reports and cells (default build/matrix)
#   --docs FILE | --no-docs   also write the Markdown to FILE; by default
#                             docs/matrix.md is written when every environment
#                             and fixture ran
#   --no-provision            do not provision: run what is ready
#   --no-greenlet-builds      leave out the environments of ci/matrix-greenlet.conf
#   --determinism             record every cell twice; the traces must be identical
#   --update-goldens          write fixtures/golden/ENV/NAME.txt for every cell
#                             whose two recordings are identical (implies
#                             --determinism); ENV is py3.X-greenletA.B, or
#                             py3.X.Y-greenletA.B.C when the short directory
#                             holds goldens of another patch version
#   --one-mode                record each cell in passive mode only (by default
#                             it is recorded again with greenlet's callback,
#                             --switches callback, and a verdict that differs
#                             is reported as an observer effect)
#   --timeout SEC             limit per recording (default 120)
#   --strict                  exit 3 when an environment could not run
#   --require-kills           exit 1 when a mutant survives a fixture aimed at
#                             it (mutant environments: ci/matrix-greenlet.conf),
#                             manual or whole-program: the mutants and their
#                             controls (WHOLE column of that file) record each
#                             fixture whole-program too (record without --manual)
#
# Output: build/matrix/matrix.json, junit.xml, matrix.md, index.html (each
# cell links to cells/ENV/NAME.html: its violations and trace dump).
# An environment that cannot run (its provisioning or recorder build failed,
# or a user environment's interpreter is missing or broken) gets the column
# status `error` with the failed step and the command to retry, its cells
# `skip`; the other columns still run.
# Exit status: 0 no cell is `fail` (known, xpass, skip, killed and survived
# do not count); 1 some cell is `fail` (with --require-kills, or an aimed
# fixture survived its mutant); 2 bad usage; 3 with --strict, no failure but an
# environment's column is `error`.
set -uo pipefail
shopt -s nullglob

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GR_ROOT=$ROOT
GR_CLI=${GREENREPLAY_CLI:-$ROOT/build/greenreplay}
# shellcheck source=../tests/integration/lib.sh
. "$ROOT/tests/integration/lib.sh"
ENVS_SH=$ROOT/ci/envs.sh
GBUILD=$ROOT/ci/matrix-greenlet.sh
REPORT=$ROOT/ci/matrix-report.py
if [ -n "${GREENREPLAY_HOST_PYTHON:-}" ]; then HOST_PY=$GREENREPLAY_HOST_PYTHON
elif [ -x /usr/bin/python3 ]; then HOST_PY=/usr/bin/python3
else HOST_PY=python3; fi

say() { printf '%s\n' "$*"; }
die() { printf 'matrix: %s\n' "$2" >&2; exit "$1"; }
usage() { sed -n '4,8p' "${BASH_SOURCE[0]}" | sed 's/^# //' >&2; echo "(ci/matrix.sh --help for the options)" >&2; exit 2; }

# ---------------------------------------------------------------- commands
case "${1:-}" in
    -h|--help|help) sed -n '2,80p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    merge) shift; exec "$HOST_PY" "$REPORT" merge "$@" ;;
    report) shift; [ $# -ge 1 ] || usage; exec "$HOST_PY" "$REPORT" render "$@" ;;
    known) shift; exec "$HOST_PY" "$REPORT" known "$@" ;;
    list) shift; LIST_ONLY=1 ;;
    run) shift; LIST_ONLY=0 ;;
    *) LIST_ONLY=0 ;;
esac

SEL_ENVS=() SEL_FIX=() ENV_ARGS=() KNOWN=$ROOT/fixtures/known-issues.ini OUT=$ROOT/build/matrix
DOCS=auto PROVISION=1 GREENLET_BUILDS=1 DETERMINISM=0 UPDATE=0 TIMEOUT=120 STRICT=0 KILLS=() MODES=1
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
        --known) need "$@"; KNOWN=$(realpath -m "$2"); shift 2 ;;
        --out) need "$@"; OUT=$(realpath -m "$2"); shift 2 ;;
        --docs) need "$@"; DOCS=$(realpath -m "$2"); shift 2 ;;
        --no-docs) DOCS=none; shift ;;
        --no-provision) PROVISION=0; shift ;;
        --no-greenlet-builds) GREENLET_BUILDS=0; shift ;;
        --determinism) DETERMINISM=1; shift ;;
        --update-goldens) UPDATE=1; DETERMINISM=1; shift ;;
        --one-mode) MODES=0; shift ;;
        --timeout) need "$@"; TIMEOUT=$2; shift 2 ;;
        --strict) STRICT=1; shift ;;
        --require-kills) KILLS=(--require-kills); shift ;;
        *) printf 'matrix: unknown argument %s\n' "$1" >&2; usage ;;
    esac
done
[ -f "$KNOWN" ] || die 2 "known-issues file not found: $KNOWN"
"$HOST_PY" "$REPORT" known "$KNOWN" >/dev/null || die 2 "fix $KNOWN first"

# Fixtures, by name or pattern.
FIXTURES=()
for f in "$ROOT"/fixtures/*.py; do
    n=$(basename "$f" .py)
    if [ ${#SEL_FIX[@]} -eq 0 ]; then FIXTURES+=("$n"); continue; fi
    for p in "${SEL_FIX[@]}"; do
        # shellcheck disable=SC2053
        if [[ $n == $(basename "$p" .py) ]]; then FIXTURES+=("$n"); break; fi
    done
done
for p in "${SEL_FIX[@]}"; do
    hit=0
    for n in "${FIXTURES[@]}"; do [[ $n == $(basename "$p" .py) ]] && hit=1; done
    [ $hit = 1 ] || die 2 "no fixture matches '$p' (fixtures/*.py)"
done
[ ${#FIXTURES[@]} -gt 0 ] || die 2 "no fixtures in $ROOT/fixtures"

mkdir -p "$OUT/logs" || die 2 "cannot create $OUT"
ENVS_JSON=$OUT/envs.json

# The greenlet-from-source environments (ci/matrix-greenlet.conf).
declare -A GB_NEEDS=() GB_PY=() GB_MUT=()
GB_NAMES=()
if [ $GREENLET_BUILDS = 1 ]; then
    while read -r n pv _ needs mut; do
        [ -n "$n" ] || continue
        GB_NAMES+=("$n"); GB_NEEDS[$n]=$needs GB_PY[$n]=$pv
        [ "${mut:--}" = - ] || GB_MUT[$n]=$mut
    done < <("$GBUILD" list)
fi
# mutant_of ENV: the ci/mutants patch ENV's greenlet is built with, or nothing.
mutant_of() { printf '%s' "${GB_MUT[$1]:-}"; }
# whole_of ENV: the WHOLE column of ci/matrix-greenlet.conf for ENV (kill,
# known REASON, control), or nothing: whether and how its cells are also
# recorded whole-program.
GB_CONF=${GREENREPLAY_MATRIX_GREENLET_CONF:-$ROOT/ci/matrix-greenlet.conf}
whole_of() {
    [ -n "${GB_PY[$1]:-}" ] || return 0
    awk -v n="$1" '$1 == n && NF >= 6 && $6 != "-" { for (i = 1; i <= 5; i++) $i = ""; sub(/^ +/, ""); print; exit }' "$GB_CONF"
}
# gr_record_whole PY SCRIPT OUT LOG [TIMEOUT]: as gr_record, whole-program
# (no --manual: recording runs from the program's first frame; the
# fixture's own start() and stop() do nothing).
gr_record_whole() {
    local py=$1 script=$2 out=$3 log=$4 limit=${5:-300}
    rm -f "$out"
    (cd "$GR_ROOT" && timeout --kill-after=10 "$limit" \
        "$GR_CLI" record --root "$GR_ROOT" -o "$out" -- "$py" "$script") >"$log" 2>&1
}
# aimed FIXTURE MUTANT: status 0 when the "# fixtures:" line of
# ci/mutants/MUTANT.patch names FIXTURE (kept there, not in the fixture, so
# that the fixtures' lines, which their goldens hold, do not move).
aimed() { case ",$(gr_header "$ROOT/ci/mutants/$2.patch" fixtures | tr -d ' ')," in *",$1,"*) return 0 ;; esac; return 1; }
# mutant_lines ENV FIXTURE: the cell's mutant=/aimed= lines (none for unmodified greenlet).
mutant_lines() {
    local m
    m=$(mutant_of "$1")
    [ -n "$m" ] || return 0
    printf 'mutant=%s\naimed=%s\n' "$m" "$(aimed "$2" "$m" && echo 1 || echo 0)"
}

envs_list() {   # list --json into ENVS_JSON
    if ! "$ENVS_SH" "${ENV_ARGS[@]}" list --json >"$ENVS_JSON.tmp" 2>"$OUT/logs/list.err"; then
        cat "$OUT/logs/list.err" >&2
        die 2 "ci/envs.sh list failed (a bad --env or matrix file?)"
    fi
    mv "$ENVS_JSON.tmp" "$ENVS_JSON"
}
# selection: ID KIND STATUS COMMAND PYVER GREENLET GEVENT REASON, in matrix order
envs_select() {
    local extra=() n
    for n in "${GB_NAMES[@]}"; do extra+=(--extra "$n=${GB_PY[$n]}"); done
    "$HOST_PY" "$REPORT" envs "$ENVS_JSON" "${extra[@]}" "${SEL_ENVS[@]}"
}

envs_list
SELECTION=$(envs_select) || exit 2
mapfile -t SEL_IDS < <(printf '%s\n' "$SELECTION" | cut -f1)
is_gb() { [ -n "${GB_NEEDS[$1]+x}" ]; }

if [ "$LIST_ONLY" = 1 ]; then
    say "environments (${#SEL_IDS[@]}):"
    printf '%s\n' "$SELECTION" | awk -F'\t' '{ printf "  %-18s %-6s python %-8s greenlet %-8s gevent %-10s %s\n", $1, $2, $5, $6, $7, $3 }'
    say "fixtures (${#FIXTURES[@]}): ${FIXTURES[*]}"
    exit 0
fi

T0=$SECONDS
elapsed() { local s=$((SECONDS - T0)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

# The C CLI (record, dump, check) and the host's recorder package, which
# `greenreplay record` wants to find in build/python.
if ! make -s -C "$ROOT" all >"$OUT/logs/make.log" 2>&1; then
    cat "$OUT/logs/make.log" >&2
    die 2 "cannot build $GR_CLI and the recorder (make all; make setup installs what it needs); see above"
fi

declare -A COL_STATUS=() COL_REASON=() COL_RETRY=()

# provision IDS...: ci/envs.sh provision, output shown and kept; records the
# environments whose provisioning failed (step, command, retry).
provision() {
    [ $# -gt 0 ] || return 0
    say "== provision ($(elapsed)): $*"
    "$ENVS_SH" "${ENV_ARGS[@]}" provision "$@" 2>&1 | tee -a "$OUT/logs/provision.log"
    local line id rest
    while IFS= read -r line; do
        rest=${line#  FAILED       }
        id=${rest%%: *}
        rest=${rest#*: }
        COL_STATUS[$id]=error
        COL_REASON[$id]="provisioning failed: ${rest%; retry: *}"
        case $rest in
            *"; retry: "*) COL_RETRY[$id]=${rest##*; retry: } ;;
            *) COL_RETRY[$id]="ci/envs.sh provision $id" ;;
        esac
    done < <(grep '^  FAILED       ' "$OUT/logs/provision.log")
}

: >"$OUT/logs/provision.log"
if [ $PROVISION = 1 ]; then
    prov=()
    for id in "${SEL_IDS[@]}"; do
        if is_gb "$id"; then
            n=${GB_NEEDS[$id]}
            [ -n "$n" ] && [[ " ${prov[*]} " != *" $n "* ]] && prov+=("$n")
        elif [[ " ${prov[*]} " != *" $id "* ]]; then
            prov+=("$id")
        fi
    done
    provision "${prov[@]}"
fi

# Greenlet built from source, then those environments as user environments.
gb_sel=()
for id in "${SEL_IDS[@]}"; do is_gb "$id" && gb_sel+=("$id"); done
if [ ${#gb_sel[@]} -gt 0 ]; then
    say "== greenlet from source ($(elapsed)): ${gb_sel[*]}"
    gb_ready=()
    while IFS=$'\t' read -r n st what; do
        [ -n "$n" ] || continue
        case $st in
            ready) ENV_ARGS+=(--env "$n=$what"); gb_ready+=("$n") ;;
            unavailable)
                if [ -n "${COL_STATUS[${GB_NEEDS[$n]}]:-}" ]; then
                    COL_STATUS[$n]=error
                    COL_REASON[$n]="needs ${GB_NEEDS[$n]}, whose provisioning failed; $what"
                    COL_RETRY[$n]="ci/envs.sh provision ${GB_NEEDS[$n]}"
                else
                    COL_STATUS[$n]=unavailable COL_REASON[$n]=$what
                fi ;;
            *) COL_STATUS[$n]=error COL_REASON[$n]="greenlet build failed: $what"
               COL_RETRY[$n]="ci/matrix-greenlet.sh prepare $n" ;;
        esac
    done < <("$GBUILD" prepare "${gb_sel[@]}" 2> >(tee -a "$OUT/logs/greenlet-builds.log" >&2))
    wait
    [ $PROVISION = 1 ] && provision "${gb_ready[@]}"
fi

envs_list
SELECTION=$(envs_select) || exit 2

# ------------------------------------------------------------------- cells
rm -rf "$OUT/cells" "$OUT/index.html"
mkdir -p "$OUT/cells"
WORK=$OUT/.work.$$
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT
declare -A GOLDEN_BY=()     # golden file written in this run -> env that wrote it
NF=${#FIXTURES[@]}
NE=$(printf '%s\n' "$SELECTION" | grep -c .)
W=8
for n in "${FIXTURES[@]}"; do [ ${#n} -gt $W ] && W=${#n}; done
EW=8
for id in "${SEL_IDS[@]}"; do [ ${#id} -gt $EW ] && EW=${#id}; done

# meta DUMP KEY: the value of a "# KEY: VALUE" header line of a dump.
meta() { awk -v k="# $2: " 'index($0, k) == 1 { print substr($0, length(k) + 1); exit } !/^#/ { exit }' "$1"; }
full_key() {   # DUMP: py3.11.7-greenlet2.0.2 (py3.10.13-greenlet-none)
    local py gl
    py=$(meta "$1" python); gl=$(meta "$1" greenlet)
    [ -n "$py" ] || return 1
    case $gl in
        [0-9]*) printf 'py%s-greenlet%s\n' "$py" "$gl" ;;
        *) printf 'py%s-greenlet-%s\n' "$py" "${gl:-unknown}" ;;
    esac
}
same_versions() { [ "$(meta "$1" python)" = "$(meta "$2" python)" ] && [ "$(meta "$1" greenlet)" = "$(meta "$2" greenlet)" ]; }

# req_reason PY MOD: nothing and 0 when PY imports MOD, else why not.
declare -A REQ=()
req_reason() {
    local key="$1|$2" err last
    if [ -z "${REQ[$key]+x}" ]; then
        if err=$(cd "$ROOT" && timeout 60 "$1" -c "import $2" 2>&1); then
            REQ[$key]=""
        else
            last=$(printf '%s\n' "$err" | grep -v '^[[:space:]]' | tail -n 1)
            case $last in
                *"No module named '$2'"*) REQ[$key]="$2 unavailable in this environment ($last)" ;;
                *) REQ[$key]="$2 broken in this environment (${last:-import failed})" ;;
            esac
        fi
    fi
    printf '%s' "${REQ[$key]}"
    [ -z "${REQ[$key]}" ]
}

# run_cell ENV PY NAME: record, dump, check, compare; writes NAME.cell.
run_cell() {
    local env=$1 py=$2 name=$3 f=$ROOT/fixtures/$3.py dir=$OUT/cells/$1
    local base=$dir/$name cell=$dir/$name.cell t0 reason mod
    t0=$(date +%s.%N)
    {
        printf 'env=%s\nfixture=%s\n' "$env" "$name"
        printf 'expect_header=%s\n' "$(gr_header "$f" expect)"
        mutant_lines "$env" "$name"
    } >"$cell"
    if ! gr_header_present "$f" expect; then
        printf 'state=ran\nproblem=the fixture has no "# expect:" header line\n' >>"$cell"
        return
    fi
    local want want_crash=0 want_rules
    want=$(gr_normalize_expect "$(gr_header "$f" expect)")
    case ",$want," in *,crash,*) want_crash=1 ;; esac
    want_rules=$(printf '%s\n' "$want" | tr ',' '\n' | sed '/^crash$/d; /^$/d' | paste -sd, -)
    printf 'want_rules=%s\nwant_crash=%s\n' "$want_rules" "$want_crash" >>"$cell"
    for mod in $(gr_header "$f" requires | tr ',' ' '); do
        if ! reason=$(req_reason "$py" "$mod"); then
            printf 'state=skip\nskip_reason=%s\n' "$reason" >>"$cell"
            return
        fi
    done

    local rc crashed=0 problem="" sig=""
    gr_record "$py" "fixtures/$name.py" "$base.grt" "$base.log" "$TIMEOUT"
    rc=$?
    "$GR_CLI" dump "$base.grt" >"$base.txt" 2>"$WORK/dump.err"
    local dump_rc=$?
    if [ "$rc" -eq 124 ]; then
        problem="recording timed out after ${TIMEOUT}s"
    elif [ "$rc" -ge 128 ]; then
        crashed=1
        sig=SIG$(kill -l $((rc - 128)) 2>/dev/null || echo $((rc - 128)))
    elif [ "$rc" -ne 0 ]; then
        problem="record exited with status $rc: $(grep -v '^[[:space:]]' "$base.log" | tail -n 1)"
    fi
    if [ -z "$problem" ] && [ ! -f "$base.grt" ]; then
        problem="no trace was written"
    fi
    local crc=""
    if [ -z "$problem" ]; then
        "$GR_CLI" check --format json "$base.grt" >"$base.check.json" 2>"$WORK/check.err"
        crc=$?
        "$GR_CLI" check "$base.grt" >"$base.check.txt" 2>&1
        if [ "$crc" -eq 2 ]; then
            problem="check could not use the trace: $(head -n 1 "$WORK/check.err")"
        elif [ "$crc" -gt 2 ]; then
            problem="check exited with status $crc"
        elif [ "$dump_rc" -ne 0 ]; then
            problem="dump failed: $(head -n 1 "$WORK/dump.err")"
        fi
    fi
    [ -s "$base.txt" ] || rm -f "$base.txt"
    {
        printf 'state=ran\nrc=%s\ncrashed=%s\nsignal=%s\ncheck_rc=%s\nproblem=%s\n' \
            "$rc" "$crashed" "$sig" "$crc" "$problem"
    } >>"$cell"

    # Golden: the first of fixtures/golden/{SHORT,FULL}/NAME.txt recorded with
    # the same Python and greenlet versions as this dump.
    local short="" full="" g="" other="" k gstate=unchecked gnote="" gfile=""
    if [ -f "$base.txt" ]; then
        short=$(gr_env_from_meta <"$base.txt")
        full=$(full_key "$base.txt")
    fi
    # A mutant's dump is judged by the checker alone (killed or survived),
    # never by the golden of the unmodified greenlet it shares versions with.
    if [ -n "$(mutant_of "$env")" ]; then
        gstate=unchecked; gnote="mutant greenlet: no golden"; short=""
    elif [ "$crashed" = 1 ] && [ "$want_crash" = 0 ]; then
        # An unexpected crash (a debug build's assertion, say): the trace ends
        # where the program died, so its golden says nothing; the crash and
        # the check of the trace up to it are the cell's verdict.
        gstate=unchecked; gnote="the program died by $sig: its trace ends at the crash"
    elif [ -n "$short" ]; then
        for k in "$short" "$full"; do
            [ -f "$ROOT/fixtures/golden/$k/$name.txt" ] || continue
            if same_versions "$ROOT/fixtures/golden/$k/$name.txt" "$base.txt"; then g=$k; break; fi
            other=$k
        done
        if [ -n "$g" ]; then
            gfile=fixtures/golden/$g/$name.txt
            if diff -u --label "$gfile" --label "dump of cells/$env/$name.grt" "$ROOT/$gfile" "$base.txt" >"$base.diff"; then
                gstate=match; rm -f "$base.diff"
            else
                gstate=differs
            fi
        elif [ -n "$other" ]; then
            gstate=none
            gnote="fixtures/golden/$other/$name.txt was recorded with Python $(meta "$ROOT/fixtures/golden/$other/$name.txt" python), greenlet $(meta "$ROOT/fixtures/golden/$other/$name.txt" greenlet)"
        else
            gstate=none; gnote="no golden for $short"
        fi
    fi

    # Both switch modes (docs/FORMAT.md section 4): the same fixture recorded
    # with greenlet's trace callback; a verdict that differs from the passive
    # one is an observer effect (expected on greenlets of the greenlet issue 256
    # class, which any callback heals), reported, never hidden.
    local cbrules="" cbstate=unchecked
    # (the JSON reports are read with the host's Python: GR_PY of lib.sh)
    local GR_PY=${GR_PY:-/usr/bin/python3}
    if [ "$MODES" = 1 ] && [ -z "$problem" ]; then
        local tcb=$WORK/$name.callback.grt
        GREENREPLAY_SWITCHES=callback gr_record "$py" "fixtures/$name.py" "$tcb" "$WORK/callback.log" "$TIMEOUT"
        local rcb=$?
        if "$GR_CLI" check --format json "$tcb" >"$WORK/callback.json" 2>/dev/null || [ $? -eq 1 ]; then
            cbrules=$(gr_json_rules "$WORK/callback.json" 2>/dev/null)
            [ "$rcb" -ge 128 ] && cbrules="crash${cbrules:+,$cbrules}"
            local prules
            prules=$(gr_json_rules "$base.check.json" 2>/dev/null)
            [ "$crashed" = 1 ] && prules="crash${prules:+,$prules}"
            if [ "$prules" = "$cbrules" ]; then cbstate=same; else cbstate=differs; fi
        else
            cbstate=unusable
        fi
        rm -f "$tcb" "$tcb.times"
    fi
    printf 'callback_mode=%s
callback_rules=%s
' "$cbstate" "${cbrules:-clean}" >>"$cell"

    # Whole-program mode, where ci/matrix-greenlet.conf's WHOLE column asks
    # for it (the mutants and their controls): the default mode of
    # `greenreplay record` must tell a mutant apart too, not only the
    # fixture's own start().
    local wexp wstate=unchecked wrules=""
    wexp=$(whole_of "$env")
    if [ -n "$wexp" ] && [ -z "$problem" ]; then
        local tw=$WORK/$name.whole.grt
        gr_record_whole "$py" "fixtures/$name.py" "$tw" "$WORK/whole.log" "$TIMEOUT"
        local rw=$?
        if "$GR_CLI" check --format json "$tw" >"$WORK/whole.json" 2>/dev/null || [ $? -eq 1 ]; then
            wrules=$(gr_json_rules "$WORK/whole.json" 2>/dev/null)
            [ "$rw" -ge 128 ] && wrules="crash${wrules:+,$wrules}"
            wstate=ran
        else
            wstate=unusable
        fi
        rm -f "$tw" "$tw.times"
    fi
    printf 'whole_mode=%s\nwhole_rules=%s\nwhole_expect=%s\n' "$wstate" "$wrules" "$wexp" >>"$cell"

    # Determinism: a second recording in a fresh process.
    local dstate=unchecked dnote=""
    if [ "$DETERMINISM" = 1 ] && [ -z "$problem" ]; then
        local t2=$WORK/$name.again.grt rc2
        gr_record "$py" "fixtures/$name.py" "$t2" "$WORK/again.log" "$TIMEOUT"
        rc2=$?
        if [ "$rc2" -ne "$rc" ]; then
            dstate=differs; dnote="exit status $rc the first time, $rc2 the second"
        elif [ -f "$t2" ] && cmp -s "$base.grt" "$t2"; then
            dstate=same; dnote="$(wc -c <"$t2") bytes, byte-identical"
        else
            dstate=differs; dnote=$(cmp "$base.grt" "$t2" 2>&1 | head -n 1)
            "$GR_CLI" dump "$t2" 2>&1 | diff -u --label first --label second "$base.txt" - >"$base.again.diff"
        fi
        rm -f "$t2"
    fi
    if [ "$UPDATE" = 1 ] && [ "$dstate" = same ] && [ -f "$base.txt" ] && [ -n "$short" ] &&
       [ -z "$(mutant_of "$env")" ] && { [ "$crashed" = 0 ] || [ "$want_crash" = 1 ]; }; then
        local target=$short
        if [ -f "$ROOT/fixtures/golden/$short/$name.txt" ] &&
           ! same_versions "$ROOT/fixtures/golden/$short/$name.txt" "$base.txt"; then
            target=$full
        fi
        gfile=fixtures/golden/$target/$name.txt
        if [ -n "${GOLDEN_BY[$gfile]:-}" ] && ! cmp -s "$ROOT/$gfile" "$base.txt"; then
            gstate=conflict; gnote="$gfile was written by ${GOLDEN_BY[$gfile]} in this run with other content; not replaced"
        elif [ -f "$ROOT/$gfile" ] && cmp -s "$ROOT/$gfile" "$base.txt"; then
            gstate=unchanged; gnote=""; GOLDEN_BY[$gfile]=$env; rm -f "$base.diff"
        else
            mkdir -p "$ROOT/fixtures/golden/$target"
            cp "$base.txt" "$ROOT/$gfile"
            gstate=written; gnote=""; GOLDEN_BY[$gfile]=$env; rm -f "$base.diff"
        fi
    fi
    local t1
    t1=$(date +%s.%N)
    {
        printf 'golden=%s\ngolden_file=%s\ngolden_note=%s\ngolden_env=%s\n' "$gstate" "$gfile" "$gnote" "$short"
        printf 'determinism=%s\ndeterminism_note=%s\n' "$dstate" "$dnote"
        printf 'duration=%s\n' "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')"
    } >>"$cell"
}

# skip_cells ENV REASON: every fixture of ENV skipped with REASON.
skip_cells() {
    local n
    for n in "${FIXTURES[@]}"; do
        { printf 'env=%s\nfixture=%s\nexpect_header=%s\nstate=skip\nskip_reason=%s\n' \
            "$1" "$n" "$(gr_header "$ROOT/fixtures/$n.py" expect)" "$2"; mutant_lines "$1" "$n"; } >"$OUT/cells/$1/$n.cell"
        "$HOST_PY" "$REPORT" cell "$OUT/cells/$1/$n.cell" --known "$KNOWN" --envs "$ENVS_JSON" >/dev/null
    done
}

say "== matrix ($(elapsed)): $NE environment(s) x $NF fixture(s); cells in ${OUT#"$ROOT"/}/cells"
ei=0
counts() { printf '%s\n' "$@" | sort | uniq -c | awk '{ printf "%s%d %s", (NR > 1 ? ", " : ""), $1, $2 }'; }
while IFS=$'\t' read -r id kind status command pyver greenlet gevent reason; do
    ei=$((ei + 1))
    dir=$OUT/cells/$id
    mkdir -p "$dir"
    te=$SECONDS
    [ "$reason" = - ] && reason=""
    st=${COL_STATUS[$id]:-} why=${COL_REASON[$id]:-} retry=${COL_RETRY[$id]:-}
    if [ -z "$st" ]; then
        case $status in
            ready) ;;
            unavailable) if [ "$kind" = user ]; then st=error; else st=unavailable; fi; why=$reason ;;
            *) if [ $PROVISION = 1 ]; then st=error; why="$status after provisioning: ${reason:-?}"
               else st=unavailable; why="$status (${reason:-?}); run ci/envs.sh provision $id"; fi
               retry="ci/envs.sh provision $id" ;;
        esac
    fi
    if [ -z "$st" ]; then
        if ! "$ENVS_SH" "${ENV_ARGS[@]}" build "$id" >"$OUT/logs/build-$id.log" 2>&1; then
            st=error; why="recorder build failed: $(grep -E 'error|FAILED' "$OUT/logs/build-$id.log" | head -n 1)"
            retry="ci/envs.sh build $id"
            printf '[%s] build ... FAILED (log %s)\n' "$id" "${OUT#"$ROOT"/}/logs/build-$id.log"
            tail -n 8 "$OUT/logs/build-$id.log" | sed 's/^/    | /'
        fi
    fi
    if [ -n "$st" ]; then
        say "[$ei/$NE $id] $st: $why${retry:+ (retry: $retry)}"
        if [ "$st" = error ]; then skip_cells "$id" "environment $id could not run: $why"
        else skip_cells "$id" "environment $id unavailable: $why"; fi
        printf 'status=%s\nreason=%s\nretry=%s\nelapsed=0\norder=%d\nmutant=%s\n' "$st" "$why" "$retry" "$ei" \
            "$(mutant_of "$id")" >"$dir/_env"
        continue
    fi
    py=$("$ENVS_SH" "${ENV_ARGS[@]}" python "$id")
    say "[$ei/$NE $id] Python $pyver, greenlet $greenlet, gevent $gevent ($py)"
    outcomes=()
    fi_=0
    for name in "${FIXTURES[@]}"; do
        fi_=$((fi_ + 1))
        printf '  [%*s %2d/%d] %-*s ' "$EW" "$id" "$fi_" "$NF" "$W" "$name"
        tc=$(date +%s.%N)
        run_cell "$id" "$py" "$name"
        line=$("$HOST_PY" "$REPORT" cell "$dir/$name.cell" --known "$KNOWN" --envs "$ENVS_JSON")
        o=${line%%$'\t'*} text=${line#*$'\t'}
        outcomes+=("$o")
        printf '%-5s %5.1fs %7s  %s\n' "$o" "$(awk -v a="$tc" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')" \
            "$(elapsed)" "$([ "$o" = pass ] && echo "" || echo "$text" | cut -c1-110)"
    done
    golden_env=$(gr_env_of_python "$py" | gr_env_from_meta)
    printf 'status=ran\nreason=\nretry=\nelapsed=%d\norder=%d\ngolden_env=%s\nmutant=%s\n' $((SECONDS - te)) "$ei" \
        "$golden_env" "$(mutant_of "$id")" >"$dir/_env"
    say "[$ei/$NE $id] done in $((SECONDS - te))s: $(counts "${outcomes[@]}")"
done <<<"$SELECTION"

# ----------------------------------------------------------------- reports
docs_arg=()
if [ "$DOCS" = auto ]; then
    [ ${#SEL_ENVS[@]} -eq 0 ] && [ ${#SEL_FIX[@]} -eq 0 ] && [ $GREENLET_BUILDS = 1 ] &&
        docs_arg=(--docs "$ROOT/docs/matrix.md")
elif [ "$DOCS" != none ]; then
    docs_arg=(--docs "$DOCS")
fi
commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
say "== reports ($(elapsed))"
"$HOST_PY" "$REPORT" collect --out "$OUT" --known "$KNOWN" --envs "$ENVS_JSON" "${docs_arg[@]}" "${KILLS[@]}" \
    --meta "commit=$commit" --meta "elapsed_s=$((SECONDS - T0))" --meta "host=$(uname -n)"
rc=$?
if [ $rc -eq 3 ] && [ $STRICT = 0 ]; then
    say "matrix: some environment could not run (ERROR above; its cells are skip); --strict makes that exit 3"
    rc=0
fi
say "matrix: done in $(elapsed) (exit $rc)"
exit $rc
