# realworld: generator.throw() through `yield from`
# report: CPython issue 73776 (bpo-29590), the generator form
#   https://github.com/python/cpython/issues/73776
# semantics: throw() on the outer generator goes straight to the inner one
#   it delegates to; the outer frame gets no call event while the inner one
#   handles the exception (a plain sys.setprofile sees call inner, return
#   inner). The exception then propagates out through outer, which returns.
#   CPython's defined behaviour: clean on every version.
# modes: whole manual
# needs:
# quick: yes
# expect: clean
import greenreplay


def inner():
    try:
        yield 1
        yield 2
    except KeyError:
        greenreplay.mark("inner caught")
        yield "handled"


def outer():
    result = yield from inner()
    return result


def delegate_twice():
    yield from outer()


def main():
    greenreplay.start()
    g = outer()
    assert next(g) == 1
    assert g.throw(KeyError("k")) == "handled"
    g.close()
    h = delegate_twice()
    next(h)
    try:
        h.throw(ValueError("not caught"))
    except ValueError:
        pass
    greenreplay.stop()


main()
