"""C methods bound to a class, called from the program's own function
(tests/integration/conform.sh): cProfile labels them "<built-in method
fromkeys>" or, for object.__new__, "<built-in method __new__ of type
object at 0x...>", the trace "type.fromkeys" and "type.__new__".  The
cprofile adapter must name them as the trace does (else each is a false
blind_spot: counted 0 times), and without the address."""


class Plain:
    pass


def build():
    int.from_bytes(b"\x01", "big")
    dict.fromkeys("ab")
    bytes.fromhex("01")
    return object.__new__(Plain)


build()
