"""Greenlets coming and going under the reference sampler, for
tests/integration/registry.sh and ci/scale.py: the sampler registry must
recycle the slots of dead greenlets, so that greenlets created late in a
run (greenlet numbers far above the registry's capacity) are still sampled
under their own greenlet numbers.

usage: python registry_reuse.py --count N --live L --max-greenlets M
                                [--mode two-phase|hold-lock|seqlock]
                                [--switches passive|callback]
                                [--interval-us 1000] [--wait-samples 2]
                                [--checkpoints] [--above N] --output TRACE

Creates N greenlets in batches of L.  Greenlet i runs a call chain
1 + i % 7 frames deep (neighbours differ, so a stack given to the wrong
greenlet number does not match the checker's shadow stack of that
greenlet) and suspends itself; once the batch is suspended the program
waits until the sampler has taken --wait-samples more samples (so every
batch is sampled while suspended; 0: no wait), then finishes the batch
(every greenlet dies).  Prints one JSON line at the end: the registry's
figures (greenreplay._greenreplay._sampler_registry()) read at the start and
before stop() ("first", "last"), "count", and "sampled": what the side
channel's samples hold (docs/FORMAT.md section 5: 'P' chunks), "samples",
"stacks", "gids" (distinct greenlet numbers sampled), "max_gid",
"gids_above" (how many of them are above --above, default 65536); with
--checkpoints also a line {"at": n,
"hwm_kb": VmHWM, "rss_kb": VmRSS, "s": elapsed, "registry": {...}} at 10 k,
100 k, 1 M, ... greenlets created.
"""
import argparse
import json
import os
import sys
import time

import greenlet

import greenreplay

# VmHWM/VmRSS reader of the scale workloads (fixtures/scale/scale.py)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "fixtures", "scale"))
from scale import status  # noqa: E402
from side_samples import samples  # noqa: E402  (this directory: the side channel's samples)


def deep(d):
    if d > 1:
        return deep(d - 1) + 1
    greenlet.getcurrent().parent.switch()
    return 1


def body(i):
    return deep(1 + i % 7)


def sampled(path, above):
    """What the samples of side channel `path` name: counts (see above)."""
    gids, nsamples, stacks = set(), 0, 0
    for _, st in samples(path):
        nsamples += 1
        for gid, _ in st:
            gids.add(gid)
            stacks += 1
    return {"samples": nsamples, "stacks": stacks, "gids": len(gids), "max_gid": max(gids or [0]),
            "gids_above": sum(1 for g in gids if g > above)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--live", type=int, required=True)
    ap.add_argument("--max-greenlets", type=int, required=True)
    ap.add_argument("--mode", default="two-phase")
    ap.add_argument("--switches", default="callback")
    ap.add_argument("--interval-us", type=int, default=1000)
    ap.add_argument("--wait-samples", type=int, default=2)
    ap.add_argument("--checkpoints", action="store_true")
    ap.add_argument("--above", type=int, default=65536)
    ap.add_argument("--output", required=True)
    a = ap.parse_args()
    native = greenreplay._greenreplay
    greenreplay.start(a.output, sampler=a.mode, interval_us=a.interval_us,
                      max_greenlets=a.max_greenlets, switches=a.switches)
    first = native._sampler_registry()
    marks = set()
    c = 10000
    while c < a.count:
        marks.add(c)
        c *= 10
    marks.add(a.count)
    t0 = time.perf_counter()
    made = 0
    while made < a.count:
        batch = []
        for _ in range(min(a.live, a.count - made)):
            g = greenlet.greenlet(body)
            g.switch(made)
            batch.append(g)
            made += 1
            if a.checkpoints and made in marks:
                st = status()
                print(json.dumps({"at": made, "hwm_kb": st.get("VmHWM"), "rss_kb": st.get("VmRSS"),
                                  "s": round(time.perf_counter() - t0, 3),
                                  "registry": native._sampler_registry()}), flush=True)
        if a.wait_samples:
            want = native._sampler_samples() + a.wait_samples
            deadline = time.monotonic() + 5
            while native._sampler_samples() < want and time.monotonic() < deadline:
                time.sleep(a.interval_us / 4e6)
        for g in batch:
            g.switch()
            assert g.dead
        del batch, g
    last = native._sampler_registry()
    greenreplay.stop()
    print(json.dumps({"count": made, "first": first, "last": last,
                      "sampled": sampled(a.output + ".times", a.above)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
