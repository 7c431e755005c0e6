#!/usr/bin/env bash
# tests/integration/profiler_axis.sh - how the profiler axis turns
# `greenreplay conform` results into verdicts and reports
# (ci/profilers-report.py), on synthetic cells: nothing is run in an
# environment.
#
# usage: tests/integration/profiler_axis.sh
#
# Cells are written as ci/profilers.sh writes them (NAME.cell, conform's
# --json report NAME.json and its output NAME.log) for two environments of a
# small envs.json and classified against a small known-issues file:
#   - exit 0, no difference: pass; exit 3: skip with conform's reason;
#   - exit 1 with differences a profiler entry explains: known; the same
#     differences for another profiler, or another Python: fail;
#   - a difference the entry's message pattern does not match: fail;
#   - exit 0 where the entry names the fixture: xpass;
#   - exit 2, a report that disagrees with the exit status, no report: fail;
#   - a matrix entry (no `profilers` field) explains no profiler cell;
#   - the fixture's "# conform: P=fail": differences pass, none fail;
#     P=error: conform exit 2 passes, exit 0 fails;
#   - a program that exited with a non-zero status: fail, with its error
#     (pass where the fixture expects P=fail).
# Then collect: profilers.json, the Markdown section (summary per profiler
# with versions, the verdict table), its splice into a docs file (text
# around it kept, a second run replaces it), the HTML page, and the matrix
# page and Markdown (ci/matrix-report.py render) showing the axis.
# Output: one PASS/FAIL line per case, then "N passed, N failed".
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
REPORT=$ROOT/ci/profilers-report.py
PY=/usr/bin/python3
W=$(mktemp -d "${TMPDIR:-/tmp}/gr-profaxis.XXXXXX")
trap 'rm -rf "$W"' EXIT
NPASS=0 NFAIL=0
ok() { echo "PASS  $*"; NPASS=$((NPASS + 1)); }
bad() { echo "FAIL  $*"; NFAIL=$((NFAIL + 1)); }

cat >"$W/known.ini" <<'INI'
[greenreplay-observed-90]
title = cProfile misses calls in a greenlet suspended before enable() (synthetic)
python = >=3.12
greenlet = any
profilers = cprofile, profile
fixtures = profilers/suspended*
rules = blind_spot
message = saw [0-9]+ call
evidence = synthetic entry of tests/integration/profiler_axis.sh

[cpython-90]
title = a matrix entry: explains checker violations only (synthetic)
python = any
fixtures = *
rules = blind_spot
evidence = synthetic
INI
cat >"$W/envs.json" <<'JSON'
[{"id": "new", "kind": "root", "python": "3.13", "python_version": "3.13.5", "greenlet": "3.1.0", "debug": false,
  "status": "ready", "profilers": {"yappi": "1.6.10", "coverage": "7.6.0", "line_profiler": "4.2.0"}},
 {"id": "old", "kind": "root", "python": "3.9", "python_version": "3.9.2", "greenlet": "0.4.17", "debug": false,
  "status": "ready", "profilers": {"yappi": "1.0", "coverage": "5.1", "line_profiler": "2.1"}}]
JSON
DIFF='{"kind": "blind_spot", "function": "__main__.work", "greenlet": "g2", "truth": 3, "profiler": 1, "message": "cProfile saw 1 call of __main__.work in g2, the recording 3"}'
ODD='{"kind": "miscount", "function": "__main__.work", "greenlet": "g2", "truth": 3, "profiler": 4, "message": "counted 4 calls, the recording 3"}'

# cell NAME ENV FIXTURE PROFILER RC DIFFS|none|- WANT WORDS: DIFFS a JSON list
# (none: no report written; -: a skip report); WORDS must be in the reason.
cell() {
    local name=$1 env=$2 fx=$3 prof=$4 rc=$5 diffs=$6 want=$7 words=$8
    local d=$W/out/cells/$env stem verdict
    mkdir -p "$d"
    stem=$d/$prof--${fx//\//__}
    printf 'env=%s\nfixture=%s\nprofiler=%s\nexpect=%s\nstate=ran\nrc=%s\nduration=0.50\n' \
        "$env" "$fx" "$prof" "${EXPECT:-pass}" "$rc" >"$stem.cell"
    case $diffs in
        none) printf 'conform: cannot start the program\n' >"$stem.log" ;;
        -) printf 'skip: %s is not importable here\n' "$prof" >"$stem.log"
           printf '{"profiler": "%s", "verdict": "skip", "reason": "%s is not importable here", "differences": []}\n' \
               "$prof" "$prof" >"$stem.json" ;;
        *) printf 'conform: done\n' >"$stem.log"
           [ -n "${PSTATUS:-}" ] && printf 'Traceback (most recent call last):\n  File "x.py", line 1\nRuntimeError: boom\n' >>"$stem.log"
           printf '{"profiler": "%s", "profiler_version": "9.9", "python": "3", "greenlet": "x", "verdict": "%s", "reason": "", "functions_checked": 4, "differences": %s, "program_status": %s, "timing": {"run_s": 0.1}}\n' \
               "$prof" "$([ "$rc" = 0 ] && echo pass || echo fail)" "$diffs" "${PSTATUS:-0}" >"$stem.json" ;;
    esac
    verdict=$("$PY" "$REPORT" cell "$stem.cell" --known "$W/known.ini" --envs "$W/envs.json") || {
        bad "$name: cell exited $?"; return; }
    if [ "${verdict%%$'\t'*}" = "$want" ] && [[ ${verdict#*$'\t'} == *"$words"* ]]; then
        ok "$name: $want"
    else
        bad "$name: want $want with '$words', got: $verdict"
    fi
}

cell "agrees" new profilers/plain yappi 0 '[]' pass "agrees (4 function"
cell "agrees, old python" old profilers/suspended cprofile 0 '[]' pass "agrees"
cell "known blind spot" new profilers/suspended cprofile 1 "[$DIFF]" known "greenreplay-observed-90"
cell "same difference, profiler not named" new profilers/suspended yappi 1 "[$DIFF]" fail "blind_spot in __main__.work (g2)"
cell "same difference, python not covered" old profilers/suspended profile 1 "[$DIFF]" fail "blind_spot"
cell "difference of another kind" new profilers/suspended2 cprofile 1 "[$DIFF, $ODD]" fail "miscount in __main__.work"
cell "matrix entry explains nothing here" new seed cprofile 1 "[$DIFF]" fail "blind_spot"
cell "xpass" new profilers/suspended profile 0 '[]' xpass "greenreplay-observed-90"
cell "skip" old seed yappi 3 - skip "yappi is not importable here"
cell "conform error" old seed coverage 2 none fail "status 2: conform: cannot start the program"
cell "exit 1 without differences" old seed line_profiler 1 '[]' fail "disagrees with its report"
cell "exit 0 with differences" old seed profile 0 "[$DIFF]" fail "disagrees with its report"
cell "no report" old seed coverage-py 1 none fail "conform wrote no report"
EXPECT=error cell "error the fixture expects" old profilers/errs cprofile 2 none pass "as the fixture's '# conform: cprofile=error' expects"
EXPECT=error cell "expected error missing" old profilers/errs profile 0 '[]' fail "expects an error"
PSTATUS=1 cell "the program died" new profilers/died cprofile 0 '[]' fail "the program exited with status 1 (RuntimeError: boom)"
EXPECT=fail PSTATUS=1 cell "the program died as the fixture expects" new profilers/died profile 1 "[$ODD]" pass "the program exited with status 1 (RuntimeError: boom), as the fixture's"
EXPECT=fail cell "difference the fixture expects" old profilers/plain profile 1 "[$ODD]" pass "as the fixture's '# conform: profile=fail' expects"
EXPECT=fail cell "expected difference missing" old profilers/plain cprofile 0 '[]' fail "expects some"

# collect: reports and the docs section.
printf '# Compatibility matrix\n\nbefore\n' >"$W/docs.md"
"$PY" "$REPORT" collect --out "$W/out" --known "$W/known.ini" --envs "$W/envs.json" --docs "$W/docs.md" \
    --meta commit=abc >"$W/collect.txt" 2>&1
rc=$?
[ $rc = 1 ] && ok "collect exits 1 (fail cells)" || bad "collect exited $rc, want 1: $(tail -n 3 "$W/collect.txt")"
if "$PY" - "$W/out/profilers.json" <<'EOF'; then ok "profilers.json: 19 cells, per-profiler summary, the profiler entry only"; else bad "profilers.json"; fi
import json, sys
d = json.load(open(sys.argv[1]))
s = d["summary"]
assert len(d["cells"]) == 19, len(d["cells"])
assert s["outcomes"] == {"pass": 5, "known": 1, "xpass": 1, "fail": 11, "skip": 1}, s["outcomes"]
assert s["per_profiler"]["cprofile"] == {"pass": 2, "known": 1, "xpass": 0, "fail": 4, "skip": 0}, s["per_profiler"]
assert [k["id"] for k in d["known_issues"]] == ["greenreplay-observed-90"]
assert d["profilers"][:3] == ["cprofile", "profile", "yappi"], d["profilers"]
assert [e["id"] for e in d["envs"]] == ["old", "new"]
EOF
md=$W/out/profilers.md
if grep -q '^| cprofile | 9.9 | 9.9 | 2 | 1 | 4 | 0 |$' "$md" &&
   grep -q '^| profilers/plain | profile | pass (expected: miscount) | — |$' "$md" &&
   grep -q '^| coverage | 5.1 | 7.6.0 | 0 | 0 | 1 | 0 |$' "$md" &&
   grep -q '^| yappi | skip (yappi is not importable here) | 9.9 | 1 | 0 | 1 | 1 |$' "$md" &&
   grep -q '^| profilers/suspended | cprofile | pass | known: greenreplay-observed-90 |$' "$md" &&
   grep -q '^| profilers/suspended | profile | \*\*FAIL\*\* | \*\*XPASS\*\*: greenreplay-observed-90 |$' "$md" &&
   grep -q '^| seed | yappi | skip | — |$' "$md" &&
   grep -q '^| profilers/plain | yappi | — | pass |$' "$md"; then
    ok "Markdown: summary with versions, verdicts per fixture, environment and profiler"
else
    bad "Markdown tables"; sed -n '1,40p' "$md"
fi
# The summary's environment columns: a profiler with no cell in an
# environment (a mutant one runs only its own lines) shows the version the
# environment's probe names, else "—"; one whose every cell there is skip shows the reason most give,
# the profiler's own before a fixture's "requires" module.
skipcell() { # ENV FIXTURE PROFILER REASON
    mkdir -p "$W/out2/cells/$1"
    printf 'env=%s\nfixture=%s\nprofiler=%s\nexpect=none\nstate=skip\nskip_reason=%s\nduration=0.10\n' \
        "$1" "$2" "$3" "$4" >"$W/out2/cells/$1/$3--${2//\//__}.cell"
}
skipcell old profilers/a austin "requires gevent, not importable by old"
skipcell old profilers/b austin "austin is not installed"
skipcell old profilers/c austin "austin is not installed"
skipcell new profilers/a memray "memray is not importable here"
skipcell new profilers/a coverage "coverage is not importable here"
"$PY" "$REPORT" collect --out "$W/out2" --known "$W/known.ini" --envs "$W/envs.json" >"$W/collect2.txt" 2>&1
if grep -q '^| austin | skip (austin is not installed) | — | 0 | 0 | 0 | 3 |$' "$W/out2/profilers.md" &&
   grep -q '^| memray | — | skip (memray is not importable here) | 0 | 0 | 0 | 1 |$' "$W/out2/profilers.md" &&
   grep -q '^| coverage | 5.1 | skip (coverage is not importable here) | 0 | 0 | 0 | 1 |$' "$W/out2/profilers.md"; then
    ok "Markdown summary: no cell, the probe's version or —; the profiler's own skip reason first"
else
    bad "Markdown summary columns"; grep '^| [a-z]* |' "$W/out2/profilers.md" | head -n 4
fi
n1=$(grep -c 'profiler-axis:begin' "$W/docs.md")
"$PY" "$REPORT" render "$W/out/profilers.json" --docs "$W/docs.md" >/dev/null 2>&1
n2=$(grep -c 'profiler-axis:begin' "$W/docs.md")
if [ "$n1" = 1 ] && [ "$n2" = 1 ] && head -n 3 "$W/docs.md" | grep -q '^before$' && grep -q '^## Profiler axis$' "$W/docs.md"; then
    ok "docs section spliced in once, the text before it kept"
else
    bad "docs splice ($n1, $n2)"; cat "$W/docs.md" | head -n 8
fi
if grep -q "<td class='known' title='1 difference(s), known: greenreplay-observed-90'><a href='cells/new/cprofile--profilers__suspended.json'>known</a></td>" "$W/out/index.html"; then
    ok "HTML: a cell links to its conform report"
else
    bad "HTML cell"; grep -o "<td class='known'[^/]*" "$W/out/index.html" | head -n 3
fi
# The matrix reports show the axis (build/matrix/profilers beside matrix.json).
mkdir -p "$W/matrix"
mv "$W/out" "$W/matrix/profilers"
cat >"$W/matrix/matrix.json" <<'JSON'
{"schema": "greenreplay-matrix/1", "generated": {"time": "now"}, "envs": [], "fixtures": [], "known_issues": [], "cells": []}
JSON
printf 'old text\n' >"$W/docs2.md"
if "$PY" "$ROOT/ci/matrix-report.py" render "$W/matrix/matrix.json" --docs "$W/docs2.md" >"$W/render.txt" 2>&1 &&
   grep -q "<h2 id='profilers'>Profiler axis</h2>" "$W/matrix/index.html" &&
   grep -q "href='profilers/cells/new/cprofile--profilers__suspended.json'" "$W/matrix/index.html" &&
   grep -q '^## Profiler axis$' "$W/matrix/matrix.md" && grep -q '^## Profiler axis$' "$W/docs2.md"; then
    ok "matrix page and Markdown show the profiler axis"
else
    bad "matrix render with the axis: $(tail -n 3 "$W/render.txt")"
fi
echo "$NPASS passed, $NFAIL failed"
[ "$NFAIL" -eq 0 ]
