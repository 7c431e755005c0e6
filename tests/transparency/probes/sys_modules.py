"""The modules loaded when the program's first line runs: their number and
names.
"""
# requires:
import sys

names = sorted(sys.modules)
print("len(sys.modules):", len(names))
for name in names:
    print("module", name)
