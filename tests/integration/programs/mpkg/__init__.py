"""A package run with -m by tests/integration/script_roundtrip.sh (the
"-m" cases): `python -m mpkg` runs __main__.py (whole-program recording),
`python -m mpkg.manual` runs manual.py (record --manual: start() and stop()
inside the program)."""
