/* gl_load.h - greenlet's API, found where the program loaded greenlet
 * (gl_load.c). */
#ifndef GR_GL_LOAD_H
#define GR_GL_LOAD_H

#include "recorder.h"

/* greenlet's C module in sys.modules, with its C API: fill r->greenlet_mod,
 * r->gl_settrace and r->gl_api from it.  1 if found, 0 if greenlet's C
 * module is not loaded (yet).  Runs no code of the program and imports
 * nothing.  Never raises. */
int gr_greenlet_resolve(gr_recorder *r);

/* The version of the greenlet that importlib's spec (borrowed) names,
 * read from its files without importing it (its package's __init__.py,
 * else the name of its metadata directory), into r->gl_api.version;
 * "unknown" if neither says.  Never raises. */
void gr_greenlet_spec_version(gr_recorder *r, PyObject *spec);

/* The audit hook's "import" event (args: the event's), while the recorder
 * waits for the program to import greenlet (r->gl_api.lazy): an import of
 * greenlet or one of its modules starts the watch (gr_greenlet_watch). */
void gr_greenlet_import_event(gr_recorder *r, PyObject *args);

/* The watch (r->gl_api.watch), at an event of thread t (may be NULL):
 * once greenlet's C module is loaded, its API is resolved (a META
 * greenlet record written if its version is not the one start() wrote)
 * and the threads that wait move on: t asks greenlet now, the others at
 * their first event in greenlet's code (passive mode) or at their next
 * event (callback mode).  Never raises. */
void gr_greenlet_watch(gr_recorder *r, gr_thread *t);

#endif
