/* threads.h - gr_thread objects and the calling thread's (threads.c). */
#ifndef GR_THREADS_H
#define GR_THREADS_H

#include "recorder.h"

/* Per-OS-thread cache of the calling thread's gr_thread for the profile
 * function, mark() and stop(); valid only while gen equals the active
 * recording's tls_key (a new recording, or a sweep that dropped ended
 * threads, changes it).  initial-exec: a plain load from the thread
 * pointer on the hot path instead of a call to __tls_get_addr (the
 * extension is a shared object).  One struct: one thread-pointer offset
 * to load on the hot path. */
struct gr_tls {
    gr_thread *thread;
    uint64_t gen;
};
extern _Thread_local struct gr_tls gr_tls __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* The gr_thread of thread state ts in recording r, or NULL. */
gr_thread *gr_thread_of_tstate(gr_recorder *r, PyThreadState *ts);

extern PyTypeObject gr_thread_type;

/* New gr_thread for the calling thread (tstate set), registered in
 * r->follow.threads.  Returns a new reference, or NULL (error swallowed). */
gr_thread *gr_thread_new(gr_recorder *r, PyThreadState *ts);

/* Whether thread t is still running: not marked ended, and its thread
 * state, serving the same thread id, is still in the interpreter's list
 * (CPython reuses both once a thread ends).  O(live threads); needs the
 * GIL. */
int gr_thread_alive(const gr_thread *t);

/* The gr_thread of the calling thread for recording r, creating it (not
 * yet seen) when missing.  Borrowed, or NULL on failure. */
gr_thread *gr_thread_current(gr_recorder *r);

/* Bind t to the calling OS thread (its cache points there). */
static inline void gr_thread_bind(gr_recorder *r, gr_thread *t)
{
    t->bound = 1;
    gr_tls.thread = t;
    gr_tls.gen = r->tls_key;
}

/* The cache of the calling OS thread after a sweep (tls_key moved on
 * within the same recording): its gr_thread if still in r->follow.threads,
 * rebinding the cache; else NULL (dropped, or another recording's). */
gr_thread *gr_tls_after_sweep(gr_recorder *r);

/* The gr_thread of thread state ts (the calling thread's) not bound to an
 * OS thread yet, or NULL. */
gr_thread *gr_thread_unbound(gr_recorder *r, PyThreadState *ts);

/* Take thread state ts out of r->follow.adopt: 1 if it was there. */
static inline int gr_adopt_take(gr_recorder *r, PyThreadState *ts)
{
    for (size_t i = 0; i < r->follow.nadopt; i++) {
        if (r->follow.adopt[i] == ts) {
            r->follow.adopt[i] = r->follow.adopt[--r->follow.nadopt];
            return 1;
        }
    }
    return 0;
}

/* The calling thread's gr_thread if the recorder knows this thread, else
 * NULL (no new one: a thread the recorder never reached stays unknown; a
 * thread state it went into when threading started the thread, r->follow.adopt,
 * gets its gr_thread at its first event).  Inline: the profile function's
 * first step. */
static inline gr_thread *gr_thread_known(gr_recorder *r)
{
    /* gr_tls.gen is set only with gr_tls.thread, and r->tls_key is never 0. */
    if (gr_tls.gen == r->tls_key)
        return gr_tls.thread;
    gr_thread *t = gr_tls_after_sweep(r);
    if (t)
        return t;
    PyThreadState *ts = PyThreadState_Get();
    t = gr_thread_unbound(r, ts);
    if (t)
        gr_thread_bind(r, t);
    else if (r->follow.nadopt && gr_adopt_take(r, ts)) {
        /* Its first event, in the thread's first frame: the CFrames
         * below it as threading.setprofile would leave them (compat.h,
         * gr_unarm_below). */
        gr_unarm_below(ts);
        t = gr_thread_current(r);
    }
    return t;
}

#endif
