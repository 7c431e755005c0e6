"""A launcher adapter for the test of launcher words (docs/conform.md,
"Sampled stacks"): the program is run by this file itself,

    PYTHON launch_args.py OUTPUT SCRIPT --- ARGS

as scalene runs it ("{script}" in launcher() places the script; the
words after it come before the script's arguments).  The launcher runs
the script with the words after "---" as its arguments, then writes to
OUTPUT one stack per function the script defined that ran (a profile
function on the program's thread sees their calls).  Without "---" right
after the script it exits with status 2 before running anything; with
GR_LAUNCH_WORDS=plain the adapter gives no "{script}" and no "---"."""
import json
import os
import sys

_output = None


def available():
    return True, ""


def version():
    return "launch_args 1.0"


def launcher(output):
    if os.environ.get("GR_LAUNCH_WORDS") == "plain":
        return [os.path.abspath(__file__), output]
    return [os.path.abspath(__file__), output, "{script}", "---"]


def start(ctx):
    global _output
    _output = ctx["output"]


def stop():
    pass


def results():
    with open(_output) as f:
        ran = json.load(f)
    return {"stacks": [{"frames": [{"file": fr[0], "name": fr[1], "line": fr[2], "first": fr[2]}], "count": 1}
                       for fr in ran], "threads": "starting"}


def _launch(argv):
    import runpy
    if len(argv) < 3 or argv[2] != "---":
        sys.stderr.write("launch_args.py: usage: OUTPUT SCRIPT --- ARGS (got %r)\n" % (argv,))
        sys.exit(2)
    output, script = argv[0], os.path.abspath(argv[1])
    ran = set()

    def profile(frame, event, arg):
        c = frame.f_code
        if event == "call" and c.co_filename == script and c.co_name != "<module>":
            ran.add((c.co_filename, c.co_name, c.co_firstlineno))

    sys.argv = [script] + argv[3:]
    try:
        sys.setprofile(profile)
        runpy.run_path(script, run_name="__main__")
    finally:
        sys.setprofile(None)
        with open(output, "w") as f:
            json.dump(sorted(ran), f)


if __name__ == "__main__":
    _launch(sys.argv[1:])
