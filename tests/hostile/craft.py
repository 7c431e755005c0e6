"""craft.py HEADER_FROM KIND OUT: write a hand-made trace (docs/FORMAT.md)
with the 16-byte file header of the trace HEADER_FROM.  KIND:
  c_return    a C_RETURN of an extension's C function
              (acme_secret_billing.len) without its C_CALL: script notes it,
              and --anonymize must not name it
  empty_mark  a MARK with an empty stack (depth 0)
  threads:N   N threads besides the main one, each running one function
              that marks, one after the other (script must stay linear)
  deep:N      a recursion N calls deep that marks at the bottom (script
              must not recurse as deep on the C stack)
"""
import struct
import sys
import zlib


def v(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def s(x):
    x = x.encode()
    return b"\x01" + v(len(x)) + x


def chunk(tag, payload):
    return tag + struct.pack("<II", len(payload), zlib.crc32(payload)) + payload


def main():
    hdr = open(sys.argv[1], "rb").read()[:16]
    kind = sys.argv[2]
    recs = []  # one bytes object per record (a record never spans chunks)
    n = 0  # indexed records

    def rec(*parts):
        nonlocal n
        b = b"".join(parts)
        recs.append(b)
        if b[0] >= 0x10:
            n += 1

    def code(kind_, q, f, line):
        rec(b"\x02", v(kind_), v(q), v(f), v(line))

    if kind == "c_return":
        for x in ("<module>", "app.py", "acme_secret_billing.len"):
            rec(s(x))
        code(0, 1, 2, 1)  # code 1: <module> (app.py:1)
        code(1, 3, 0, 0)  # code 2: the C function
        rec(b"\x10", v(1))  # THREAD
        rec(b"\x1b", v(1), v(0))  # START
        rec(b"\x12", v(1), v(0), v(1))  # CALL <module>
        rec(b"\x15", v(1), v(0), v(2))  # C_RETURN without C_CALL
        rec(b"\x13", v(1), v(0), v(1))  # RETURN
        rec(b"\x1c", v(1), v(0))  # STOP
    elif kind == "empty_mark":
        rec(s("greenreplay._greenreplay.mark"))
        rec(s("L"))
        code(1, 1, 0, 0)  # code 1: mark
        rec(b"\x10", v(1))
        rec(b"\x1b", v(1), v(0))
        rec(b"\x19", v(1), v(0), v(2), v(1), v(0), v(0))  # MARK, depth 0
        rec(b"\x1c", v(1), v(0))
    elif kind.split(":")[0] in ("threads", "deep"):
        count = int(kind.split(":")[1])
        for x in ("<module>", "app.py", "work", "greenreplay._greenreplay.mark", "m"):
            rec(s(x))
        code(0, 1, 2, 1)  # code 1: <module>
        code(0, 3, 2, 3)  # code 2: work
        code(1, 4, 0, 0)  # code 3: mark
        rec(b"\x10", v(1))
        rec(b"\x1b", v(1), v(0))
        rec(b"\x12", v(1), v(0), v(1))
        if kind.startswith("threads"):
            for tid in range(2, count + 2):
                rec(b"\x10", v(tid))
                rec(b"\x12", v(tid), v(0), v(2))
                rec(b"\x19", v(tid), v(0), v(5), v(3), v(1), v(0))  # MARK in work
                rec(b"\x13", v(tid), v(0), v(2))
        else:
            for _ in range(count):
                rec(b"\x12", v(1), v(0), v(2))
            rec(b"\x19", v(1), v(0), v(5), v(3), v(1), v(0))
            for _ in range(count):
                rec(b"\x13", v(1), v(0), v(2))
        rec(b"\x13", v(1), v(0), v(1))
        rec(b"\x1c", v(1), v(0))
    else:
        sys.exit("craft.py: unknown kind %s" % kind)
    chunks, cur = [], b""
    for r in recs:
        if len(cur) + len(r) > 60000:
            chunks.append(cur)
            cur = b""
        cur += r
    chunks.append(cur)
    trailer = v(n) + v(0) + v(0) + v(1)
    with open(sys.argv[3], "wb") as out:
        out.write(hdr + b"".join(chunk(b"E", c) for c in chunks) + chunk(b"Z", trailer))


main()
