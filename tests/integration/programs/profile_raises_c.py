"""The program's profile function raises at the c_call, the c_return and
the c_exception of a C call: CPython clears the slot each time, and the
exception comes out of the call (at the c_call, before the C function
runs: 3.9-3.11 still gave the recorder's function the c_call, 3.12+ give
the recorder's tool nothing).  Then at the c_return of sorted(), which
called Python code, and of a greenlet's switch() back into main, after the
greenlet made C calls of its own.  Each C call the recorder wrote must be
ended in the trace: check clean.  First the same at the call of a Python
function: 3.9 and 3.10 give its frame no return event then."""
import sys
import greenlet

armed = []


def prof(frame, event, arg):
    name = frame.f_code.co_name if event == "call" else getattr(arg, "__name__", None)
    if armed and event == armed[0][0] and name == armed[0][1]:
        del armed[:]
        raise ValueError("%s of %s" % (event, name))


def target():
    return 1


def key(x):
    return -x


def child():
    len("abc")
    str(1).upper()
    main_g.switch(1)


main_g = greenlet.getcurrent()


def run(event, name, call):
    sys.setprofile(prof)
    armed.append((event, name))
    try:
        print(name, event, "returned", call())
    except ValueError as e:
        print(name, event, "raised", e)
    print("  profile function left:", getattr(sys.getprofile(), "__name__", None), "armed:", armed)
    sys.setprofile(None)
    del armed[:]


run("call", "target", target)
run("c_call", "len", lambda: len("ab"))
run("c_return", "len", lambda: len("ab"))
run("c_exception", "abs", lambda: abs(None))
run("c_return", "upper", lambda: "ab".upper())
run("c_return", "sorted", lambda: sorted([1, 3, 2], key=key))
run("c_return", "switch", lambda: greenlet.greenlet(child).switch())
