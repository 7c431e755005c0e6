/* script_builtins.h - which recorded C functions `greenreplay script`
 * reproduces by calling the same builtin, and with what Python expression.
 *
 * A C call recorded as `builtins.len` is reproduced by `len(())`: the same
 * C function, called with harmless arguments, so that a recording of the
 * generated script shows a C_CALL/C_RETURN pair with the same name.  Only
 * C calls with nothing inside them (no Python call, switch or mark between
 * the C_CALL and its C_RETURN) that return normally are reproduced this
 * way; every other C call becomes the neutral C call of the script (see
 * script_shape.h).  The table is the single place that decides this, for
 * `script` (what to call) and for `diff --c-names script` (which names a
 * recording of a script can be compared on).
 *
 * Names are the recorder's C function identities (docs/FORMAT.md §3:
 * `module.name` for builtin functions, `Type.name` for methods), which
 * differ between greenlet versions for some (`greenlet.getcurrent` on
 * greenlet 0.4, `greenlet._greenlet.getcurrent` on 2.x): both spellings
 * are listed where they exist.
 */
#ifndef GR_SCRIPT_BUILTINS_H
#define GR_SCRIPT_BUILTINS_H

#include <stddef.h>

/* Modules a builtin's expression needs imported (bit set). */
enum gr_builtin_need {
    GR_NEED_SYS = 1u << 0,
    GR_NEED_GREENLET = 1u << 1,
    GR_NEED_THREAD = 1u << 2,     /* import _thread */
    GR_NEED_TIME = 1u << 3,
    GR_NEED_COLLECTIONS = 1u << 4,
    GR_NEED_GREENREPLAY = 1u << 5,
    GR_NEED_CPROFILE = 1u << 6,
};

/* How a table entry is rendered. */
enum gr_builtin_kind {
    GR_BUILTIN_PLAIN = 0,  /* the expression as given */
    GR_BUILTIN_SETTRACE,   /* sys.settrace: argument chosen by the script */
    GR_BUILTIN_SETPROFILE, /* sys.setprofile: installs the script's other profiler */
};

/* One entry. */
typedef struct gr_builtin {
    const char *name;      /* recorded C function identity, e.g. "builtins.len" */
    const char *expr;      /* Python expression that makes exactly that one C
                              call, e.g. "len(())" (PLAIN only) */
    unsigned need;         /* enum gr_builtin_need bits */
    int kind;              /* enum gr_builtin_kind */
} gr_builtin;

/* Look up the recorded C function name (n bytes at name, not necessarily
 * NUL-terminated).  Returns the static entry, or NULL when the script does
 * not reproduce that function by name.  Never fails otherwise. */
const gr_builtin *gr_builtin_find(const char *name, size_t n);

/* Whether an entry is kept by name even in anonymized scripts: the ones
 * that carry behaviour the reproduction needs (sys.settrace,
 * sys.setprofile); every other C call of an anonymized script is neutral,
 * so that no C function name of the original program appears in it. */
int gr_builtin_keep_anonymized(const gr_builtin *b);

/* Entry i of the table (sorted by name), NULL past the end: to list or
 * test the table. */
const gr_builtin *gr_builtin_at(size_t i);

#endif
