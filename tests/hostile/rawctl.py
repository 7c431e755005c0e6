"""rawctl.py FILE...: exit 1 if a FILE holds a character that acts on a
terminal or hides text: a C0 control other than tab and newline, DEL, a C1
control (U+0080..U+009F), a bidi mark, embedding, override or isolate, a
line or paragraph separator, U+FEFF; or bytes that are not UTF-8.  Prints
the first offending line of each file.  With --sgr first, the colour
sequences greenreplay writes itself (ESC [ digits m) are allowed."""
import re
import sys

BAD = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff]")
SGR = re.compile("\x1b\\[[0-9;]*m")
args = sys.argv[1:]
sgr = args[:1] == ["--sgr"]
if sgr:
    args = args[1:]
rc = 0
for path in args:
    data = open(path, "rb").read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        print("%s: not UTF-8 at byte %d" % (path, e.start))
        rc = 1
        continue
    if sgr:
        text = SGR.sub("", text)
    for n, line in enumerate(text.split("\n"), 1):
        m = BAD.search(line)
        if m:
            print("%s:%d: raw U+%04X: %r" % (path, n, ord(m.group()), line[:120]))
            rc = 1
            break
sys.exit(rc)
