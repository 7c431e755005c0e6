"""Read a trace back for the recorder tests: the text of `greenreplay dump`
(docs/FORMAT.md section 6) parsed into records.

    trace = grtrace.read("run.grt")
    trace.meta["switches"]            # "passive"
    [r.kind for r in trace.records]   # ["THREAD", "GREENLET", "START", ...]
    trace.between("begin", "end")     # the records between two marks

Only the dump's documented line format is relied on, never the recorder's
C structures.  A line that does not parse is an error (ValueError naming
the line), so a change of the format fails the tests instead of passing
them silently.
"""
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# INDEX KIND tTID REST (REST starts with " gGID" or " gORIGIN->gTARGET")
_RECORD = re.compile(r"^ *(\d+) ([A-Z_]+) +t(\d+)(?: g(\d+)(?:->g(\d+))?)?(.*)$")
_FIELD = re.compile(r"(?:^| )([a-z_]+)=(\S+)")
_MARK = re.compile(r'^ "((?:[^"\\]|\\.)*)"(.*)$')
# Fields whose value is a CODE ("QUALNAME (FILE:LINE)", with a space): it
# runs to the next of these fields or to the end.
_CODE_KEYS = ("during", "profiler", "code", "frame", "callback")


def cli():
    """The command-line tool: $GREENREPLAY_CLI, else the make tree's."""
    return os.environ.get("GREENREPLAY_CLI") or os.path.join(
        os.environ.get("BUILD") or os.path.join(ROOT, "build"), "greenreplay")


def unescape(text):
    """A string of the dump as the program gave it: \\xHH, \\\\ and \\" undone
    (bytes that are not UTF-8 come back as surrogate escapes)."""
    out = bytearray()
    for m in re.finditer(r'\\x([0-9a-f]{2})|\\(["\\])|([^\\]+)', text):
        if m.group(1):
            out.append(int(m.group(1), 16))
        else:
            out += (m.group(2) or m.group(3)).encode("utf-8", "surrogateescape")
    return out.decode("utf-8", "surrogateescape")


class Record:
    """One indexed record of the dump.

    index, kind ("CALL", "SWITCH", ...), tid, gid (the origin of a
    SWITCH/THROW), target (a SWITCH/THROW's target, else None), rest (the
    text after the greenlet ids, starting with a space), words (its bare
    words: "continued", "new", "chained", ...), fields (its key=value pairs
    with a one-word value), stack (the codes of stack=, outermost first, or
    None), code (a CALL/RETURN/C_* record's code), label (a MARK's)."""

    def __init__(self, line):
        m = _RECORD.match(line)
        if not m:
            raise ValueError("not a record line of greenreplay dump: %r" % line)
        self.line = line
        self.index = int(m.group(1))
        self.kind = m.group(2)
        self.tid = int(m.group(3))
        self.gid = int(m.group(4)) if m.group(4) else None
        self.target = int(m.group(5)) if m.group(5) else None
        rest = m.group(6)
        self.label = None
        if self.kind == "MARK":
            mm = _MARK.match(rest)
            if not mm:
                raise ValueError("MARK without a quoted label: %r" % line)
            self.label = unescape(mm.group(1))
            rest = mm.group(2)
        self.rest = rest
        self.stack = None
        head = rest
        if " stack=" in rest:
            head, _, stack = rest.partition(" stack=")
            self.stack = [] if stack == "-" else stack.split(" > ")
        self.code = rest[1:] if self.kind in ("CALL", "RETURN", "C_CALL", "C_RETURN",
                                              "C_EXCEPTION") else None
        if self.code is not None:
            head = ""
        self._head = head
        self.fields = dict(_FIELD.findall(head))
        self.words = [w for w in head.split() if "=" not in w and "(" not in w and ")" not in w]

    @property
    def name(self):
        """A code's qualified name without its (FILE:LINE)."""
        return self.code.split(" (")[0] if self.code else None

    # HOOK records (docs/FORMAT.md section 6.1)
    @property
    def slot(self):
        return self.words[0] if self.kind == "HOOK" else None

    @property
    def action(self):
        return self.words[1] if self.kind == "HOOK" else None

    def value(self, key):
        """The whole value of field key (a CODE with its "(FILE:LINE)"),
        else None: value("during"), value("code"), value("callback")..."""
        m = re.search(r" %s=(.*?)(?= (?:%s)=|$)" % (key, "|".join(_CODE_KEYS)), self._head)
        return m.group(1) if m else None

    def __repr__(self):
        return "<%s>" % self.line.strip()


class Trace:
    """A dump read back: meta (dict of the META lines), records (list of
    Record), trailer (dict of the final line's fields, {} when truncated),
    text (the whole dump)."""

    def __init__(self, text):
        self.text = text
        self.meta = {}
        self.records = []
        self.trailer = {}
        for line in text.splitlines():
            if line.startswith("# trailer: "):
                self.trailer = dict(f.split("=", 1) for f in line[len("# trailer: "):].split())
            elif line.startswith("# "):
                key, sep, value = line[2:].partition(": ")
                if sep:
                    self.meta[key] = value
            elif line.strip():
                self.records.append(Record(line))

    def of(self, *kinds):
        """The records of these kinds, in order."""
        return [r for r in self.records if r.kind in kinds]

    def marks(self):
        return [r.label for r in self.of("MARK")]

    def between(self, first, last, tid=None):
        """The records strictly between the MARKs labelled first and last
        (the marks' own C_CALL/C_RETURN left out), on thread tid if given."""
        labels = self.marks()
        if first not in labels or last not in labels:
            raise AssertionError("marks %r and %r not both in the trace (marks: %r)"
                                 % (first, last, labels))
        i = next(k for k, r in enumerate(self.records) if r.kind == "MARK" and r.label == first)
        j = next(k for k, r in enumerate(self.records) if r.kind == "MARK" and r.label == last)
        out = [r for r in self.records[i + 1:j]
               if tid is None or r.tid == tid]
        # mark() is a C function: its C_RETURN after the first, C_CALL before the last
        return [r for r in out if not (r.kind in ("C_CALL", "C_RETURN") and r.name == "greenreplay._greenreplay.mark")]


def dump(path):
    """The text of `greenreplay dump PATH`; AssertionError with the tool's
    message when it fails."""
    proc = subprocess.run([cli(), "dump", os.fspath(path)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True)
    if proc.returncode != 0:
        raise AssertionError("greenreplay dump %s: exit %d: %s" % (path, proc.returncode, proc.stderr.strip()))
    return proc.stdout


def read(path):
    """The trace at path, read back through `greenreplay dump`."""
    return Trace(dump(path))


def check(path):
    """(exit status, output) of `greenreplay check PATH`."""
    proc = subprocess.run([cli(), "check", os.fspath(path)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True)
    return proc.returncode, proc.stdout
