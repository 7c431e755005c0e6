"""script_names.py TRACE SCRIPT: check that SCRIPT (from `greenreplay script
--anonymize`) holds none of the names of TRACE.

Reads the trace's definitions and records directly (docs/FORMAT.md sections
1-4; a compressed records chunk, section 2.1, through the `zstd` command)
and looks in the script's text for:
  - every qualname (the whole string) of a Python code or C function, and
    every identifier part of a Python qualname (`A.b.<locals>.c` -> A, b,
    c) as a whole word;
  - every file name of a Python code (the whole string, and its last path
    component, e.g. `hub.py`);
  - every mark label (the whole string, and its words of 4 letters or more
    as whole words).
greenreplay's own code (files under `<greenreplay>/`, C functions
`greenreplay._greenreplay.*`) is left out: the script has to call start(),
stop() and mark().  Prints what it found, then "N names checked, K found";
exit status 0 when none was found, 1 otherwise, 2 on bad usage, an
unreadable chunk or a trace without names to check.
"""
import re
import struct
import subprocess
import sys

# Indexed records: number of varint fields before an optional stack of
# code ids (the last field is then its depth).
# format 1.1: SWITCH/THROW end with a stack (depth, ids); HOOK has 6 fields
FIELDS = {0x10: 1, 0x11: 5, 0x12: 3, 0x13: 3, 0x14: 3, 0x15: 3, 0x16: 3, 0x17: 8,
          0x18: 8, 0x19: 6, 0x1A: 2, 0x1B: 2, 0x1C: 2, 0x1D: 4, 0x1E: 5, 0x1F: 6}
STACKED = {0x11, 0x19, 0x1D, 0x17, 0x18}
# format 1.2 compact records (section 4.1): one-byte events, events with
# their code id, switches without (0xE5, 0xE6) and with (0xE7, 0xE8) the
# repeated switch state; they define no names
FIELDS.update({t: 0 for t in range(0x20, 0xE0)})
FIELDS.update({t: 1 for t in range(0xE0, 0xE5)})
FIELDS.update({0xE5: 6, 0xE6: 6, 0xE7: 3, 0xE8: 3})
STACKED |= {0xE5, 0xE6, 0xE7, 0xE8}
# format 1.3 (section 4.2): a HOOK of the profile slot with the program's
# profiler and frame
FIELDS[0xE9] = 8
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def varint(b, p):
    v = s = 0
    while True:
        c = b[p]
        p += 1
        v |= (c & 0x7F) << s
        s += 7
        if not c & 0x80:
            return v, p


def read(path):
    data = open(path, "rb").read()
    strings, codes, labels = [None], [], set()
    off = 16
    while off + 9 <= len(data):
        tag = data[off]
        (n,) = struct.unpack_from("<I", data, off + 1)
        pay = data[off + 9: off + 9 + n]
        off += 9 + n
        if tag == 0xC5:  # compressed records: u32 size, one zstd frame
            (size,) = struct.unpack_from("<I", pay, 0)
            pay = subprocess.run(["zstd", "-dcq"], input=pay[4:], stdout=subprocess.PIPE,
                                 check=True).stdout
            if len(pay) != size:
                raise SystemExit("script_names.py: a compressed chunk of %s holds %d bytes, "
                                 "not %d" % (path, len(pay), size))
        elif tag == 0x5A:  # 'Z': trailer
            continue
        elif tag != 0x45:  # 'E': records
            raise SystemExit("script_names.py: unknown chunk tag 0x%02x in %s" % (tag, path))
        p = 0
        while p < len(pay):
            t = pay[p]
            p += 1
            if t == 0x01:
                ln, p = varint(pay, p)
                strings.append(pay[p:p + ln].decode("utf-8", "replace"))
                p += ln
            elif t == 0x02:
                f = []
                for _ in range(4):
                    v, p = varint(pay, p)
                    f.append(v)
                codes.append(f)
            elif t == 0x03:
                for _ in range(2):
                    _, p = varint(pay, p)
            elif t == 0x04:
                _, p = varint(pay, p)
            elif t == 0x05:  # PROFILER (format 1.3): kind, type, code
                for _ in range(3):
                    _, p = varint(pay, p)
            else:
                f = []
                for _ in range(FIELDS[t]):
                    v, p = varint(pay, p)
                    f.append(v)
                if t in STACKED:
                    for _ in range(f[-1]):
                        _, p = varint(pay, p)
                if t == 0x19:
                    labels.add(strings[f[2]])
    return strings, codes, labels


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: script_names.py TRACE SCRIPT\n")
        return 2
    strings, codes, labels = read(sys.argv[1])
    text = open(sys.argv[2], encoding="utf-8").read()
    words = set(IDENT.findall(text))
    found = set()
    checked = 0
    for kind, q, fid, _line in codes:
        qual = strings[q]
        fn = strings[fid] if fid else ""
        if fn.startswith("<greenreplay>/") or qual.startswith("greenreplay._greenreplay."):
            continue
        checked += 1
        if qual in text:
            found.add("qualname %r" % qual)
        if kind != 0:
            continue
        for part in qual.split("."):
            if IDENT.fullmatch(part) and part in words:
                found.add("qualname part %r of %r" % (part, qual))
        if fn and fn in text:
            found.add("file %r" % fn)
        last = fn.rsplit("/", 1)[-1]
        if last and last in text:
            found.add("file name %r of %r" % (last, fn))
    for label in labels:
        checked += 1
        if label in text:
            found.add("label %r" % label)
        for w in re.findall(r"[A-Za-z_]{4,}", label):
            if w in words:
                found.add("word %r of label %r" % (w, label))
    for f in sorted(found):
        print(f)
    print("%d names checked, %d found" % (checked, len(found)))
    if not checked:  # nothing read is not a pass
        return 2
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
