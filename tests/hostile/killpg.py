"""killpg.py READY CMD...: run CMD as the leader of a new session and
process group (as CI runners, supervisors and timeout(1) do), send SIGTERM
to the whole group once READY exists, and print CMD's exit status (or
-SIGNAL)."""
import os
import signal
import subprocess
import sys
import time

ready, cmd = sys.argv[1], sys.argv[2:]
p = subprocess.Popen(cmd, start_new_session=True)
for _ in range(6000):
    if os.path.exists(ready) or p.poll() is not None:
        break
    time.sleep(0.01)
if p.poll() is None:
    os.killpg(p.pid, signal.SIGTERM)
print(p.wait())
