"""sys.path as the program sees it."""
# requires:
import sys

for entry in sys.path:
    print("path", entry)
