#!/usr/bin/env python3
"""tests/export_check.py - validate files written by `greenreplay export`.

usage: export_check.py chrome FILE.json [--expect-track NAME]... [--expect-violation RULE]...
       export_check.py speedscope FILE.json [--expect-profile NAME]...

chrome: the Chrome Trace Event format (JSON array form: what speedscope
opens under a *.chrome.json name, and sniffs as Chrome's under any other
when its first event has pid, tid, ph and cat, which is required):
every event has the required fields ph, ts, pid, tid and name, of the right
types; ph is one the exporter may write (B E X i s f M P); the merged view's
P events are a "Profile" and a "ProfileChunk" with the same id per track,
whose cpuProfile has nodes with unique ids and existing parents, samples of
those nodes, one timeDelta per sample (none negative) adding up to at most
endTime; B/E events nest per
track (pid, tid): an E closes the innermost open B of its track, with the
same name, at a ts not before it, and ts never goes back on a track; no B
is left open at the end; X has a dur >= 0; an instant has a scope s in
t/p/g; every flow start s has exactly one finish f with the same id, not
before it; every track with events has a thread_name metadata event.

speedscope: the speedscope file format with evented profiles: "$schema",
"shared.frames" (each with a name), "profiles" of type "evented" with a
name, a known unit, startValue <= endValue and events whose `at` never
decreases, lies within [startValue, endValue], whose frame indices exist,
and whose O/C events are balanced in LIFO order.

The --expect options also require named tracks/profiles (an exact name, or a
shell-style pattern such as "thread 1 greenlet * (run worker)": greenlet
numbers follow the order in which the recorder first saw each greenlet) and
violation instant events of a rule.  Prints one line per problem (at most
20) and exits 1 if there is any, 0 if the file is valid, 2 on bad usage or
unreadable JSON.
"""
import fnmatch
import json
import sys

UNITS = {"none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"}
PHASES = {"B", "E", "X", "i", "s", "f", "M", "P"}


def check_cpu_profile(where, data):
    errs = []
    cpu = data.get("cpuProfile") or {}
    nodes, samples, deltas = cpu.get("nodes"), cpu.get("samples"), data.get("timeDeltas")
    if not isinstance(nodes, list) or not isinstance(samples, list) or not isinstance(deltas, list):
        return ["%s: ProfileChunk without cpuProfile.nodes, cpuProfile.samples, timeDeltas" % where]
    ids = set()
    for nd in nodes:
        if not isinstance(nd.get("id"), int) or nd["id"] in ids:
            errs.append("%s: node id %r missing or repeated" % (where, nd.get("id")))
        ids.add(nd.get("id"))
        if not isinstance((nd.get("callFrame") or {}).get("functionName"), str):
            errs.append("%s: node %r without callFrame.functionName" % (where, nd.get("id")))
    for nd in nodes:
        if "parent" in nd and nd["parent"] not in ids:
            errs.append("%s: node %r has unknown parent %r" % (where, nd.get("id"), nd["parent"]))
    if any(x not in ids for x in samples):
        errs.append("%s: a sample names no node" % where)
    if len(deltas) != len(samples) or not all(is_num(d) and d >= 0 for d in deltas):
        errs.append("%s: %d timeDeltas for %d samples, or a negative one" % (where, len(deltas), len(samples)))
    elif not is_num(data.get("endTime")) or sum(deltas) > data["endTime"] + 1e-3 * len(deltas):
        errs.append("%s: timeDeltas add up past endTime %r" % (where, data.get("endTime")))
    return errs


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check_chrome(doc, expect_tracks, expect_rules):
    errs = []
    if not isinstance(doc, list) or not doc:
        return ["not a non-empty JSON array of events"]
    if not (isinstance(doc[0], dict) and all(k in doc[0] for k in ("pid", "tid", "ph", "cat"))):
        return ["the first event lacks one of pid, tid, ph, cat (speedscope then does not "
                "read the file as Chrome's)"]
    profiles = {}
    stacks = {}
    last_ts = {}
    names = {}
    used = set()
    flows = {}
    rules = set()
    for n, ev in enumerate(doc):
        where = "event %d" % n
        if not isinstance(ev, dict):
            errs.append("%s: not an object" % where)
            continue
        missing = [k for k in ("ph", "ts", "pid", "tid", "name") if k not in ev]
        if missing:
            errs.append("%s: missing %s" % (where, ", ".join(missing)))
            continue
        ph, ts, key = ev["ph"], ev["ts"], (ev["pid"], ev["tid"])
        if ph not in PHASES:
            errs.append("%s: unknown ph %r" % (where, ph))
        if not is_num(ts) or ts < 0:
            errs.append("%s: ts %r is not a non-negative number" % (where, ts))
            continue
        if not isinstance(ev["name"], str):
            errs.append("%s: name is not a string" % where)
        if not all(isinstance(v, int) for v in key):
            errs.append("%s: pid/tid not integers" % where)
        if ph == "M":
            if ev["name"] == "thread_name":
                names[key] = ev.get("args", {}).get("name")
            continue
        used.add(key)
        if ph == "P":
            if ev["name"] == "Profile":
                profiles.setdefault(ev.get("id"), []).append("Profile")
            elif ev["name"] == "ProfileChunk":
                if ev.get("id") not in profiles:
                    errs.append("%s: ProfileChunk before its Profile %r" % (where, ev.get("id")))
                profiles.setdefault(ev.get("id"), []).append("ProfileChunk")
                errs += check_cpu_profile(where, (ev.get("args") or {}).get("data") or {})
            else:
                errs.append("%s: P event %r" % (where, ev["name"]))
            continue
        if ph in ("B", "E", "X"):
            if ts < last_ts.get(key, 0):
                errs.append("%s: ts %s goes back on track %s (last %s)" % (where, ts, key, last_ts[key]))
            last_ts[key] = max(ts, last_ts.get(key, 0))
        if ph == "B":
            stacks.setdefault(key, []).append((ev["name"], ts, n))
        elif ph == "E":
            st = stacks.get(key)
            if not st:
                errs.append("%s: E %r on track %s with no open B" % (where, ev["name"], key))
                continue
            name, bts, bn = st.pop()
            if name != ev["name"]:
                errs.append("%s: E %r closes B %r (event %d) on track %s" % (where, ev["name"], name, bn, key))
            if ts < bts:
                errs.append("%s: E before its B" % where)
        elif ph == "X":
            if not is_num(ev.get("dur")) or ev["dur"] < 0:
                errs.append("%s: X without a dur >= 0" % where)
        elif ph == "i":
            if ev.get("s") not in ("t", "p", "g"):
                errs.append("%s: instant scope %r" % (where, ev.get("s")))
            if ev.get("cat") == "violation":
                args = ev.get("args", {})
                if not args.get("message") or not args.get("rule"):
                    errs.append("%s: violation without rule and message" % where)
                rules.add(args.get("rule"))
        elif ph in ("s", "f"):
            if "id" not in ev:
                errs.append("%s: flow event without id" % where)
                continue
            flows.setdefault(ev["id"], []).append((ph, ts, key))
    for key, st in stacks.items():
        for name, _, bn in st:
            errs.append("B %r (event %d) on track %s never closed" % (name, bn, key))
    for fid, evs in flows.items():
        phs = [p for p, _, _ in evs]
        if phs != ["s", "f"]:
            errs.append("flow %r: events %s, want one s then one f" % (fid, phs))
        elif evs[1][1] < evs[0][1]:
            errs.append("flow %r: finish before start" % fid)
    for key in sorted(used):
        if key[1] != 0 and key not in names:
            errs.append("track %s has events but no thread_name" % (key,))
    have = set(names.values())
    for want in expect_tracks:
        if not fnmatch.filter(have, want):
            errs.append("no track named %r (have %d tracks, e.g. %s)" % (want, len(have), sorted(have)[:3]))
    for rule in expect_rules:
        if rule not in rules:
            errs.append("no violation instant event of rule %r" % rule)
    return errs


def check_speedscope(doc, expect_profiles):
    errs = []
    if not isinstance(doc, dict) or "$schema" not in doc:
        return ["not a speedscope file (no $schema)"]
    frames = doc.get("shared", {}).get("frames")
    if not isinstance(frames, list) or not all(isinstance(f, dict) and isinstance(f.get("name"), str) for f in frames):
        return ["shared.frames is not a list of frames with names"]
    profiles = doc.get("profiles")
    if not isinstance(profiles, list) or not profiles:
        return ["no profiles"]
    names = set()
    for pn, p in enumerate(profiles):
        where = "profile %d (%s)" % (pn, p.get("name"))
        names.add(p.get("name"))
        if p.get("type") != "evented" or not isinstance(p.get("name"), str):
            errs.append("%s: not an evented profile with a name" % where)
            continue
        if p.get("unit") not in UNITS:
            errs.append("%s: unit %r" % (where, p.get("unit")))
        start, end = p.get("startValue"), p.get("endValue")
        if not (is_num(start) and is_num(end) and start <= end):
            errs.append("%s: startValue/endValue %r %r" % (where, start, end))
            continue
        stack, last = [], start
        for en, ev in enumerate(p.get("events", [])):
            at, fr = ev.get("at"), ev.get("frame")
            if ev.get("type") not in ("O", "C") or not is_num(at) or not isinstance(fr, int):
                errs.append("%s event %d: malformed %r" % (where, en, ev))
                continue
            if not 0 <= fr < len(frames):
                errs.append("%s event %d: frame %d out of range" % (where, en, fr))
            if at < last or at > end:
                errs.append("%s event %d: at %s out of order or past endValue" % (where, en, at))
            last = at
            if ev["type"] == "O":
                stack.append(fr)
            elif not stack or stack.pop() != fr:
                errs.append("%s event %d: C of frame %d is not the innermost open frame" % (where, en, fr))
        if stack:
            errs.append("%s: %d frames never closed" % (where, len(stack)))
    for want in expect_profiles:
        if not fnmatch.filter(names, want):
            errs.append("no profile named %r" % want)
    return errs


def main(argv):
    if len(argv) < 3 or argv[1] not in ("chrome", "speedscope"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    kind, path, rest = argv[1], argv[2], argv[3:]
    expect, rules = [], []
    while rest:
        opt = rest.pop(0)
        if opt in ("--expect-track", "--expect-profile") and rest:
            expect.append(rest.pop(0))
        elif opt == "--expect-violation" and rest:
            rules.append(rest.pop(0))
        else:
            print("export_check: bad option %s" % opt, file=sys.stderr)
            return 2
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print("export_check: %s: %s" % (path, e), file=sys.stderr)
        return 2
    errs = check_chrome(doc, expect, rules) if kind == "chrome" else check_speedscope(doc, expect)
    for e in errs[:20]:
        print("export_check: %s: %s" % (path, e))
    if len(errs) > 20:
        print("export_check: %s: ... %d more" % (path, len(errs) - 20))
    if not errs:
        print("export_check: %s: valid %s export" % (path, kind))
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
