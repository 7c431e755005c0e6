"""Tables and verdicts of the stall benchmark (ci/stall.sh).

usage: python3 ci/stall_report.py [--idle N] [--depth D] [--samples S] RUNS.jsonl

RUNS.jsonl holds one JSON object per run (fixtures/stall/stall.py's line
plus ci/stall.sh's fields from `greenreplay check --stall --format json`).
Prints, per sampler mode and with/without the CPU-bound thread: median
ns/switch at N=0 and N=IDLE with their range, the paired ratio (run k at
N=IDLE over run k at N=0) as median [min-max], the median max lock wait
and the check --stall verdicts; then the depth sweep; then the verdicts.

Switch time is "ready" time: the wall time of the measured phase less the
time the switching thread waited in the run queue for a CPU (schedstat),
per switch.  On this machine's 2 cores shared by several busy processes
the thread can spend 80 % of the wall time queued, which says nothing
about the sampler; lock waits and GIL waits are sleeps, not queueing, so
a stall stays in.  The wall-time ratio is printed beside it.

What each design predicts, and so what the verdicts test (no absolute
time is judged):
  - hold-lock reads every suspended greenlet's frames while holding the
    lock every switch needs.  At N=0 the 20 suspended workers still have
    frames, so check --stall's stall_depth rule flags it at every N, in
    every run; at N=IDLE the hold grows with N x depth, so the median
    ratio must stand above the two-phase/seqlock bound.
  - two-phase copies slots under the lock and unwinds after; seqlock takes
    no lock.  Neither reads a frame under a lock (stall_depth never fires),
    neither is flagged (two-phase: except behind a lock holder the OS
    preempted during its copy, told apart by the run's own figures: no
    frame under the lock and no wait longer than the longest hold; seqlock
    cannot wait at all), and their median paired ratio stays within
    1.1 + noise, noise being the larger measured relative spread
    (max-min)/median of the same mode's N=0 and N=IDLE runs: on a quiet
    machine that is about 1.1 (the
    issue's goal, printed as met or missed separately); under load it
    widens by what the load itself shows.
  - The depth sweep: the lock hold (phase-1 copy) is the same at every
    depth, and no frame is read under the lock at any depth.
Exit status 0 when every verdict holds, 1 otherwise, 2 on bad input.
"""
import argparse
import json
import statistics
import sys


def med(v):
    return statistics.median(v) if v else float("nan")


def spread(v):
    """Relative spread (max - min) / median."""
    m = med(v)
    return (max(v) - min(v)) / m if v and m else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--idle", type=int, default=2000)
    ap.add_argument("--depth", type=int, default=50)
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("runs")
    a = ap.parse_args()
    try:
        runs = [json.loads(x) for x in open(a.runs) if x.strip()]
    except (OSError, ValueError) as e:
        print("ci/stall_report.py: %s: %s" % (a.runs, e), file=sys.stderr)
        return 2

    verdicts = []  # (ok, text)

    def verdict(ok, text):
        verdicts.append((bool(ok), text))

    bad = [r for r in runs if r.get("crashed") or "check_error" in r or r.get("check_rc", 2) > 1]
    verdict(not bad, "every run completed and was checked (%d runs, %d unusable)" % (len(runs), len(bad)))
    good = [r for r in runs if r not in bad]
    # Hold-lock at large N holds the lock for the whole unwind of N x D
    # frames, 60-180 ms per sample here, so 200 samples can take longer
    # than stall.py's 30 s budget on a loaded machine: such a run is
    # judged on the samples it took, if they are at least a quarter of the
    # target and the configuration's runs together reach the target.  Its
    # verdict (flagged) is decided by its first sample.
    few, cut_ok = [], []
    for r in good:
        if r["samples"] >= a.samples and not r.get("cut_by_budget"):
            continue
        conf = sum(x["samples"] for x in good if (x["mode"], x["n"], x["depth"], x["cpu_thread"])
                   == (r["mode"], r["n"], r["depth"], r["cpu_thread"]))
        if r["mode"] == "hold-lock" and r.get("cut_by_budget") and 4 * r["samples"] >= a.samples \
                and conf >= a.samples:
            cut_ok.append(r)
        else:
            few.append(r)
    verdict(not few, "every run took at least %d samples while the workers switched%s"
            % (a.samples, "" if not cut_ok else
               ", except %d hold-lock run(s) at N=%d that ran out the 30 s budget with %s samples "
               "(%d or more over the configuration): the stall itself, each sample holds the lock for "
               "the whole unwind" % (len(cut_ok), a.idle, ", ".join(str(r["samples"]) for r in cut_ok),
                                    a.samples)))

    modes = []
    for r in good:
        if r["mode"] not in modes:
            modes.append(r["mode"])

    def sel(mode, n, depth, cpu):
        return sorted((r for r in good if r["mode"] == mode and r["n"] == n and r["depth"] == depth
                       and r["cpu_thread"] == cpu), key=lambda r: r["rep"])

    print("switch time (ns per switch less run-queue wait), N=%d / N=0 idle greenlets, depth %d "
          "(medians of the runs; [min-max])"
          % (a.idle, a.depth))
    print()
    print("| mode | CPU-bound thread | runs | ns/switch N=0 | ns/switch N=%d | ratio (paired) | "
          "wall-time ratio | max wait N=%d | lock hold/sample N=%d | check --stall N=0 / N=%d |"
          % ((a.idle,) * 4))
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    bound = {}
    ratios = {}
    for cpu in (False, True):
        for mode in modes:
            lo, hi = sel(mode, 0, a.depth, cpu), sel(mode, a.idle, a.depth, cpu)
            if not lo or not hi:
                continue
            pairs = {r["rep"]: r for r in lo}
            key = "ready_ns_per_switch"
            rs = [h[key] / pairs[h["rep"]][key] for h in hi if h["rep"] in pairs]
            rw = [h["ns_per_switch"] / pairs[h["rep"]]["ns_per_switch"] for h in hi if h["rep"] in pairs]
            n0 = [r[key] for r in lo]
            n1 = [r[key] for r in hi]
            ratios[(mode, cpu)] = rs
            # Noise of either side of the pairs: the larger relative spread.
            bound[(mode, cpu)] = 1.1 + max(spread(n0), spread(n1))

            def flags(rr):
                f = sum(1 for r in rr if r["check_rc"] == 1)
                return "%d/%d flagged" % (f, len(rr))

            waits = [r["wait_max_ns"] / 1e3 for r in hi]
            holds = [r["hold_median_ns"] / 1e3 for r in hi]
            print("| %s | %s | %d | %.0f [%.0f-%.0f] | %.0f [%.0f-%.0f] | %.2f [%.2f-%.2f] | "
                  "%.2f [%.2f-%.2f] | %.0f us [%.0f-%.0f] | %.1f us | %s / %s |"
                  % (mode, "yes" if cpu else "no", len(rs), med(n0), min(n0), max(n0),
                     med(n1), min(n1), max(n1), med(rs), min(rs), max(rs), med(rw), min(rw), max(rw),
                     med(waits), min(waits), max(waits), med(holds), flags(lo), flags(hi)))
    print()

    # Verdicts: what the design predicts.
    for cpu in (False, True):
        cpu_s = "with" if cpu else "without"
        for mode in modes:
            rr = [r for r in good if r["mode"] == mode and r["cpu_thread"] == cpu]
            if not rr:
                continue
            if mode == "hold-lock":
                unflagged = [r for r in rr if r["check_rc"] != 1 or not r["counts"].get("stall_depth")]
                verdict(not unflagged, "hold-lock %s CPU thread: flagged (stall_depth) in every run, "
                        "N=0 and N=%d (%d of %d)" % (cpu_s, a.idle, len(rr) - len(unflagged), len(rr)))
            else:
                under = [r for r in rr if r["frames_under_lock"]]
                # A lock-based design has one residual stall the sampler
                # cannot prevent: the OS preempting the sampler while it
                # holds the lock for its O(N) copy.  Such a run is flagged by
                # stall_wait only, reads no frame under the lock, and no
                # switch waited longer than the longest hold the sampler
                # measured (wall clock, so it includes the preemption) plus
                # the writer's 200 us spin: counted and shown, not failed.
                preempted = [r for r in rr if r["check_rc"] == 1 and not r["frames_under_lock"]
                             and set(k for k, v in r["counts"].items() if v) == {"stall_wait"}
                             and r["wait_max_ns"] <= r["hold_max_ns"] + 250000]
                flagged = [r for r in rr if r["check_rc"] != 0 and r not in preempted]
                if preempted:
                    verdict(True, "%s %s CPU thread: %d run(s) flagged by stall_wait alone behind a "
                            "preempted lock holder (no frame under the lock; longest wait within the "
                            "longest hold, which the OS stretched: %s)" % (
                                mode, cpu_s, len(preempted), "; ".join(
                                    "rep %d N=%d D=%d wait %.0f us, hold max %.0f us" % (
                                        r["rep"], r["n"], r["depth"], r["wait_max_ns"] / 1e3,
                                        r["hold_max_ns"] / 1e3) for r in preempted)))
                verdict(not under, "%s %s CPU thread: no frame read under a lock in any run (%d runs)"
                        % (mode, cpu_s, len(rr)))
                verdict(not flagged, "%s %s CPU thread: not flagged by check --stall in any run%s "
                        "(%d of %d flagged%s)" % (mode, cpu_s,
                                                  " but the preempted one(s) above" if preempted else "",
                                                  len(flagged), len(rr) - len(preempted),
                                                  "".join("; rep %d N=%d D=%d: %s" % (
                                                      r["rep"], r["n"], r["depth"],
                                                      ", ".join("%s %d" % kv for kv in r["counts"].items() if kv[1]))
                                                      for r in flagged)))
            if (mode, cpu) in ratios and mode != "hold-lock":
                m, b = med(ratios[(mode, cpu)]), bound[(mode, cpu)]
                verdict(m <= b, "%s %s CPU thread: median ratio %.2f <= 1.1 + spread of the runs = %.2f"
                        % (mode, cpu_s, m, b))
        if ("hold-lock", cpu) in ratios:
            others = [bound[(m, cpu)] for m in modes if m != "hold-lock" and (m, cpu) in bound]
            b = max(others) if others else 1.1
            m = med(ratios[("hold-lock", cpu)])
            verdict(m > b, "hold-lock %s CPU thread: median ratio %.2f above the lock-free-read bound %.2f "
                    "(the stall shows in switch time)" % (cpu_s, m, b))

    # Depth sweep.
    depths = sorted({r["depth"] for r in good if r["n"] == a.idle and not r["cpu_thread"]})
    if len(depths) > 1:
        print("depth sweep, N=%d, no CPU thread: max lock wait per switch and lock hold per sample "
              "(medians [min-max])" % a.idle)
        print()
        print("| mode | depth | runs | ns/switch | max wait per switch | lock hold/sample | frames under lock |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for mode in modes:
            if mode == "hold-lock" or len({r["depth"] for r in good if r["mode"] == mode
                                           and r["n"] == a.idle and not r["cpu_thread"]}) < 2:
                continue
            hm = {}
            for d in depths:
                rr = sel(mode, a.idle, d, False)
                if not rr:
                    continue
                w = [r["wait_max_ns"] / 1e3 for r in rr]
                h = [r["hold_median_ns"] / 1e3 for r in rr]
                hm[d] = med(h)
                print("| %s | %d | %d | %.0f | %.1f us [%.1f-%.1f] | %.1f us [%.1f-%.1f] | %d |"
                      % (mode, d, len(rr), med([r["ready_ns_per_switch"] for r in rr]), med(w), min(w), max(w),
                         med(h), min(h), max(h), sum(r["frames_under_lock"] for r in rr)))
            if len(hm) > 1:
                lo_d, hi_d = min(hm), max(hm)
                # Flat: the deepest stacks' median hold within twice the
                # shallowest's plus 10 us (hold-lock's grows with depth x N,
                # tens of milliseconds at depth 50).
                verdict(hm[hi_d] <= 2 * hm[lo_d] + 10,
                        "%s: lock hold per sample flat in depth (median %.1f us at depth %d, %.1f us at %d)"
                        % (mode, hm[lo_d], lo_d, hm[hi_d], hi_d))
        print()

    print("goal: two-phase and seqlock ratio <= 1.1 on a quiet machine:")
    for (mode, cpu), rs in sorted(ratios.items()):
        if mode != "hold-lock":
            print("  %-9s %-14s median %.2f [%.2f-%.2f]: %s" % (
                mode, "CPU thread" if cpu else "no CPU thread", med(rs), min(rs), max(rs),
                "met" if med(rs) <= 1.1 else "missed (see the N=0 spread: is the machine quiet?)"))
    print()
    print("verdicts (what each design predicts):")
    for ok, text in verdicts:
        print("  %s  %s" % ("ok  " if ok else "FAIL", text))
    return 0 if all(ok for ok, _ in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
