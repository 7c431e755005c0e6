#!/usr/bin/env bash
# tests/integration/export.sh --python PY: `greenreplay export` (Chrome and
# speedscope, validated by tests/export_check.py), `check --html`, `check
# --quiet`, `diff --quiet`, `--color`/NO_COLOR, `--version` and the bash
# completion script, on recorded fixtures.  One line per test, then
# "N passed, N failed".  Exit 1 if any failed.
set -u
PY=/usr/bin/python3
while [ $# -gt 0 ]; do
    case "$1" in
        --python) PY=$2; shift 2 ;;
        *) echo "usage: $0 [--python PY]" >&2; exit 2 ;;
    esac
done
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cli=${BUILD:-$top/build}/greenreplay
val=$top/tests/export_check.py
work=$(mktemp -d "${TMPDIR:-/tmp}/gr-export.XXXXXX")
trap 'rm -rf "$work"' EXIT
pass=0 fail=0
ok() { echo "PASS  $*"; pass=$((pass + 1)); }
bad() { echo "FAIL  $*"; fail=$((fail + 1)); }
esc=$(printf '\033')

if ! "$PY" -c 'import greenlet' 2>/dev/null; then
    echo "SKIP  export: greenlet is not importable by $PY"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi
rec() { (cd "$top" && "$cli" record --manual --root "$top" "$@") >"$work/rec.log" 2>&1; }

# ---- export -----------------------------------------------------------------
rec -o "$work/seed.grt" -- "$PY" fixtures/seed.py
rec --times -o "$work/two.grt" -- "$PY" fixtures/two_threads.py
for fmt in chrome speedscope; do
    opt=--expect-track; [ $fmt = speedscope ] && opt=--expect-profile
    if "$cli" export --format $fmt "$work/seed.grt" -o "$work/seed.$fmt.json" 2>"$work/err" &&
       "$PY" "$val" $fmt "$work/seed.$fmt.json" $opt "thread 1 greenlet 1 (main)" \
            $opt "thread 1 greenlet 2 (run x)" >"$work/val" 2>&1 &&
       grep -q "record order (1 us per record)" "$work/err"; then
        ok "export --format $fmt seed: valid, greenlet tracks named, timed by record order"
    else
        bad "export --format $fmt seed"; cat "$work/err" "$work/val" | head -10
    fi
done
if grep -q '"clock":"event order: 1 us per record' "$work/seed.chrome.json" &&
   grep -q '"ph":"s"' "$work/seed.chrome.json" && grep -q '"ph":"f","pid":1,"tid":2' "$work/seed.chrome.json" &&
   grep -q '"cat":"mark","name":"mark: in x"' "$work/seed.chrome.json"; then
    ok "export chrome seed: clock in metadata, switch flows into g2's track, marks as instants"
else
    bad "export chrome seed: metadata, flows or marks missing"
fi
# Two threads, with the side channel: real time, one track per greenlet per thread.
if "$cli" export --format chrome "$work/two.grt" -o "$work/two.json" 2>"$work/err" &&
   "$PY" "$val" chrome "$work/two.json" >"$work/val" 2>&1 &&
   grep -q '"time_unit":"ns"' "$work/two.json" && grep -q "two.grt.times" "$work/err" &&
   [ "$(grep -c '"name":"thread_name","args":{"name":"thread 2 ' "$work/two.json")" -ge 1 ]; then
    ok "export chrome two_threads: side-channel times, tracks of thread 2"
else
    bad "export chrome two_threads"; cat "$work/err" "$work/val" | head -10
fi
"$cli" export --format speedscope --no-times "$work/two.grt" -o "$work/two.ss.json" 2>"$work/err"
if "$PY" "$val" speedscope "$work/two.ss.json" >"$work/val" 2>&1 && grep -q '"unit":"microseconds"' "$work/two.ss.json"; then
    ok "export speedscope --no-times: valid, microseconds by record order"
else
    bad "export speedscope --no-times"; cat "$work/val" | head -5
fi

# Unbalanced: drop the CALL of x in g2 (a blind spot and a return without
# call) and cut the file short (frames open at the end).
idx=$("$cli" dump "$work/seed.grt" | awk '$2 == "CALL" && $4 == "g2" { print $1; exit }')
"$cli" edit --drop "$idx" -o "$work/lost.grt" "$work/seed.grt"
"$cli" export --format chrome "$work/lost.grt" -o "$work/lost.json" 2>"$work/err"
if "$PY" "$val" chrome "$work/lost.json" --expect-violation blind_spot >"$work/val" 2>&1 &&
   grep -q '"returns_without_call":[1-9]' "$work/lost.json" && grep -q '"name":"return without call: x"' "$work/lost.json"; then
    ok "export chrome of a trace with a lost call: still nests, violation and unmatched return as instants"
else
    bad "export chrome lost call"; cat "$work/val" "$work/err" | head -10
fi
size=$(stat -c %s "$work/seed.grt")
head -c $((size - 12)) "$work/seed.grt" >"$work/cut.grt"
"$cli" export --format speedscope "$work/cut.grt" -o "$work/cut.json" 2>"$work/err"
rc=$?
if [ $rc -eq 0 ] && "$PY" "$val" speedscope "$work/cut.json" >"$work/val" 2>&1 &&
   grep -q "[1-9][0-9]* frames closed at end" "$work/err"; then
    ok "export of a truncated trace: frames open at the end are closed there"
else
    bad "export truncated (exit $rc)"; cat "$work/err" "$work/val" | head -5
fi
# The validator itself rejects what it must.
printf '[{"ph":"B","pid":1,"tid":1,"ts":1,"name":"a","cat":"c"},{"ph":"E","pid":1,"tid":1,"ts":2,"name":"b"},{"ph":"i","pid":1,"tid":1,"ts":0,"s":"t"}]' >"$work/bad.json"
printf '{"$schema":"x","shared":{"frames":[{"name":"a"}]},"profiles":[{"type":"evented","name":"p","unit":"none","startValue":0,"endValue":5,"events":[{"type":"O","frame":0,"at":3},{"type":"O","frame":0,"at":2}]}]}' >"$work/bad.ss.json"
"$PY" "$val" chrome "$work/bad.json" >"$work/val" 2>&1; r1=$?
"$PY" "$val" speedscope "$work/bad.ss.json" >>"$work/val" 2>&1; r2=$?
if [ $r1 -eq 1 ] && [ $r2 -eq 1 ] && grep -q "closes B 'a'" "$work/val" && grep -q "missing name" "$work/val" &&
   grep -q "out of order" "$work/val" && grep -q "never closed" "$work/val"; then
    ok "export_check.py rejects mismatched E, missing fields, time going back, unclosed frames"
else
    bad "export_check.py accepted bad input ($r1 $r2)"; cat "$work/val"
fi
# The merged view: per thread, the time of the records summed over the
# greenlets that ran, the same in both formats; its profile first in
# speedscope, a CPU profile ("Profile"/"ProfileChunk") in Chrome; both
# exports count the same violations; --view merged is only that.
"$cli" export -o "$work/lost.speedscope.json" "$work/lost.grt" 2>"$work/err.ss"
"$cli" export --format chrome -o "$work/lost.json" "$work/lost.grt" 2>"$work/err.ch"
"$cli" export --view merged -o "$work/lost.m.chrome.json" "$work/lost.grt" 2>"$work/err.m"
cmp_out=$("$PY" - "$work/lost.json" "$work/lost.speedscope.json" "$work/lost.m.chrome.json" "$work/lost.grt" "$cli" <<'PY'
import json, subprocess, sys
chrome, ss, merged = (json.load(open(p)) for p in sys.argv[1:4])
dump = subprocess.run([sys.argv[5], "dump", sys.argv[4]], capture_output=True, text=True).stdout
def total(doc):
    chunk = [e for e in doc if e.get("name") == "ProfileChunk"]
    return [sum(c["args"]["data"]["timeDeltas"]) for c in chunk], [c["args"]["data"]["endTime"] for c in chunk]
deltas, ends = total(chrome)
p0 = ss["profiles"][0]
# records of thread 1, 1 us each: the time from its START (a greenlet runs
# from there) to its last record
recs = [l.split() for l in dump.splitlines() if l.split()[2:3] == ["t1"]]
start = [r for r in recs if r[1] == "START"]
span = int(recs[-1][0]) - int(start[0][0])
ok = (len(deltas) == 1 and deltas[0] == ends[0] == span and p0["name"] == "thread 1: all greenlets merged"
      and p0["endValue"] == span and total(merged) == (deltas, ends)
      and not any(e.get("ph") in ("B", "E") for e in merged))
print("ok" if ok else "chrome %s/%s, speedscope %s %s, span %d, merged %s" % (deltas, ends, p0["name"], p0["endValue"], span, total(merged)))
PY
)
if [ "$cmp_out" = ok ] && "$PY" "$val" chrome "$work/lost.m.chrome.json" >"$work/val" 2>&1 &&
   "$PY" "$val" speedscope "$work/lost.speedscope.json" >>"$work/val" 2>&1 &&
   grep -q " 2 findings (2 failing)," "$work/err.ss" && grep -q " 2 findings (2 failing)," "$work/err.ch" &&
   grep -q "1 merged profile" "$work/err.m"; then
    ok "merged view: the thread's time summed over its greenlets, the same in Chrome and speedscope; same violation counts"
else
    bad "merged view: $cmp_out"; cat "$work/val" "$work/err.ss" "$work/err.m" | head -10
fi
# The name speedscope reads a file by: it gives the format; the other is refused.
"$cli" export -o "$work/n.chrome.json" "$work/seed.grt" 2>/dev/null; r1=$?
"$cli" export --format speedscope -o "$work/n2.chrome.json" "$work/seed.grt" 2>"$work/err"; r2=$?
if [ $r1 -eq 0 ] && head -c 1 "$work/n.chrome.json" | grep -q '\[' && [ $r2 -eq 2 ] && [ ! -e "$work/n2.chrome.json" ] &&
   grep -q "reads a file by that name as the other format" "$work/err"; then
    ok "export -o NAME.chrome.json: Chrome without --format; --format speedscope refused for that name"
else
    bad "export by name: exit $r1/$r2"; cat "$work/err"
fi

# Errors: one line, exit 2.
"$cli" export --format chrome "$work/none.grt" -o "$work/x.json" 2>"$work/err"; r1=$?
printf 'GRRPLY\r\nxxxxxxxxxxxx' >"$work/corrupt.grt"
"$cli" export --format chrome "$work/corrupt.grt" 2>>"$work/err" >/dev/null; r2=$?
"$cli" export --format svg "$work/seed.grt" 2>/dev/null; r3=$?
"$cli" export "$work/seed.grt" 2>/dev/null; r4=$?
if [ $r1 -eq 2 ] && [ $r2 -eq 2 ] && [ $r3 -eq 2 ] && [ $r4 -eq 2 ] && [ "$(wc -l <"$work/err")" -eq 2 ] &&
   grep -q "corrupt.grt: offset" "$work/err"; then
    ok "export errors: missing or corrupt trace, bad or no --format: exit 2, one line"
else
    bad "export errors: exits $r1 $r2 $r3 $r4"; cat "$work/err"
fi

# ---- check --html, --quiet, --color ------------------------------------------
"$cli" check --html "$work/r.html" "$work/lost.grt" "$work/seed.grt" >/dev/null 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q 'blind_spot</span> at event' "$work/r.html" &&
   grep -q 'id="f0-g2"' "$work/r.html" && grep -q 'href="#f0-g2"' "$work/r.html" &&
   grep -q 'shadow stack (profile events)' "$work/r.html" && grep -q '>clean<' "$work/r.html" &&
   ! grep -qE '<script|<link|https?://' "$work/r.html"; then
    ok "check --html: violations with greenlet links, shadow/real stacks, clean trace, self-contained"
else
    bad "check --html (exit $rc)"
fi
# --html takes the output's name: a trace or an option in its place is refused.
cp "$work/seed.grt" "$work/keep.grt"
"$cli" check --html "$work/keep.grt" "$work/seed.grt" >/dev/null 2>"$work/err"; r1=$?
(cd "$work" && "$cli" check --html -o r2.html seed.grt >/dev/null 2>>"$work/err"); r2=$?
if [ $r1 -eq 2 ] && [ $r2 -eq 2 ] && cmp -s "$work/seed.grt" "$work/keep.grt" && [ ! -e "$work/-o" ] &&
   [ "$(wc -l <"$work/err")" -eq 2 ] && grep -q "keep.grt: is a trace, not overwritten" "$work/err"; then
    ok "check --html TRACE or --html -o: refused, exit 2, one line, the trace unchanged"
else
    bad "check --html over a trace or an option (exit $r1/$r2)"; cat "$work/err"
fi
out=$("$cli" check --quiet "$work/lost.grt" "$work/seed.grt"); rc=$?
if [ $rc -eq 1 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 2 ] &&
   printf '%s\n' "$out" | grep -q "lost.grt: [0-9]* violations* (.*blind_spot [0-9]" &&
   printf '%s\n' "$out" | grep -q "seed.grt: clean, [0-9]* records"; then
    ok "check --quiet: one line per trace, exit 1"
else
    bad "check --quiet (exit $rc): $out"
fi
out=$("$cli" diff --quiet "$work/seed.grt" "$work/lost.grt"); rc=$?
out2=$("$cli" diff -q "$work/seed.grt" "$work/seed.grt"); rc2=$?
if [ $rc -eq 1 ] && [ $rc2 -eq 0 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] &&
   printf '%s' "$out" | grep -q "1 difference" && printf '%s' "$out2" | grep -q "same structure"; then
    ok "diff --quiet: one line, exit status kept"
else
    bad "diff --quiet ($rc $rc2): $out / $out2"
fi
always=$("$cli" check --color=always "$work/lost.grt")
never=$("$cli" check --color=never "$work/lost.grt")
piped=$("$cli" check "$work/lost.grt")
tty=$(script -qec "'$cli' check '$work/lost.grt'" /dev/null)
notty=$(NO_COLOR=1 script -qec "'$cli' check '$work/lost.grt'" /dev/null)
dcol=$("$cli" diff --color=always "$work/seed.grt" "$work/lost.grt")
if [[ "$always" == *"${esc}[31mblind_spot at"* ]] && [[ "$never" != *"$esc"* ]] && [[ "$piped" != *"$esc"* ]] &&
   [[ "$tty" == *"${esc}["* ]] && [[ "$notty" != *"$esc"* ]] && [[ "$dcol" == *"${esc}[31m-"* ]] &&
   [ "$(printf '%s' "$always" | sed "s/${esc}\[[0-9;]*m//g")" = "$never" ]; then
    ok "--color: always/never, auto colours a terminal only, NO_COLOR; same text without escapes"
else
    bad "--color: always=${#always} never=${#never} tty=${#tty} notty=${#notty}"
fi
"$cli" check --color=sometimes "$work/seed.grt" >/dev/null 2>&1
if [ $? -eq 2 ]; then ok "check --color=sometimes: bad usage (2)"; else bad "check --color=sometimes accepted"; fi

# ---- --version, completion --------------------------------------------------
v=$("$cli" --version)
if printf '%s\n' "$v" | grep -q "^greenreplay [0-9.]* (build [^)]*)$" &&
   printf '%s\n' "$v" | grep -q "^trace format 1\.[0-9]" &&
   printf '%s\n' "$v" | grep -qE "^  _greenreplay\..*\.so: build [^u]"; then
    ok "--version: release, build, trace format, the recorder's build"
else
    bad "--version: $v"
fi
comp=$top/ci/greenreplay-completion.bash
missing=""
for cmd in record check dump stats edit script diff reduce export conform; do
    opts=$(bash -c "source '$comp'; _greenreplay_opts $cmd")
    help=$("$cli" help "$cmd" 2>&1)
    for o in $opts; do
        [ "$o" = --help ] || printf "%s" "$help" | grep -q -- "$o" || missing="$missing $cmd:$o"
    done
done
words=$(bash -c "source '$comp'; COMP_WORDS=(greenreplay ex); COMP_CWORD=1; _greenreplay; echo \"\${COMPREPLY[*]}\"
COMP_WORDS=(greenreplay export --format ''); COMP_CWORD=3; _greenreplay; echo \"\${COMPREPLY[*]}\"")
if bash -n "$comp" && [ -z "$missing" ] && [ "$words" = "$(printf 'export\nchrome speedscope')" ]; then
    ok "bash completion: every option it offers is in the command's --help; completes commands and formats"
else
    bad "bash completion: missing in --help:$missing; got: $words"
fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
