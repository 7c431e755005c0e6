"""A program that exits with status 130 by itself, sys.exit(130), as a
program killed by SIGINT would seem to by its status alone
(tests/integration/conform.sh): conform must name the exit status, never a
signal."""
import sys


def work(n):
    return n + 1


work(1)
sys.exit(130)
