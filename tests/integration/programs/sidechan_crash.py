"""A recording with the reference sampler that ends without stop(), for
tests/integration/sidechan.sh: the side channel's 'W' and 'P' chunks are
written during the run (docs/FORMAT.md section 5), so a process that dies
keeps the chunks written before it died.

usage: python sidechan_crash.py TRACE exit|kill|stop [--chunk BYTES]
                                [--samples N] [--switches N]
                                [--sampler MODE] [--no-profile] [--die]

Records 20 greenlets, 3 to 9 frames deep, switching round robin, with the
sampler (--sampler, default two-phase) every 1 ms and side-channel chunks
of --chunk bytes (default 4096, so that many chunks are written), with
the profile function (without it: --no-profile, start(profile=False),
switches only), until the sampler has
taken --samples samples (default 60) and --switches switches were made
(default 20,000; at most 20 s).  With --die each greenlet is then killed
(greenlet.throw(): it dies with its frames open).  Prints
one JSON line {"samples": N, "switches": N}, then ends: `exit` with
os._exit(3) (no atexit, no stop(), nothing flushed), `kill` with SIGKILL
sent to itself, `stop` with greenreplay.stop() (a whole recording, exit 0).
"""
import json
import os
import signal
import sys
import time

import greenlet

import greenreplay


def deep(d):
    if d > 1:
        return deep(d - 1)
    while True:
        greenlet.getcurrent().parent.switch()


def main():
    path, how = sys.argv[1], sys.argv[2]
    def opt(name, default):
        return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default
    chunk, want_samples, want_switches = opt("--chunk", 4096), opt("--samples", 60), opt("--switches", 20000)
    mode = sys.argv[sys.argv.index("--sampler") + 1] if "--sampler" in sys.argv[:-1] else "two-phase"
    if how not in ("exit", "kill", "stop"):
        print("usage: sidechan_crash.py TRACE exit|kill|stop [--chunk BYTES] [--samples N] "
              "[--switches N] [--sampler MODE] [--no-profile] [--die]", file=sys.stderr)
        return 2
    native = greenreplay._greenreplay
    greenreplay.start(path, sampler=mode, interval_us=1000, chunk=chunk,
                      profile="--no-profile" not in sys.argv)
    gs = [greenlet.greenlet(lambda i=i: deep(3 + i % 7)) for i in range(20)]
    switches = 0
    deadline = time.monotonic() + 20
    while ((native._sampler_samples() < want_samples or switches < want_switches)
           and time.monotonic() < deadline):
        for g in gs:
            g.switch()
            switches += 2
    if "--die" in sys.argv:
        for g in gs:
            g.throw()
            switches += 2  # the throw, and the dead greenlet's switch back
    print(json.dumps({"samples": native._sampler_samples(), "switches": switches}), flush=True)
    if how == "exit":
        os._exit(3)
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    greenreplay.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
