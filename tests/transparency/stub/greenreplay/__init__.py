"""Stand-in for greenreplay in the unrecorded runs of the transparency
oracle (tests/transparency/run.py): what the fixtures call, doing nothing,
so a fixture runs unrecorded exactly as its code says.
"""


def start(*args, **kwargs):
    pass


def stop(*args, **kwargs):
    pass


def mark(*args, **kwargs):
    pass


def flush(*args, **kwargs):
    pass


def is_recording():
    return False
