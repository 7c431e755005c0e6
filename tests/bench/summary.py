#!/usr/bin/env python3
"""The summary of one `make bench` run: every performance goal with its figure.

tests/bench/bench.sh runs each part of the benchmark with its output in
LOGDIR/PART.log (and PART.cmd, PART.rc, PART.sec beside it) and the run's
facts in LOGDIR/meta.tsv (key TAB value: commit, date, load averages,
versions, total time).  Each benchmark prints, besides its human tables,
one line per goal it measures (tests/bench/goal.py):

    GOAL<TAB>name<TAB>figure<TAB>target<TAB>met|missed<TAB>note

This script gathers them into one markdown table, goal | figure | target |
verdict | note | command, in the order of GOALS below.  A goal of GOALS
that no part printed is listed as not measured, with its part's exit
status; a GOAL line of a name not in GOALS is listed after them.

  summary.py LOGDIR OUT.md          write the summary (exit 1 when a line
                                    was bad, or a goal was not measured
                                    in a full run)
  summary.py --paste OUT.md DOC     replace DOC's text between its markers
                                    (BEGIN and END below) by the summary
  summary.py --self-test            made-up runs that must give the
                                    verdicts they were made for
"""
import os
import sys
import tempfile

BEGIN = "<!-- make bench summary: begin (tests/bench/summary.py --paste) -->"
END = "<!-- make bench summary: end -->"

# (goal number of docs/PERFORMANCE.md, name, what is measured, part).
GOALS = [
    (1, "call-heavy-instr", "call-heavy loop, per event over no profiler, recorder against the empty "
        "C profile function: instructions (callgrind)", "instr-events"),
    (1, "call-heavy-wall", "the same, wall time (fresh processes, best of the rounds)", "side"),
    (1, "call-heavy-timed", "the same, the thread's time in one process (profile_cost.py)", "run"),
    (1, "pool-instr", "a thread pool's worker that never uses greenlet, the same in instructions",
        "instr-events"),
    (2, "ping-pong-instr", "greenlet ping-pong, per switch, recorder against the empty function: "
        "instructions", "instr-switch"),
    (2, "ping-pong-timed", "the same, the thread's time (switch_cost.py)", "run"),
    (2, "hub10-instr", "a Python-level hub round-robin over 10 greenlets, per switch, instructions",
        "instr-switch"),
    (2, "hub100-instr", "the same over 100 greenlets", "instr-switch"),
    (2, "hub10000-instr", "the same over 10,000 greenlets", "instr-switch"),
    (3, "switch-heavy-wall", "switch-heavy gevent, recorder against cProfile, wall time over no "
        "profiler", "side"),
    (3, "realistic-wall", "realistic gevent (loopback sockets, queue), the same", "side"),
    (3, "switch-heavy-i1", "switch-heavy gevent, L1 instruction-cache misses per event, recorder "
        "against the empty function", "side"),
    (3, "realistic-i1", "realistic gevent, the same", "side"),
    (4, "size-call-heavy", "trace bytes per event, call-heavy loop, compressed chunks", "run"),
    (4, "size-ping-pong", "the same, greenlet ping-pong", "run"),
    (4, "size-switch-heavy", "the same, switch-heavy gevent", "run"),
    (4, "size-reruns", "compressed reruns of every workload", "run"),
    (4, "size-ids", "bytes per event as greenlet ids grow (10x the greenlets)", "run"),
    (4, "compress-cpu-call-heavy", "chunk compression's CPU cost per event, call-heavy trace "
        "(encode_cost.c)", "run"),
    (4, "compress-cpu-switch-heavy", "the same, switch-heavy gevent trace", "run"),
    (5, "check-mem", "`check` peak memory on the synthetic trace", "replay"),
    (5, "check-rate", "`check` records per second, single-threaded", "replay"),
    (5, "stats-bounded", "`stats` peak memory bounded by the live greenlets: whole trace against "
        "its first half", "replay"),
    (5, "diff-mem", "`diff` of the trace with itself, peak memory", "replay"),
    (5, "diff-rate", "the same, records per second", "replay"),
    (5, "diff/2-mem", "`diff` of the trace with its first half, peak memory", "replay"),
    (5, "diff/2-rate", "the same, records per second", "replay"),
    (5, "script-mem", "`script` peak memory, under a 1 GB address-space cap", "replay"),
    (5, "script-rate", "`script` records per second", "replay"),
    (5, "dump-rate", "`dump` to /dev/null, records per second", "replay"),
    (6, "peer-size", "greenlet's own test suite recorded whole-program in file mode, trace size",
        "peer"),
]


def read_run(logdir):
    """(meta dict, {part: dict(cmd, rc, sec, goals=[fields...])}, bad lines)."""
    meta, parts, bad = {}, {}, []
    mp = os.path.join(logdir, "meta.tsv")
    if os.path.exists(mp):
        with open(mp) as f:
            for line in f:
                k, _, v = line.rstrip("\n").partition("\t")
                meta[k] = v
    def started(fn):  # the parts in the order they ran: PART.cmd is written first
        cmd = os.path.join(logdir, fn[:-4] + ".cmd")
        return (os.path.getmtime(cmd) if os.path.exists(cmd) else 0, fn)

    for fn in sorted((f for f in os.listdir(logdir) if f.endswith(".log")), key=started):
        part = fn[:-4]
        p = {"goals": []}
        for key in ("cmd", "rc", "sec"):
            path = os.path.join(logdir, "%s.%s" % (part, key))
            p[key] = open(path).read().strip() if os.path.exists(path) else ""
        with open(os.path.join(logdir, fn), errors="replace") as f:
            for line in f:
                if not line.startswith("GOAL\t"):
                    continue
                fields = line.rstrip("\n").split("\t")[1:]
                if len(fields) != 5 or fields[3] not in ("met", "missed"):
                    bad.append("%s: %s" % (fn, line.strip()))
                    continue
                p["goals"].append(fields)
        parts[part] = p
    return meta, parts, bad


def cell(s):
    return s.replace("|", "\\|")


def quick(meta):
    return meta.get("mode", "").startswith("quick")


def render(meta, parts, bad):
    """The summary's markdown and the number of goals not measured."""
    got = {}
    for part, p in parts.items():
        for name, figure, target, verdict, note in p["goals"]:
            got[name] = (part, figure, target, verdict, note)
    out = ["# `make bench`: every goal from one run", ""]
    out.append("Commit `%s`, %s; %s. Total %s." % (
        meta.get("commit", "?"), meta.get("date", "?"), meta.get("mode", "?"), meta.get("total", "?")))
    out.append("Host: %s, %s CPUs; load average (1, 5, 15 min) %s at the start, %s at the end." % (
        meta.get("cpu", "?"), meta.get("cpus", "?"), meta.get("load_start", "?"), meta.get("load_end", "?")))
    out.append("%s. Command: `%s` (`%s`)." % (meta.get("versions", "?"), meta.get("command", "make bench"),
                                               meta.get("script", "tests/bench/bench.sh")))
    out.append("")
    out.append("| # | goal | figure | target | verdict | note | command |")
    out.append("|---|---|---|---|---|---|---|")
    missing = 0
    seen = set()
    for num, name, what, part in GOALS:
        seen.add(name)
        cmd = "`%s`" % parts[part]["cmd"] if part in parts and parts[part]["cmd"] else ""
        if name in got:
            _, figure, target, verdict, note = got[name]
            out.append("| %d | %s | %s | %s | **%s** | %s | %s |" % (
                num, cell(what), cell(figure), cell(target), verdict, cell(note), cmd))
        else:
            missing += 1
            if part not in parts:
                why = "part %s not run" % part
            elif quick(meta) and parts[part]["rc"] == "0":
                why = "not in a quick run"
            else:
                why = "part %s printed no figure for it (exit status %s)" % (part, parts[part]["rc"] or "?")
            out.append("| %d | %s | | | **not measured** | %s | %s |" % (num, cell(what), why, cmd))
    for name in sorted(set(got) - seen):
        part, figure, target, verdict, note = got[name]
        out.append("| | %s | %s | %s | **%s** | %s | `%s` |" % (
            name, cell(figure), cell(target), verdict, cell(note), parts[part]["cmd"]))
    out.append("")
    out.append("Parts (each prints its own tables: build/bench/log/PART.log):")
    out.append("")
    out.append("| part | exit | seconds | command |")
    out.append("|---|---:|---:|---|")
    for part, p in parts.items():
        out.append("| %s | %s | %s | `%s` |" % (part, p["rc"] or "?", p["sec"] or "?", p["cmd"]))
    for b in bad:
        out.append("")
        out.append("Malformed GOAL line: %s" % cell(b))
    out.append("")
    out.append("%d goals: %d met, %d missed, %d not measured." % (
        len(GOALS), sum(1 for g in GOALS if g[1] in got and got[g[1]][3] == "met"),
        sum(1 for g in GOALS if g[1] in got and got[g[1]][3] == "missed"), missing))
    return "\n".join(out) + "\n", missing


def paste(summary, doc):
    """Replace the text between BEGIN and END in doc by the summary, less
    its title line; exit 1 when the markers are not there once each."""
    with open(summary) as f:
        body = f.read().split("\n", 1)[1].lstrip("\n")
    with open(doc) as f:
        text = f.read()
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        sys.exit("summary.py: %s needs the markers once each, in order:\n%s\n%s" % (doc, BEGIN, END))
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    with open(doc, "w") as f:
        f.write(head + BEGIN + "\n" + body.rstrip("\n") + "\n" + END + tail)


def write_part(d, part, rc, lines):
    with open(os.path.join(d, part + ".log"), "w") as f:
        f.write("some human table\n" + "".join(l + "\n" for l in lines))
    for key, v in (("cmd", "tests/bench/%s.sh" % part), ("rc", str(rc)), ("sec", "1")):
        with open(os.path.join(d, "%s.%s" % (part, key)), "w") as f:
            f.write(v + "\n")


def self_test():
    """A made-up run: one goal met, one missed, a part that failed before
    its figures, a malformed line, an unknown goal; then the paste."""
    fails = []
    with tempfile.TemporaryDirectory() as d:
        write_part(d, "instr-events", 0, [
            "GOAL\tcall-heavy-instr\t1.10x\t<= 1.15x\tmet\t",
            "GOAL\tpool-instr\t1.30x\t<= 1.20x\tmissed\tby 20 instructions",
            "GOAL\tpool-instr\t1.30x\tmissed",
            "GOAL\tsomething-new\t3 ns\tprinted\tmet\t"])
        write_part(d, "replay", 2, [])
        write_part(d, "instr-switch", 0, [])
        meta, parts, bad = read_run(d)
        text, missing = render(meta, parts, bad)
        rows = {l.split(" | ")[1]: l for l in text.splitlines() if l.startswith("| ")}
        def expect(what, cond):
            if not cond:
                fails.append(what)
        expect("met row", "**met**" in rows.get(GOALS[0][2], ""))
        expect("missed row", "**missed**" in rows.get(GOALS[3][2], ""))
        expect("failed part", "exit status 2" in rows.get("`check` peak memory on the synthetic trace", ""))
        expect("part not run", "part side not run" in rows.get(GOALS[1][2], ""))
        expect("unknown goal listed", "something-new" in rows)
        expect("malformed line", len(bad) == 1 and "Malformed GOAL line" in text)
        expect("count", missing == len(GOALS) - 2)
        with open(os.path.join(d, "meta.tsv"), "w") as f:
            f.write("mode\tquick run\n")
        meta, parts, bad = read_run(d)
        qtext, _ = render(meta, parts, bad)
        expect("quick run", "not in a quick run" in qtext.split(GOALS[4][2])[1].split("\n")[0]
               and "exit status 2" in qtext)
        summ = os.path.join(d, "summary.md")
        with open(summ, "w") as f:
            f.write(text)
        doc = os.path.join(d, "doc.md")
        with open(doc, "w") as f:
            f.write("intro\n\n%s\nold table\n%s\n\nafter\n" % (BEGIN, END))
        paste(summ, doc)
        new = open(doc).read()
        expect("pasted", "old table" not in new and "| 1 | call-heavy" in new and new.endswith("after\n")
               and new.startswith("intro\n") and "# `make bench`" not in new)
        paste(summ, doc)
        expect("paste twice, same text", open(doc).read() == new)
        with open(doc, "w") as f:
            f.write("no markers\n")
        try:
            paste(summ, doc)
            fails.append("paste without markers")
        except SystemExit:
            pass
    for f in fails:
        print("summary.py self-test: FAILED %s" % f)
    print("summary.py self-test: %s" % ("ok" if not fails else "%d failed" % len(fails)))
    return 1 if fails else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) == 4 and argv[1] == "--paste":
        paste(argv[2], argv[3])
        print("summary.py: pasted %s into %s" % (argv[2], argv[3]))
        return 0
    if len(argv) != 3 or argv[1].startswith("-"):
        sys.exit(__doc__)
    meta, parts, bad = read_run(argv[1])
    text, missing = render(meta, parts, bad)
    with open(argv[2], "w") as f:
        f.write(text)
    sys.stdout.write(text)
    return 1 if bad or (missing and not quick(meta)) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
