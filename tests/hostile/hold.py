"""hold.py READY RELEASE: start recording, write READY, then wait until
RELEASE exists, and stop: a recording that lasts as long as a test needs."""
import os
import sys
import time

import greenreplay

greenreplay.start()
open(sys.argv[1], "w").close()
while not os.path.exists(sys.argv[2]):
    time.sleep(0.01)
greenreplay.stop()
