"""An adapter without results(): conform must refuse it (exit 2)."""


def available():
    return True, ""


def version():
    return "0"


def start():
    pass


def stop():
    pass
