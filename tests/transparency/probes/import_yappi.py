"""yappi's statistics of `import json`: rows and calls.  The import
machinery's calls change with sys.path and with the modules already loaded.

yappi 1.0 (Debian bullseye) keys a row by its code object's address and
holds no reference to the code.  A module's code is freed after its
import, and the next code object put at that address shares its row: the
row count then follows the heap's layout, which the recorder's own
allocations change.  The probe keeps every module's code (and the code
nested in it) alive, so rows count functions.  Later yappi holds a
reference itself, and the kept code changes nothing there.
"""
# requires: yappi
import importlib._bootstrap_external as bootstrap_external

import yappi

kept = []
get_code = bootstrap_external.SourceLoader.get_code


def get_code_kept(self, fullname):
    code = get_code(self, fullname)
    kept.append(code)
    return code


bootstrap_external.SourceLoader.get_code = get_code_kept

yappi.start()
import json  # noqa: E402,F401
import email.parser  # noqa: E402,F401
yappi.stop()
stats = yappi.get_func_stats()
print("yappi rows:", len(stats))
print("yappi calls:", sum(s.ncall for s in stats))
