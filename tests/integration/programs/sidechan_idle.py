"""A recording with the reference sampler whose program idles in C (one
time.sleep, no record written meanwhile), for tests/integration/sidechan.sh:
the sampler's ring and own buffer must stay bounded while nothing drains
them, their samples must span the whole idle stretch (the own buffer is
thinned), and the sampling times without a kept sample must be counted
(tracer/sampler.h, gr_sampler_drain).

usage: GREENREPLAY_SAMPLER_RING=BYTES python sidechan_idle.py TRACE [--idle SECONDS]
                                                 [--profile 0|1] [--depths D,D,D,D,D]
                                                 [--until-lost-large]

Records 5 greenlets suspended 20 frames deep (--depths: each its own depth), with the two-phase sampler
every 200 us storing one stack per sample (keep=1, so that a small ring is
allowed), then sleeps --idle seconds (default 1.5) in C, then switches
round robin until the sampler has taken 20 samples more (the samples waiting
are drained meanwhile; --until-lost-large: and until a sample was dropped as
larger than the ring takes), then stops.  --profile 0 records with profile=False
(only the switches record).  Prints one JSON line: `idle` (the sampler's
figures right after the sleep: _sampler_registry() and `samples`,
_sampler_samples()), `end` (the same right before stop()), and `idle_from`
and `idle_to`, when the sleep began and ended in the samples' time (ns since
the sampler's start: CLOCK_MONOTONIC, as time.monotonic_ns()).
"""
import json
import sys
import time

import greenlet

import greenreplay


def deep(d):
    if d > 1:
        return deep(d - 1)
    while True:
        greenlet.getcurrent().parent.switch()


def figures(native):
    f = dict(native._sampler_registry())
    f["samples"] = native._sampler_samples()
    return f


def main():
    path = sys.argv[1]
    idle = float(sys.argv[sys.argv.index("--idle") + 1]) if "--idle" in sys.argv else 1.5
    profile = sys.argv[sys.argv.index("--profile") + 1] != "0" if "--profile" in sys.argv else True
    native = greenreplay._greenreplay
    greenreplay.start(path, sampler="two-phase", interval_us=200, keep=1, profile=profile)
    depths = [20] * 5
    if "--depths" in sys.argv:
        depths = [int(d) for d in sys.argv[sys.argv.index("--depths") + 1].split(",")]
    gs = [greenlet.greenlet(lambda d=d: deep(d)) for d in depths]
    for g in gs:
        g.switch()
    start_ns = native._sampler_registry()["start_ns"]
    idle_from = time.monotonic_ns() - start_ns
    time.sleep(idle)
    idle_to = time.monotonic_ns() - start_ns
    at_idle = figures(native)
    deadline = time.monotonic() + 20
    # A greenlet deeper than the ring takes (--depths with GREENREPLAY_SAMPLER_
    # RING_MAX) is sampled only when a sampling time finds it: go on until one
    # did (a loaded host can give 20 samples without it), within the deadline.
    want_large = "--until-lost-large" in sys.argv
    while (native._sampler_samples() < at_idle["samples"] + 20
           or (want_large and not native._sampler_registry()["samples_lost_large"])) \
            and time.monotonic() < deadline:
        for g in gs:
            g.switch()
    end = figures(native)
    print(json.dumps({"idle": at_idle, "end": end, "idle_from": idle_from, "idle_to": idle_to}),
          flush=True)
    greenreplay.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
