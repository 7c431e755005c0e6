"""Prints a constant: recorded and unrecorded always agree."""
# requires:
print("same")
