"""Fork while recorded (argv[1]: how many times), with threading imported
(its own after-fork code then runs in every child), then once from a
thread and once through subprocess with preexec_fn.  argv[2] "noisy": an
after-fork hook of the program's, registered before greenreplay is
imported (so it runs before greenreplay's own), makes more calls in every
child than one chunk of the trace holds, as threading's after-fork code
does now and then over thousands of forks.  No child may write into the
parent's trace, whatever the recording mode.  Every child exits 0 when it
sees no profile function (it is not recorded).
Used by tests/integration/threads.sh."""
import os
import subprocess
import sys
import threading


def work():
    return sum(range(50))


def noise():
    for _ in range(20000):
        work()


if sys.argv[2:] == ["noisy"]:
    os.register_at_fork(after_in_child=noise)
import greenreplay  # noqa: E402

greenreplay.start()


def fork_once():
    pid = os.fork()
    if pid == 0:
        work()
        os._exit(0 if sys.getprofile() is None else 3)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


bad = sum(fork_once() != 0 for _ in range(int(sys.argv[1])))
t = threading.Thread(target=fork_once)
t.start()
t.join()
subprocess.run([sys.executable, "-c", "pass"], preexec_fn=work, check=True)
greenreplay.stop()
print("children that failed:", bad)
