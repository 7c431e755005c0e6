"""Rewrite a side channel (TRACE.times, docs/FORMAT.md section 5) of format
1.3, whose 'T', 'W' and 'P' chunks interleave, into the layout of format
1.2: every 'T' chunk, then every 'W' chunk, then every 'P' chunk (each kind
in file order), then the trailer, with minor version 2 in the header.
Chunks are copied whole (payload and CRC unchanged), so the entries are the
same; only their order in the file differs.  Used by
tests/integration/sidechan.sh to compare the streamed reading of the new
layout with the reading of the old one.

usage: python side_relayout.py IN OUT
Prints one JSON line: the chunk kinds of IN in file order ("kinds") and
the number of kind changes ("switches_of_kind").  Exit 1 if IN is not a
side channel or ends inside a chunk.
"""
import json
import struct
import sys


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with open(src, "rb") as f:
        data = f.read()
    if len(data) < 16 or data[:8] != b"GRRPLY\r\n" or data[12:13] != b"S":
        print("side_relayout: %s: not a side channel" % src, file=sys.stderr)
        return 1
    off, chunks = 16, []
    while off < len(data):
        if off + 9 > len(data):
            print("side_relayout: %s: ends inside a chunk header at %d" % (src, off), file=sys.stderr)
            return 1
        n = struct.unpack("<I", data[off + 1:off + 5])[0]
        if off + 9 + n > len(data):
            print("side_relayout: %s: ends inside a chunk at %d" % (src, off), file=sys.stderr)
            return 1
        chunks.append(data[off:off + 9 + n])
        off += 9 + n
    kinds = "".join(chr(c[0]) for c in chunks)
    out = bytearray(data[:16])
    out[10:12] = struct.pack("<H", 2)
    for k in "TWPZ":
        for c in chunks:
            if chr(c[0]) == k:
                out += c
    with open(dst, "wb") as f:
        f.write(out)
    changes = sum(1 for a, b in zip(kinds, kinds[1:]) if a != b)
    print(json.dumps({"kinds": kinds, "switches_of_kind": changes}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
