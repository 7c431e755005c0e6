/* script_builtins.c - recorded C functions the script reproduces by name
 * (script_builtins.h). */
#include "script_builtins.h"

#include <string.h>

/* Each expression makes exactly one profiled C call, of the named function,
 * and nothing else visible to a profiler: calls of types (`set()`, `map`)
 * are not reported as C calls by CPython 3.9-3.15, literals create no
 * event.  Arguments never raise, block, print or keep state. */
static const gr_builtin table[] = {
    /* cProfile's own enable/disable (3.9-3.11: they take the thread's
     * profile slot: HOOK records), all on one profiler object made at the
     * script's start (_CP, script.c), as a program keeps its profiler: a
     * fresh object per call would be freed while enabled once the slot
     * lets it go, and _lsprof's dealloc then clears the slot a second
     * time, a change the recorded program never made */
    {"_lsprof.Profiler.disable", "_CP.disable()", GR_NEED_CPROFILE, 0},
    {"_lsprof.Profiler.enable", "_CP.enable()", GR_NEED_CPROFILE, 0},
    {"_thread.allocate_lock", "_thread.allocate_lock()", GR_NEED_THREAD, 0},
    {"_thread.get_ident", "_thread.get_ident()", GR_NEED_THREAD, 0},
    {"builtins.abs", "abs(0)", 0, 0},
    {"builtins.all", "all(())", 0, 0},
    {"builtins.any", "any(())", 0, 0},
    {"builtins.bin", "bin(0)", 0, 0},
    {"builtins.callable", "callable(0)", 0, 0},
    {"builtins.chr", "chr(48)", 0, 0},
    {"builtins.divmod", "divmod(1, 1)", 0, 0},
    {"builtins.format", "format(0)", 0, 0},
    {"builtins.getattr", "getattr(0, 'real')", 0, 0},
    {"builtins.globals", "globals()", 0, 0},
    {"builtins.hasattr", "hasattr(0, 'real')", 0, 0},
    {"builtins.hash", "hash(0)", 0, 0},
    {"builtins.hex", "hex(0)", 0, 0},
    {"builtins.id", "id(0)", 0, 0},
    {"builtins.isinstance", "isinstance(0, int)", 0, 0},
    {"builtins.issubclass", "issubclass(int, int)", 0, 0},
    {"builtins.iter", "iter(())", 0, 0},
    {"builtins.len", "len(())", 0, 0},
    {"builtins.max", "max(0, 1)", 0, 0},
    {"builtins.min", "min(0, 1)", 0, 0},
    {"builtins.next", "next(map(int, ()), 0)", 0, 0},
    {"builtins.oct", "oct(0)", 0, 0},
    {"builtins.ord", "ord('0')", 0, 0},
    {"builtins.pow", "pow(1, 1)", 0, 0},
    {"builtins.repr", "repr(0)", 0, 0},
    {"builtins.round", "round(0)", 0, 0},
    {"builtins.sorted", "sorted(())", 0, 0},
    {"builtins.sum", "sum(())", 0, 0},
    {"bytes.decode", "b''.decode()", 0, 0},
    {"collections.deque.append", "collections.deque().append(0)", GR_NEED_COLLECTIONS, 0},
    {"collections.deque.appendleft", "collections.deque().appendleft(0)", GR_NEED_COLLECTIONS, 0},
    {"collections.deque.popleft", "collections.deque((0,)).popleft()", GR_NEED_COLLECTIONS, 0},
    {"dict.clear", "{}.clear()", 0, 0},
    {"dict.copy", "{}.copy()", 0, 0},
    {"dict.get", "{}.get(0)", 0, 0},
    {"dict.items", "{}.items()", 0, 0},
    {"dict.keys", "{}.keys()", 0, 0},
    {"dict.pop", "{}.pop(0, 0)", 0, 0},
    {"dict.setdefault", "{}.setdefault(0)", 0, 0},
    {"dict.update", "{}.update(())", 0, 0},
    {"dict.values", "{}.values()", 0, 0},
    {"greenlet._greenlet.getcurrent", "greenlet.getcurrent()", GR_NEED_GREENLET, 0},
    {"greenlet._greenlet.gettrace", "greenlet.gettrace()", GR_NEED_GREENLET, 0},
    {"greenlet.getcurrent", "greenlet.getcurrent()", GR_NEED_GREENLET, 0},
    {"greenlet.gettrace", "greenlet.gettrace()", GR_NEED_GREENLET, 0},
    {"greenreplay._greenreplay.is_recording", "greenreplay.is_recording()", GR_NEED_GREENREPLAY,
     0},
    {"list.append", "[].append(0)", 0, 0},
    {"list.clear", "[].clear()", 0, 0},
    {"list.copy", "[].copy()", 0, 0},
    {"list.extend", "[].extend(())", 0, 0},
    {"list.index", "[0].index(0)", 0, 0},
    {"list.insert", "[].insert(0, 0)", 0, 0},
    {"list.pop", "[0].pop()", 0, 0},
    {"list.remove", "[0].remove(0)", 0, 0},
    {"list.reverse", "[].reverse()", 0, 0},
    {"list.sort", "[].sort()", 0, 0},
    {"set.add", "set().add(0)", 0, 0},
    {"set.clear", "set().clear()", 0, 0},
    {"set.difference_update", "set().difference_update(())", 0, 0},
    {"set.discard", "set().discard(0)", 0, 0},
    {"set.update", "set().update(())", 0, 0},
    {"str.encode", "''.encode()", 0, 0},
    {"str.endswith", "''.endswith('')", 0, 0},
    {"str.find", "''.find('')", 0, 0},
    {"str.format", "''.format()", 0, 0},
    {"str.join", "''.join(())", 0, 0},
    {"str.lower", "''.lower()", 0, 0},
    {"str.replace", "''.replace('', '')", 0, 0},
    {"str.split", "''.split()", 0, 0},
    {"str.startswith", "''.startswith('')", 0, 0},
    {"str.strip", "''.strip()", 0, 0},
    {"str.upper", "''.upper()", 0, 0},
    {"sys._getframe", "sys._getframe()", GR_NEED_SYS, 0},
    {"sys.getprofile", "sys.getprofile()", GR_NEED_SYS, 0},
    {"sys.gettrace", "sys.gettrace()", GR_NEED_SYS, 0},
    {"sys.setprofile", NULL, GR_NEED_SYS, GR_BUILTIN_SETPROFILE},
    {"sys.settrace", NULL, GR_NEED_SYS, GR_BUILTIN_SETTRACE},
    {"time.monotonic", "time.monotonic()", GR_NEED_TIME, 0},
    {"time.perf_counter", "time.perf_counter()", GR_NEED_TIME, 0},
    {"time.time", "time.time()", GR_NEED_TIME, 0},
};

const gr_builtin *gr_builtin_find(const char *name, size_t n)
{
    /* The table is sorted by name (checked by the unit test): bisect. */
    size_t lo = 0, hi = sizeof table / sizeof table[0];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *k = table[mid].name;
        size_t kn = strlen(k);
        int c = memcmp(name, k, n < kn ? n : kn);
        if (c == 0)
            c = n < kn ? -1 : n > kn;
        if (c == 0)
            return &table[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

int gr_builtin_keep_anonymized(const gr_builtin *b)
{
    return b && b->kind != GR_BUILTIN_PLAIN;
}

const gr_builtin *gr_builtin_at(size_t i)
{
    return i < sizeof table / sizeof table[0] ? &table[i] : NULL;
}
