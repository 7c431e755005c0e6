#!/usr/bin/env bash
# The transparency oracle's quick set (what make integration runs); make
# transparency runs the full set (tests/transparency/run.py --help).
exec "$(dirname "$0")/run.py" --set quick "$@"
