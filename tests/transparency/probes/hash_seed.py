"""Hash randomization, in the program and in its children.  Run with
PYTHONHASHSEED unset: randomization is on, so two children order a set of
strings differently (the chance that three agree is negligible).  Printed:
the flag and whether the children agreed, never an order itself.
"""
# requires:
# runs: 2
import subprocess
import sys

print("hash_randomization:", sys.flags.hash_randomization)
ORDER = "print(list({'alpha%d' % i for i in range(40)}))"
orders = {subprocess.run([sys.executable, "-c", ORDER], check=True,
                         capture_output=True, text=True).stdout for _ in range(3)}
print("children agree on a set's order:", len(orders) == 1)
