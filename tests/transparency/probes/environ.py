"""The environment the program and a child process see: every GREENREPLAY*
variable, PYTHONHASHSEED and PYTHONPATH.
"""
# requires:
import os
import subprocess
import sys

SHOW = r'''
import os
for k in sorted(os.environ):
    if k.startswith("GREENREPLAY") or k in ("PYTHONHASHSEED", "PYTHONPATH"):
        print(k + "=" + os.environ[k])
'''

print("program:")
sys.stdout.flush()
exec(SHOW)
print("child:")
sys.stdout.flush()
subprocess.run([sys.executable, "-c", SHOW], check=True)
