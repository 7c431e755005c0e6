"""One machine-readable line per performance goal, for tests/bench/summary.py.

A benchmark prints its human tables as before and, for each goal it
measures, one line

    GOAL<TAB>name<TAB>figure<TAB>target<TAB>met|missed<TAB>note

which tests/bench/bench.sh (make bench) gathers into one summary.  The
shell scripts and encode_cost.c print the same line with printf.
"""


def goal(name, figure, target, met, note=""):
    """Print the GOAL line of one goal; tabs and newlines in the fields
    become spaces."""
    fields = [name, figure, target, "met" if met else "missed", note]
    print("\t".join(["GOAL"] + [" ".join(str(f).split()) for f in fields]), flush=True)
