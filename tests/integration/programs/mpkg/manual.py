"""python -m mpkg.manual: start() and stop() around the schedule, inside a
function (record --manual)."""
import greenreplay

from mpkg import sched


def main():
    greenreplay.start()
    sched.run()
    greenreplay.stop()


if __name__ == "__main__":
    main()
