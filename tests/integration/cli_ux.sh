#!/usr/bin/env bash
# tests/integration/cli_ux.sh - command-line papercuts found by a new-user
# review of the README, each kept fixed:
#   check --junit/--html OUT that cannot be written (missing directory, a
#     directory, a read-only file): refused before any trace is read, one
#     line naming the option, the path and the cause, exit 2, nothing written
#   check -q: one stdout line per trace, also "FILE: unusable: CAUSE" for a
#     missing or corrupt one (its stderr line stays, exit status unchanged)
#   counts that add up: on a program with violations and a displaced finding
#     (a switch inside its own profile function), -q's "N violations (RULE
#     N, ...)" sums to N and holds no finding that does not fail ("not
#     failing: displaced 1" apart), the same words on the result line, in
#     JSON's tally, JUnit and HTML; an allow from pyproject.toml is named as
#     such, never as --allow, by -q and the full report alike
#   greenreplay.recording() that raises on entry leaves no temporary directory
#   help texts: no line of greenreplay --help or any command's --help is
#     over 80 columns; check's ground truth counts SWITCH stacks; export's
#     summary terms are the ones it prints (switches); colour follows the
#     terminal and NO_COLOR / TERM=dumb turn it off (greenreplay --help, the
#     man page, and the CLI on a pseudo-terminal)
#   an empty trace's coverage says "no threads recorded" (text and HTML), JSON
#     stays numeric
#   record after a program that left without the recorder's stop
#     (os._exit): one stderr line saying so and how many complete chunks
#     the trace holds (none for a short program, else N up to the byte
#     where `dump` says the trace is cut); after a segfault, that the trace
#     holds the records up to the crash; nothing said after a normal exit
#     or an uncaught exception; after SIGINT (KeyboardInterrupt, then Python
#     ends by the signal) that the trace is complete; the program's exit
#     status passes through
#   record -o F x.py (the script where PYTHON goes): a hint naming PYTHON
#   record -- "" x.py: says the interpreter is empty; an interpreter that is
#     missing, not executable or does not run: one line with the cause;
#     reduce --python likewise, up front (exit 2, not "nothing to reduce")
#   the round trip the script's header gives (script, record --manual, diff
#     --c-names script) on a whole-program recording (record without
#     --manual, the default): same structure, also --anonymize with --rename;
#     a script of a program with one more switch still differs; an
#     anonymized script's header names diff's --rename; script
#     notes nothing for such a trace (its start at the top is reproduced);
#     a program ended by an uncaught exception round-trips too (what follows
#     its <module>'s return is not compared, and diff says so; the original
#     has no such record: the recorder's stop there is not recorded)
#   check of a program ended by an uncaught exception says so in its
#     "ended by" line (the exception's type, META uncaught), not a plain exit
#   script's header names PYTHON, the Python that ran the original with the
#     version of the trace's META python, never a bare python3; same bytes
#     twice
#   a file cut inside its first chunk: check's line gives the file's size and
#     the offset of the incomplete chunk, and does not call it header-only
#   a cut trace (inside its first chunk, at a chunk boundary) through dump,
#     stats, diff and check --html: the same words as check's line
#   export's summary: "1 track" for one greenlet, "tracks" for more
#   export/script -o that cannot be written: "greenreplay: CMD: -o PATH:
#     cannot write it: CAUSE", exit 2, refused before the trace is read
#   record --max-size that dropped records: one line with the trailer's count;
#     none when nothing was dropped
#   reduce with nothing to reduce (and on SIGTERM) removes its scratch
#     directory; --keep keeps and names it
#   record's -o after a run that dies before recording: an existing file is
#     left empty, a missing one is not created (docs/USAGE.md "Stale output"); the
#     "no trace was written" line gives the reason in both cases
#   conform on a program ending in os._exit: record's line does not name the
#     temporary trace conform deletes (with --keep it does, and it exists);
#     --keep's "kept" line names only the trace, not the unwritten results.json
#   ci/envs.sh python ID for a known environment not provisioned (a fresh
#     cache): exit 3, nothing on stdout, one line saying how to provision it;
#     an unknown ID: exit 2; ci/peer.sh --env ID passes that reason through
#     (it said "unavailable" whatever the cause), and a note on success
#   docs/WORKFLOW.md's first block runs as written (app.py a fixture,
#     ci/envs.sh a stub printing the interpreter): each command exits 0, the
#     optional reduce 1 (nothing to reduce); its commands name the
#     interpreters only as "$PYTHON" and "$BAD_PYTHON"
#   make help names every .PHONY target and every script that make
#     integration and make integration-debug run
#   passive switch detection is the default and installs no greenlet trace
#     callback (greenlet.gettrace() stays None); --switches callback installs
#     one; record --help, the man page and README say so
#
# usage: tests/integration/cli_ux.sh [--python PY]
# Output: one line per test (PASS / FAIL / SKIP), then "N passed, N failed".
# Exit status: 0 all passed, 1 a test failed, 2 bad usage.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gr_script_init cli-ux "$@"
cli=$GR_CLI
W=$GR_WORK
NSKIP=0
skip() { echo "SKIP  $*"; NSKIP=$((NSKIP + 1)); }

# A clean trace of a small fixture, an empty file, a corrupt file, a short one.
if ! (cd "$GR_ROOT" && "$cli" record -o "$W/good.grt" -- "$GR_PY" fixtures/deep_stack.py) \
        >"$W/rec.log" 2>&1; then
    gr_bad "record fixtures/deep_stack.py with $GR_PY"
    gr_show "$W/rec.log"
    gr_tally
    exit 1
fi
: >"$W/empty.grt"
echo "not a trace" >"$W/corrupt.grt"
head -c 10 "$W/good.grt" >"$W/short.grt"

# ---- 1. unwritable --junit / --html: refused up front
# refused OPT TARGET CAUSE WHAT: check OPT TARGET must exit 2 with nothing on
# stdout and exactly the one line naming OPT, TARGET and CAUSE on stderr.
refused() {
    local opt=$1 target=$2 cause=$3 what=$4 rc fmt
    for fmt in text json; do
        "$cli" check --format "$fmt" "$opt" "$target" "$W/good.grt" >"$W/r.out" 2>"$W/r.err"
        rc=$?
        local want="greenreplay: check: $opt $target: cannot write it: $cause"
        if [ $rc -eq 2 ] && [ ! -s "$W/r.out" ] && [ "$(cat "$W/r.err")" = "$want" ]; then
            :
        else
            gr_bad "check $opt to $what (--format $fmt): want exit 2, no report, one line '$want'; got exit $rc"
            gr_show "$W/r.out" "$W/r.err"
            return 1
        fi
    done
    gr_ok "check $opt to $what: one line naming the option, path and cause, exit 2, no report"
}
for opt in --junit --html; do
    refused "$opt" "$W/no/such/dir/r.out" "No such file or directory" "a missing directory"
    [ -e "$W/no" ] && gr_bad "check $opt to a missing directory created $W/no"
    refused "$opt" "$W" "Is a directory" "a directory"
    echo "previous report" >"$W/ro.out"
    if [ "$(id -u)" != 0 ]; then
        chmod 444 "$W/ro.out"
        refused "$opt" "$W/ro.out" "Permission denied" "a read-only file"
        chmod 644 "$W/ro.out"
    elif chattr +i "$W/ro.out" 2>/dev/null; then # root: only the immutable bit stops it
        refused "$opt" "$W/ro.out" "Operation not permitted" "an immutable file (root: chattr +i)"
        chattr -i "$W/ro.out"
    else
        skip "check $opt to a read-only file: running as root on a file system without chattr +i"
    fi
    if [ "$(cat "$W/ro.out")" != "previous report" ]; then
        gr_bad "check $opt to a read-only file changed it"
    fi
    # a writable OUT still gets the report, and the probe left no stray file
    rm -f "$W/ok.out"
    if "$cli" check -q "$opt" "$W/ok.out" "$W/good.grt" >"$W/r.out" 2>"$W/r.err" && [ -s "$W/ok.out" ] &&
       grep -q '^<' "$W/ok.out"; then
        gr_ok "check $opt to a writable path: written, exit 0"
    else
        gr_bad "check $opt to a writable path"
        gr_show "$W/r.out" "$W/r.err"
    fi
done

# ---- 2. check -q: one stdout line per trace, unusable ones included
files=("$W/good.grt" "$W/missing.grt" "$W/corrupt.grt" "$W/short.grt" "$W/empty.grt")
"$cli" check -q "${files[@]}" >"$W/q.out" 2>"$W/q.err"
qrc=$?
"$cli" check "${files[@]}" >/dev/null 2>"$W/full.err"
frc=$?
if [ $qrc -eq 2 ] && [ $frc -eq $qrc ] && [ "$(wc -l <"$W/q.out")" -eq ${#files[@]} ] &&
   grep -q "^$W/good.grt: clean, [0-9]* records$" "$W/q.out" &&
   grep -qx "$W/missing.grt: unusable: No such file or directory" "$W/q.out" &&
   grep -qx "$W/corrupt.grt: unusable: offset 0: .*not a greenreplay trace.*" "$W/q.out" &&
   grep -q "^$W/short.grt: nothing checked (" "$W/q.out" &&
   grep -q "^$W/empty.grt: nothing checked (the file is empty)" "$W/q.out" &&
   [ "$(awk -F': ' '{print $1}' "$W/q.out" | paste -sd' ')" = "${files[*]}" ] &&
   grep -qx "greenreplay: $W/missing.grt: No such file or directory" "$W/q.err" &&
   grep -q "^greenreplay: $W/corrupt.grt: offset 0: " "$W/q.err" &&
   cmp -s "$W/q.err" "$W/full.err"; then
    gr_ok "check -q: one stdout line per trace in order (unusable: 'FILE: unusable: CAUSE'), stderr lines and exit status as without -q"
else
    gr_bad "check -q: want exit 2 (as without -q: $frc), ${#files[@]} lines; got exit $qrc"
    gr_show "$W/q.out" "$W/q.err"
fi
# --stall without a side channel: the trace is unusable for it, said on stdout too
"$cli" check -q --stall "$W/good.grt" >"$W/s.out" 2>"$W/s.err"
rc=$?
if [ $rc -eq 2 ] && [ "$(wc -l <"$W/s.out")" -eq 1 ] &&
   grep -q "^$W/good.grt: unusable: $W/good.grt.times: " "$W/s.out" && [ -s "$W/s.err" ]; then
    gr_ok "check -q --stall without FILE.times: 'FILE: unusable: ...times...' on stdout, exit 2"
else
    gr_bad "check -q --stall without FILE.times (exit $rc)"
    gr_show "$W/s.out" "$W/s.err"
fi
if "$cli" check --help | grep -q 'FILE: unusable:' && grep -q 'unusable: ' "$GR_ROOT/docs/greenreplay.1"; then
    gr_ok "check --help and the man page describe -q's unusable line"
else
    gr_bad "check --help or docs/greenreplay.1 lacks -q's 'FILE: unusable: CAUSE'"
fi


# ---- 2b. counts that add up: violations, allowed, not failing
# sums_up LINE: "N violation(s) (RULE n, ...)" in LINE, N the sum of the n.
sums_up() {
    printf '%s\n' "$1" | "$GR_PY" -c '
import re, sys
m = re.search(r"(\d+) violations? \(([^)]*)\)", sys.stdin.read())
sys.exit(0 if m and int(m.group(1)) == sum(int(p.split()[1]) for p in m.group(2).split(", ")) else 1)'
}
if "$GR_PY" -c 'import greenlet' 2>/dev/null; then
    mkdir -p "$W/tally"
    cat >"$W/tally/hookswitch.py" <<'PY'
import sys

import greenlet
import greenreplay


def report():
    while True:
        greenreplay.mark("reporter")
        send()
        greenlet.getcurrent().parent.switch()


def send():
    pass


reporter = greenlet.greenlet(report)
calls = [0]


def hook(frame, event, arg):
    if event == "call":
        calls[0] += 1
        if calls[0] >= 3 and greenlet.getcurrent() is not reporter:
            reporter.switch()  # a switch inside the profile function


def work(i):
    return i * 2


sys.setprofile(hook)
for i in range(4):
    work(i)
sys.setprofile(None)
PY
    tg=$W/tally/h.grt
    "$cli" record -o "$tg" -- "$GR_PY" "$W/tally/hookswitch.py" >"$W/tally/rec.log" 2>&1
    q=$("$cli" check -q "$tg" 2>/dev/null)
    res=$("$cli" check "$tg" 2>/dev/null | grep '^result: ')
    "$cli" check --format json --junit "$W/tally/j.xml" --html "$W/tally/h.html" "$tg" \
        >"$W/tally/j.json" 2>/dev/null
    jt=$("$GR_PY" -c '
import json, sys
t = json.load(open(sys.argv[1]))["traces"][0]
n = t["tally"]
print(n["violations"] + n["allowed"] + n["not_failing"] == sum(t["counts"].values()), n["text"])' \
        "$W/tally/j.json")
    head=${q#*: }; head=${head%%, [0-9]* records*}
    rest=${q#*records}; rest=${rest%% \[*}
    if sums_up "$q" && sums_up "$res" && ! printf '%s' "$head" | grep -q displaced &&
       printf '%s' "$q" | grep -q '; not failing: displaced 1' &&
       [ "$res" = "result: ${jt#True }" ] && [ "${res#result: }" = "$head$rest" ] &&
       grep -qF "${res}" "$W/tally/j.xml" && grep -qF "${res}" "$W/tally/h.html" &&
       [ "$(PYTHONPATH="$(dirname "$cli")/python" "$GR_PY" -c 'import sys, greenreplay; print(greenreplay.check(sys.argv[1]).summary())' "$tg")" = "${res#result: }" ]; then
        gr_ok "check: 'N violations (RULE n, ...)' sums to N, displaced apart ('not failing'), the same tally in -q, text, JSON, JUnit, HTML and the API's summary()"
    else
        gr_bad "check: counts that do not add up or differ between outputs: -q '$q', text '$res', json '$jt'"
    fi
    printf '[tool.greenreplay]\nallow = ["blind_spot"]\n' >"$W/tally/pyproject.toml"
    q=$(cd "$W/tally" && "$cli" check -q h.grt 2>/dev/null)
    full=$(cd "$W/tally" && "$cli" check h.grt 2>/dev/null)
    res=$(printf '%s\n' "$full" | grep '^result: ')
    if printf '%s' "$q" | grep -q "; allowed by $W/tally/pyproject.toml: blind_spot [0-9]" &&
       printf '%s' "$res" | grep -q "; allowed by $W/tally/pyproject.toml: blind_spot [0-9]" &&
       ! printf '%s\n%s' "$q" "$full" | grep -q -- '--allow' && sums_up "$q" && sums_up "$res"; then
        gr_ok "check: an allow from pyproject.toml is named by its file in -q and the report, never as --allow"
    else
        gr_bad "check: allow from pyproject.toml: -q '$q', result '$res'"
    fi
    rm -f "$W/tally/pyproject.toml"
else
    skip "counts that add up: greenlet is not importable by $GR_PY"
fi

# ---- 3. recording() that raises on entry leaves no temporary directory
mkdir -p "$W/tmp" "$W/mine"
if TMPDIR=$W/tmp PYTHONPATH=${BUILD:-$GR_ROOT/build}/python "$GR_PY" - "$W" >"$W/py.log" 2>&1 <<'EOF'
import os, sys, tempfile
import greenreplay
work = sys.argv[1]
tmp = tempfile.gettempdir()
assert tmp == os.path.join(work, "tmp"), tmp
greenreplay.start(os.path.join(work, "outer.grt"))
try:
    for path in (None, os.path.join(work, "mine", "t.grt")):
        try:
            with greenreplay.recording(path):
                raise AssertionError("recording() inside a recording did not raise")
        except RuntimeError as e:
            print("refused:", e)
finally:
    greenreplay.stop()
left = os.listdir(tmp)
assert left == [], "left behind: %r" % left
assert os.path.isdir(os.path.join(work, "mine")), "a directory the caller gave was removed"
# one that does start keeps its directory until cleanup()
with greenreplay.recording() as rec:
    greenreplay.mark("in")
assert os.path.exists(rec.path) and os.path.dirname(rec.path).startswith(tmp), rec.path
rec.cleanup()
assert os.listdir(tmp) == [], os.listdir(tmp)
print("ok")
EOF
then
    gr_ok "recording() refused on entry (already recording) leaves no temporary directory; a given path's directory stays"
else
    gr_bad "recording() refused on entry"
    gr_show "$W/py.log"
fi

# ---- 4. help texts say what the code does
h=$("$cli" check --help)
if printf '%s\n' "$h" | tr '\n' ' ' | grep -q 'ground-truth points (MARK records, and *SWITCH/THROW records that carry the target'"'"'s real stack'; then
    gr_ok "check --help: ground-truth points are MARKs and SWITCH/THROW records with the real stack"
else
    gr_bad "check --help: the coverage paragraph does not count SWITCH stacks"
fi
"$cli" export --format chrome -o "$W/e.json" "$W/good.grt" 2>"$W/e.err"
eh=$("$cli" export --help)
sum=$(printf '%s\n' "$eh" | tr '\n' ' ' | sed -n 's/.*A summary goes to stderr: \(.*\)exit status.*/\1/p')
terms_ok=1
for term in tracks slices switches marks findings failing "returns without call" "frames closed at end"; do
    printf '%s' "$sum" | grep -q "$term" && grep -q "$term" "$W/e.err" || terms_ok=0
done
if [ $terms_ok = 1 ] && ! printf '%s\n' "$eh" | grep -qw flows; then
    gr_ok "export --help's summary terms are the ones export prints (switches, not flows)"
else
    gr_bad "export --help summary: '$sum' against '$(cat "$W/e.err")'"
fi
# every help text fits an 80-column terminal: greenreplay --help and the
# --help of each command its "commands:" list names (tabs expanded)
cmds=$("$cli" --help | sed -n '/^commands:/,/^$/p' | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p')
wide=""
for c in "" $cmds; do
    if ! out=$("$cli" $c --help 2>&1); then
        wide+=" ${c:-greenreplay}:--help-failed"
        continue
    fi
    n=$(printf '%s\n' "$out" | expand | awk 'length($0) > 80' | wc -l)
    [ "$n" -eq 0 ] || wide+=" ${c:-greenreplay}:$n"
done
if [ "$(printf '%s\n' $cmds | wc -l)" -ge 10 ] && [ -z "$wide" ]; then
    gr_ok "--help of greenreplay and of its $(printf '%s\n' $cmds | wc -l) commands: no line over 80 columns"
else
    gr_bad "help lines over 80 columns (command:lines):${wide:- none, but only '$(echo $cmds)' found in the commands list}"
fi
mh=$("$cli" --help | tr '\n' ' ')
man=$(tr '\n' ' ' <"$GR_ROOT/docs/greenreplay.1")
if printf '%s' "$mh" | grep -q 'NO_COLOR' && printf '%s' "$mh" | grep -q 'TERM=dumb' &&
   printf '%s' "$mh" | grep -q 'terminal' && printf '%s' "$man" | grep -q 'NO_COLOR' &&
   printf '%s' "$man" | grep -q 'TERM=dumb'; then
    gr_ok "greenreplay --help and the man page: colour follows the terminal, NO_COLOR and TERM=dumb"
else
    gr_bad "greenreplay --help or docs/greenreplay.1 does not say when colour is on"
fi
# and the CLI does so on a pseudo-terminal (script(1), util-linux)
if command -v script >/dev/null 2>&1; then
    on_tty() { env -u NO_COLOR "$@" script -qec "'$cli' check -q '$W/good.grt'" /dev/null 2>/dev/null; }
    esc=$(printf '\033')
    plain=$(on_tty TERM=xterm)
    nocolor=$(on_tty TERM=xterm NO_COLOR=1)
    dumb=$(on_tty TERM=dumb)
    piped=$(TERM=xterm "$cli" check -q "$W/good.grt")
    if [[ $plain == *"$esc["* ]] && [[ $nocolor != *"$esc"* ]] && [[ $dumb != *"$esc"* ]] &&
       [[ $piped != *"$esc"* ]] && [[ $dumb == *"clean"* ]]; then
        gr_ok "check -q on a terminal: coloured; NO_COLOR=1, TERM=dumb or a pipe: plain"
    else
        gr_bad "colour on a terminal: tty '$plain', NO_COLOR '$nocolor', dumb '$dumb', pipe '$piped'"
    fi
else
    skip "colour on a terminal: script(1) is not installed"
fi

# ---- 5. an empty trace's coverage in words, JSON numeric
"$cli" check "$W/empty.grt" >"$W/em.txt" 2>/dev/null
"$cli" check --html "$W/em.html" "$W/empty.grt" >/dev/null 2>&1
"$cli" check --format json "$W/empty.grt" >"$W/em.json" 2>/dev/null
if grep -q '^  seen  *no threads recorded$' "$W/em.txt" && ! grep -q ' 0 of 0 ' "$W/em.txt" &&
   grep -q 'seen  *no threads recorded' "$W/em.html" && ! grep -q ' 0 of 0 ' "$W/em.html" &&
   "$GR_PY" -c '
import json, sys
cv = json.load(open(sys.argv[1]))["traces"][0]["coverage"]
assert cv["threads"] == 0 and cv["checked_stacks"] == 0 and cv["with_ground_truth"] == 0, cv
' "$W/em.json"; then
    gr_ok "empty trace: coverage says 'no threads recorded' (text, HTML), JSON counts stay numbers"
else
    gr_bad "empty trace coverage"
    gr_show "$W/em.txt"
fi

# ---- 6. record says when the program left without the recorder's stop
cut_line() { grep -c "^greenreplay: record: .*without the recorder's stop\|^greenreplay: record: the program was killed" "$1"; }
printf 'import os\nos._exit(7)\n' >"$W/exit_short.py"
printf 'import os\ndef f(i):\n    return i\nfor i in range(200000):\n    f(i)\nos._exit(3)\n' >"$W/exit_long.py"
printf 'import ctypes\nctypes.string_at(0)\n' >"$W/segv.py"
printf 'raise ValueError("boom")\n' >"$W/raises.py"
printf 'import sys\nsys.exit(4)\n' >"$W/sysexit.py"
# cut_case NAME WANT_RC LINE WHAT: record $W/NAME.py into $W/NAME.grt; want
# exit WANT_RC and stderr exactly one line matching the extended regex LINE
# ($T stands for the trace's path), besides the interpreter's start-up noise.
cut_case() {
    local name=$1 want=$2 line=$3 what=$4 rc
    "$cli" record -o "$W/$name.grt" -- "$GR_PY" "$W/$name.py" >/dev/null 2>"$W/$name.err"
    rc=$?
    line=${line//\$T/$W/$name.grt}
    gr_quiet "$GR_PY" "$W/$name.err" >"$W/$name.err.q"   # record's own lines, without start-up noise
    if [ $rc -eq "$want" ] && [ "$(wc -l <"$W/$name.err.q")" -eq 1 ] && grep -Eqx "$line" "$W/$name.err.q"; then
        gr_ok "$what"
    else
        gr_bad "$what: want exit $want and one line like '$line'; got exit $rc"
        gr_show "$W/$name.err"
    fi
}
nochunk='holds no complete chunk \(the recorder writes 64 KiB at a time\): nothing of this run can be checked'
cut_case exit_short 7 "greenreplay: record: the program exited \(status 7\) without the recorder's stop \(os._exit\?\); \$T $nochunk" \
    "record after a short program's os._exit(7): exit 7, one line: the trace holds no complete chunk"
cut_case segv 139 "greenreplay: record: the program was killed by signal 11 \(.*\); \$T holds the records up to the crash \(see check\)" \
    "record after a segfault (ctypes): exit 139, one line: killed by signal 11, the records up to the crash"
# a longer program: N complete chunks, up to the byte where dump says the trace is cut
"$cli" record -o "$W/exit_long.grt" -- "$GR_PY" "$W/exit_long.py" >/dev/null 2>&1
cut=$("$cli" dump "$W/exit_long.grt" 2>/dev/null | sed -n 's/^# truncated: [0-9]* bytes, the complete chunks end at byte \([0-9]*\),.*/\1/p; s/^# truncated: [0-9]* bytes, the chunk at byte \([0-9]*\) is incomplete.*/\1/p')
cut_case exit_long 3 "greenreplay: record: the program exited \(status 3\) without the recorder's stop \(os._exit\?\); \$T holds the [1-9][0-9]* complete chunks? written before \(up to byte ${cut:-NONE}\), the records after (it|them) are lost" \
    "record after os._exit(3) of a longer program: exit 3, one line with the complete chunks up to byte $cut (where dump says the trace is cut)"
for p in raises:1 sysexit:4; do
    name=${p%%:*} want=${p#*:}
    "$cli" record -o "$W/$name.grt" -- "$GR_PY" "$W/$name.py" >/dev/null 2>"$W/$name.err"
    rc=$?
    if [ $rc -eq "$want" ] && [ "$(cut_line "$W/$name.err")" -eq 0 ] &&
       ! grep -q '^greenreplay:' "$W/$name.err" && "$cli" check -q "$W/$name.grt" >/dev/null 2>&1; then
        gr_ok "record of a program ending by $name: exit $want, trace complete, no line of record's"
    else
        gr_bad "record of a program ending by $name (exit $rc, want $want)"
        gr_show "$W/$name.err"
    fi
done
# SIGINT: KeyboardInterrupt stops the recording (trailer written), then Python
# ends by SIGINT: record says the trace is complete, not that it was cut
printf 'import time\ndef f():\n    pass\nfor i in range(100):\n    f()\nprint("ready", flush=True)\ntime.sleep(30)\n' >"$W/sleepy.py"
"$GR_PY" - "$cli" "$W/int.grt" "$GR_PY" "$W/sleepy.py" >"$W/int.out" 2>"$W/int.err" <<'EOF'
import signal, subprocess, sys
cli, out, py, script = sys.argv[1:]
p = subprocess.Popen([cli, "record", "-o", out, "--", py, script], stdout=subprocess.PIPE,
                     preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
p.stdout.readline()  # "ready": the program runs
p.send_signal(signal.SIGINT)
print("rc", p.wait())
EOF
if grep -qx "rc 130" "$W/int.out" && "$cli" check -q "$W/int.grt" >/dev/null 2>&1 &&
   grep -qx "greenreplay: record: the program was killed by signal 2 (Interrupt); the trace $W/int.grt is complete (recording stopped before)" "$W/int.err"; then
    gr_ok "record, SIGINT to it: KeyboardInterrupt, exit 130, the trace complete and record says so"
else
    gr_bad "record, SIGINT to it: want exit 130 and 'the trace ... is complete'"
    gr_show "$W/int.out" "$W/int.err"
fi
# record_refused NAME WANT ARGS...: `record -o $W/h.grt ARGS...` exits 2,
# writes no trace, and its stderr is the one line WANT.
record_refused() {
    local name=$1 want=$2 rc
    shift 2
    "$cli" record -o "$W/h.grt" "$@" >/dev/null 2>"$W/h.err"
    rc=$?
    if [ $rc -eq 2 ] && [ ! -e "$W/h.grt" ] && [ "$(cat "$W/h.err")" = "$want" ]; then
        gr_ok "$name"
    else
        gr_bad "$name: exit $rc, want 2 and the line '$want'"
        gr_show "$W/h.err"
    fi
}
record_refused "record -o F SCRIPT.py (no PYTHON): exit 2, one line asking for PYTHON before the script" \
    "greenreplay: record: need PYTHON before the script, e.g. \`-- python3 $W/raises.py\` (\`greenreplay record --help\` shows the usage)" \
    "$W/raises.py"

# record with an empty interpreter argument, or one that does not run: one
# line naming the cause, exit 2, no trace.  (The empty name was looked up
# on PATH, found a directory, and "record:  does not run" named nothing.)
record_refused "record -- \"\" SCRIPT: exit 2, one line saying the interpreter is empty" \
    "greenreplay: record: the interpreter is empty (PYTHON, the first word after --, e.g. \`-- python3 SCRIPT\`) (\`greenreplay record --help\` shows the usage)" \
    -- "" "$W/raises.py"
mkdir -p "$W/notpy"
for bad in /bin/false "$W/notpy" "$W/no-such-python"; do
    case $bad in
        /bin/false) cause='exit status 1' ;;
        "$W/notpy") cause='cannot execute it: Permission denied' ;;
        *) cause='No such file or directory' ;;
    esac
    "$cli" record -o "$W/h.grt" -- "$bad" "$W/raises.py" >/dev/null 2>"$W/h.err"
    rc=$?
    if [ $rc -eq 2 ] && [ ! -e "$W/h.grt" ] && [ "$(wc -l <"$W/h.err")" -eq 1 ] &&
       grep -qF "greenreplay: record: " "$W/h.err" && grep -qF "$bad" "$W/h.err" &&
       grep -qF "($cause)" "$W/h.err"; then
        gr_ok "record -- $bad SCRIPT: exit 2, one line with the cause ($cause)"
    else
        gr_bad "record -- $bad SCRIPT (exit $rc): want one line with '($cause)'"
        gr_show "$W/h.err"
    fi
done

# ---- 7. the script's round trip on a whole-program recording
if "$GR_PY" -c 'import greenlet' 2>/dev/null; then
    for n in 3 4; do
        cat >"$W/gl$n.py" <<EOF
import greenlet

def worker(n):
    for i in range(n):
        parent.switch(i)

def helper(x):
    return x * 2

parent = greenlet.getcurrent()
g = greenlet.greenlet(worker)
v = g.switch($n)
while not g.dead:
    helper(v)
    v = g.switch()
EOF
        "$cli" record -o "$W/gl$n.grt" -- "$GR_PY" "$W/gl$n.py" >"$W/gl$n.log" 2>&1
    done
    ok=1
    for anon in "" --anonymize; do
        "$cli" script $anon "$W/gl3.grt" -o "$W/rt$anon.py" 2>>"$W/rt.notes" &&
            "$cli" record --manual -o "$W/rt$anon.grt" -- "$GR_PY" "$W/rt$anon.py" >>"$W/rt.log" 2>&1 || ok=0
    done
    "$cli" script -q "$W/gl4.grt" -o "$W/rt4.py" &&
        "$cli" record --manual -o "$W/rt4.grt" -- "$GR_PY" "$W/rt4.py" >>"$W/rt.log" 2>&1 || ok=0
    "$cli" diff --c-names script "$W/gl3.grt" "$W/rt.grt" >"$W/rt.diff" 2>&1
    rc1=$?
    "$cli" diff --rename --c-names script "$W/gl3.grt" "$W/rt--anonymize.grt" >"$W/rta.diff" 2>&1
    rc2=$?
    "$cli" diff --c-names script "$W/gl3.grt" "$W/rt4.grt" >"$W/rt4.diff" 2>&1
    rc3=$?
    if [ $ok = 1 ] && [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && [ $rc3 -eq 1 ] && [ ! -s "$W/rt.notes" ] &&
       ! grep -q 'Not reproduced' "$W/rt.py" &&
       grep -q '^# Compare: *greenreplay diff --c-names script ORIGINAL' "$W/rt.py" &&
       grep -q '^# Compare: *greenreplay diff --c-names script --rename ORIGINAL' "$W/rt--anonymize.py" &&
       grep -q '^same structure' "$W/rt.diff" && grep -q '^same structure' "$W/rta.diff" &&
       grep -q '^+ .*CALL .*helper' "$W/rt4.diff"; then
        gr_ok "script of a whole-program recording (no note: it is reproduced), recorded with --manual: diff --c-names script says same structure (also --anonymize/--rename); one more switch differs"
    else
        gr_bad "whole-program round trip: diff exits $rc1 (plain), $rc2 (--rename), $rc3 (one more switch: want 1)"
        gr_show "$W/rt.notes" "$W/rt.log" "$W/rt.diff" "$W/rta.diff" "$W/rt4.diff"
    fi
    # a program ending by an uncaught exception: the recording stops at it
    # (in a tracing guard: none of its own calls recorded, so nothing after
    # <module>'s return but STOP and STACK), the script exits normally and
    # its recording stops at exit, whose frames are the recorder's own and
    # not recorded either: nothing is left out of the comparison
    printf 'import greenlet\ndef f():\n    raise ValueError("boom")\ngreenlet.greenlet(f).switch()\n' >"$W/boom.py"
    "$cli" record -o "$W/boom.grt" -- "$GR_PY" "$W/boom.py" >"$W/boom.log" 2>&1
    rc0=$?
    "$cli" script -q "$W/boom.grt" -o "$W/rtb.py" &&
        "$cli" record --manual -o "$W/rtb.grt" -- "$GR_PY" "$W/rtb.py" >>"$W/rt.log" 2>&1
    "$cli" diff --c-names script "$W/boom.grt" "$W/rtb.grt" >"$W/rtb.diff" 2>&1
    rc=$?
    if [ $rc0 -eq 1 ] && [ $rc -eq 0 ] && grep -q '^same structure' "$W/rtb.diff" &&
       ! grep -q "^# not compared" "$W/rtb.diff"; then
        gr_ok "script of a program that ended by an uncaught exception: same structure, every record compared"
    else
        gr_bad "round trip of a program ending by an uncaught exception: record exit $rc0 (want 1), diff exit $rc (want 0)"
        gr_show "$W/boom.log" "$W/rtb.diff"
    fi
    # check says how it ended: the exception (META uncaught, written at
    # sys.excepthook's audit event), not a plain exit; the script, which
    # ends normally, says interpreter exit
    "$cli" check "$W/boom.grt" >"$W/boom.check" 2>&1
    "$cli" check --format json "$W/boom.grt" >"$W/boom.json" 2>&1
    "$cli" check "$W/rtb.grt" >"$W/rtb.check" 2>&1
    if grep -q '^  ended by  *the program.s uncaught exception (ValueError), then interpreter exit (reason exit)$' "$W/boom.check" &&
       grep -q '"uncaught": "ValueError"' "$W/boom.json" &&
       "$cli" dump "$W/boom.grt" | grep -qx '# uncaught: ValueError' &&
       grep -q '^  ended by  *\(interpreter exit (reason exit)\|stop() (reason stop)\)$' "$W/rtb.check"; then
        gr_ok "check of a program ended by an uncaught exception: 'ended by the program's uncaught exception (ValueError)' (META uncaught), JSON coverage.uncaught"
    else
        gr_bad "check of a program ended by an uncaught exception does not say so"
        gr_show "$W/boom.check" "$W/rtb.check"
    fi
else
    skip "whole-program round trip: greenlet is not importable by $GR_PY"
fi

# ---- 8. small fixes of a new-user review
# script's header: the interpreter to record it with
ver=$("$cli" dump "$W/good.grt" 2>/dev/null | sed -n 's/^# python: //p' | head -n 1)
"$cli" script -q -o "$W/hdr1.py" "$W/good.grt" 2>/dev/null
"$cli" script -q -o "$W/hdr2.py" "$W/good.grt" 2>/dev/null
if [ -n "$ver" ] && cmp -s "$W/hdr1.py" "$W/hdr2.py" &&
   grep -qx '# Record it:  greenreplay record --manual -o repro.grt -- PYTHON THIS_FILE' "$W/hdr1.py" &&
   grep -qxF "#   PYTHON: the Python that ran the original ($ver), with greenlet" "$W/hdr1.py" &&
   ! grep -q 'python3 THIS_FILE' "$W/hdr1.py"; then
    gr_ok "script's header: record it with PYTHON, the Python that ran the original ($ver), not python3; same bytes twice"
else
    gr_bad "script's header: want PYTHON and the original's version '$ver', no python3, same bytes twice"
    sed -n '1,8p' "$W/hdr1.py" | sed 's/^/      | /'
fi

# a file cut inside its first chunk
size=$(wc -c <"$W/good.grt")
if [ "$size" -gt 500 ]; then
    head -c 500 "$W/good.grt" >"$W/cut500.grt"
    "$cli" check "$W/cut500.grt" >"$W/cut500.txt" 2>&1
    rc=$?
    if [ $rc -eq 2 ] &&
       grep -qx 'truncated: 500 bytes, the chunk at byte 16 is incomplete (no complete chunk); no trailer (recording cut short); no complete record to check' "$W/cut500.txt" &&
       grep -qx 'result: nothing checked (the first chunk is incomplete: the recording was cut short inside it)' "$W/cut500.txt" &&
       ! grep -q 'only its header' "$W/cut500.txt"; then
        gr_ok "check of a file cut at 500 bytes inside its first chunk: the size and the incomplete chunk at byte 16, not 'only its header'"
    else
        gr_bad "check of a file cut inside its first chunk (exit $rc)"
        gr_show "$W/cut500.txt"
    fi
else
    gr_bad "good.grt has $size bytes: too short to cut at 500"
fi

# a cut trace through dump, stats, diff and check --html, in check's words
# (gr_report_cut_where): cut inside its first chunk (cut500.grt) and at a
# chunk boundary (exit_long.grt, os._exit after 6 chunks); never the bare
# "truncated at byte N", which reads as if the file were N bytes
printf 'def f(i):\n    return i\nfor i in range(200000):\n    f(i)\n' >"$W/exit_full.py"
"$cli" record -o "$W/exit_full.grt" -- "$GR_PY" "$W/exit_full.py" >/dev/null 2>&1
# cut_words NAME GRT WHERE OTHER: dump, stats, diff GRT OTHER, check --html
cut_words() {
    local name=$1 grt=$2 where=$3 other=$4 bad=""
    "$cli" dump "$grt" >"$W/$name.dump" 2>&1 || bad="$bad dump-exit"
    [ "$(tail -n 1 "$W/$name.dump")" = "# truncated: $where" ] || bad="$bad dump"
    "$cli" stats "$grt" >"$W/$name.stats" 2>&1 || bad="$bad stats-exit"
    head -n 1 "$W/$name.stats" | grep -qF ", truncated: $where" || bad="$bad stats"
    "$cli" diff "$grt" "$other" >"$W/$name.diff" 2>&1
    case $name in
    cut500) grep -qxF "greenreplay: diff: $grt: no record to compare (truncated: $where)" "$W/$name.diff" || bad="$bad diff" ;;
    *) grep -qF "records, truncated: $where)" "$W/$name.diff" &&
       grep -q "^# A ends early (truncated: $where): the last [0-9]* records of B are not compared" "$W/$name.diff" || bad="$bad diff" ;;
    esac
    "$cli" check --html "$W/$name.html" "$grt" >/dev/null 2>&1
    grep -qF "no trailer: truncated: $where<" "$W/$name.html" || bad="$bad html"
    grep -qF "truncated: $where; no trailer" <("$cli" check "$grt" 2>&1) || bad="$bad check"
    if grep -q 'truncated at byte\|cut short at byte\|ends early (truncated at' \
        "$W/$name.dump" "$W/$name.stats" "$W/$name.diff" "$W/$name.html"; then
        bad="$bad old-words"
    fi
    if [ -z "$bad" ]; then
        gr_ok "$name: dump, stats, diff, check and check --html all say '$where'"
    else
        gr_bad "$name: want '$where' everywhere; wrong:$bad"
        gr_show "$W/$name.dump" "$W/$name.stats" "$W/$name.diff"
    fi
}
if [ -f "$W/cut500.grt" ]; then
    cut_words cut500 "$W/cut500.grt" '500 bytes, the chunk at byte 16 is incomplete (no complete chunk)' "$W/good.grt"
fi
if [ -s "$W/exit_long.grt" ] && [ -s "$W/exit_full.grt" ]; then
    lsize=$(wc -c <"$W/exit_long.grt")
    cut_words exit_long "$W/exit_long.grt" \
        "$lsize bytes, the complete chunks end at byte $lsize, the end of the file" "$W/exit_full.grt"
else
    gr_bad "a trace cut at a chunk boundary: exit_long.grt or exit_full.grt not recorded"
fi

# export's summary: singular and plural
printf 'def f():\n    return 1\nf()\n' >"$W/one.py"
"$cli" record -o "$W/one.grt" -- "$GR_PY" "$W/one.py" >/dev/null 2>&1
"$cli" export --format chrome -o "$W/one.json" "$W/one.grt" 2>"$W/one.err"
"$cli" export --format chrome -o "$W/two.json" "$W/good.grt" 2>"$W/two.err"
if grep -q ': 1 merged profile ([0-9]* stack nodes), 1 track, [0-9]* slices, 0 switches, 0 marks, 0 findings (0 failing), 0 returns without call' "$W/one.err" &&
   grep -q ', [2-9][0-9]* tracks, ' "$W/two.err" && ! grep -q ' 1 tracks\| 1 slices\| 1 marks\| 1 stack nodes' "$W/one.err" "$W/two.err"; then
    gr_ok "export's summary: 1 track, N tracks (singular and plural)"
else
    gr_bad "export's summary: singular/plural"
    gr_show "$W/one.err" "$W/two.err"
fi

# export/script -o that cannot be written
for cmd in export script; do
    for t in "$W/no/such/dir/x.out:No such file or directory" "$W:Is a directory"; do
        target=${t%%:*} cause=${t#*:}
        if [ $cmd = export ]; then
            "$cli" export --format chrome -o "$target" "$W/good.grt" >"$W/w.out" 2>"$W/w.err"
        else
            "$cli" script -o "$target" "$W/good.grt" >"$W/w.out" 2>"$W/w.err"
        fi
        rc=$?
        want="greenreplay: $cmd: -o $target: cannot write it: $cause"
        if [ $rc -eq 2 ] && [ ! -s "$W/w.out" ] && [ "$(cat "$W/w.err")" = "$want" ] && [ ! -e "$W/no" ]; then
            gr_ok "$cmd -o to $cause: one line naming the command, -o, the path and the cause, exit 2"
        else
            gr_bad "$cmd -o $target: want exit 2 and '$want'; got exit $rc"
            gr_show "$W/w.out" "$W/w.err"
        fi
    done
done
# the missing trace is reported, not the output (refused after the usage, before the trace)
"$cli" script -o "$W/ok.py" "$W/missing.grt" >/dev/null 2>"$W/w.err"
rc=$?
if [ $rc -eq 2 ] && grep -q 'missing.grt' "$W/w.err" && [ ! -e "$W/ok.py" ]; then
    gr_ok "script -o OK MISSING.grt: the missing trace is named, nothing written"
else
    gr_bad "script -o OK MISSING.grt: exit $rc"
    gr_show "$W/w.err"
fi

# record --max-size that dropped records says so (uncompressed chunks: the
# program's 100,000 records compress to under 20k; the writer's cap on
# compressed chunks is test_record's)
printf 'def f(i):\n    return i\nfor i in range(50000):\n    f(i)\n' >"$W/many.py"
"$cli" record --no-compress --max-size 20k -o "$W/cap.grt" -- "$GR_PY" "$W/many.py" >/dev/null 2>"$W/cap.err"
rc=$?
dropped=$("$cli" dump "$W/cap.grt" 2>/dev/null | sed -n 's/^# trailer: .*dropped=\([0-9]*\) .*reason=size-cap$/\1/p')
"$cli" record --max-size 100M -o "$W/nocap.grt" -- "$GR_PY" "$W/many.py" >/dev/null 2>"$W/nocap.err"
rc2=$?
if [ $rc -eq 0 ] && [ -n "$dropped" ] && [ "$dropped" -gt 0 ] &&
   [ "$(gr_quiet "$GR_PY" "$W/cap.err")" = "greenreplay: record: $W/cap.grt reached --max-size 20k: the last $dropped records were dropped (see check)" ] &&
   [ $rc2 -eq 0 ] && [ -z "$(gr_quiet "$GR_PY" "$W/nocap.err")" ]; then
    gr_ok "record --max-size 20k: one line with the $dropped dropped records of the trailer; none under 100M"
else
    gr_bad "record --max-size: exit $rc/$rc2, trailer dropped '${dropped:-?}'"
    gr_show "$W/cap.err" "$W/nocap.err"
fi

# reduce leaves no scratch directory, unless --keep
"$cli" script -q -o "$W/red.py" "$W/good.grt" 2>/dev/null
mkdir -p "$W/tmpd"

# reduce with an interpreter that does not run: refused up front with the
# cause, as record does (exit 2, nothing run, no scratch directory), not
# taken for a script that does not fail ("nothing to reduce", exit 1)
mkdir -p "$W/notpy"
for bad in "" /bin/false "$W/notpy" "$W/no-such-python"; do
    case $bad in
        '') want='greenreplay: reduce: --python: the interpreter is empty' ;;
        /bin/false) want='greenreplay: reduce: /bin/false does not run as a Python interpreter (exit status 1)' ;;
        "$W/notpy") want="greenreplay: reduce: $W/notpy does not run as a Python interpreter (cannot execute it: Permission denied)" ;;
        *) want="greenreplay: reduce: interpreter not found or not executable: $bad (No such file or directory)" ;;
    esac
    TMPDIR=$W/tmpd "$cli" reduce "$W/red.py" --python "$bad" --rule blind_spot -q >/dev/null 2>"$W/red.err"
    rc=$?
    left=$(ls -A "$W/tmpd")
    if [ $rc -eq 2 ] && [ -z "$left" ] && [ "$(cat "$W/red.err")" = "$want" ]; then
        gr_ok "reduce --python '$bad': exit 2, one line with the cause"
    else
        gr_bad "reduce --python '$bad': exit $rc, left in TMPDIR: '$left'; want: $want"
        gr_show "$W/red.err"
    fi
done
TMPDIR=$W/tmpd "$cli" reduce "$W/red.py" --python "$GR_PY" --rule blind_spot -q >/dev/null 2>"$W/red.err"
rc=$?
left=$(ls -A "$W/tmpd")
if [ $rc -eq 1 ] && [ -z "$left" ] && grep -q 'nothing to reduce' "$W/red.err" && ! grep -q "$W/tmpd" "$W/red.err"; then
    gr_ok "reduce with nothing to reduce: exit 1, its scratch directory removed and not named"
else
    gr_bad "reduce with nothing to reduce: exit $rc, left in TMPDIR: '$left'"
    gr_show "$W/red.err"
fi
TMPDIR=$W/tmpd "$cli" reduce "$W/red.py" --python "$GR_PY" --rule blind_spot -q --keep >/dev/null 2>"$W/red.err"
rc=$?
kept=$(sed -n 's/^greenreplay: reduce: kept the scratch directory //p' "$W/red.err")
if [ $rc -eq 1 ] && [ -n "$kept" ] && [ -s "$kept/candidate.py" ] && grep -q "its output: $kept/candidate.log" "$W/red.err"; then
    gr_ok "reduce --keep: the scratch directory is kept and named, with the candidate and record's output"
else
    gr_bad "reduce --keep: exit $rc, kept '${kept:-none}'"
    gr_show "$W/red.err"
fi
rm -rf "$W/tmpd"/*
# SIGTERM while the original runs: the candidate killed, the directory removed
printf 'import time  #@1\ntime.sleep(60)  #@2\n' >"$W/slow.py"
TMPDIR=$W/tmpd "$cli" reduce "$W/slow.py" --python "$GR_PY" --rule blind_spot -q >/dev/null 2>&1 &
rpid=$!
for _ in $(seq 100); do [ -n "$(ls -A "$W/tmpd")" ] && break; sleep 0.05; done
sleep 0.5
kill -TERM $rpid
wait $rpid
rc=$?
left=$(ls -A "$W/tmpd")
if [ $rc -eq 143 ] && [ -z "$left" ] && ! pgrep -f "$W/tmpd" >/dev/null; then
    gr_ok "reduce killed by SIGTERM: exit 143, the running candidate ended, the scratch directory removed"
else
    gr_bad "reduce killed by SIGTERM: exit $rc, left: '$left'"
fi

# what a run that dies before recording leaves at -o (docs/USAGE.md "Stale output")
printf 'def (\n' >"$W/syntax.py"
rm -f "$W/new.grt"
"$cli" record -o "$W/new.grt" -- "$GR_PY" "$W/syntax.py" >/dev/null 2>"$W/new.err"
cp "$W/good.grt" "$W/old.grt"
"$cli" record -o "$W/old.grt" -- "$GR_PY" "$W/syntax.py" >/dev/null 2>"$W/old.err"
if [ ! -e "$W/new.grt" ] && [ -f "$W/old.grt" ] && [ ! -s "$W/old.grt" ] &&
   grep -qx "greenreplay: record: no trace was written to $W/new.grt (the program ended before its first frame ran, or recording could not start)" "$W/new.err" &&
   grep -qx "greenreplay: record: no trace was written to $W/old.grt (the program ended before its first frame ran, or recording could not start)" "$W/old.err"; then
    gr_ok "record of a program that dies before recording: a missing -o is not created, an existing one left empty; both lines give the reason"
else
    gr_bad "record of a program that dies before recording: new -o $(ls -l "$W/new.grt" 2>&1), old -o $(wc -c <"$W/old.grt" 2>&1) bytes"
    gr_show "$W/new.err" "$W/old.err"
fi

# conform: record's line about a cut trace names no file conform deletes
if "$cli" conform --list --python "$GR_PY" 2>/dev/null | grep -Eq '^cprofile[[:space:]]+yes'; then
    printf 'import os\ndef f():\n    return 1\nf()\nos._exit(3)\n' >"$W/cexit.py"
    "$cli" conform --profiler cprofile -- "$GR_PY" "$W/cexit.py" >/dev/null 2>"$W/c1.err"
    rc1=$?
    "$cli" conform --keep --profiler cprofile -- "$GR_PY" "$W/cexit.py" >/dev/null 2>"$W/c2.err"
    rc2=$?
    named=$(sed -n "s/^greenreplay: record: .*without the recorder's stop (os._exit?); \([^ ]*\) holds no complete chunk.*/\1/p" "$W/c2.err")
    if [ $rc1 -eq 2 ] && grep -q "^greenreplay: record: .*without the recorder's stop (os._exit?); the temporary trace (conform deletes it; --keep keeps it) holds no complete chunk" "$W/c1.err" &&
       ! grep -q "^greenreplay: record: .*/trace.grt" "$W/c1.err" &&
       [ $rc2 -eq 2 ] && [ -n "$named" ] && [ -e "$named" ] &&
       grep -qx "greenreplay: conform: kept $named (no results.json: the program ended before the adapter wrote it)" "$W/c2.err" &&
       [ ! -e "$(dirname "$named")/results.json" ]; then
        gr_ok "conform after os._exit: record's line names no deleted temporary trace; with --keep it names the kept one, and 'kept' names only the trace (no results.json was written)"
    else
        gr_bad "conform after os._exit: exit $rc1/$rc2, kept trace '${named:-none}'"
        gr_show "$W/c1.err" "$W/c2.err"
    fi
    [ -n "$named" ] && rm -rf "$(dirname "$named")"
else
    skip "conform after os._exit: the cprofile adapter is not available for $GR_PY"
fi

# ci/envs.sh python ID: not provisioned (exit 3) is not unknown (exit 2)
GREENREPLAY_CACHE=$W/envcache "$GR_ROOT/ci/envs.sh" python host-3.11 >"$W/envpy.out" 2>"$W/envpy.err"
rc1=$?
GREENREPLAY_CACHE=$W/envcache "$GR_ROOT/ci/envs.sh" python no-such-env >"$W/envpy2.out" 2>"$W/envpy2.err"
rc2=$?
if [ $rc1 -eq 3 ] && [ ! -s "$W/envpy.out" ] && [ "$(wc -l <"$W/envpy.err")" -eq 1 ] &&
   grep -qx "envs: host-3.11 is not provisioned yet (.*): run ci/envs.sh provision host-3.11" "$W/envpy.err" &&
   [ $rc2 -eq 2 ] && [ ! -s "$W/envpy2.out" ] && grep -q "unknown environment 'no-such-env'" "$W/envpy2.err"; then
    gr_ok "ci/envs.sh python of an environment not provisioned: exit 3, no path, '$(cat "$W/envpy.err")'; unknown: exit 2"
else
    gr_bad "ci/envs.sh python: not provisioned exit $rc1, unknown exit $rc2"
    gr_show "$W/envpy.out" "$W/envpy.err" "$W/envpy2.err"
fi

# ci/peer.sh --env ID passes ci/envs.sh python's reason through (it said
# "unavailable" whatever the cause), and its notes on success; run from a
# scratch copy whose ci/envs.sh and Makefile are stubs.
pw=$W/peer
mkdir -p "$pw/ci"
cp "$GR_ROOT/ci/peer.sh" "$GR_ROOT/ci/envs.conf" "$pw/ci/"
printf 'cli:\n\t@true\n' >"$pw/Makefile"
cat >"$pw/ci/envs.sh" <<'STUB'
#!/bin/sh
case $1 in
    build) exit 0 ;;
    python) if [ "$2" = stub-missing ]; then
                echo "envs: $2 is not provisioned yet (no root at /nowhere): run ci/envs.sh provision $2" >&2
                exit 3
            fi
            echo "envs: note: $2 is built but not smoke-tested yet" >&2
            echo /bin/false ;;
esac
STUB
chmod +x "$pw/ci/envs.sh"
GREENREPLAY_CLI=$cli BUILD=$pw/build "$pw/ci/peer.sh" --env stub-missing --out "$pw/out1" >"$pw/out1.log" 2>"$pw/err1"
rc1=$?
GREENREPLAY_CLI=$cli BUILD=$pw/build "$pw/ci/peer.sh" --env stub-noted --out "$pw/out2" >"$pw/out2.log" 2>"$pw/err2"
rc2=$?
if [ $rc1 -eq 3 ] && [ "$(cat "$pw/err1")" = "peer: ci/envs.sh python stub-missing: stub-missing is not provisioned yet (no root at /nowhere): run ci/envs.sh provision stub-missing" ] &&
   [ $rc2 -eq 3 ] && [ "$(head -n 1 "$pw/err2")" = "peer: ci/envs.sh python stub-noted: note: stub-noted is built but not smoke-tested yet" ] &&
   grep -q "^peer: stub-noted cannot run greenlet's test suite" <<<"$(sed -n 2p "$pw/err2")"; then
    gr_ok "ci/peer.sh --env: ci/envs.sh python's reason passed through (exit 3), and its note on success"
else
    gr_bad "ci/peer.sh --env: exit $rc1 / $rc2"
    gr_show "$pw/err1" "$pw/err2"
fi

# make help names every target of .PHONY and every test script the
# integration and integration-debug targets run, those of
# tests/integration/suites.txt included (it once left out conform.sh and a
# dozen others under `make integration`).
helpout=$(make -s -C "$GR_ROOT" help 2>&1)
targets=$(awk '/^\.PHONY:/ { on = 1 } on { print; if (!/\\$/) exit }' "$GR_ROOT/Makefile" |
          sed 's/^\.PHONY://; s/\\$//' | tr -s ' \t' '\n' | grep -v '^$')
scripts=$( { awk '/^(integration|integration-debug):/ { on = 1; next } on && /^\t/ { print; next } { on = 0 }' \
                "$GR_ROOT/Makefile"; awk '!/^#/ && NF { print $1 }' "$GR_ROOT/tests/integration/suites.txt"; } |
          grep -o '[A-Za-z0-9_./-]*\.sh' | grep -v '/suite\.sh$\|^suite\.sh$' | sed 's|.*/||' | sort -u)
missing=""
for t in $targets; do
    grep -qE "make $t([^a-z-]|$)" <<<"$helpout" || missing+=" target:$t"   # (no pipe: grep -q
done
for f in $scripts; do
    grep -qF "$f" <<<"$helpout" || missing+=" script:$f"   # ends early, pipefail)
done
if [ -n "$targets" ] && [ "$(printf '%s\n' "$scripts" | wc -l)" -ge 20 ] && [ -z "$missing" ]; then
    gr_ok "make help names every .PHONY target and every script make integration(-debug) runs ($(printf '%s\n' "$scripts" | wc -l) scripts)"
else
    gr_bad "make help lacks:${missing:- (no targets or scripts found in the Makefile)}"
fi

# docs/WORKFLOW.md's first block, run line by line in a scratch directory
# where ci/envs.sh is a stub that prints this test's interpreter.
wf=$W/workflow
mkdir -p "$wf/ci"
printf '#!/bin/sh\nprintf "%%s\\n" %q\n' "$GR_PY" >"$wf/ci/envs.sh"
chmod +x "$wf/ci/envs.sh"
cp "$GR_ROOT/fixtures/seed.py" "$wf/app.py"
awk '/^```sh$/ { n++; next } n == 1 && /^```$/ { exit } n == 1' "$GR_ROOT/docs/WORKFLOW.md" >"$wf/block.sh"
if ! /usr/bin/python3 -c 'import greenlet' 2>/dev/null; then
    skip "docs/WORKFLOW.md's first block: /usr/bin/python3 (its PYTHON) has no greenlet"
else
    (cd "$wf" && PATH=$(dirname "$cli"):$PATH && export PATH &&
     while IFS= read -r line; do
         case $line in ''|'#'*) continue ;; esac
         eval "$line" >/dev/null 2>>"$wf/err"
         printf '%d %s\n' $? "${line%%#*}"
     done <"$wf/block.sh") >"$wf/rcs" 2>&1
    n=$(grep -c . "$wf/rcs")
    if [ "$n" -ge 9 ] && ! grep -v '^0 ' "$wf/rcs" | grep -qv '^1 greenreplay reduce ' &&
       grep -q '^1 greenreplay reduce repro.py --python "$BAD_PYTHON"' "$wf/rcs" &&
       grep -q 'does not fail with blind_spot' "$wf/err" &&
       ! grep -Eq -- '-- (python3?|PY) |"\$\(ci/envs.sh python' "$GR_ROOT/docs/WORKFLOW.md"; then
        gr_ok "docs/WORKFLOW.md's first block runs as written ($n commands; reduce: nothing to reduce) and names the interpreters \$PYTHON / \$BAD_PYTHON"
    else
        gr_bad "docs/WORKFLOW.md's first block: exit status per command below"
        gr_show "$wf/rcs" "$wf/err"
    fi
fi

# Passive switch detection is the default and installs no greenlet trace
# callback; --switches callback installs one (greenlet.gettrace() returns
# it), as record --help, the man page and the README say.
if "$GR_PY" -c 'import greenlet' 2>/dev/null; then
    printf 'import greenlet\nprint(type(greenlet.gettrace()).__name__)\n' >"$W/gettrace.py"
    "$cli" record -o "$W/gt1.grt" -- "$GR_PY" "$W/gettrace.py" >"$W/gt1.out" 2>&1
    "$cli" record --switches callback -o "$W/gt2.grt" -- "$GR_PY" "$W/gettrace.py" >"$W/gt2.out" 2>&1
    help=$("$cli" record --help | tr -s ' \n' ' ')
    man=$(tr -s ' \n' ' ' <"$GR_ROOT/docs/greenreplay.1")
    readme=$(sed -n 1,200p "$GR_ROOT/README.md" | tr -s ' \n' ' ')
    if grep -qx NoneType "$W/gt1.out" && grep -qx ThreadRecorder "$W/gt2.out" &&
        "$cli" dump "$W/gt1.grt" | grep '^# switches: passive$' >/dev/null &&
        printf '%s' "$help" | grep -q "passive (the default): no greenlet trace callback is installed" &&
        printf '%s' "$help" | grep -q "callback: installs a greenlet trace callback" &&
        printf '%s' "$man" | grep -q "By default switches are detected passively: no greenlet trace callback is installed" &&
        printf '%s' "$man" | grep -q 'switches callback installs a greenlet trace callback' &&
        printf '%s' "$readme" | grep -q 'switches are detected passively by default, with no greenlet trace callback installed' &&
        printf '%s' "$readme" | grep -q '`--switches callback` (`start(switches="callback")`) installs a greenlet trace callback'; then
        gr_ok "switches: passive by default installs no greenlet callback, --switches callback installs one; --help, man page and README say so"
    else
        gr_bad "switches: default gettrace '$(cat "$W/gt1.out")', callback '$(cat "$W/gt2.out")', or --help/man/README silent"
    fi
else
    skip "switches: greenlet is not importable by $GR_PY"
fi

echo "$GR_NOK passed, $GR_NBAD failed$([ $NSKIP -gt 0 ] && echo ", $NSKIP skipped")"
[ "$GR_NBAD" -eq 0 ]
