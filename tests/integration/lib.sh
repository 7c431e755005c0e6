# tests/integration/lib.sh - helpers shared by tests/integration/run.sh and
# ci/demo.sh: fixture headers, recording a fixture, the environment name of
# a trace, and the outcome of `greenreplay check`.  Source it (bash); it
# sets no options of its own.
#
# Needs: GR_ROOT (repository root), GR_CLI (the greenreplay executable) and
# GR_PY (the interpreter under test).

# Fixture header lines are "# KEY: VALUE" among the first 40 lines.
# gr_header FILE KEY: prints VALUE (trimmed), nothing when absent.
gr_header() {
    sed -n '1,40p' "$1" | sed -n "s/^# *$2: *//p" | head -n 1 | sed 's/[[:space:]]*$//'
}

# gr_header_present FILE KEY: status 0 if the header line exists (even empty).
gr_header_present() {
    sed -n '1,40p' "$1" | grep -q "^# *$2:"
}

# gr_missing_requirement PY FILE: prints the first module of the fixture's
# "# requires:" line that PY cannot import, with the reason, and returns 1;
# returns 0 when every requirement imports.
gr_missing_requirement() {
    local py=$1 file=$2 mod err
    for mod in $(gr_header "$file" requires | tr ',' ' '); do
        if ! err=$("$py" -c "import $mod" 2>&1); then
            err=$(printf '%s\n' "$err" | tail -n 1)
            printf 'requires %s, not importable by %s (%s)\n' "$mod" "$py" "${err:-import failed}"
            return 1
        fi
    done
    return 0
}

# gr_env_of_python PY: environment name from the interpreter itself, for
# traces without META (a crash before the first chunk) and skipped fixtures.
gr_env_of_python() {
    "$1" - <<'EOF' 2>/dev/null
import sys
try:
    import greenlet
    v = greenlet.__version__
except Exception:
    v = "none"
print("# python: %s" % sys.version.split()[0])
print("# greenlet: %s" % v)
EOF
}

# gr_env_from_meta: reads dump text (its "# python: X" and "# greenlet: Y"
# META lines) on stdin and prints the environment name, e.g.
# py3.11-greenlet2.0 (major.minor of each); "greenlet-none" when greenlet
# was not importable.  Prints nothing without a python META line.
gr_env_from_meta() {
    awk '
        /^# python: / { py = $3 }
        /^# greenlet: / { gl = $3 }
        /^ *[0-9]/ { exit }
        END {
            if (py == "") exit 1
            split(py, p, ".")
            env = "py" p[1] "." p[2]
            if (gl ~ /^[0-9]+\.[0-9]+/) { split(gl, g, "."); env = env "-greenlet" g[1] "." g[2] }
            else if (gl == "") env = env "-greenlet-unknown"
            else env = env "-greenlet-" gl
            print env
        }'
}

# gr_record PY SCRIPT OUT LOG [TIMEOUT]: record SCRIPT with PY in a fresh
# process (`greenreplay record --manual`, code paths relative to GR_ROOT),
# stdout and stderr of the run into LOG.  Returns record's exit status
# (124 on timeout, 128+N when the program was killed by signal N).
gr_record() {
    local py=$1 script=$2 out=$3 log=$4 limit=${5:-300}
    rm -f "$out"
    (cd "$GR_ROOT" && timeout --kill-after=10 "$limit" \
        "$GR_CLI" record --manual --root "$GR_ROOT" -o "$out" -- "$py" "$script") >"$log" 2>&1
}

# ---- what a program printed, without the interpreter's start-up noise
# An interpreter may write lines on stderr before the program runs: a
# stray .pth file's error, a warning of site.  They are not the program's,
# and a recorded run prints them once more when a Python launcher started
# the tool (python -m greenreplay, a pip install's console script: that
# interpreter starts first; the program's own copy is printed once, as
# habits.sh checks), so a test that compares what a program printed leaves
# them out on both sides.

declare -gA _GR_NOISE=()

# gr_startup_noise PY: the lines PY writes on stderr for an empty program
# (nothing when PY is empty or not runnable).  Cached per interpreter.
gr_startup_noise() {
    local py=${1:-}
    [ -n "$py" ] || return 0
    if [ -z "${_GR_NOISE[$py]+set}" ]; then
        _GR_NOISE[$py]=$(cd / && "$py" -c '' 2>&1 >/dev/null </dev/null)
    fi
    [ -z "${_GR_NOISE[$py]}" ] || printf '%s\n' "${_GR_NOISE[$py]}"
}

# gr_quiet PY FILE: FILE without any line of PY's start-up noise (every
# occurrence).  Example: diff <(gr_quiet "$PY" a.plain) <(gr_quiet "$PY" a.log)
gr_quiet() {
    local noise
    noise=$(gr_startup_noise "$1")
    if [ -z "$noise" ]; then
        cat "$2"
    else
        grep -vxF -f <(printf '%s\n' "$noise") "$2"
    fi
    return 0
}

# The JSON report of `check --format json` is read with the interpreter
# under test (GR_PY), so the harness needs no JSON tool of its own.  Every
# object with a string member "rule", anywhere in the report, is a violation.
_gr_json() {
    "$GR_PY" -c '
import json, sys
mode, path = sys.argv[1], sys.argv[2]
arg = sys.argv[3] if len(sys.argv) > 3 else None
with open(path) as f:
    doc = json.load(f)
found = []
def walk(o):
    if isinstance(o, dict):
        if isinstance(o.get("rule"), str):
            found.append(o)
        for v in o.values():
            walk(v)
    elif isinstance(o, list):
        for v in o:
            walk(v)
walk(doc)
if mode == "rules":
    print(",".join(sorted({v["rule"] for v in found})))
elif mode == "failing":
    print(",".join(sorted({v["rule"] for v in found if v.get("advisory") is not True})))
elif mode == "indices":
    for v in found:
        if v["rule"] == arg:
            print(v.get("index"))
elif mode == "truncated":
    ends = [t.get("truncated_at") for t in doc.get("traces", []) if isinstance(t, dict)]
    print(",".join(str(e) for e in ends if e is not None))
elif mode in ("summary", "not_failing"):
    counts = {}
    for v in found:
        if (v.get("advisory") is True) == (mode == "not_failing"):
            counts[v["rule"]] = counts.get(v["rule"], 0) + 1
    print(" ".join("%s=%d" % kv for kv in sorted(counts.items())))
' "$@"
}

# gr_json_rules JSONFILE: sorted, comma-separated rule names ("" when none).
gr_json_rules() { _gr_json rules "$1"; }

# gr_json_failing JSONFILE: the same, of the violations that fail the check
# (not the advisory ones: displaced without --fail-on).
gr_json_failing() { _gr_json failing "$1"; }

# gr_json_indices JSONFILE RULE: event indices of RULE's violations, one a line.
gr_json_indices() { _gr_json indices "$1" "$2"; }

# gr_json_truncated JSONFILE: byte offset where a truncated trace ends
# ("" when the trace is complete).
gr_json_truncated() { _gr_json truncated "$1"; }

# gr_json_summary JSONFILE: "rule=count ..." of the findings that fail
# ("" when clean); gr_json_not_failing: of those that do not (displaced and
# attribution without --fail-on), counted apart as check's result line does.
gr_json_summary() { _gr_json summary "$1"; }
gr_json_not_failing() { _gr_json not_failing "$1"; }

# gr_normalize_expect TEXT: "crash" and rule names, sorted, comma-separated;
# "clean" contributes nothing.  E.g. "blind_spot, crash" -> "blind_spot,crash".
gr_normalize_expect() {
    printf '%s\n' "$1" | tr ', ' '\n\n' | sed '/^$/d; /^clean$/d' | sort -u | paste -sd, -
}

# gr_describe RULES CRASHED: human form of an outcome: "clean",
# "violations: a,b", "crashed", "crashed, violations: a".
gr_describe() {
    local rules=$1 crashed=$2 s=""
    [ "$crashed" = 1 ] && s="crashed"
    if [ -n "$rules" ]; then
        s="${s:+$s, }violations: $rules"
    fi
    printf '%s\n' "${s:-clean}"
}

# ---- small test scripts (check_verdicts.sh, gen_finalize.sh, demo_known.sh)
# One line per test (PASS / FAIL / SKIP, details indented below a failure),
# then "N passed, N failed".

# gr_script_init TAG ARGS...: parse `--python PY` from ARGS into GR_PY
# (default /usr/bin/python3; anything else: usage, exit 2), set GR_ROOT,
# GR_CLI (BUILD/greenreplay, BUILD defaulting to build/) and GR_WORK, a
# scratch directory removed at exit, named after TAG.
gr_script_init() {
    local tag=$1
    shift
    GR_PY=/usr/bin/python3
    while [ $# -gt 0 ]; do
        case $1 in
            --python) [ $# -ge 2 ] || { echo "usage: $0 [--python PY]" >&2; exit 2; }
                      GR_PY=$2; shift 2 ;;
            *) echo "usage: $0 [--python PY]" >&2; exit 2 ;;
        esac
    done
    GR_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    GR_CLI=${BUILD:-$GR_ROOT/build}/greenreplay
    GR_WORK=$(mktemp -d "${TMPDIR:-/tmp}/gr-$tag.XXXXXX")
    trap 'rm -rf "$GR_WORK"' EXIT
    GR_NOK=0 GR_NBAD=0
}

gr_ok() { echo "PASS  $*"; GR_NOK=$((GR_NOK + 1)); }
gr_bad() { echo "FAIL  $*"; GR_NBAD=$((GR_NBAD + 1)); }

# gr_show FILE...: the first 25 lines of the files, indented.
gr_show() { sed -n '1,25p' "$@" | sed 's/^/      | /'; }

# gr_skip_all REASON: the whole script is skipped: say why, exit 0.
gr_skip_all() {
    echo "SKIP  $*"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
}

# gr_tally: the last line; status 1 when a test failed.
gr_tally() {
    echo "$GR_NOK passed, $GR_NBAD failed"
    [ "$GR_NBAD" -eq 0 ]
}
