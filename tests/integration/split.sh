#!/usr/bin/env bash
# tests/integration/split.sh --python PY: `greenreplay check --from A --to B`
# (replay/rules/split.h).  For recorded fixtures (rewritten into small chunks
# with `edit --chunk`) and a synthetic trace with violations (gentrace, then
# records dropped with `edit --drop`), every split into 2 ranges and a
# spread of splits into 3 ranges, merged with the recipe of
# docs/ARCHITECTURE.md, must give exactly the violations of the whole check
# (rule, record, thread, greenlet, message and context; none lost, none
# doubled).  Bad ranges give one line on stderr and exit 2.  One line per
# test, then "N passed, N failed".  Exit 1 if any failed.
set -u
. "$(dirname "$0")/lib.sh"
gr_script_init split "$@"
PY=$GR_PY top=$GR_ROOT work=$GR_WORK cli=$GR_CLI
gentrace=${BUILD:-$top/build}/bench/gentrace
pass=0 fail=0 skip=0
ok() { echo "PASS  $*"; pass=$((pass + 1)); }
bad() { echo "FAIL  $*"; fail=$((fail + 1)); }

# The merge recipe of docs/ARCHITECTURE.md ("Checking a trace in pieces"):
# the workers' `check --format json` documents in, one document out with the
# violations of every range in record order, warnings and notes once each,
# the refutations counted per greenlet added up, and the highest exit code.
merge() {
    jq -s '{file: .[0].traces[0].file,
            violations: ([.[].traces[0].violations // [] | .[]] | sort_by(.index)),
            warnings: ([.[].traces[0].warnings // [] | .[]] | unique),
            folded_warnings: ([.[].traces[0].folded_warnings // [] | .[]]
                              | group_by([.rule, .tid, .gid])
                              | map(.[0] + {count: (map(.count) | add)})),
            notes: ([.[].traces[0].notes // [] | .[]] | unique),
            exit_code: (map(.exit_code) | max)}' "$@"
}
# The same fields of the whole check.
whole() {
    jq '{file: .traces[0].file, violations: .traces[0].violations,
         warnings: (.traces[0].warnings | unique),
         folded_warnings: (.traces[0].folded_warnings | sort_by([.rule, .tid, .gid])),
         notes: (.traces[0].notes | unique),
         exit_code: .exit_code}' "$1"
}

nchunks() { "$cli" stats --format json "$1" | jq .chunks; }

# check_splits NAME TRACE BOUNDS...: the whole check against the merge of
# the ranges cut at each list of boundaries ("3" cuts [0,3) [3,end); "2,5"
# cuts [0,2) [2,5) [5,end)).
check_splits() {
    local name=$1 trace=$2; shift 2
    "$cli" check --format json "$trace" >"$work/whole.json" 2>/dev/null
    whole "$work/whole.json" >"$work/whole.m"
    local nv
    nv=$(jq '.violations | length' "$work/whole.m")
    local cuts n=0 failed=""
    for cuts in "$@"; do
        local from=0 k=0 parts=() rc=0
        for b in ${cuts//,/ } end; do
            if [ "$b" = end ]; then
                "$cli" check --format json --from "$from" "$trace" >"$work/p$k.json" 2>/dev/null
            else
                "$cli" check --format json --from "$from" --to "$b" "$trace" >"$work/p$k.json" 2>/dev/null
            fi
            rc=$?
            [ "$rc" -le 1 ] || { failed="$failed [$cuts: worker $from.. exit $rc]"; break; }
            parts+=("$work/p$k.json"); from=$b; k=$((k + 1))
        done
        merge "${parts[@]}" >"$work/merged.m"
        if ! cmp -s "$work/whole.m" "$work/merged.m"; then
            failed="$failed [$cuts]"
            diff "$work/whole.m" "$work/merged.m" | head -20 >"$work/$name.diff"
        fi
        n=$((n + 1))
    done
    if [ -z "$failed" ]; then
        ok "$name: $n splits merge to the whole check ($nv violation(s))"
    else
        bad "$name: merged splits differ from the whole check:$failed"
        cat "$work/$name.diff"
    fi
}

# all_splits N: every cut into 2 ranges, and 3-range cuts spread over 1..N-1.
all_splits() {
    local n=$1 a b step
    for ((a = 1; a < n; a++)); do echo "$a"; done
    step=$(( n / 6 + 1 ))
    for ((a = 1; a < n; a += step)); do
        for ((b = a + 1; b < n; b += step)); do echo "$a,$b"; done
    done
}

if ! command -v jq >/dev/null; then
    echo "SKIP  split: jq is missing (ci/setup.sh installs it)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi

# ---- recorded fixtures, in small chunks ---------------------------------------
if "$PY" -c 'import greenlet' 2>/dev/null; then
    for fx in seed two_threads throw switch_in_tracefunc profiler_removed_in_thread \
              profiler_replaced raw_thread cprofile_midway; do
        [ -f "$top/fixtures/$fx.py" ] || continue
        (cd "$top" && "$cli" record --manual --root "$top" -o "$work/$fx.rec.grt" -- "$PY" "fixtures/$fx.py") \
            >"$work/$fx.log" 2>&1
        if [ ! -s "$work/$fx.rec.grt" ] || ! "$cli" edit --chunk 160 -o "$work/$fx.grt" "$work/$fx.rec.grt" 2>>"$work/$fx.log"; then
            bad "$fx: recording or edit --chunk failed: $(tail -n 1 "$work/$fx.log")"
            continue
        fi
        n=$(nchunks "$work/$fx.grt")
        if [ "${n:-0}" -lt 3 ]; then
            bad "$fx: only ${n:-0} chunks after edit --chunk 160"
            continue
        fi
        # shellcheck disable=SC2046
        check_splits "$fx ($n chunks)" "$work/$fx.grt" $(all_splits "$n")
    done
    # The recorder's own chunks, compressed (FORMAT §2.1): 4 KiB of records
    # each (tests/integration/loop.py), each range decompressing its own.
    (cd "$top" && "$cli" record --manual --root "$top" -o "$work/loop.grt" -- "$PY" \
        tests/integration/loop.py) >"$work/loop.log" 2>&1
    n=$(nchunks "$work/loop.grt")
    first=$(od -An -tx1 -j 16 -N 1 "$work/loop.grt" 2>/dev/null | tr -d ' ')
    if [ "${n:-0}" -lt 3 ] || [ "$first" != c5 ]; then
        bad "loop.py: ${n:-0} chunks, first chunk tag ${first:-?} (expected compressed, c5)"
    else
        # shellcheck disable=SC2046
        check_splits "loop.py, compressed ($n chunks)" "$work/loop.grt" $(all_splits "$n")
    fi
else
    echo "SKIP  fixtures: greenlet is not importable by $PY"
    skip=$((skip + 1))
fi

# ---- a synthetic trace with violations ---------------------------------------
# The target as the Makefile names it ($(BUILD)/bench/gentrace, BUILD from
# the environment or build): an absolute path matches no rule.
if [ -x "$gentrace" ] || make -s -C "$top" "${BUILD:-build}/bench/gentrace" >/dev/null 2>&1; then
    "$gentrace" "$work/gen.grt" 200000 50 >/dev/null
    # Drop records of every kind the rules decide on later: the C_RETURN of
    # a MARK's `mark` call (blind_spot waits for it), RETURNs and CALLs
    # (imbalance, blind_spot at the next ground truth), SWITCHes
    # (switch_consistency), a DEAD; spread over the trace, some at the chunk
    # boundaries of the rewritten trace.
    "$cli" dump "$work/gen.grt" >"$work/gen.txt"
    drops=$(awk '
        $2 == "MARK" { m++; if (m % 7 == 3) want[$1 + 1] = 1 }
        $2 == "RETURN" { r++; if (r % 9001 == 17) print $1 }
        $2 == "CALL" { c++; if (c % 12007 == 5) print $1 }
        $2 == "SWITCH" { s++; if (s % 2503 == 11) print $1 }
        $2 == "DEAD" { d++; if (d == 20) print $1 }
        ($1 in want) && $2 == "C_RETURN" { print $1 }
    ' "$work/gen.txt" | sort -n | uniq | paste -sd, -)
    if "$cli" edit --chunk 16384 --drop "$drops" -o "$work/genv.grt" "$work/gen.grt" 2>"$work/edit.err"; then
        n=$(nchunks "$work/genv.grt")
        nv=$("$cli" check --format json "$work/genv.grt" 2>/dev/null | jq .violations)
        if [ "${nv:-0}" -lt 10 ]; then
            bad "gentrace: only ${nv:-0} violations after dropping records"
        else
            # shellcheck disable=SC2046
            check_splits "gentrace with violations ($n chunks)" "$work/genv.grt" $(all_splits "$n")
        fi
        # The clean trace in recorder-sized chunks: 3 workers.
        n=$(nchunks "$work/gen.grt")
        check_splits "gentrace clean ($n chunks)" "$work/gen.grt" "$((n / 3)),$((2 * n / 3))"
    else
        bad "gentrace: edit failed: $(cat "$work/edit.err")"
    fi
else
    bad "gentrace: $gentrace could not be built (make $gentrace)"
fi

# ---- a synthetic CPython 3.12+ trace: predictions ---------------------------
# gentrace INSTR 3: an INSTR record after every switch, the instrumentation
# version up every 3 switches, so that many resumed greenlets are predicted
# blind (tests/bench/gentrace.c) and the C_RETURN of their switch() refutes
# it (a warning each).  Of every 5th such resume of a worker, that C_RETURN
# and the worker's next C_CALL of switch() are dropped: no evidence before
# it switches away, an unconfirmed prediction (a note).  Predictions
# are made before every range and decided in it or after it: the whole
# check and the merged ranges must agree, warnings included.
if [ -x "$gentrace" ]; then
    "$gentrace" "$work/geni.grt" 60000 40 40 3 >/dev/null
    "$cli" dump "$work/geni.grt" >"$work/geni.txt"
    drops=$(awk '
        $2 == "INSTR" && $7 == "stale=1" && $4 != "g1" { k++; if (k % 5 == 0) { after = $1 + 1; want[$4] = 1 } next }
        $1 == after && $2 == "C_RETURN" { print $1; next }
        $2 == "C_CALL" && ($4 in want) && $5 == "greenlet.switch" { print $1; delete want[$4] }
    ' "$work/geni.txt" | sort -n | uniq | paste -sd, -)
    if "$cli" edit --chunk 4096 --drop "$drops" -o "$work/geniv.grt" "$work/geni.grt" 2>"$work/edit.err" &&
        "$cli" edit --chunk 4096 -o "$work/genic.grt" "$work/geni.grt" 2>>"$work/edit.err"; then
        "$cli" check --format json "$work/geniv.grt" >"$work/geniv.json" 2>/dev/null
        # unconfirmed: one note with their count (not violations)
        np=$(jq '[.traces[0].remarks[] | capture("^propagation: (?<n>[0-9]+) predicted") | .n | tonumber] | add // 0' "$work/geniv.json")
        # refuted: listed, or counted per greenlet past its first 3 predictions
        nw=$(jq '(.traces[0].warnings | length) + ([.traces[0].folded_warnings[].count] | add // 0)' "$work/geniv.json")
        nf=$(jq '.traces[0].folded_warnings | length' "$work/geniv.json")
        nc=$("$cli" check --format json "$work/genic.grt" 2>/dev/null | jq '.violations')
        if [ "${np:-0}" -lt 10 ] || [ "${nw:-0}" -lt 100 ] || [ "${nf:-0}" -lt 10 ] || [ "${nc:-1}" -ne 0 ]; then
            bad "gentrace INSTR: $np unconfirmed predictions and $nw refuted, counted for $nf greenlets (want >= 10, >= 100, >= 10), clean trace $nc violation(s) (want 0)"
        else
            n=$(nchunks "$work/geniv.grt")
            # shellcheck disable=SC2046
            check_splits "gentrace INSTR with unconfirmed predictions ($n chunks)" "$work/geniv.grt" $(all_splits "$n")
            n=$(nchunks "$work/genic.grt")
            # shellcheck disable=SC2046
            check_splits "gentrace INSTR clean, predictions refuted ($n chunks)" "$work/genic.grt" $(all_splits "$n")
        fi
    else
        bad "gentrace INSTR: edit failed: $(cat "$work/edit.err")"
    fi
fi

# The same generator, longer: more than GR_PROP_TRACE_LISTED (1000)
# refutations among the greenlets' first 3 predictions, so the whole check
# lists 1000 and counts the rest in the trace's line (folded_warnings with
# tid and gid null); the workers list the same ones and their counts add up
# (the merge groups the null entries as one), cut at every 6th boundary and
# in 3 ranges.
if [ -x "$gentrace" ]; then
    "$gentrace" "$work/genl.grt" 200000 40 40 3 >/dev/null
    if "$cli" edit --chunk 4096 -o "$work/genlc.grt" "$work/genl.grt" 2>"$work/edit.err"; then
        "$cli" check --format json "$work/genlc.grt" >"$work/genl.json" 2>/dev/null
        nl=$(jq '.traces[0].warnings | length' "$work/genl.json")
        nt=$(jq '[.traces[0].folded_warnings[] | select(.tid == null and .gid == null) | .count] | add // 0' "$work/genl.json")
        n=$(nchunks "$work/genlc.grt")
        if [ "${nl:-0}" -ne 1000 ] || [ "${nt:-0}" -lt 100 ]; then
            bad "gentrace INSTR, 200,000 records: $nl warnings listed (want 1000), $nt counted for the trace (want >= 100)"
        else
            cuts=()
            for ((a = 1; a < n; a += 6)); do cuts+=("$a"); done
            cuts+=("$((n / 3)),$((2 * n / 3))" "1,$((n - 1))")
            check_splits "gentrace INSTR past the trace's cap of listed refutations ($n chunks, $nt counted for the trace)" \
                "$work/genlc.grt" "${cuts[@]}"
        fi
    else
        bad "gentrace INSTR, 200,000 records: edit failed: $(cat "$work/edit.err")"
    fi
fi

# ---- bad ranges ---------------------------------------------------------------
t=$work/gen.grt
[ -f "$t" ] || t=$work/seed.grt
n=$(nchunks "$t")
bad_range() {
    local what=$1; shift
    "$cli" check "$@" "$t" >"$work/out" 2>"$work/err"
    local rc=$? lines
    lines=$(wc -l <"$work/err")
    if [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] && grep -q "$what" "$work/err" && [ ! -s "$work/out" ]; then
        ok "bad range $*: exit 2, $(cat "$work/err")"
    else
        bad "bad range $*: exit $rc, $lines stderr line(s): $(head -c 300 "$work/err")"
    fi
}
bad_range "from must be below" --from 3 --to 2
bad_range "from must be below" --from 2 --to 2
bad_range "past the last chunk" --from "$n"
bad_range "past the last chunk" --from "$((n + 5))" --to "$((n + 9))"
bad_range "bad --from" --from x
bad_range "bad --from" --from -1
bad_range "bad --to" --to 1.5
bad_range "bad --from" --from ""
bad_range "bad --to" --from 0 --to 99999999999999999999999
bad_range "do not go with" --from 0 --stall

# A B past the end means the end; --from past the end in JSON is unusable.
if "$cli" check -q --from 0 --to "$((n + 100))" "$t" >/dev/null 2>&1; then
    ok "--to past the last chunk checks to the end"
else
    bad "--to past the last chunk: exit $?"
fi

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
