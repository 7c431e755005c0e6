"""Two functions with byte-identical bytecode (tests/integration/conform.sh):
`first` and `second` differ in their source (names, constants) but compile
to the same co_code.  line_profiler 4 keys its line table by bytecode and
registers a NOP-padded copy of the second twin, which the program never
runs: `second`'s lines are never counted.  conform must not call that a
violation (missing_lines) but note it as a limitation of the profiler,
naming both twins; `third`, measured, is still checked."""


def first(x):
    total = x + 1
    return total


def second(y):
    result = y + 2
    return result


def third(n):
    out = []
    for i in range(n):
        out.append(first(i))
    return out


third(3)
print(second(0))
