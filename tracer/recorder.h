/* recorder.h - state of one recording and the records it writes.
 *
 * One recording runs between greenreplay.start() and stop(); at most one at
 * a time per process.  All functions here run with the GIL held.  None of
 * them raises: failures are counted in gr_recorder.errors, which the trace
 * trailer reports (docs/FORMAT.md §2), and any Python error they meet is
 * cleared.
 */
#ifndef GR_RECORDER_H
#define GR_RECORDER_H

#include "compat.h"
#include "format.h"
#include "ptrmap.h"
#include "writer.h"

#include "registry.h"
#include "sampler.h"

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

/* A rule rewriting a code object's file name: a path starting with
 * `prefix` becomes `replacement` + the rest (docs/FORMAT.md §3). */
typedef struct {
    char *prefix;      /* owned */
    size_t prefix_len;
    char *replacement; /* owned */
    int keep_line;     /* 0: record firstlineno as 0 under this prefix */
} gr_path_rule;

/* Open C calls kept per thread beside the program's function (3.12+,
 * gr_thread.open_c): a greenlet suspended in switch() holds one. */
#define GR_OPEN_C 16

/* Per-thread recording state.  A Python object so that CPython owns it as
 * the profile function's `arg` (c_profileobj) and greenlet owns it as the
 * thread's trace callback: it is callable as greenlet's
 * callback(event, (origin, target)). */
typedef struct gr_thread {
    PyObject_HEAD
    /* The profile function's event path: */
    int slow_path;          /* GR_PATH_SLOW if !tid || the recording's
                               any_chain, else GR_PATH_PENDING if
                               gl_pending, else 0;
                               kept so by gr_thread_path: the profile
                               function's fast path does not apply as it
                               is (profile.c) */
    uint32_t tid;           /* 0 until the thread is first seen */
    uint32_t cur_gid;       /* greenlet running on this thread (0: none) */
    uint64_t witness;       /* passive mode: gr_switch_witness (compat.h)
                               when greenlet was last asked on this thread;
                               GR_WITNESS_UNKNOWN: ask at the next event */
    int may_have_ended;     /* the last event recorded here was a return
                               (RETURN, C_RETURN, C_EXCEPTION) or none: the
                               greenlet it came from may have finished
                               since (a CALL or C_CALL leaves it inside a
                               call that has not returned: alive) */
    PyFrameObject *ccall_frame; /* frame of the last event recorded here if
                               it was a C_CALL (address only), else NULL */
    uint32_t last_c_call;   /* code id of the last C_CALL recorded here */
    PyFrameObject *ours_frame; /* the recorder's own Python frame running
                               here (address only; gr_code_ours), whose C
                               calls are not recorded, or NULL */
    PyObject *cur_g;        /* address of the greenlet last seen running on
                               this thread (compared, never dereferenced;
                               NULL once that greenlet was freed) */
    uint32_t cur_slot;      /* gl slot + 1 of cur_gid as of its switch in
                               (a hint: check its gid before use), or 0 */
    int gl_pending;         /* passive mode: greenlet not asked about this
                               thread yet; cur_gid is a placeholder for its
                               main greenlet (recorder.c) */
    int sw_direct;          /* set while greenlet is asked and the switch
                               written (switches.c; a continued switch
                               needs no flag): the witness moved by
                               exactly one since this thread's previous
                               event */
    uint64_t break_stamp;   /* r->sw.stamp when continuity last broke here */
    uint64_t cbits;         /* C calls passed on to the program's function
                               (profile.h), without greenlet */
    /* The thread: */
    uint64_t gen;           /* recording generation it belongs to */
    PyThreadState *tstate;  /* borrowed, may be freed once the thread ends:
                               compare thread_id before use */
    unsigned long thread_id; /* tstate->thread_id when made */
    int bound;              /* bound to an OS thread (its TLS points here) */
    int ended;              /* its thread has ended (its thread state was
                               reused by another thread) */
    int at_start;           /* the thread existed at start() */
    int kept;               /* the program's profile function was in its
                               slot at start(), and is chained: its C calls
                               open then had their c_call given to it
                               (profile_slot.c, gr_profile_keep); 2 once its
                               HOOK (GR_HOOK_BEFORE) is written */
    int had_events;         /* the recorder's profile function delivered
                               events on this thread */
    /* The program's changes of the profile slot: its profile function
     * chained behind the recorder's, and the HOOK records that say so
     * (profile_slot.c, footholds.c): */
    struct gr_thread_hook {
        Py_tracefunc chain_func; /* the program's profile function we chain to,
                                   or NULL (its object stays in the slot) */
        PyObject *chain_obj;    /* owned: that slot's object when we chained */
        int chain_calls;        /* gr_profile_chain is calling the program's
                                   profile function (a profile dispatch: its
                                   event is recorded already) */
        int subject;            /* the subject profiler is on this thread */
        int displaced;          /* the program displaced the subject with its own
                                   profile function (it saw None: the recorder is
                                   invisible) */
        int pending;            /* the audit hook saw a profile change coming */
        uint32_t code;          /* the C call in progress then (its c_return
                                   goes to whatever the program installed) */
        int intrace;            /* set while that HOOK is written */
        uint32_t frame;         /* code id of the Python frame running then
                                   (gr_profiler_frame), 0 none */
        uint32_t by_tid;        /* resolving a change another thread made
                                   (its tid, HOOK GR_HOOK_BY_OTHER), else 0 */
        uint32_t by_code;       /* and the C call in progress there */
        int unannounced;        /* resolving a profile slot changed without the
                                   audit event (gr_profile_slot_at_mark) */
        int ran_unseen;         /* resolving a profile slot of a thread that
                                   ran with the program's function alone since
                                   the change (HOOK who GR_HOOK_RAN) */
        int by_hook;            /* reached when it applied threading's profile
                                   hook itself (profile_slot.c sys_setprofile) */
        int beside;             /* 3.12+: the program's function (chain_func,
                                   chain_obj) stays in the slot, the recorder
                                   gets the events from its own sys.monitoring
                                   tool (beside.c) instead of chaining */
    } hook;
    /* The foothold in the trace slot (footholds.c): */
    struct gr_thread_foot {
        int kind;               /* our trace function holds the trace slot until
                                   the next event (after a program's change):
                                   1 taken at this thread's own audit event,
                                   2 a foreign foothold: taken while another
                                   thread's audit event announced a change
                                   that may concern this thread's slot (its
                                   function swapped in, gr_own_swap_trace) */
        Py_tracefunc func;      /* the trace slot's function before it */
        PyObject *obj;          /* owned: and its object */
        PyFrameObject *frame;   /* owned: the frame running at the audit
                                   event, NULL if none or if the thread was
                                   tracing then (no event can come from inside
                                   that dispatch): events of frames above it
                                   while its call is still the one in progress
                                   (lasti) and the profile slot unchanged
                                   (prof, pobj) come from inside the
                                   audit dispatch (a traced audit hook of the
                                   program), before the change.  Held from the
                                   audit event to the foothold's first event
                                   from outside the dispatch (or the program's
                                   sys.settrace, or stop()), so that no other
                                   frame can take its address while it is
                                   compared; released before the frame returns
                                   (its return event is such an event) */
        int lasti;
        int withheld;           /* PyTrace_CALL or PyTrace_RETURN: the change
                                   was made inside the program's trace function
                                   dispatching that event of a frame (3.11;
                                   3.10: a frame's first CALL; gr_own_dispatch),
                                   with the recorder's function
                                   in the profile slot: the event goes to the
                                   profile slot after the trace function returns,
                                   to what the change left there.  If that is not
                                   the recorder's, the event is written at the
                                   foothold's first event (code); -1: none */
        uint32_t code;          /* code id of that event's frame */
        int intrace;            /* the change was made there too, but the
                                   interpreter does not say which event it
                                   handled (not 3.11): the HOOK says so
                                   (GR_HOOK_IN_TRACE) if the slot is not the
                                   recorder's at the foothold's first event */
        Py_tracefunc prof;      /* the profile slot at the audit event */
        PyObject *pobj;         /* (compared only) */
    } foot;
    /* Callback mode: this object as the thread's greenlet trace callback
     * (threads.c): */
    struct gr_thread_callback {
        PyObject *prev;         /* owned; greenlet trace callback we replaced */
        PyObject *gl_settrace;  /* owned: the function greenlet.settrace,
                                   once ours is installed on this thread;
                                   cleared when the previous callback has
                                   been put back */
        int pending;            /* a greenlet switch callback ran
                                   and its SWITCH/THROW is written */
        PyObject *target;       /* its target (address only) */
    } cb;
    /* 3.12+, watched beside the program's function (beside.c): the C
     * calls whose C_CALL the recorder's tool wrote and whose end it has not
     * seen, by the frame that made each (one open C call per frame;
     * addresses only, the oldest replaced), for an end the program's
     * function raised out of (gr_beside_raised). */
    struct gr_thread_open_c {
        PyFrameObject *frame[GR_OPEN_C];
        uint32_t code[GR_OPEN_C];
        unsigned next;          /* the slot to replace next */
    } open_c;
    /* A thread start in progress on this thread (follow.c): */
    struct gr_thread_start {
        int call;               /* in a thread start (its c_call seen): 1
                                   from threading.Thread.start (at its c_return
                                   the recorder goes into the new thread
                                   state), 2 another caller (follow.c) */
        int nopy;               /* its function is C code (audit event, 3.12+) */
        PyThreadState *head;    /* the interpreter's first thread state at
                                   that c_call (address only) */
        uint32_t site;          /* r->follow.start_sites index + 1 of that start, or 0 */
    } start;
} gr_thread;

/* Where threads that run Python code were started while recording
 * (follow.c): the Python code that called _thread.start_new_thread or
 * _thread.start_joinable_thread, how many it started and how many of them
 * the recorder went into.  Written at stop as THREADS_UNREACHED records
 * for the difference (docs/FORMAT.md section 4). */
typedef struct {
    uint32_t code;          /* code id of the calling function, 0 unknown */
    uint32_t line;          /* its line then */
    const char *via;        /* "_thread.start_new_thread", "threading.Thread.start" */
    uint64_t started, followed;
    int handover;           /* one of its threads applied threading's profile
                               hook itself (gevent's thread pool): those
                               that never did ran only the pool's own code
                               before any task, and are not reported */
} gr_start_site;


/* gr_thread.witness when greenlet must be asked at the next event. */
#define GR_WITNESS_UNKNOWN UINT64_MAX

/* code_gl bit: a generator's or coroutine's code, said by META generator. */
#define GR_CODE_GENERATOR 2

/* One builtin function or method in the recorder's caches of code ids
 * (gr_recorder.cf): its PyMethodDef and the type of its `self` (NULL
 * none), which decide its key in `codes`, and its code id and that id's
 * code cache slot; ml NULL: empty.  general: its events go the profile
 * function's general path (a thread start, or greenlet.settrace's
 * PyMethodDef), said when the entry is filled; the caches are emptied
 * when either becomes known (gr_cf_forget). */
typedef struct {
    PyMethodDef *ml;
    PyTypeObject *self_type;
    uint32_t id;
    uint16_t slot, general;
} gr_cf_entry;

/* The direct-mapped part of gr_recorder.cf: ways, and the way of a
 * PyMethodDef (32 bytes each, in arrays: neighbours get their own way). */
#define GR_CF_WAYS 16
#define GR_CF_WAY(ml) ((unsigned)((uintptr_t)(ml) >> 5) & (GR_CF_WAYS - 1))

typedef struct gr_recorder {
    /* The profile function's event path: */
    uint64_t gen;           /* generation, bumped by every start() */
    uint64_t tls_key;       /* the per-OS-thread cache (threads.h) is valid
                               while it holds this value: gen << 32, bumped
                               by every sweep that drops a thread */
    gr_writer *w;           /* canonical stream's indexed records, owned */
    _Atomic uint64_t nevents; /* indexed records written; written only with
                               the GIL (relaxed load + store, a plain move),
                               read by the sampler thread */
    gr_writer *tw;          /* side channel (timestamps), owned, or NULL */
    uint64_t errors;        /* swallowed internal failures */
    gr_ptrmap codes;        /* (code object | PyMethodDef*, type) -> code id */
    PyCodeObject *last_co;  /* one-entry cache in front of `codes` for the
                               profile function's CALL/RETURN: the code
                               object of the last lookup, if not
                               greenreplay's own (gr_code_ours: the
                               profile function's leaf path tests that only
                               when this cache misses; kept alive by
                               `keep`, so its address is not reused while
                               recording) ... */
    uint32_t last_co_id;    /* ... its code id ... */
    uint32_t last_co_slot;  /* ... and that id's code cache slot (FORMAT
                               §4.1: id % GR_CODE_SLOTS) */
    gr_cf_entry cf[1 + GR_CF_WAYS]; /* caches in front of `codes` for C_*
                               events of a builtin function or method
                               (gr_cfunc_id_cached): cf[0] the last one
                               looked up, tested first (a C_RETURN after
                               its C_CALL); cf[1 + GR_CF_WAY(ml)] the last
                               one of each way (builtins called in turn:
                               a gevent worker's len() and
                               loop.run_callback) */
    unsigned char *ours;    /* PyMem: ours[id] = 1 for the code ids of
                               greenreplay's own Python code (the package
                               directory, "<greenreplay>/"), whose frames
                               are not recorded; NULL until one is seen */
    uint32_t ours_cap;      /* entries of `ours` */
    uint32_t ncodes;        /* code ids given so far */
    uint8_t *code_gl;       /* PyMem; per code id: bit 0 code of greenlet,
                               gevent or eventlet; GR_CODE_GENERATOR */
    PyObject *greenlet_mod;  /* owned, or NULL when greenlet is missing */
    PyObject *gl_settrace;   /* owned: the function greenlet.settrace (to
                               notice the program calling it), or NULL */
    PyObject *thread_start[2]; /* _thread.start_new_thread and
                               start_joinable_thread (or NULL): their C
                               calls start threads (follow.c) */
    int any_chain;          /* a program's profile function was chained */
    struct gr_recorder_beside { /* the recorder's sys.monitoring tool (beside.c) */
        int tool;               /* its id + 1 while held, else 0 */
        int failed;             /* no tool could be had: chain instead */
    } beside;
    /* The trace file and what is written into it (module.c, recorder.c): */
    struct gr_recorder_out {
        gr_writer *dw;          /* its definitions: == w, except in ring mode,
                                   where both are memory writers and dw keeps
                                   every definition; owned when != w */
        char *path;             /* owned: the trace file (ring mode writes it
                                   at stop and at each flush) */
        struct timespec last;   /* time of the previous indexed record */
        uint64_t replaced;      /* strings written other than they are: too long
                                   for a chunk (cut), or not encodable as UTF-8
                                   (backslashreplace); trailer field 5 */
        gr_path_rule *rules;    /* owned array */
        size_t nrules;
        int hide_ours;          /* greenreplay's own frames are left out
                                   (`ours` filled), in every mode */
        int profile_on;         /* profile=True at start */
    } out;
    /* Identities: strings, code objects, greenlets (recorder.c): */
    struct gr_recorder_ids {
        uint32_t nthreads, ngreenlets, nstrings; /* ids given so far */
        gr_ptrmap greenlets;    /* greenlet address -> gid, while alive */
        gr_ptrmap weakrefs;     /* weakref address -> gid */
        PyObject *strings;      /* dict str -> id (definitions) */
        PyObject *identities;   /* dict (kind, qualname, file, line) -> code id */
        PyObject *keep;         /* list: code objects and types kept alive so
                                   their addresses stay unique while recording */
        uint32_t mark_code, stop_code; /* code ids of our C functions */
        struct gr_profiler_table *profilers; /* owned: the program's profilers
                                   seen (profiler_id.c), or NULL */
        int keep_profilers;     /* keep the program's cProfile objects
                                   alive from now on, to be read back by
                                   `greenreplay conform` (_keep_profilers) */
    } ids;
    /* Threads: the followed ones and the starts of others (threads.c, follow.c): */
    struct gr_recorder_follow {
        PyObject *threads;      /* list of gr_thread: the threads alive, and
                                   ended ones until the next sweep (threads.c
                                   gr_thread_new), so its length stays within
                                   max(64, 2 x live threads) */
        Py_ssize_t threads_sweep_at; /* length of threads that triggers a sweep */
        PyThreadState **adopt;  /* PyMem: new thread states the recorder went
                                   into, whose thread has not had an event yet
                                   (threads.h gr_thread_known) */
        size_t nadopt, adopt_cap;
        gr_start_site *start_sites; /* PyMem, nstart_sites of them */
        size_t nstart_sites, start_sites_cap;
        struct gr_unfollowed {  /* PyMem: thread states started while recording */
            PyThreadState *ts;  /* that the recorder did not go into (address */
            uint32_t site;      /* only), with their start site index + 1, */
        } *unfollowed;          /* until threading's hook brings the recorder */
        size_t nunfollowed, unfollowed_cap; /* there (profile_slot.c sys_setprofile) */
        uint32_t thread_start_id[2]; /* the code ids of r->thread_start once
                                   defined, else UINT32_MAX: the profile
                                   function compares the event's code id, so
                                   that the functions of a _thread module
                                   imported again (a new module object:
                                   eventlet's patcher.original) count too
                                   (recorder.c gr_cfunc_id_slow sets them) */
    } follow;
    /* Per-greenlet state in reusable slots (recorder.c): */
    struct gr_recorder_gls {
        struct gr_gl *gl;       /* PyMem; per greenlet state, slots reused
                                   once a greenlet is freed and its end
                                   written: memory bounded by the live ones */
        uint32_t gl_cap;        /* slots allocated */
        uint32_t *gl_free;      /* PyMem; free slot numbers */
        uint32_t gl_nfree, gl_free_cap, gl_used;
        gr_ptrmap gl_index;     /* (gid, 0) -> slot + 1, for live gids */
        PyObject *forget;       /* weakref callback (module function) */
        gr_ptrmap preexisting;  /* greenlets alive at start() (addresses) */
        uint64_t *freed_abandoned; /* PyMem: (tid << 32 | gid) of greenlets
                                   freed unfinished after their thread ended
                                   (stop() writes a STACK "thread ended" for
                                   each: the profile events left their frames
                                   open, and nothing else says why) */
        size_t nfreed_abandoned, cap_freed_abandoned;
        uint64_t gl_frees;      /* greenlets seen freed so far (an address may
                                   name another greenlet after) */
    } gls;
    /* greenlet's API, looked up where the program loaded it (gl_load.c): */
    struct gr_recorder_gl_api {
        PyObject *getcurrent;   /* owned greenlet.getcurrent, or NULL */
        PyObject *(*gl_current)(void); /* greenlet C API PyGreenlet_GetCurrent,
                                   or NULL (then r->gl_api.getcurrent is called) */
        PyObject *(*gl_parent)(PyObject *); /* greenlet C API
                                   PyGreenlet_GetParent (greenlet 2.0+: entry
                                   11 of the table), or NULL (then the `parent`
                                   attribute is read): gr_greenlet_parent */
        PyTypeObject *type;     /* greenlet.greenlet (entry 0 of the C API), or NULL */
        PyObject *str_parent, *str_dead, *str_gr_frame, *str_switch, *str_throw;
        PyTypeObject *dead_type; /* the type whose C getter answers `dead`
                                   (greenlet.greenlet), found at first use
                                   (gr_greenlet_dead), or NULL */
        getter dead_get;        /* its getter, and that getter's closure */
        void *dead_closure;
        int gl_chain_cut;       /* a suspended greenlet's gr_frame chain is cut
                                   (compat.h, gr_greenlet_chain_cut) */
        int lazy;               /* greenlet can be imported and the program
                                   has not imported it yet: threads wait
                                   (gl_load.c) */
        int watch;              /* an import of greenlet began: the next
                                   events look for its C module (gl_load.c) */
        uint32_t watch_events;  /* events of the watch so far */
        char version[32];       /* greenlet's __version__ once resolved */
    } gl_api;
    /* Switch detection (switches.c): */
    struct gr_recorder_sw {
        int callback_mode;      /* 1: greenlet trace callback installed (old
                                   mode); 0: passive, the default */
        int witness_ok;         /* greenlet changes gr_switch_witness on every
                                   switch (0.4.15+): an event whose thread's
                                   witness did not change skips asking greenlet
                                   (switches.c); cleared if a mark ever finds
                                   a switch the witness missed */
        PyMethodDef *ctx_run;   /* Context.run's method (switches.c,
                                   context_step), or NULL ... */
        uint32_t ctx_run_id;    /* ... and its code id once defined
                                   (gr_cfunc_id_slow), else 0 */
        int continued_ok;       /* continued switches may be written (passive
                                   mode, no sampler registry, not ring mode:
                                   switches.c) */
        int cont_fast;          /* continued_ok and witness_ok, no Context.run
                                   id and no verify_continued: the continued
                                   switch's four mode tests in one (kept by
                                   gr_sw_refresh) */
        uint64_t stamp;         /* a counter for the stamps below and in
                                   gr_thread/gr_gl (switches.c) */
        uint64_t hook_stamp;    /* stamp of the last HOOK record: a hook change
                                   breaks every thread's continuity */
        gr_keymap susp;         /* suspensions seen, for continued switches:
                                   frame (address only) -> gl slot + 1 of the
                                   greenlet suspended in it, every thread's
                                   (switches.c, susp_note; keep:
                                   gr_susp_holds) */
        /* GREENREPLAY_VERIFY_CONTINUED=1 (read at start()): at every
         * continued switch greenlet is asked too (switches.c, verify_continued)
         * and the answers are written as META records at stop(). */
        int verify_continued;
        uint64_t cont_verified; /* continued switches checked against greenlet */
        uint64_t cont_mismatch; /* of them: greenlet named another greenlet */
        uint64_t cont_first[4]; /* the first mismatch: record index, tid, gid
                                    written, gid greenlet named (0: not one seen) */
        /* Passive mode: calls of the program's own profile function (chained
         * by gr_profile_chain) during which the thread's switch witness moved:
         * greenlets ran inside it, where no event is delivered, so none of
         * their switches could be seen (callback mode writes them: threads.c,
         * GR_SEEN_IN_TRACING).  Written as META records at stop(). */
        uint64_t prof_switches; /* such calls */
        uint64_t prof_switch_first[3]; /* the first: index of the event whose
                                          call it was, tid, gid */
    } sw;
    /* The recorder's own work, hidden from the program (audit.c, slots.c): */
    struct gr_recorder_own {
        int change;             /* the recorder itself is changing a hook */
        int in_setprofile;      /* inside the recorder's sys.setprofile */
        int quiet;              /* 1 while the recorder's own Python code runs
                                   in a tracing guard (audit.c uncaught): no
                                   profile event of it was recorded, so stop()
                                   there writes this thread's stack from
                                   quiet_top, without the guarded frames */
        PyFrameObject *quiet_top; /* borrowed: the thread's frame when the guard
                                   was entered (NULL: none) */
    } own;
    /* The sampler (sampler.c) and its side-channel chunks; NULL when off: */
    struct gr_recorder_samp {
        gr_registry *reg;       /* owned */
        gr_sampler *sampler;    /* owned */
        gr_writer *ww;          /* owned: the side channel's 'W' chunks (a
                                   sub-writer of tw, written during the run) */
        gr_writer *pw;          /* owned: its 'P' chunks (the same) */
        unsigned char *scratch; /* PyMem_Raw, owned: one sample re-encoded */
        size_t scratch_cap;
        uint64_t nswitches;     /* 'W' entries written */
        time_t drain_sec;       /* CLOCK_MONOTONIC second of the last look at
                                   the sampler's ring from gr_times_entry */
    } samp;
} gr_recorder;

/* gr_thread.slow_path when the thread only waits for its first use of
 * greenlet (t->gl_pending, seen, no program's function chained): the
 * profile function's fast path without a switch check (profile.c); and
 * when the fast path does not apply (GR_PATH_SLOW). */
#define GR_PATH_PENDING 1
#define GR_PATH_SLOW 2

/* Set t->slow_path (t of recording r) after a change of t->tid,
 * t->gl_pending, r->any_chain or r->gl_api.watch. */
static inline void gr_thread_path(const gr_recorder *r, gr_thread *t)
{
    /* While greenlet's import is watched for, every event looks for it;
     * callback mode: a thread that waited for the program's import of
     * greenlet installs its callback at its next event (gl_load.c). */
    int wait = r->sw.callback_mode && r->greenlet_mod ? GR_PATH_SLOW : GR_PATH_PENDING;
    t->slow_path = !t->tid || r->any_chain || r->gl_api.watch ? GR_PATH_SLOW : t->gl_pending ? wait : 0;
}

/* The one active recording, or NULL. */
/* (Declared hidden, as the extension's -fvisibility=hidden defines it: the
 * profile function then loads it in one instruction, not through the
 * GOT.) */
extern __attribute__((visibility("hidden"))) gr_recorder *gr_active;

/* ---- identities (recorder.c) --------------------------------------- */

/* Code id of a Python code object, defining it on first sight. 0 on
 * failure (counted in errors). */
uint32_t gr_code_id_slow(gr_recorder *r, PyCodeObject *co);

static inline uint32_t gr_code_id(gr_recorder *r, PyCodeObject *co)
{
    uint32_t id = gr_ptrmap_get(&r->codes, (uintptr_t)co, 0);
    return id ? id : gr_code_id_slow(r, co);
}

/* Whether code id `id` is greenreplay's own Python code (r->out.hide_ours, in
 * every mode): the start() and stop() the program calls, the stop at exit,
 * Recording.__exit__, the pytest plugin.  The recorder records the
 * program, not itself: those frames, and the C calls they make, are not
 * recorded, nor are they in any stack (recorder.c, collect_stack); the
 * seed of a --manual start() ends in the program's frame that called it. */
static inline int gr_code_ours(const gr_recorder *r, uint32_t id)
{
    return id < r->ours_cap && r->ours[id];
}

/* gr_code_id through the one-entry cache (the profile function's hot
 * path: a CALL and its RETURN, or a loop calling one function, look up
 * the same code object in a row).  *slot: the id's code cache slot. */
static inline uint32_t gr_code_id_cached(gr_recorder *r, PyCodeObject *co, unsigned *slot)
{
    if (co == r->last_co) {
        *slot = r->last_co_slot;
        return r->last_co_id;
    }
    uint32_t id = gr_code_id(r, co);
    *slot = id % GR_CODE_SLOTS;
    if (id && !gr_code_ours(r, id)) {
        r->last_co = co;
        r->last_co_id = id;
        r->last_co_slot = *slot;
    }
    return id;
}

/* Code id of a C callable (the `arg` of c_call/c_return/c_exception),
 * defining it on first sight.  0 on failure. */
uint32_t gr_cfunc_id_slow(gr_recorder *r, PyObject *fn);

/* Key of a C callable in r->codes: (PyMethodDef, type of the bound
 * instance or 0 for a module function), or (its type, 1) for any other
 * callable. */
static inline void gr_cfunc_key(PyObject *fn, uintptr_t *a, uintptr_t *b)
{
    *b = 0;
    if (PyCFunction_Check(fn)) {
        PyCFunctionObject *f = (PyCFunctionObject *)fn;
        *a = (uintptr_t)f->m_ml;
        if (f->m_self && !PyModule_Check(f->m_self))
            *b = (uintptr_t)Py_TYPE(f->m_self);
    } else {
        *a = (uintptr_t)Py_TYPE(fn);
        *b = 1;
    }
}

static inline uint32_t gr_cfunc_id(gr_recorder *r, PyObject *fn)
{
    uintptr_t a, b;
    gr_cfunc_key(fn, &a, &b);
    uint32_t id = gr_ptrmap_get(&r->codes, a, b);
    return id ? id : gr_cfunc_id_slow(r, fn);
}

/* Recompute r->sw.cont_fast after any of the four it stands for changed. */
static inline void gr_sw_refresh(gr_recorder *r)
{
    r->sw.cont_fast = r->sw.continued_ok && r->sw.witness_ok && !r->sw.ctx_run_id && !r->sw.verify_continued;
}

/* Empty the caches r->cf (an entry's `general` may have changed). */
static inline void gr_cf_forget(gr_recorder *r)
{
    memset(r->cf, 0, sizeof r->cf);
}

/* gr_cfunc_id through the caches r->cf (the profile function's hot path;
 * the c_call and c_return of one call, or a loop calling one builtin, look
 * up the same function in a row: cf[0]; builtins called in turn each find
 * their way's entry).  A builtin function's key in r->codes
 * (gr_cfunc_key) is decided by its PyMethodDef and the type of its self,
 * so those two are compared, without the module test of gr_cfunc_key (a
 * subtype check for every self that is not a module).  *slot: the id's
 * code cache slot. */
static inline uint32_t gr_cfunc_id_cached(gr_recorder *r, PyObject *fn, unsigned *slot)
{
    uint32_t id;
    if (Py_IS_TYPE(fn, &PyCFunction_Type)) {
        PyCFunctionObject *f = (PyCFunctionObject *)fn;
        PyTypeObject *st = f->m_self ? Py_TYPE(f->m_self) : NULL;
        if (f->m_ml == r->cf[0].ml && st == r->cf[0].self_type) {
            *slot = r->cf[0].slot;
            return r->cf[0].id;
        }
        gr_cf_entry *e = &r->cf[1 + GR_CF_WAY(f->m_ml)];
        if (f->m_ml == e->ml && st == e->self_type) {
            *slot = e->slot;
            return e->id;
        }
        id = gr_cfunc_id(r, fn);
        *slot = id % GR_CODE_SLOTS;
        if (id) {
            PyObject *set = r->gl_settrace;
            e->ml = f->m_ml;
            e->self_type = st;
            e->id = id;
            e->slot = (uint16_t)*slot;
            e->general = id == r->follow.thread_start_id[0] || id == r->follow.thread_start_id[1] ||
                         (set && PyCFunction_Check(set) && ((PyCFunctionObject *)set)->m_ml == f->m_ml);
            r->cf[0] = *e;
        }
        return id;
    }
    id = gr_cfunc_id(r, fn);
    *slot = id % GR_CODE_SLOTS;
    return id;
}

/* String id of a UTF-8 string, defining it on first sight.  0 on failure. */
uint32_t gr_string_id(gr_recorder *r, const char *s);

/* String id of the str object s (embedded NULs kept), defining it on first
 * sight.  A string that is not encodable as UTF-8 (lone surrogates, e.g.
 * a file name decoded with surrogateescape) is written with
 * backslashreplace, and one too long for a chunk is cut with a marker;
 * both are counted in r->out.replaced.  0 on failure. */
uint32_t gr_string_id_obj(gr_recorder *r, PyObject *s);

/* Fatal signals (crash.c): at start, a handler that writes the buffered
 * records and a trailer (reason crash) on SIGSEGV, SIGBUS, SIGILL, SIGFPE
 * and SIGABRT, then passes the signal on to the handler before it; at
 * stop, that handler put back. */
void gr_crash_install(void);
void gr_crash_remove(void);

/* gid of a greenlet object, defining it (GREENLET record, with its parent
 * first and, if it is suspended, its stack) on first sight.  0 for None or
 * on failure. */
uint32_t gr_greenlet_id(gr_recorder *r, gr_thread *t, PyObject *g);

/* Define greenlet g (first sight or re-seed): its parent first, then a
 * GREENLET record whose seed stack is `top` outwards (borrowed, may be
 * NULL) plus the C function extra_c (0 none), with `flags` (GR_GL_*;
 * GR_GL_MAIN is added when it has no parent).  Returns its gid or 0. */
uint32_t gr_greenlet_define(gr_recorder *r, gr_thread *t, PyObject *g, PyFrameObject *top,
                            uint32_t extra_c, uint64_t flags);

/* Weakref callback body: greenlet behind weakref wr was freed; forget its
 * address so a new object there gets a new gid. */
void gr_greenlet_forget(gr_recorder *r, PyObject *wr);

/* ---- records (recorder.c) ------------------------------------------ */

/* Write the side-channel entry for the indexed record just written. */
void gr_times_entry(gr_recorder *r);

/* Write a record of `tag` with n varint fields (n <= 8). */
void gr_emit(gr_recorder *r, int tag, int n, const uint64_t *fields);

/* The recorder itself changes a profile or trace slot (installs or
 * removes its own function, takes or gives back the foothold), between
 * gr_own_change_begin and gr_own_change_end, with gr_own_set_profile /
 * gr_own_set_trace.  The program's audit hooks (sys.addaudithook) see no
 * event for it, as without the recorder (compat.h, slots section): on
 * 3.9-3.11 no event is raised; on 3.12+ CPython raises sys.setprofile /
 * sys.settrace to the C hooks only, which the recorder's own ignores
 * (own.change).  Where the program's hooks would still run (a
 * free-threaded build), they run untraced (the tracing guard, compat.h): a
 * hook the program marked __cantrace__ would otherwise make calls that the
 * recorder records (after STOP, at stop) and the program's profilers
 * count, for an event that exists only because of the recorder. */
static inline void gr_own_change_begin(gr_recorder *r)
{
    r->own.change = 1;
    gr_enter_tracing(PyThreadState_Get());
}

static inline void gr_own_change_end(gr_recorder *r)
{
    gr_leave_tracing(PyThreadState_Get());
    r->own.change = 0;
}

/* Set the profile function of thread state ts (any thread of the
 * interpreter) to fn with object arg (borrowed; the slot takes its own
 * reference and releases the one it held), as the recorder's own change:
 * no audit event reaches the program's audit hooks (slots.c, compat.h
 * slots section).  GIL held.  Returns 0, or -1 with a Python exception set
 * (3.12+ only: a C audit hook refused the event). */
int gr_own_set_profile(PyThreadState *ts, Py_tracefunc fn, PyObject *arg);

/* The same for the trace function of ts, which must be the calling
 * thread's state (3.12+ can only change that one).  Returns 0. */
int gr_own_set_trace(PyThreadState *ts, Py_tracefunc fn, PyObject *arg);

/* Call fn(*args) (args a tuple or NULL) as the recorder's own work: no
 * audit event it raises reaches the program's audit hooks (3.12+; compat.h
 * gr_slot_call_quiet).  For C functions only (sys.monitoring's).  A new
 * reference, or NULL with an exception set. */
PyObject *gr_own_call_quiet(PyObject *fn, PyObject *args);

/* Replace only the function of the trace slot of thread state ts (any
 * thread of the interpreter; its object stays), keeping the interpreter's
 * count of threads with a trace function right, without an audit event and
 * without re-instrumenting code: for a foothold on another thread while the
 * calling thread's own foothold (gr_own_set_trace) keeps trace events on
 * (footholds.c).  GIL held.  Returns 0, or -1 on a free-threaded build
 * (nothing changed). */
int gr_own_swap_trace(PyThreadState *ts, Py_tracefunc fn);
/* The event thread state ts (the calling thread's) is dispatching to a
 * trace or profile function now and its frame (borrowed), when the
 * interpreter says (3.10: the CALL of a frame not started yet; 3.11: any;
 * compat.h gr_slot_dispatch): 1 with *frame and *what (PyTrace_*) set,
 * else 0.  GIL held; never raises. */
int gr_own_dispatch(PyThreadState *ts, PyFrameObject **frame, int *what);

/* Count one indexed record written and stamp the side channel. */
static inline void gr_count_record(gr_recorder *r)
{
    atomic_store_explicit(&r->nevents, atomic_load_explicit(&r->nevents, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    r->w->indexed++;
    if (r->tw)
        gr_times_entry(r);
}

/* Hot path: indexed record of three varints (CALL, RETURN, C_*). */
static inline __attribute__((always_inline)) void gr_emit3(gr_recorder *r, int tag, uint64_t a, uint64_t b, uint64_t c)
{
    if (gr_writer_event(r->w, tag, a, b, (uint32_t)c) == 0) /* compact: FORMAT §4.1 */
        gr_count_record(r);
}

/* gr_emit3 with the code's cache slot given (slot == c % GR_CODE_SLOTS). */
static inline __attribute__((always_inline)) void gr_emit3_slot(gr_recorder *r, int tag, uint64_t a, uint64_t b,
                                                                uint32_t c, unsigned slot)
{
    if (gr_writer_event_slot(r->w, tag, a, b, c, slot) == 0)
        gr_count_record(r);
}

/* Write a record of `tag`: the n varint fields, then a stack of code ids
 * (count then ids, outermost first) walked from frame `top` outwards
 * (borrowed, may be NULL), with the C function `extra_c` (code id, 0 for
 * none) as its innermost entry.  Stacks deeper than GR_STACK_CAP keep the
 * innermost frames and OR `cut_bit` into fields[flag_field] (flag_field < n). */
void gr_emit_stack(gr_recorder *r, int tag, int n, uint64_t *fields, int flag_field,
                   uint64_t cut_bit, PyFrameObject *top, uint32_t extra_c);

/* First sight of thread t: THREAD and GREENLET records.  `top` is the
 * innermost frame already on its stack (borrowed, may be NULL) and
 * `extra_c` a C function in progress (code id or 0).  Also installs the
 * greenlet trace callback for this thread (callback mode).  defer (passive
 * mode): do not ask greenlet yet (gr_thread_touch). */
void gr_thread_first_sight(gr_recorder *r, gr_thread *t, PyFrameObject *top, uint32_t extra_c,
                           int defer);

/* Passive mode, a thread first seen with defer: it now uses greenlet (its
 * event is greenlet's, gevent's or eventlet's code, or mark()): ask greenlet
 * for its current greenlet and bind it to the placeholder gid. */
void gr_thread_touch(gr_recorder *r, gr_thread *t);

/* Whether code id c is greenlet's, gevent's or eventlet's. */
static inline int gr_code_is_gl(const gr_recorder *r, uint32_t c)
{
    return c && c <= r->ncodes && r->code_gl && (r->code_gl[c] & 1);
}

/* Write the side-channel figures of one switch (sampler on) into the 'W'
 * chunks: the SWITCH record's index, lock wait and callback time in ns,
 * contended 0/1; then hand the samples the sampler took meanwhile to the
 * side channel (gr_side_drain).  Called after the registry lock is
 * released and after callback_ns was measured, so that the chunk writes
 * (one write(2) per full chunk) are neither under the lock nor counted in
 * the callback's time.  A lost entry is counted in the side channel's
 * dropped records (the trailer's switch count says how many were kept). */
void gr_note_switch(gr_recorder *r, uint64_t index, uint64_t wait_ns, uint64_t callback_ns, int contended);

/* Sampler on: take the samples the sampler thread handed over (sampler.h,
 * gr_sampler_drain), turn their code addresses into code ids (0 for a code
 * object the profile function never saw) and append them to the 'P'
 * chunks of the side channel (docs/FORMAT.md §5): during the run, so that
 * the recorder keeps no samples.  A sample goes whole into one chunk when
 * it fits in one (the chunk is written first otherwise).  GIL held; no
 * Python call; never raises.  Does nothing without a sampler.
 *
 * Called at every switch (gr_note_switch), before every 'T' chunk, and at
 * a record (gr_times_entry) when a second has passed since the last look
 * or a quarter of the ring is used: while the program records at all,
 * however sparsely (a gevent hub waking now and then), the ring does not
 * fill.  A stretch of the run that writes no record (the program idle or
 * blocked in C, or profile=False and no switch) drains nothing: the
 * samples wait in the sampler's ring, then in its own buffer, both fixed
 * (sampler.h); once both are full the sampler thins its own buffer and
 * counts the sampling times without a kept sample (META
 * sampler_samples_thinned at stop, which check --stall reports; only a
 * GREENREPLAY_SAMPLER_RING_MAX below two of the largest samples makes it
 * skip them instead: sampler_samples_lost_full), so the memory stays
 * bounded however long the program idles.
 * The samples of the first part of an idle stretch are kept (1 MiB of ring
 * and 1 MiB of buffer by default: measured, 2,645 samples of five 20-frame
 * stacks, 13 s at a 5 ms interval; 126 samples of 64 stacks 50 frames
 * deep, 0.6 s), those after it are counted.
 * A Py_AddPendingCall from the sampler thread was tried as a wake-up: on
 * CPython 3.11 the main thread ran it only 1.4 s later, at the end of the
 * pure-Python loop it was in (a pending call added by a thread other than
 * the main one does not set the eval breaker), so it was left out; and a
 * program blocked in C runs no pending call at all, so only a thread
 * taking the GIL could drain then, which the sampler thread never does. */
void gr_side_drain(gr_recorder *r);

/* Record the current Python error as a swallowed failure and clear it. */
void gr_swallow(gr_recorder *r);

/* Per greenlet state while it is alive, or freed but its DEAD not yet
 * written (recorder.c). */
typedef struct gr_gl {
    uintptr_t addr;         /* its address; 0 once freed */
    PyObject *wr;           /* owned weakref to it; NULL once freed */
    struct gr_thread *on;   /* borrowed: the thread whose cur_g it is */
    uint64_t cbits;         /* C calls passed on to the program's profile
                               function (profile.h) */
    uint32_t gid, tid;      /* its gid; the thread it was last seen on */
    uint8_t state;          /* GR_GLS_* */
    uintptr_t susp_frame;   /* passive mode: the frame it was seen suspended
                               in (its last event a C_CALL there, the switch
                               right after), 0 none (switches.c) */
    uint64_t susp_stamp;    /* r->sw.stamp then */
    uint32_t susp_at;       /* the r->sw.susp slot of its last note (a
                               hint: gr_keymap_put_at checks it) */
    PyObject *par;          /* its parent at its last continued switch
                               (address only) ... */
    uint32_t par_gid;       /* ... that parent's gid ... */
    uint64_t par_frees;     /* ... and r->gls.gl_frees then */
} gr_gl;

/* The state of greenlet gid, or NULL once it was freed and its end
 * written (or it was never seen).  Invalidated by the next greenlet's
 * registration (the table may move). */
/* Key of gid in gls.gl_index (ptrmap keys must be >= 2; spread like an
 * address). */
#define GR_GL_KEY(gid) (((uintptr_t)(gid) << 4) | 2)

static inline gr_gl *gr_gl_of(struct gr_recorder *r, uint32_t gid)
{
    uint32_t s = gid ? gr_ptrmap_get(&r->gls.gl_index, GR_GL_KEY(gid), 0) : 0;
    return s ? &r->gls.gl[s - 1] : NULL;
}

/* Free the slot of greenlet gid if it was freed and its end is written. */
void gr_gl_settle(struct gr_recorder *r, uint32_t gid);

/* Per-gid state bits (gr_gl.state). */
#define GR_GLS_DEAD 0x1u     /* DEAD written */
#define GR_GLS_MAIN 0x4u     /* main greenlet of its thread */
#define GR_GLS_GONE 0x8u     /* the thread it was last seen on has ended
                                and its gr_thread was dropped (threads.c) */

/* ---- switches (switches.c) ------------------------------------------- */

/* The running greenlet of the calling thread, new reference, or NULL
 * (greenlet missing; no error set). */
PyObject *gr_current_greenlet(gr_recorder *r);

/* The parent of greenlet g (a greenlet; borrowed): new reference, None
 * for a main greenlet, or NULL with an error set.  Through greenlet's C
 * API where it has PyGreenlet_GetParent (2.0+; it returns NULL without an
 * error for "no parent"): the switch path's cheapest way (about 150
 * instructions less than the attribute, tests/bench/instr_cost.sh), and
 * the real parent even where a subclass overrides the attribute. */
PyObject *gr_greenlet_parent(gr_recorder *r, PyObject *g);

/* Whether greenlet g (borrowed) is dead: 1, 0, or -1 with an error set.
 * Asks greenlet's own C getter of `dead` (the greenlet.greenlet type's),
 * never a subclass's Python property: gevent's Greenlet overrides `dead`,
 * and the recorder must run no program code inside its profile function
 * (and a Python property cost about 1,000 instructions at every switch
 * of a gevent program: tests/bench/side_by_side.py). */
int gr_greenlet_dead(gr_recorder *r, PyObject *g);

/* Whether the entry frame -> slot of r->sw.susp (ctx: r) still holds:
 * that greenlet is still noted as suspended there (gr_keymap_keep). */
int gr_susp_holds(void *ctx, uintptr_t frame, uint32_t slot);

/* Passive detection at a profile event of thread t (slow path of
 * gr_switch_check): asks greenlet which greenlet runs and, if it is not
 * t->cur_g, writes the switch (gr_switch_seen) with the stack outside the
 * event's frame.  frame, what: as given to the profile function; ts: the
 * calling thread's state (PyThreadState_GET(), borrowed), read once per
 * event by the caller; code: the event's code id. */
void gr_switch_check_slow(gr_recorder *r, gr_thread *t, PyFrameObject *frame, int what, PyObject *arg,
                          PyThreadState *ts, uint32_t code);

/* Passive detection at a profile event: greenlet is asked only when the
 * thread's switch witness (compat.h) changed since it was last asked, so
 * an event with no switch before it costs one load and one compare, and
 * makes no greenlet API call (such a call also runs greenlet's deferred
 * cleanup of greenlets of other threads: greenlet's own leak tests see
 * it). */
static inline void gr_switch_check(gr_recorder *r, gr_thread *t, PyFrameObject *frame, int what, PyObject *arg,
                                   uint32_t code)
{
    PyThreadState *ts = gr_tstate_now();
    uint64_t v = gr_switch_witness(ts);
    /* Without a trusted witness (sw.witness_ok 0), t->witness stays
     * GR_WITNESS_UNKNOWN, which no counter value equals: one compare. */
    if (v != t->witness) {
        /* Exactly one switch (or Context enter/exit) since this thread's
         * previous event: no greenlet ran unseen in between. */
        t->sw_direct = t->witness != GR_WITNESS_UNKNOWN && v == t->witness + 1;
        t->witness = r->sw.witness_ok ? v : GR_WITNESS_UNKNOWN;
        gr_switch_check_slow(r, t, frame, what, arg, ts, code);
        t->sw_direct = 0;
    }
}

/* mark()/stop() asked greenlet directly and found greenlet g running where
 * the thread last saw another: if the witness claims no switch happened,
 * it cannot be trusted with this greenlet (sw.witness_ok cleared). */
void gr_witness_verify(gr_recorder *r, gr_thread *t, PyObject *g);

/* Where gr_switch_seen is called from (its `seen`). */
#define GR_SEEN_AT_EVENT 0   /* inside the profile callback, at the target's first event */
#define GR_SEEN_AT_MARK 1    /* mark() or stop(): the tracing state is read directly */
#define GR_SEEN_UNSEEN 3     /* passive mode, at the origin's C_RETURN/C_EXCEPTION of the
                              * target's switch()/throw(): the target ran with no event
                              * (state bit GR_SW_UNSEEN, its tracing state not known) */
#define GR_SEEN_IN_TRACING 2 /* callback mode, in greenlet's callback for a switch made
                              * while the thread was inside a profile or trace function
                              * (tracing on before greenlet's guard): the target delivers
                              * no event, so the switch is written there, without a stack */

/* Passive switch detection: greenlet `g` (borrowed) is running on thread
 * t, which last saw t->cur_g.  Writes the SWITCH (or the THROW/SWITCH
 * greenlet's callback announced, in callback mode) with the target's real
 * stack from `top` outwards (borrowed, may be NULL), DEAD for an origin
 * that died, and updates t.  seen: GR_SEEN_AT_MARK by mark() or
 * stop(), where the tracing state is read directly; GR_SEEN_AT_EVENT
 * inside a profile callback; GR_SEEN_IN_TRACING (above): no real stack
 * (state bit 8 clear; `top` must be NULL), the origin's death asked, and
 * nothing it implies about the origin's suspension kept (no continued
 * switch back to it).  raising: the event is a C_EXCEPTION (the target
 * resumed with an exception: written as THROW, as greenlet would report
 * it). */
void gr_switch_seen(gr_recorder *r, gr_thread *t, PyObject *g, PyFrameObject *top, int seen,
                    int raising);

/* Collect the addresses of the greenlets started and not dead now
 * (start()): their frames predate the recording. */
void gr_note_preexisting(gr_recorder *r);

/* DEAD record of greenlet gid on thread tid, once per greenlet. */
void gr_emit_dead(gr_recorder *r, uint32_t gid, uint64_t tid);


/* Callback mode: put back the greenlet trace callback the thread had
 * before ours, if ours is still the active one; never calls settrace
 * with the callback already active (greenlet issue 332).  Clears
 * t->cb.gl_settrace. */
void gr_put_back_callback(gr_thread *t);

/* The program's greenlet trace callback on thread t (greenlet.gettrace(),
 * read only; in callback mode the one ours chains to), written as a HOOK
 * record of slot GR_HOOK_GREENLET whose code is the callback's code id
 * (the Python code its call runs first, also through functools.partial;
 * else the C callable's identity; 0 only on failure, swallowed): the
 * checker's callback_guard rule (greenlet PR 268,
 * TracingGuard) needs to know which frames are the callback's.  Called by
 * start() for its thread, at the first sight of another thread once
 * greenlet is asked about it (gr_thread_first_sight, gr_thread_touch)
 * (at_start: nothing written when there is no callback), and after each
 * c_return of greenlet.settrace.  Never raises. */
void gr_note_greenlet_callback(gr_recorder *r, gr_thread *t, int at_start);

/* Tags after which the greenlet may have finished (bit per tag). */
#define GR_ENDING_TAGS ((1u << GR_RETURN) | (1u << GR_C_RETURN) | (1u << GR_C_EXCEPTION))

/* The profile function's fast path after its switch check (profile.c
 * record_fast, switches.c gr_event_switched): the thread's state after an
 * event of record tag `tag` (GR_CALL..GR_C_EXCEPTION) in `frame` (address
 * only) and of code id `code` (gr_event_state), then its record, with the
 * code's cache slot `slot`; arg: the event's C function (C_* events), to
 * notice the program changing its greenlet callback. */
static inline __attribute__((always_inline)) void gr_event_state(gr_thread *t, PyFrameObject *frame, int tag,
                                                                 uint32_t code)
{
    /* A CALL or C_CALL leaves the greenlet inside a call (alive). */
    t->may_have_ended = (int)((GR_ENDING_TAGS >> tag) & 1u);
    t->ccall_frame = tag == GR_C_CALL ? frame : NULL;
    if (tag >= GR_C_CALL)
        t->last_c_call = tag == GR_C_CALL ? code : 0;
}

static inline __attribute__((always_inline)) void gr_event_tail(gr_recorder *r, gr_thread *t, PyFrameObject *frame,
                                                                int tag, PyObject *arg, uint32_t code, unsigned slot)
{
    gr_event_state(t, frame, tag, code);
    gr_emit3_slot(r, tag, t->tid, t->cur_gid, code, slot);
    if (__builtin_expect(tag == GR_C_RETURN && arg == r->gl_settrace, 0))
        gr_note_greenlet_callback(r, t, 0); /* the program changed its greenlet callback */
}

/* A code id and its cache slot in one argument (gr_event_switched). */
#define GR_CODE_SLOT(code, slot) ((uint64_t)(code) | (uint64_t)(slot) << 32)

/* The profile function's fast path (profile.c record_fast) at an event of
 * thread t of the active recording (gr_active) whose switch witness moved
 * since the thread's previous event: the switch check (gr_switch_check,
 * with a continued switch written straight away), then gr_event_tail.
 * frame, arg: as given to the profile function; tag: the event's record
 * tag (GR_CALL..GR_C_EXCEPTION: the profile function's `what`); ts: the
 * calling thread's state (borrowed); code_slot: the event's code id and
 * its cache slot (GR_CODE_SLOT).  Out of line, so that the fast path
 * without a switch stays short; six arguments, all in registers; returns
 * 0 (the profile function's return value: a tail call). */
int gr_event_switched(gr_thread *t, PyFrameObject *frame, int tag, PyObject *arg, PyThreadState *ts,
                      uint64_t code_slot);

/* gr_event_switched of a C_RETURN from the profile function's leaf path
 * (profile.c, profile_c_event), whose tests it need not make again: the
 * times side channel off (r->tw), arg not greenlet.settrace. */
int gr_event_switched_c_return(gr_thread *t, PyFrameObject *frame, PyObject *arg, PyThreadState *ts,
                               uint64_t code_slot);

#endif
