/* launch.h - runpy's launch frames of a program run with `python -m`.
 *
 * `python -m pkg.mod` runs the module's code from runpy: every stack of
 * the main thread's main greenlet has, below the module's `<module>`
 * frame, the frames of the launch:
 *
 *     runpy._run_module_as_main   Python, file "<frozen runpy>" (CPython
 *                                 3.11-3.13) or ".../runpy.py" (3.9, 3.10:
 *                                 "<stdlib>/runpy.py" as the recorder
 *                                 writes stdlib files)
 *     runpy._run_code             Python, same file
 *     builtins.exec               C; only in the stacks that hold C frames
 *                                 (GREENLET seeds, STACK), not in the real
 *                                 Python stacks of MARK and SWITCH
 *
 * (checked on CPython 3.9.18, 3.10.13, 3.11.7, 3.12.1, 3.13.0, and the
 * -m round trip of tests/integration/script_roundtrip.sh on 3.13.5 and
 * 3.14.10, "<frozen runpy>" there too: the same two functions and the
 * exec call in each; their line numbers differ and are not looked at).  A whole-program recording then starts
 * with that seed and ends, after the `<module>` returns, with the returns
 * of the three frames (C_RETURN exec, RETURN _run_code, RETURN
 * _run_module_as_main).
 *
 * These frames are the interpreter's, not the program's: `greenreplay
 * script` writes a script that runs as a file, without them, and `diff`
 * compares stacks without them (and shows the stack at a divergence
 * without them, and leaves them out of the frame counts of an INSTR into
 * that greenlet) and does not compare their returns, so
 * that a trace of `python -m pkg.mod` compares with one of the same
 * program run as a file (or of its script).  Both use the one rule here.
 *
 * The prefix is recognised at the bottom of a stack only (index 0 the
 * outermost frame): a program that calls runpy.run_module itself has
 * _run_code above its own frames, not _run_module_as_main at the bottom,
 * and keeps them.  Pure functions, no I/O, no allocation.
 */
#ifndef GR_LAUNCH_H
#define GR_LAUNCH_H

#include "reader.h"

#include <stddef.h>
#include <stdint.h>

/* Most frames a launch prefix has. */
#define GR_LAUNCH_MAX 3

/* How many frames at the bottom of the stack `ids` (n code ids of trace
 * t, outermost first) are runpy's launch prefix: 2 (_run_module_as_main,
 * _run_code) or 3 (and builtins.exec right above them), 0 when the stack
 * does not start with it.  ids may be NULL when n is 0. */
size_t gr_launch_prefix(const gr_trace *t, const uint32_t *ids, size_t n);

/* The launch prefix of record r's stack (GREENLET, SWITCH, THROW, MARK,
 * STACK): gr_launch_prefix of its stack, and 0 for a stack cut at the
 * recorder's depth cap (its bottom frames are unknown) or a record kind
 * without a stack. */
size_t gr_launch_record_prefix(const gr_trace *t, const gr_record *r);

/* Where a trace shows a `python -m` launch (gr_launch_find). */
typedef struct gr_launch {
    int found;            /* 1: a GREENLET seed starts with the prefix */
    uint64_t tid, gid;    /* its thread and greenlet (the main greenlet of
                             the main thread) */
    size_t seed_rec;      /* index of that GREENLET record */
    size_t nframes;       /* frames of the prefix in the seed: 2 or 3 */
    uint32_t code[GR_LAUNCH_MAX];   /* their code ids, outermost first */
    size_t ret_rec[GR_LAUNCH_MAX];  /* index of the record returning from
                                       code[k] (RETURN, C_RETURN or
                                       C_EXCEPTION), GR_LAUNCH_NONE when the
                                       trace ends before it */
} gr_launch;

#define GR_LAUNCH_NONE SIZE_MAX

/* Fill *l for trace t (a trace read successfully, complete or truncated;
 * *l need not be initialised).  The seed is the first GREENLET record
 * whose stack, not cut, starts with the launch prefix; the returns are
 * found by following that greenlet's Python calls and returns after it:
 * a return of the prefix's innermost open frame when no frame of the
 * program is open above it (an exec C_RETURN counts only then too).
 * l->found is 0 (and the rest zero, ret_rec GR_LAUNCH_NONE) when the trace
 * has no such seed. */
void gr_launch_find(const gr_trace *t, gr_launch *l);

/* gr_launch_find one record at a time (a streamed trace): init, then
 * feed every record in order (r, its index i); sc->l is then what
 * gr_launch_find gives. */
typedef struct gr_launch_scan {
    gr_launch l;
    size_t above, open; /* internal: program frames open above the prefix,
                           launch frames not returned yet */
} gr_launch_scan;

void gr_launch_scan_init(gr_launch_scan *sc);
void gr_launch_scan_feed(gr_launch_scan *sc, const gr_trace *t, const gr_record *r, size_t i);

/* Whether record index i (0-based, into the trace l was filled from) is
 * the return of one of l's launch frames (l->ret_rec): 1 or 0, always 0
 * when l->found is 0.  l is borrowed, filled by gr_launch_find. */
int gr_launch_is_return(const gr_launch *l, size_t i);

#endif
