"""A program that fails (exit status 3) after its functions ran
(tests/integration/conform.sh): with or without recording, conform's exit
status must say so (2, never 0), on one line naming the status; the
adapter's results are still written at exit."""
import sys


def work(n):
    return n + 1


work(1)
sys.exit(3)
