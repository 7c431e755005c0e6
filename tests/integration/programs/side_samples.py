"""The samples ('P' entries) of a side channel (TRACE.times, docs/FORMAT.md
section 5): samples(TIMES) reads them for the tests' programs
(registry_reuse.py); run as a program it prints the t_ns of every sample,
in file order, for tests/integration/sidechan.sh: where the samples kept
fall in time.

usage: python side_samples.py TIMES
Prints one JSON line: {"t_ns": [...]}.  Exit 1 if TIMES is not a side
channel, ends inside a chunk, or holds a 'P' entry cut short.
"""
import json
import struct
import sys


def varint(data, off):
    """The unsigned LEB128 varint at data[off:], and the offset after it."""
    v = shift = 0
    while True:
        if off >= len(data):
            raise ValueError("varint cut short")
        b = data[off]
        off += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, off


def samples(path):
    """The samples of side channel `path`, in file order: a list of
    (header, stacks), header the sample's 10 numbers (idx_begin, idx_end,
    t_ns, hold_ns, greenlets, frames, frames_under_lock, failed, torn,
    nstacks: tracer/sampler.h) and stacks a list of (gid, [code ids,
    outermost first]).  The 'P' chunks' payloads are one stream (a large
    sample goes on in the next chunk).  Raises ValueError when `path` is
    not a side channel, ends inside a chunk, or a sample is cut short."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 16 or data[:8] != b"GRRPLY\r\n" or data[12:13] != b"S":
        raise ValueError("not a side channel")
    off, chunks = 16, []
    while off < len(data):
        if off + 9 > len(data):
            raise ValueError("ends inside a chunk header at %d" % off)
        n = struct.unpack_from("<I", data, off + 1)[0]
        if off + 9 + n > len(data):
            raise ValueError("ends inside a chunk at %d" % off)
        if data[off:off + 1] == b"P":
            chunks.append(data[off + 9:off + 9 + n])
        off += 9 + n
    pay, p, out = b"".join(chunks), 0, []
    while p < len(pay):
        h = []
        for _ in range(10):
            v, p = varint(pay, p)
            h.append(v)
        stacks = []
        for _ in range(h[9]):
            gid, p = varint(pay, p)
            depth, p = varint(pay, p)
            codes = []
            for _ in range(depth):
                c, p = varint(pay, p)
                codes.append(c)
            stacks.append((gid, codes))
        out.append((h, stacks))
    return out


def main():
    src = sys.argv[1]
    try:
        ts = [h[2] for h, _ in samples(src)]
    except ValueError as e:
        print("side_samples: %s: %s" % (src, e), file=sys.stderr)
        return 1
    print(json.dumps({"t_ns": ts}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
