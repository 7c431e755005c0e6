"""Class of a test that differs recorded and unrecorded, given its rerun
under an empty profile function without the recorder (ci/peer.sh).

usage: python classify.py RECORDED_TSV PROFILED_TSV

Each file is run_suite.py's output for the one test: TEST_ID, OUTCOME,
DETAIL (for fail and error: the exception's type and the first line of
its message).  Prints one line:

    PROFILER            the empty profile function gives the recorded
                        outcome and the same failure: any profiler
                        changes the test, not the recorder
    RECORDER WHY        else: the outcome differs, or it is the same but
                        the failure is another one (its type or message),
                        which the recorder made

Example: recorded `fail AssertionError: 0 != 1`, under the empty profile
function `fail AssertionError: 0 != 2`: RECORDER (another failure).
Addresses (0x7f...) are not compared: they differ from run to run.
Exit status 0, 2 on bad usage.
"""
import re
import sys


def row(path):
    try:
        with open(path, encoding="utf-8") as f:
            line = f.readline().rstrip("\n")
    except OSError:
        return None
    if not line:
        return None
    parts = (line.split("\t") + ["", ""])[:3]
    return parts[1], parts[2]


def failure(detail):
    """The failure as compared: its first line, addresses masked."""
    first = (detail or "").strip().splitlines()[:1]
    return re.sub(r"0x[0-9a-fA-F]+", "0x?", first[0] if first else "")


def classify(recorded, profiled):
    if recorded is None:
        return "RECORDER the recorded rerun gave no result"
    if profiled is None:
        return "RECORDER the rerun under an empty profile function gave no result"
    if recorded[0] != profiled[0]:
        return "RECORDER %s recorded, %s under an empty profile function" % (recorded[0], profiled[0])
    if recorded[0] in ("fail", "error") and failure(recorded[1]) != failure(profiled[1]):
        return "RECORDER another failure: %r recorded, %r under an empty profile function" % (
            failure(recorded[1]), failure(profiled[1]))
    return "PROFILER"


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    print(classify(row(argv[1]), row(argv[2])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
