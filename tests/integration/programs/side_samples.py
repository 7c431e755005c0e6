"""Print the t_ns of every sample ('P' entry) of a side channel
(TRACE.times, docs/FORMAT.md section 5), in file order, for
tests/integration/sidechan.sh: where the samples kept fall in time.

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


def main():
    src = sys.argv[1]
    with open(src, "rb") as f:
        data = f.read()
    if len(data) < 16 or data[:8] != b"GRRPLY\r\n" or data[12:13] != b"S":
        print("side_samples: %s: not a side channel" % src, file=sys.stderr)
        return 1
    off, ts, left = 16, [], 0  # left: stacks of the last sample still to come
    try:
        while off < len(data):
            if off + 9 > len(data):
                raise ValueError("ends inside a chunk header at %d" % off)
            tag, n = data[off:off + 1], struct.unpack("<I", data[off + 1:off + 5])[0]
            payload = data[off + 9:off + 9 + n]
            if len(payload) != n:
                raise ValueError("ends inside a chunk at %d" % off)
            off += 9 + n
            p = 0
            while tag == b"P" and p < len(payload):
                if not left:  # a sample's header
                    h = []
                    for _ in range(10):
                        v, p = varint(payload, p)
                        h.append(v)
                    ts.append(h[2])
                    left = h[9]
                while left and p < len(payload):  # its stacks (a large one's go on in the next 'P')
                    _, p = varint(payload, p)
                    depth, p = varint(payload, p)
                    for _ in range(depth):
                        _, p = varint(payload, p)
                    left -= 1
    except ValueError as e:
        print("side_samples: %s: %s" % (src, e), file=sys.stderr)
        return 1
    print(json.dumps({"t_ns": ts}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
