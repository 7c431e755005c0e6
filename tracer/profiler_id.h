/* profiler_id.h - the identity of the program's own profilers (HOOK records
 * of the profile slot, docs/FORMAT.md §3 PROFILER and §4.2).
 *
 * A profiler the program installs (a cProfile.Profile, a Python function
 * given to sys.setprofile, a C extension's profile function) gets a small
 * id in first-seen order, the same for the same object every time it is
 * installed or removed, and a PROFILER definition naming its kind and type
 * when first seen.  No address is written: the trace stays deterministic.
 */
#ifndef GR_PROFILER_ID_H
#define GR_PROFILER_ID_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

struct gr_recorder;
struct gr_thread;

/* The profiler table of a recording (owned by gr_recorder.profilers). */
typedef struct gr_profiler_table gr_profiler_table;

/* Id of the program's profiler made of profile function `func` and its
 * object `obj` (the thread state's c_profilefunc/c_profileobj; obj may be
 * NULL), defining it with a PROFILER record on first sight.  0 when func is
 * NULL or on failure (counted in r->errors; no Python error is left). */
uint32_t gr_profiler_id(struct gr_recorder *r, Py_tracefunc func, PyObject *obj);

/* Code id of the innermost Python frame from top outwards that is not the
 * recorder's own, 0 none: the frame that changed the profile slot (the
 * one running at the change's audit event, footholds.c gr_foothold_take). */
uint32_t gr_profiler_frame(struct gr_recorder *r, PyFrameObject *top);

/* The profiler objects kept alive since r->keep_profilers was set (a
 * list of (id, object) in id order; only cProfile objects, whose counts
 * an adapter of `greenreplay conform` reads back per object,
 * docs/conform.md), or NULL with an exception set.  Handed over: the
 * recorder keeps them no longer, and keeps no more from now on. */
PyObject *gr_profiler_kept(struct gr_recorder *r);

/* Release the table (at the end of the recording). */
void gr_profiler_table_free(gr_profiler_table *pt);

#endif
