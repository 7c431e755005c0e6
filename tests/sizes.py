#!/usr/bin/env python3
"""Source limits of tracer/ and replay/, run by `make check` (make sizes).

Fails (exit 1, one line per finding) when
  - a function in tracer/*.c or replay/**/*.c is over MAX_LINES lines
    (from its opening brace to its closing brace, both in column 0);
  - a struct or union in tracer/ or replay/ (.c and .h) has over
    MAX_FIELDS members (a nested struct or union member counts as one;
    its own members are counted separately);
  - a C file of the repository other than tracer/compat.h tests
    PY_VERSION_HEX (CONTRIBUTING.md: version differences go in compat.h,
    each naming the CPython change).

tests/sizes_exceptions.txt lists findings allowed for now, one
"function FILE NAME" or "struct FILE NAME" a line; an entry that no longer
matches a finding is an error too, so the list only shrinks.

  tests/sizes.py [--root DIR] [--exceptions FILE]
  tests/sizes.py --self-test    made-up files that must each fail
"""
import glob
import os
import re
import sys
import tempfile

MAX_LINES = 150
MAX_FIELDS = 30
VERSION_MACRO = 'PY_VERSION' + '_HEX'
VERSION_HOME = 'tracer/compat.h'


def strip_comments(text):
    """Comments and string literals blanked, newlines kept."""
    def blank(m):
        return re.sub(r'[^\n]', ' ', m.group(0))
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                  blank, text, flags=re.S)


def functions(text):
    """(name, lines) of each function: a '{' and a '}' in column 0."""
    lines = text.split('\n')
    start = None
    for i, line in enumerate(lines):
        if start is None and line.startswith('{'):
            j = i - 1
            while j >= 0 and '(' not in lines[j]:
                j -= 1
            k = j
            while k > 0 and not re.match(r'\w', lines[k]):
                k -= 1
            m = re.search(r'(\w+)\s*\(', ' '.join(lines[max(k, 0):j + 1]))
            start, name = i, (m.group(1) if m else '?')
        elif start is not None and line.startswith('}'):
            yield name, i - start + 1
            start = None


def structs(text):
    """(name, members) of each struct or union body."""
    for m in re.finditer(r'\b(struct|union)\s*(\w*)\s*\{', text):
        i = j = m.end()
        depth = 1
        while depth and j < len(text):
            if text[j] == '{':
                depth += 1
            elif text[j] == '}':
                depth -= 1
            j += 1
        depth = count = 0
        for c in text[i:j - 1]:
            if c in '{(':
                depth += 1
            elif c in '})':
                depth -= 1
            elif c == ';' and depth == 0:
                count += 1
        after = re.match(r'\s*(\w+)\s*[;\[]', text[j:])
        if m.group(2):
            name = m.group(2)
        elif after:
            # typedef struct { ... } name; or a member struct { ... } name;
            name = after.group(1)
        else:
            name = '%s@%d' % (m.group(1), text.count('\n', 0, m.start()) + 1)
        yield name, count


def sources(root):
    pats = ['tracer/*.c', 'tracer/*.h', 'replay/**/*.c', 'replay/**/*.h']
    out = set()
    for p in pats:
        out.update(os.path.relpath(f, root)
                   for f in glob.glob(os.path.join(root, p), recursive=True))
    return sorted(out)


def c_files(root):
    """Every C source and header of the repository (not build/, not .git)."""
    out = []
    for d, dirs, files in os.walk(root):
        rel_d = os.path.relpath(d, root)
        if rel_d == '.':
            dirs[:] = [x for x in dirs if x not in ('build', '.git')]
        out += [os.path.normpath(os.path.join(rel_d, f)) for f in files if f.endswith(('.c', '.h'))]
    return sorted(out)


def findings(root):
    out = []
    for rel in c_files(root):
        if rel == VERSION_HOME:
            continue
        with open(os.path.join(root, rel), errors='replace') as f:
            text = strip_comments(f.read())
        if re.search(r'\b%s\b' % VERSION_MACRO, text):
            out.append(('version', rel, VERSION_MACRO,
                        'tested outside %s' % VERSION_HOME))
    for rel in sources(root):
        with open(os.path.join(root, rel), errors='replace') as f:
            raw = f.read()
        text = strip_comments(raw)
        if rel.endswith('.c'):
            for name, n in functions(text):
                if n > MAX_LINES:
                    out.append(('function', rel, name,
                                '%d lines (limit %d)' % (n, MAX_LINES)))
        for name, n in structs(text):
            if n > MAX_FIELDS:
                out.append(('struct', rel, name,
                            '%d fields (limit %d)' % (n, MAX_FIELDS)))
    return out


def read_exceptions(path):
    allowed = set()
    if not path or not os.path.exists(path):
        return allowed
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split('#', 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 3 or parts[0] not in ('function', 'struct'):
                sys.exit('%s:%d: expected "function|struct FILE NAME"' % (path, n))
            allowed.add(tuple(parts))
    return allowed


def run(root, exceptions):
    allowed = read_exceptions(exceptions)
    bad = 0
    seen = set()
    for kind, rel, name, what in findings(root):
        if (kind, rel, name) in allowed:
            seen.add((kind, rel, name))
            continue
        print('%s: %s %s: %s' % (rel, kind, name, what))
        bad += 1
    for kind, rel, name in sorted(allowed - seen):
        print('%s: %s %s: listed in %s but not over the limit (or gone): remove it'
              % (rel, kind, name, exceptions))
        bad += 1
    return 1 if bad else 0


def self_test():
    """Each made-up tree must fail and the trimmed one pass."""
    long_fn = 'int f(void)\n{\n' + '    x++;\n' * (MAX_LINES - 1) + '}\n'
    short_fn = 'int f(void)\n{\n' + '    x++;\n' * (MAX_LINES - 2) + '}\n'
    big = 'struct big {\n' + ''.join('    int f%d;\n' % i
                                     for i in range(MAX_FIELDS + 1)) + '};\n'
    big_sub = 'struct big_sub {\n' + ''.join('    int f%d;\n' % i
                                   for i in range(MAX_FIELDS)) + '    struct { int a; int b; } sub;\n};\n'
    # big_sub has MAX_FIELDS + 1 members: one too many
    nested_ok = 'struct ok {\n' + ''.join('    int f%d;\n' % i
                                          for i in range(MAX_FIELDS - 1)) + \
        '    struct {\n' + ''.join('        int g%d;\n' % i for i in range(20)) + \
        '    } sub;\n};\n'
    version = '#if PY_VERSION' + '_HEX >= 0x030c0000\n#endif\n'
    cases = [
        ('long function', {'replay/a.c': long_fn}, 1),
        ('long function in tracer/', {'tracer/a.c': long_fn}, 1),
        ('function at the limit', {'replay/x/a.c': short_fn}, 0),
        ('big struct', {'replay/a.h': big}, 1),
        ('big struct with a sub-struct', {'tracer/a.h': big_sub}, 1),
        ('struct with a big sub-struct', {'replay/a.h': nested_ok}, 0),
        ('version test outside compat.h', {'tracer/a.c': version}, 1),
        ('version test in compat.h', {'tracer/compat.h': version}, 0),
        ('version test in a comment', {'replay/a.c': '/* %s */\n' % version}, 0),
        ('version test in a test', {'tests/unit/a.c': version}, 1),
    ]
    failed = 0
    for title, files, want in cases:
        with tempfile.TemporaryDirectory() as root:
            for rel, text in files.items():
                os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
                with open(os.path.join(root, rel), 'w') as f:
                    f.write(text)
            got = 1 if findings(root) else 0
        if got != want:
            print('self-test: %s: %s' % (title, 'passed, must fail' if want else 'failed, must pass'))
            failed += 1
    # an exception that still matches lets it pass; a stale one fails
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, 'tracer'))
        with open(os.path.join(root, 'tracer/a.c'), 'w') as f:
            f.write(long_fn)
        exc = os.path.join(root, 'exceptions.txt')
        with open(exc, 'w') as f:
            f.write('function tracer/a.c f\n')
        devnull = open(os.devnull, 'w')
        stdout, sys.stdout = sys.stdout, devnull
        try:
            listed = run(root, exc)
            with open(os.path.join(root, 'tracer/a.c'), 'w') as f:
                f.write(short_fn)
            stale = run(root, exc)
        finally:
            sys.stdout = stdout
            devnull.close()
        if listed != 0:
            print('self-test: a listed exception failed')
            failed += 1
        if stale != 1:
            print('self-test: a stale exception passed')
            failed += 1
    print('sizes self-test: %s' % ('FAIL' if failed else 'ok'))
    return 1 if failed else 0


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    exceptions = os.path.join(here, 'sizes_exceptions.txt')
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == '--self-test':
            return self_test()
        elif a == '--root' and args:
            root = args.pop(0)
        elif a == '--exceptions' and args:
            exceptions = args.pop(0)
        else:
            sys.exit(__doc__.strip())
    return run(root, exceptions)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
