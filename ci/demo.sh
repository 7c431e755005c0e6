#!/usr/bin/env bash
# ci/demo.sh - the demo behind `make demo`: record every fixture, check
# every trace, one line per fixture, then a summary.
#
# usage: ci/demo.sh --python PY [--fixtures NAME,...] [--known FILE]
#
# Each fixtures/NAME.py is recorded in a fresh process with
# `greenreplay record --manual` into build/traces/ENV/NAME.grt (ENV from the
# trace's META, e.g. py3.11-greenlet2.0) and checked with `greenreplay
# check`.  The line of a fixture shows its record, greenlet and thread
# counts, the outcome (clean, violations per rule, crashed, skipped) and
# whether that is what its "# expect:" header line says.  An outcome that
# differs from it only as an entry of fixtures/known-issues.ini explains
# (e.g. CPython issue 122029 on 3.12.0-3.12.4) is `known`, not a failure:
# the matrix's own classification (ci/matrix-report.py cell) decides it.
# A fixture that crashes is reported as crashed and the others still run.
#
# --fixtures runs only the fixtures named; --known reads the known issues
# from FILE instead of fixtures/known-issues.ini.
#
# Exit status: 0 every fixture behaved as expected or as a known issue
# explains (skips are listed but do not fail the demo), 1 something
# unexpected happened, 2 bad usage or the tools are not built.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GR_ROOT=$ROOT
GR_CLI=${GREENREPLAY_CLI:-$ROOT/build/greenreplay}
# shellcheck source=../tests/integration/lib.sh
. "$ROOT/tests/integration/lib.sh"

usage() {
    echo "usage: ci/demo.sh --python PY [--fixtures NAME,...] [--known FILE]" >&2
    exit 2
}
GR_PY="" ONLY="" KNOWN=$ROOT/fixtures/known-issues.ini
while [ $# -gt 0 ]; do
    case $1 in
        --python) [ $# -ge 2 ] || usage; GR_PY=$2; shift 2 ;;
        --python=*) GR_PY=${1#--python=}; shift ;;
        --fixtures) [ $# -ge 2 ] || usage; ONLY=$2; shift 2 ;;
        --known) [ $# -ge 2 ] || usage; KNOWN=$(realpath -m "$2"); shift 2 ;;
        -h|--help) sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) usage ;;
    esac
done
[ -n "$GR_PY" ] || usage
if [ ! -x "$GR_CLI" ]; then
    echo "demo: $GR_CLI is missing; build it first (make)" >&2
    exit 2
fi
if ! "$GR_PY" -c 'import sys' 2>/dev/null; then
    echo "demo: $GR_PY is not a usable Python interpreter" >&2
    exit 2
fi

[ -f "$KNOWN" ] || { echo "demo: known-issues file not found: $KNOWN" >&2; exit 2; }
REPORT=$ROOT/ci/matrix-report.py
if [ -n "${GREENREPLAY_HOST_PYTHON:-}" ]; then HOST_PY=$GREENREPLAY_HOST_PYTHON
elif [ -x /usr/bin/python3 ]; then HOST_PY=/usr/bin/python3
else HOST_PY=$GR_PY; fi

# known_issue NAME ENV DUMP JSON RC CRASHED SIGNAL CHECK_RC WANT_RULES WANT_CRASH:
# classify an unexpected outcome with the known issues, as the matrix does
# (ci/matrix-report.py cell).  Prints the ids of the known issues that
# explain it, comma-separated, and returns 0; returns 1 when they do not.
known_issue() {
    local name=$1 env=$2 dump=$3 json=$4 dir=$WORK/known/cells/$2 line py gl
    mkdir -p "$dir"
    cp "$json" "$dir/$name.check.json"
    py=$(sed -n 's/^# python: //p' "$dump" | head -n 1)
    gl=$(sed -n 's/^# greenlet: //p' "$dump" | head -n 1)
    printf '[{"id": "%s", "python_version": "%s", "greenlet": %s}]\n' "$env" "$py" \
        "$( [ -n "$gl" ] && [ "$gl" != none ] && printf '"%s"' "$gl" || printf null)" \
        >"$WORK/known/envs.json"
    {
        printf 'env=%s\nfixture=%s\nexpect_header=%s\n' "$env" "$name" \
            "$(gr_header "$ROOT/fixtures/$name.py" expect)"
        printf 'want_rules=%s\nwant_crash=%s\nstate=ran\n' "$9" "${10}"
        printf 'rc=%s\ncrashed=%s\nsignal=%s\ncheck_rc=%s\nproblem=\n' "$5" "$6" "$7" "$8"
    } >"$dir/$name.cell"
    line=$("$HOST_PY" "$REPORT" cell "$dir/$name.cell" --known "$KNOWN" \
        --envs "$WORK/known/envs.json" 2>/dev/null) || return 1
    [ "${line%%$'\t'*}" = known ] || return 1
    printf '%s\n' "${line##*as known: }"
}

TRACES=$ROOT/build/traces
WORK=$TRACES/.work/demo.$$          # scratch files of this run
rm -rf "$WORK"
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT
fixtures=()
for f in "$ROOT"/fixtures/*.py; do
    [ -f "$f" ] || continue
    [ -z "$ONLY" ] || case ",$ONLY," in *,"$(basename "$f" .py)",*) ;; *) continue ;; esac
    fixtures+=("$f")
done
N=${#fixtures[@]}
if [ "$N" -eq 0 ]; then
    echo "demo: no fixtures in $ROOT/fixtures" >&2
    exit 2
fi

probe_env=$(gr_env_of_python "$GR_PY" | gr_env_from_meta)
pyver=$("$GR_PY" -c 'import sys; print(sys.version.split()[0])' 2>/dev/null)
echo "greenreplay demo: $GR_PY (Python $pyver, env ${probe_env:-unknown}), $N fixtures, traces in build/traces/"
W=7
for f in "${fixtures[@]}"; do
    n=$(basename "$f" .py)
    [ ${#n} -gt "$W" ] && W=${#n}
done
printf '%-8s %-*s %8s %6s %4s  %-44s %s\n' "" "$W" fixture records glets thr outcome expectation

n_ok=0 n_bad=0 n_skip=0 n_crash=0 n_known=0 n_issue=0
declare -A rule_total note_total
unexpected=()
i=0
for f in "${fixtures[@]}"; do
    i=$((i + 1))
    name=$(basename "$f" .py)
    # Progress: the fixture's name first, the rest when its run is done.
    printf '[%2d/%2d]  %-*s ' "$i" "$N" "$W" "$name"

    if ! gr_header_present "$f" expect; then
        printf '%8s %6s %4s  %-44s %s\n' - - - "not run" "UNEXPECTED: no '# expect:' line"
        n_bad=$((n_bad + 1)); unexpected+=("$name: no '# expect:' header line")
        continue
    fi
    want=$(gr_normalize_expect "$(gr_header "$f" expect)")
    want_crash=0
    case ",$want," in *,crash,*) want_crash=1 ;; esac
    want_rules=$(printf '%s\n' "$want" | tr ',' '\n' | sed '/^crash$/d; /^$/d' | paste -sd, -)
    known=""
    grep -q '^# BUG:' "$f" && known=" (known bug, see fixture)"

    if ! reason=$(gr_missing_requirement "$GR_PY" "$f"); then
        printf '%8s %6s %4s  %-44s %s\n' - - - "skipped" "$reason"
        n_skip=$((n_skip + 1))
        continue
    fi

    tmp=$WORK/$name.demo.grt log=$WORK/$name.demo.log
    gr_record "$GR_PY" "fixtures/$name.py" "$tmp" "$log"
    rc=$?
    dump=$WORK/$name.demo.txt
    "$GR_CLI" dump "$tmp" >"$dump" 2>/dev/null
    env=$(gr_env_from_meta <"$dump") || env=$probe_env
    env=${env:-unknown}
    mkdir -p "$TRACES/$env"
    trace=$TRACES/$env/$name.grt
    rm -f "$trace"
    [ -f "$tmp" ] && mv "$tmp" "$trace"
    mv "$log" "$TRACES/$env/$name.log"
    log=$TRACES/$env/$name.log

    nrec=$(grep -c '^ *[0-9]' "$dump")
    nglet=$(awk '$2 == "GREENLET" && $4 != "g0"' "$dump" | wc -l)
    nthr=$(awk '$2 == "THREAD"' "$dump" | wc -l)

    crashed=0 problem="" rules="" summary="" not_failing="" cut=""
    if [ "$rc" -eq 124 ]; then
        problem="timed out"
    elif [ "$rc" -ge 128 ]; then
        crashed=1
        n_crash=$((n_crash + 1))
    elif [ "$rc" -ne 0 ]; then
        problem="program exited with status $rc"
    fi
    if [ -z "$problem" ] && [ ! -f "$trace" ]; then
        problem="no trace written"
    fi
    if [ -z "$problem" ]; then
        json=$TRACES/$env/$name.check.json
        "$GR_CLI" check --format json "$trace" >"$json" 2>"$WORK/$name.check.err"
        crc=$?
        if [ "$crc" -eq 2 ]; then
            problem="trace unusable: $(head -n 1 "$WORK/$name.check.err")"
        elif [ "$crc" -gt 2 ]; then
            problem="check exited with status $crc"
        else
            rules=$(gr_json_rules "$json")
            summary=$(gr_json_summary "$json")
            not_failing=$(gr_json_not_failing "$json")
            cut=$(gr_json_truncated "$json")
            for kv in $summary; do
                r=${kv%%=*}
                rule_total[$r]=$(( ${rule_total[$r]:-0} + ${kv#*=} ))
            done
            for kv in $not_failing; do
                r=${kv%%=*}
                note_total[$r]=$(( ${note_total[$r]:-0} + ${kv#*=} ))
            done
        fi
    fi

    if [ -n "$problem" ]; then
        outcome=$problem
    else
        outcome=""
        if [ "$crashed" = 1 ]; then
            sig=$(kill -l $((rc - 128)) 2>/dev/null || echo $((rc - 128)))
            outcome="crashed (SIG$sig)"
        fi
        if [ -n "$summary" ]; then
            outcome="${outcome:+$outcome, }violations: $summary"
        elif [ "$crashed" = 0 ]; then
            outcome="clean"
        fi
        # findings that do not fail (displaced): apart, as check's result line
        [ -n "$not_failing" ] && outcome="$outcome; not failing: $not_failing"
        [ -n "$cut" ] && outcome="$outcome, cut at byte $cut"
    fi
    known_ids=""
    if [ -z "$problem" ] && { [ "$crashed" != "$want_crash" ] || [ "$rules" != "$want_rules" ]; }; then
        sig=""
        [ "$crashed" = 1 ] && sig=SIG$(kill -l $((rc - 128)) 2>/dev/null || echo $((rc - 128)))
        known_ids=$(known_issue "$name" "$env" "$dump" "$json" "$rc" "$crashed" "$sig" "$crc" \
            "$want_rules" "$want_crash") || known_ids=""
    fi
    if [ -z "$problem" ] && [ "$crashed" = "$want_crash" ] && [ "$rules" = "$want_rules" ]; then
        verdict="as expected$known"
        n_ok=$((n_ok + 1))
        [ -n "$known" ] && n_known=$((n_known + 1))
    elif [ -n "$known_ids" ]; then
        verdict="known: $known_ids (${KNOWN#"$ROOT"/})"
        n_issue=$((n_issue + 1))
    else
        verdict="UNEXPECTED: expected $(gr_describe "$want_rules" "$want_crash")"
        n_bad=$((n_bad + 1))
        unexpected+=("$name: got ${outcome}, expected $(gr_describe "$want_rules" "$want_crash") (trace build/traces/$env/$name.grt, log build/traces/$env/$name.log)")
    fi
    printf '%8s %6s %4s  %-44s %s\n' "$nrec" "$nglet" "$nthr" "$outcome" "$verdict"
    if [ -n "$problem" ]; then
        tail -n 5 "$log" | sed 's/^/           | /'
    fi
    rm -f "$dump" "$WORK/$name.check.err"
done

echo
totals=""
for r in imbalance blind_spot switch_consistency propagation callback_guard displaced unreached attribution; do
    [ -n "${rule_total[$r]:-}" ] && totals="$totals $r=${rule_total[$r]}"
done
line="summary: $N fixtures, $n_ok as expected"
[ "$n_known" -gt 0 ] && line="$line ($n_known of them only because of a known bug)"
[ "$n_issue" -gt 0 ] && line="$line, $n_issue as a known issue explains (${KNOWN#"$ROOT"/})"
line="$line, $n_bad unexpected, $n_skip skipped, $n_crash crashed"
echo "$line"
echo "violations found in all traces:${totals:- none}"
notes=""
for r in displaced attribution; do
    [ -n "${note_total[$r]:-}" ] && notes="$notes $r=${note_total[$r]}"
done
[ -n "$notes" ] && echo "findings that do not fail (not violations):$notes"
if [ "$n_bad" -gt 0 ]; then
    echo "unexpected:"
    printf '  %s\n' "${unexpected[@]}"
    echo "demo: FAILED"
    exit 1
fi
echo "demo: OK"
exit 0
