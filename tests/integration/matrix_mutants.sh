#!/usr/bin/env bash
# tests/integration/matrix_mutants.sh: the matrix's mutant outcomes on
# hand-made cells (no recording): in a mutant environment a cell that would
# be `fail` is `killed`, one that would pass is `survived`; the kill table
# and the mutation score are in matrix.md; --require-kills turns a surviving
# aimed cell into exit status 1, and an unmodified environment is unaffected;
# whole-program verdicts (WHOLE column of ci/matrix-greenlet.conf) likewise.
# One line per check, then "N passed, N failed".  Exit 1 if any failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
report=$top/ci/matrix-report.py
work=$(mktemp -d "${TMPDIR:-/tmp}/gr-mutants.XXXXXX")
trap 'rm -rf "$work"' EXIT
pass=0 fail=0
ok() { echo "PASS  $*"; pass=$((pass + 1)); }
bad() { echo "FAIL  $*"; fail=$((fail + 1)); }

: >"$work/known.ini"
cat >"$work/envs.json" <<'J'
[{"id": "ctl", "kind": "user", "python_version": "3.10.13", "greenlet": "2.0.2", "status": "ready"},
 {"id": "mutA", "kind": "user", "python_version": "3.10.13", "greenlet": "2.0.2", "status": "ready"},
 {"id": "mutB", "kind": "user", "python_version": "3.10.13", "greenlet": "2.0.2", "status": "ready"}]
J
# cell ENV FIXTURE MUTANT AIMED RULE: a recorded cell whose check found RULE (or nothing).
cell() {
    local d=$work/out/cells/$1
    mkdir -p "$d"
    {
        printf 'env=%s\nfixture=%s\nexpect_header=clean\nwant_rules=\nwant_crash=0\n' "$1" "$2"
        [ "$3" = - ] || printf 'mutant=%s\naimed=%s\n' "$3" "$4"
        printf 'state=ran\nrc=0\ncrashed=0\nsignal=\ncheck_rc=%s\nproblem=\n' "$([ -n "$5" ] && echo 1 || echo 0)"
        printf 'golden=unchecked\ndeterminism=unchecked\nduration=0.1\n'
        # WHOLE="RULES|EXPECT": the cell was also recorded whole-program.
        [ -z "${WHOLE:-}" ] || printf 'whole_mode=ran\nwhole_rules=%s\nwhole_expect=%s\n' "${WHOLE%%|*}" "${WHOLE#*|}"
    } >"$d/$2.cell"
    if [ -n "$5" ]; then
        printf '{"traces": [{"violations": [{"rule": "%s", "index": 7, "message": "profiler missed call of x"}]}]}\n' "$5"
    else
        printf '{"traces": [{"violations": []}]}\n'
    fi >"$d/$2.check.json"
}
envfile() { mkdir -p "$work/out/cells/$1"; printf 'status=ran\nelapsed=1\norder=%s\nmutant=%s\n' "$2" "$3" >"$work/out/cells/$1/_env"; }
envfile ctl 1 ""
envfile mutA 2 mut256
envfile mutB 3 mutnosave
cell ctl fx_one - 0 ""
cell ctl fx_two - 0 ""
cell mutA fx_one mut256 1 blind_spot     # aimed, killed
cell mutA fx_two mut256 0 ""             # not aimed, survived
cell mutB fx_one mutnosave 0 ""          # not aimed, survived
cell mutB fx_two mutnosave 1 ""          # aimed, survived

"$top/ci/matrix-report.py" collect --out "$work/out" --known "$work/known.ini" --envs "$work/envs.json" \
    >"$work/collect.out" 2>&1
rc=$?
outcome() {
    /usr/bin/python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(next(c["outcome"] for c in d["cells"] if c["env"] == sys.argv[2] and c["fixture"] == sys.argv[3]))' \
        "$work/out/matrix.json" "$1" "$2"
}
[ $rc -eq 0 ] && ok "collect without --require-kills: exit 0 although an aimed cell survived" ||
    bad "collect exit $rc: $(cat "$work/collect.out")"
for t in "ctl fx_one pass" "ctl fx_two pass" "mutA fx_one killed" "mutA fx_two survived" \
         "mutB fx_one survived" "mutB fx_two survived"; do
    set -- $t
    got=$(outcome "$1" "$2" 2>"$work/outcome.err")   # stderr apart: the interpreter may print at start-up
    [ "$got" = "$3" ] && ok "$1/$2 is $3" || bad "$1/$2 is '$got', expected $3 ($(tail -n 1 "$work/outcome.err"))"
done
md=$work/out/matrix.md
grep -q '^## Mutants' "$md" && ok "matrix.md has a Mutants section" || bad "no Mutants section in matrix.md"
grep -q '^| `fx_one` | ◎ \*\*killed\*\* (blind_spot) | survived |' "$md" &&
    ok "kill table row: fx_one killed by blind_spot in mutA (aimed), survived in mutB" ||
    bad "kill table row of fx_one: $(grep '^| `fx_one`' "$md" | tail -n 1)"
grep -q 'Mutation score:\*\* 1 of 2 mutant environments' "$md" && ok "mutation score 1 of 2" ||
    bad "mutation score line: $(grep 'Mutation score' "$md")"
grep -q "class='killed'" "$work/out/index.html" && ok "index.html has the kill table" || bad "no killed cell in index.html"
"$report" collect --out "$work/out" --known "$work/known.ini" --envs "$work/envs.json" --require-kills >/dev/null 2>&1
rc=$?
[ $rc -eq 1 ] && ok "--require-kills: exit 1 (mutB survived fx_two, aimed at it)" || bad "--require-kills exit $rc, expected 1"
cell mutB fx_two mutnosave 1 propagation
"$report" collect --out "$work/out" --known "$work/known.ini" --envs "$work/envs.json" --require-kills >/dev/null 2>&1
rc=$?
[ $rc -eq 0 ] && ok "--require-kills: exit 0 once every aimed cell is killed" || bad "--require-kills exit $rc, expected 0"
# Whole-program mode (ci/matrix-greenlet.conf WHOLE column): an aimed
# fixture must kill the mutant without --manual too, unless listed known.
field() {
    /usr/bin/python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(next(c.get(sys.argv[4]) for c in d["cells"] if c["env"] == sys.argv[2] and c["fixture"] == sys.argv[3]))' \
        "$work/out/matrix.json" "$1" "$2" "$3"
}
collect_kills() {
    "$report" collect --out "$work/out" --known "$work/known.ini" --envs "$work/envs.json" --require-kills \
        >"$work/collect.out" 2>&1
}
WHOLE="|control" cell ctl fx_one - 0 ""
WHOLE="|known the boot heals it" cell mutA fx_one mut256 1 blind_spot
collect_kills
rc=$?
[ $rc -eq 0 ] && [ "$(field mutA fx_one whole_outcome)" = survived ] && [ "$(field mutA fx_one whole_known)" = "the boot heals it" ] &&
    ok "whole-program survival listed as known: exit 0, reason kept" || bad "known whole-program survival: exit $rc, $(field mutA fx_one whole_outcome)"
grep -q '^| `fx_one` | ◎ \*\*killed\*\* (blind_spot); whole-program: survived (known) |' "$work/out/matrix.md" &&
    ok "kill table shows the whole-program verdict" || bad "kill table row: $(grep '^| `fx_one`' "$work/out/matrix.md" | tail -n 1)"
[ "$(field ctl fx_one whole_outcome)" = survived ] && [ "$(field ctl fx_one outcome)" = pass ] &&
    ok "control recorded whole-program as expected: shown, still pass" || bad "control: $(field ctl fx_one whole_outcome) $(field ctl fx_one outcome)"
WHOLE="blind_spot,propagation|known the boot heals it" cell mutA fx_one mut256 1 blind_spot
collect_kills
rc=$?
[ $rc -eq 1 ] && grep -q 'now killed whole-program: write kill' "$work/collect.out" &&
    ok "a known whole-program survival that now kills: exit 1, says to flip it" || bad "stale known: exit $rc: $(tail -n 2 "$work/collect.out")"
WHOLE="|kill" cell mutA fx_one mut256 1 blind_spot
collect_kills
rc=$?
[ $rc -eq 1 ] && grep -q 'survived whole-program' "$work/collect.out" &&
    ok "WHOLE kill: an aimed fixture surviving whole-program fails --require-kills" || bad "whole survival: exit $rc: $(tail -n 2 "$work/collect.out")"
WHOLE="blind_spot,propagation|kill" cell mutA fx_one mut256 1 blind_spot
collect_kills
rc=$?
[ $rc -eq 0 ] && [ "$(field mutA fx_one whole_outcome)" = killed ] &&
    ok "WHOLE kill: killed whole-program too: exit 0" || bad "whole kill: exit $rc: $(tail -n 2 "$work/collect.out")"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
