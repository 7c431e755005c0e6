#!/usr/bin/env bash
# tests/browser/run.sh [--python PY] [--update-docs]: the exports and the
# HTML report, opened in a real browser (headless Chromium).
#
#  1. record fixtures/gevent_spawn.py with --times, export it to speedscope
#     and Chrome Trace Event JSON, validate both (tests/export_check.py);
#  2. open the speedscope file in speedscope's own static build (npm package,
#     served from 127.0.0.1 with python3 -m http.server, loaded through
#     `#profileURL=`), dump the DOM after a virtual time budget and assert,
#     under the names users give it (run.json, run.speedscope.json: speedscope
#     picks its importer by the name first, then by the content), that the
#     page shows the trace's name, "(1/N)" for the N exported profiles, the
#     merged view first and every greenlet's profile name; take a screenshot
#     (build/browser/speedscope.png; --update-docs copies it to
#     docs/export-speedscope.png);
#     then the Chrome export under run.json and run.chrome.json (a
#     *.chrome.json name is read as a Chrome performance trace: the object
#     form failed there with "t.sort is not a function"): the page shows the
#     imported profile (named after the file), not the welcome screen or an
#     error; and the Chrome export of the tracks alone (--view greenlets,
#     which speedscope reads by its content as Trace Event JSON) lists the
#     same greenlet tracks with the same total time each as the speedscope
#     export: the Chrome file read by a real Trace Event importer;
#  3. `check --html` of the same trace with a CALL dropped (blind spots):
#     open the page from file:// and assert the violations, the greenlet
#     table with shadow and real stacks, and that every link has a target.
#
# Chromium, npm and speedscope are installed by ci/browser-setup.sh; the
# tests are skipped (exit 0, "SKIP" with the reason) only when Chromium
# cannot be installed, and the speedscope part only when npm or speedscope
# cannot be.  One line per test, then "N passed, N failed".  Exit 1 if any
# failed, 2 bad usage.
set -u
PY=/usr/bin/python3
UPDATE_DOCS=0
while [ $# -gt 0 ]; do
    case "$1" in
        --python) PY=$2; shift 2 ;;
        --update-docs) UPDATE_DOCS=1; shift ;;
        *) echo "usage: $0 [--python PY] [--update-docs]" >&2; exit 2 ;;
    esac
done
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${BUILD:-$top/build}
cli=$build/greenreplay
out=$build/browser
mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/gr-browser.XXXXXX")
server=
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
pass=0 fail=0
ok() { echo "PASS  $*"; pass=$((pass + 1)); }
bad() { echo "FAIL  $*"; fail=$((fail + 1)); }

env_text=$("$top/ci/browser-setup.sh" --print-env 2>"$work/setup.err")
rc=$?
skip_speedscope=
if [ $rc -eq 4 ]; then
    skip_speedscope=$(tail -n 1 "$work/setup.err" | sed 's/^browser-setup: //')
elif [ $rc -ne 0 ]; then
    if [ $rc -eq 3 ]; then
        echo "SKIP  browser tests: $(tail -n 1 "$work/setup.err" | sed 's/^browser-setup: //')"
        echo "0 passed, 0 failed, 1 skipped"
        exit 0
    fi
    cat "$work/setup.err" >&2
    echo "FAIL  ci/browser-setup.sh exited $rc"
    exit 1
fi
eval "$env_text"   # CHROMIUM, SPEEDSCOPE_DIR

# chrome URL OUT.html [extra flags...]: the DOM after the page settled.
browse() {
    local url=$1 dom=$2
    shift 2
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --disable-background-networking --disable-component-update --disable-sync \
        --no-first-run --user-data-dir="$work/profile" --virtual-time-budget=15000 \
        "$@" "$url" >"$dom" 2>>"$work/chromium.log"
}

# page_text FILE.html: the visible text, tags stripped, one line.
page_text() {
    "$PY" -c 'import html, re, sys
s = open(sys.argv[1], encoding="utf-8", errors="replace").read()
s = re.sub(r"(?s)<(script|style)\b.*?</\1>", " ", s)
print(re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", s))))' "$1"
}

# ---- 1. record and export ------------------------------------------------
trace=$work/gevent_spawn.grt
if ! "$PY" -c 'import gevent' 2>/dev/null; then
    echo "SKIP  browser tests: gevent is not importable by $PY"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi
(cd "$top" && "$cli" record --manual --times --root "$top" -o "$trace" -- "$PY" fixtures/gevent_spawn.py) \
    >"$work/record.log" 2>&1 || { bad "record fixtures/gevent_spawn.py"; cat "$work/record.log"; }
speed=$out/gevent_spawn.speedscope.json
chrome=$out/gevent_spawn.chrome.json
tracks=$out/gevent_spawn.tracks.json
"$cli" export --format speedscope "$trace" -o "$speed" 2>"$work/export.log" &&
    "$cli" export --format chrome "$trace" -o "$chrome" 2>>"$work/export.log" &&
    "$cli" export --format chrome --view greenlets "$trace" -o "$tracks" 2>>"$work/export.log"
rc=$?
# The greenlet names the page must show: every profile of the export.
names=$("$PY" -c 'import json, sys
for p in json.load(open(sys.argv[1]))["profiles"]: print(p["name"])' "$speed" 2>/dev/null)
nprof=$(printf '%s\n' "$names" | grep -c .)
if [ $rc -eq 0 ] && "$PY" "$top/tests/export_check.py" speedscope "$speed" \
        --expect-profile "thread 1 greenlet 1 (main)" --expect-profile "thread 1 greenlet * (run worker)" \
        >"$work/val.log" 2>&1 &&
   "$PY" "$top/tests/export_check.py" chrome "$chrome" --expect-track "thread 1: all greenlets merged" \
        --expect-track "thread 1 greenlet * (run Hub.run)" >>"$work/val.log" 2>&1 && [ "$nprof" -ge 22 ]; then
    ok "export gevent_spawn: speedscope ($nprof profiles) and chrome JSON valid"
else
    bad "export gevent_spawn (exit $rc, $nprof profiles)"; cat "$work/export.log" "$work/val.log" | head -20
fi

# ---- 2. speedscope in Chromium ----------------------------------------------
if [ -n "$skip_speedscope" ]; then
    echo "SKIP  speedscope in Chromium: $skip_speedscope"
else
www=$work/www
mkdir -p "$www"
for f in "$SPEEDSCOPE_DIR"/*; do ln -s "$f" "$www/"; done
cp "$speed" "$www/profile.json"
cp "$speed" "$www/run.speedscope.json"
cp "$chrome" "$www/run.json"
cp "$chrome" "$www/run.chrome.json"
cp "$tracks" "$www/chrome.json"
(cd "$www" && exec "$PY" -m http.server 0 --bind 127.0.0.1) >"$work/http.log" 2>&1 &
server=$!
port=
for _ in $(seq 50); do
    port=$(sed -n 's/.*port \([0-9][0-9]*\).*/\1/p' "$work/http.log" | head -n 1)
    [ -n "$port" ] && break
    sleep 0.1
done
if [ -z "$port" ]; then
    bad "speedscope: the local HTTP server did not start"; cat "$work/http.log"
else
    url="http://127.0.0.1:$port/index.html#profileURL=http://127.0.0.1:$port/profile.json"
    for name in profile.json run.speedscope.json; do
        browse "http://127.0.0.1:$port/index.html#profileURL=http://127.0.0.1:$port/$name" \
            "$work/speedscope.html" --dump-dom
        text=$(page_text "$work/speedscope.html")
        missing=()
        case "$text" in *"$trace"*) ;; *) missing+=("the trace name $trace") ;; esac
        case "$text" in *"thread 1: all greenlets merged (1/$nprof)"*) ;;
            *) missing+=("the merged view first: thread 1: all greenlets merged (1/$nprof)") ;; esac
        while IFS= read -r n; do
            [ -n "$n" ] || continue
            case "$text" in *"$n"*) ;; *) missing+=("$n") ;; esac
        done <<<"$names"
        case "$text" in *"Drag and drop"*) missing+=("(the page still shows the welcome screen)") ;; esac
        if [ ${#missing[@]} -eq 0 ]; then
            ok "speedscope shows the export as $name: its name, the merged view (1/$nprof) and all greenlet profiles"
        else
            bad "speedscope page of $name lacks: ${missing[*]:0:3}"
            echo "      page text: ${text:0:300}"
        fi
    done
    # The Chrome export under the names users give it: speedscope shows its
    # merged view, a profile named after the file.
    for name in run.json run.chrome.json; do
        browse "http://127.0.0.1:$port/index.html#profileURL=http://127.0.0.1:$port/$name" \
            "$work/c.html" --dump-dom
        ctext=$(page_text "$work/c.html")
        missing=()
        case "$ctext" in *"$name"*) ;; *) missing+=("the profile named $name") ;; esac
        case "$ctext" in *"Drag and drop"*) missing+=("(the welcome screen)") ;; esac
        case "$ctext" in *"Something went wrong"*|*"is not a function"*) missing+=("(an import error)") ;; esac
        case "$ctext" in *"Time Order"*) ;; *) missing+=("the view tabs of a loaded profile") ;; esac
        if [ ${#missing[@]} -eq 0 ]; then
            ok "speedscope opens the Chrome export as $name (its merged view)"
        else
            bad "speedscope and the Chrome export as $name: ${missing[*]:0:3}"
            echo "      page text: ${ctext:0:300}"
        fi
    done
    # The Chrome export of the tracks alone in speedscope: same tracks, same
    # totals.
    browse "http://127.0.0.1:$port/index.html#profileURL=http://127.0.0.1:$port/chrome.json" \
        "$work/chrome.html" --dump-dom
    page_text "$work/chrome.html" >"$work/chrome.txt"
    printf '%s\n' "$text" >"$work/speedscope.txt"
    cmp_out=$("$PY" - "$work/speedscope.txt" "$work/chrome.txt" <<'EOF'
import re, sys
pat = re.compile(r"(thread \d+ greenlet \d+ \((?:main|run [^)]*)\))(?: \(tid \d+\))? ([0-9.]+(?:ns|µs|ms|s))\b")
# The two formats carry the same nanosecond times in different units
# (speedscope: ns; Trace Event: float µs), so speedscope's display of a total
# may differ by one in its last shown digit (867.22µs against 867.23µs).
SCALE = {"ns": 1e-3, "µs": 1.0, "ms": 1e3, "s": 1e6}
def micros(text):
    m = re.match(r"([0-9.]+)(ns|µs|ms|s)$", text)
    return float(m.group(1)) * SCALE[m.group(2)], SCALE[m.group(2)] * 10 ** -len((m.group(1) + ".").split(".")[1])
def same(x, y):
    (vx, ux), (vy, uy) = micros(x), micros(y)
    return abs(vx - vy) <= max(ux, uy) * 1.001
a, b = (dict(pat.findall(open(f, encoding="utf-8").read())) for f in sys.argv[1:])
if not a or a.keys() != b.keys() or not all(same(a[k], b[k]) for k in a):
    diff = sorted(set(a.items()) ^ set(b.items()))[:4]
    print("speedscope export %d tracks, chrome export %d; differing: %s" % (len(a), len(b), diff))
else:
    print("ok %d" % len(a))
EOF
)
    if [ "$cmp_out" = "ok $((nprof - 1))" ]; then
        ok "chrome export of the tracks in speedscope's Trace Event importer: the same $((nprof - 1)) greenlet tracks and totals"
    else
        bad "chrome export in speedscope: $cmp_out"
    fi
    rm -f "$out/speedscope.png"
    browse "$url" /dev/null --window-size=1400,800 --screenshot="$out/speedscope.png"
    if [ -s "$out/speedscope.png" ] && [ "$(head -c 8 "$out/speedscope.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then
        ok "speedscope screenshot: $out/speedscope.png ($(wc -c <"$out/speedscope.png") bytes)"
        if [ $UPDATE_DOCS -eq 1 ]; then
            cp "$out/speedscope.png" "$top/docs/export-speedscope.png"
            echo "      copied to docs/export-speedscope.png"
        fi
    else
        bad "speedscope screenshot not written"; tail -n 5 "$work/chromium.log"
    fi
fi
fi

# ---- 3. check --html in Chromium --------------------------------------------
# Drop the first CALL of worker: blind spots at its marks (the first one at
# drop+1: CALL worker, C_CALL mark, MARK).
drop=$("$cli" dump "$trace" | awk '$2 == "CALL" && $5 == "worker" { print $1; exit }')
report=$out/check.html
if [ -n "$drop" ] && "$cli" edit --drop "$drop" -o "$work/lost.grt" "$trace" &&
   { "$cli" check --quiet --html "$report" "$work/lost.grt" >"$work/check.out" 2>&1; [ $? -eq 1 ]; }; then
    browse "file://$report" "$work/report.html" --dump-dom
    text=$(page_text "$work/report.html")
    missing=()
    for want in "greenreplay check" "blind_spot at event $((drop + 1))" "profiler missed call of worker" \
                "shadow stack (profile events)" "real stack (ground truth)" "(main)" "(run Hub.run)" \
                "MARK at record" "Records cited"; do
        case "$text" in *"$want"*) ;; *) missing+=("$want") ;; esac
    done
    # Every in-page link has its target.
    dangling=$("$PY" -c 'import re, sys
s = open(sys.argv[1], encoding="utf-8").read()
ids = set(re.findall(r"id=\"([^\"]+)\"", s))
print(" ".join(sorted({h for h in re.findall(r"href=\"#([^\"]+)\"", s) if h not in ids})[:5]))' "$work/report.html")
    nlinks=$(grep -o 'href="#' "$work/report.html" | wc -l)
    if [ ${#missing[@]} -eq 0 ] && [ -z "$dangling" ] && [ "$nlinks" -gt 10 ] &&
       ! grep -qE '<(script|link)|https?://' "$report"; then
        ok "check --html in Chromium: violations, stacks, $nlinks links all resolved, self-contained"
    else
        bad "check --html page: missing [${missing[*]:0:3}] dangling [$dangling] links $nlinks"
    fi
    browse "file://$report" /dev/null --window-size=1400,1600 --screenshot="$out/check-html.png"
else
    bad "check --html: could not build the report (drop=$drop)"; cat "$work/check.out" 2>/dev/null | head
fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
