/* script_shape.h - the structure of a trace that `greenreplay script`
 * reproduces: threads, greenlets (creation, parents, seeds, switches,
 * throws, deaths), and inside each greenlet the tree of frames (Python and
 * C) with, in each frame, the actions it performs in order (calls, C calls,
 * marks, switches, start, stop...).
 *
 * gr_shape_build replays the records once, the way the script will have
 * to act them out: a CALL opens a frame inside the current one, a RETURN
 * closes it, a SWITCH is an action of the origin's current frame and
 * resumes the target where it left off.  Ground truth corrects the profile
 * events: a MARK's real stack (or the STACK record at stop) that holds
 * frames the profile events did not show opens them (calls the profiler
 * missed, rebuilt), and closes frames it no longer holds (returns the
 * profiler missed).  What the script cannot act out becomes a note.
 *
 * The result also says, for every C call record, whether the script
 * reproduces it by name (gr_shape.ckeep): `diff --c-names script` compares
 * C calls on exactly those names, so that a recording of the script can be
 * compared with the original trace.
 *
 * Everything here is pure (no I/O); script.h renders a shape as Python.
 */
#ifndef GR_SCRIPT_SHAPE_H
#define GR_SCRIPT_SHAPE_H

#include "reader.h"
#include "text.h"

#include <stddef.h>
#include <stdint.h>

/* "no frame / act / record" */
#define GR_NONE SIZE_MAX

/* What an action does (gr_act.kind). */
enum gr_act_kind {
    GR_ACT_CALL = 1, /* call Python frame `frame` (rebuilt when frames[frame].invisible) */
    GR_ACT_CCALL,    /* make C call `frame` (a C frame; its own acts run inside it) */
    GR_ACT_MARK,     /* greenreplay.mark(label) outside a bracketing C call of mark */
    GR_ACT_SWITCH,   /* switch to greenlet gid */
    GR_ACT_THROW,    /* throw into greenlet gid */
    GR_ACT_PARENT,   /* set the parent of greenlet gid to gid2 */
    GR_ACT_START,    /* greenreplay.start() */
    GR_ACT_STOP,     /* greenreplay.stop(), then end the process */
    GR_ACT_SUSPEND,  /* before start: a seeded greenlet switches to gid2 (0: its
                        thread's root greenlet) and stays there until resumed */
    GR_ACT_PARK,     /* before start: thread tid waits for its first turn */
    GR_ACT_HANDOVER, /* let thread tid2 run; then wait for this thread's next
                        turn (block) or end (not block) */
    GR_ACT_GENLOCAL, /* keep generator gen in a local: the generator is
                        finalized when the frame returns */
    GR_ACT_RAISE,    /* raise: the greenlet dies with an exception */
    GR_ACT_HOOK,     /* a late thread installs threading's profile hook
                        (sys.setprofile), as threading does when a thread
                        starts during the recording */
    GR_ACT_CSWITCH,  /* a visible switch() call to greenlet gid that
                        returned: what a CCALL of greenlet.switch holding
                        one SWITCH gives, in one act (gr_shape_build_path
                        makes it, so that a hub's loop that never returns
                        holds one act per switch, not a frame and two) */
};

/* How a frame ended (gr_frame.end). */
enum gr_frame_end {
    GR_END_OPEN = 0,   /* no return seen (open at stop, or lost) */
    GR_END_RETURN,     /* RETURN / C_RETURN */
    GR_END_EXCEPTION,  /* C_EXCEPTION */
};

/* One action of a frame (32 bytes: one per action of the trace; the
 * fields no kind shares overlap, and indices are 32-bit, GR_NONE32 for
 * none). */
typedef struct gr_act {
    uint8_t kind;        /* enum gr_act_kind */
    uint8_t catch_;      /* SWITCH, THROW, SUSPEND, HANDOVER: resumed by a throw:
                            the script catches the exception here */
    uint8_t visible;     /* SUSPEND: by a visible switch() call (its c_return
                            is in the trace) */
    uint8_t armed;       /* SWITCH/THROW made inside a trace function: acted
                            out at the next CALL (gr_act.arm of that CALL) */
    uint8_t block;       /* HANDOVER: wait for the next turn */
    uint8_t start;       /* HANDOVER: tid2 is started here (a late thread) */
    uint8_t hidden_install; /* CALL with arm: install the trace function
                               without a visible C call (and remove it after) */
    uint8_t unstarted;   /* THROW: the target had not started (the exception
                            kind decides whether it dies normally) */
    uint32_t frame32;    /* CALL, CCALL: the frame (read with gr_act_frame) */
    union {
        uint32_t arm32;  /* CALL: act index of the switch to make inside the
                            trace function before the call (gr_act_arm) */
        uint32_t gen32;  /* GENLOCAL: index into gr_shape.gens (gr_act_gen) */
    };
    union {
        struct {
            uint64_t tid, tid2; /* PARK, HOOK: tid; HANDOVER: from tid to tid2 */
        };
        struct {
            uint64_t gid, gid2; /* SWITCH/THROW: target; PARENT: gid, new parent
                                   gid2; SUSPEND: gid (gid2, its target: 0) */
        };
        uint64_t label;  /* MARK: string id */
    };
} gr_act;

/* "none" in a 32-bit index of gr_act (frames, acts and gens stay below). */
#define GR_NONE32 UINT32_MAX

static inline size_t gr_none32(uint32_t v)
{
    return v == GR_NONE32 ? GR_NONE : (size_t)v;
}

/* Act a's frame (CALL, CCALL), switch made in the trace function (CALL)
 * and generator (GENLOCAL): an index, or GR_NONE. */
static inline size_t gr_act_frame(const gr_act *a) { return gr_none32(a->frame32); }
static inline size_t gr_act_arm(const gr_act *a) { return gr_none32(a->arm32); }
static inline size_t gr_act_gen(const gr_act *a) { return gr_none32(a->gen32); }

/* One frame: a Python function invocation or a C call. */
typedef struct gr_frame {
    uint32_t code;       /* code id in the trace */
    uint8_t is_c;
    uint8_t seed;        /* open before start (from a GREENLET seed) */
    uint8_t external;    /* greenreplay's own code (start/stop wrappers) or
                            a frame inside it: never generated */
    uint8_t invisible;   /* rebuilt from a real stack: the profiler did not
                            see its call */
    uint8_t finalizer;   /* Python: a generator finalized (GENLOCAL or
                            generator.close), not a call of its own */
    uint8_t end;         /* enum gr_frame_end */
    uint8_t keep;        /* C: reproduced by name (see gr_shape.ckeep) */
    uint8_t settrace_on; /* C sys.settrace: installs the script's trace function */
    uint8_t hook;        /* C: the program changed the profile slot during it
                            (a HOOK record): acted out as sys.setprofile, and
                            compared by diff --c-names script as any C call */
    uint8_t setprofile_clear; /* ... and cleared it (HOOK cleared/restored):
                                 sys.setprofile(None), else sys.setprofile(_P) */
    uint8_t bound;       /* C: only its c_return was seen (CPython issue 122029:
                            a bound method object wrapping a builtin): the
                            script calls the builtin through such a method */
    size_t gen;          /* C generator.close kept: index into gens, else GR_NONE */
    uint64_t tid;        /* its thread (one frame per call: 48 bytes; its
                            records, for gr_shape.ckeep, are kept beside
                            only when the shape has one) */
    union {              /* its acts, in order: indices into gr_shape.acts;
                            read them with gr_frame_acts */
        uint32_t *heap;  /* owned, when cap_acts > GR_FRAME_INLINE */
        uint32_t in[2];  /* up to GR_FRAME_INLINE (most frames have 0 to 2) */
    } acts;
    uint32_t nacts, cap_acts;
} gr_frame;

/* Acts a frame holds without an allocation of its own. */
#define GR_FRAME_INLINE 2

/* Frame f's acts (f->nacts of them). */
static inline const uint32_t *gr_frame_acts(const gr_frame *f)
{
    return f->cap_acts > GR_FRAME_INLINE ? f->acts.heap : f->acts.in;
}

/* One greenlet (or, without greenlet, one thread's only "greenlet", gid 0). */
typedef struct gr_green {
    uint64_t tid, gid;
    uint64_t parent_first; /* parent at first sight (GREENLET record), 0 none */
    uint64_t flags;        /* GREENLET flags */
    uint64_t first_rec;    /* its GREENLET record */
    uint8_t root;          /* main greenlet of its thread */
    uint8_t seeded;        /* its GREENLET record has a seed stack */
    uint8_t idle_seed;     /* seeded and not running at first sight: the
                              script suspends it before start */
    uint8_t starting;      /* start() was called in it */
    uint8_t dead;
    uint8_t dies_throw;    /* died with an exception (THROW record) */
    uint8_t thrown_unstarted; /* killed by a throw before it ran */
    size_t run;            /* outermost frame, GR_NONE: the script uses a run
                              function that does nothing */
    size_t seed_top;       /* innermost seed frame, GR_NONE */
    /* state while building (internal) */
    size_t *stack;         /* open frames, outermost first */
    size_t depth, cap;
    uint64_t parent_now;
    uint64_t resumed_tracing; /* tracing level it runs at (set when it starts) */
    size_t resume_act, resume_cframe, pending_arm, last_returned;
    int running, resumes, fresh, based;
} gr_green;

/* One thread. */
typedef struct gr_sthread {
    uint64_t tid;
    uint64_t root;        /* gid of its main greenlet, 0 if not seen */
    uint64_t first;       /* gid of the greenlet running when first seen */
    int has_first;
    uint64_t next_tid;    /* thread to let run once this one has ended, 0 */
    uint8_t module;       /* runs in the script's main thread */
    uint8_t park_first;   /* waits for its first turn before its first
                             greenlet's outermost call (no seed to park in) */
    uint8_t late;         /* started during the recording by threading (its
                             seed ends in the C call sys.setprofile of the
                             profile hook, CPython 3.12+): the script starts
                             it at its first turn and installs the hook */
    uint8_t raw;          /* late too, but never reached by the profile
                             function (no profile event, marks without it:
                             started with _thread.start_new_thread): the
                             script starts it at its first turn without
                             installing threading's hook */
    uint8_t alive_at_stop; /* has a STACK record after STOP */
    size_t last_handover; /* its last HANDOVER act, GR_NONE */
    uint64_t last_handover_rec; /* the record that act comes from */
    /* internal */
    uint64_t running;
    size_t last_settrace;
    int shutdown, expect_first, ended, hook_seen, started;
} gr_sthread;

/* A real generator the script creates (for finalizations). */
typedef struct gr_gen {
    uint32_t code;        /* Python code whose frame it finalizes, 0 unknown */
} gr_gen;

/* A note: something the script cannot act out. */
typedef struct gr_note_s {
    char *text;           /* owned, one line */
    size_t count;         /* how many times it happened */
    uint64_t first_rec;   /* record of the first time, GR_NONE */
} gr_snote;

/* The shape of a trace.  Owns everything but `t`; free with
 * gr_shape_free. */
typedef struct gr_shape {
    const gr_trace *t;    /* borrowed; must outlive the shape */
    int anonymize;        /* names: f1, f2, ... and m1, m2, ... */
    gr_frame *frames;
    size_t nframes, cap_frames;
    gr_act *acts;
    size_t nacts, cap_acts;
    gr_green *greens;     /* in order of first sight */
    size_t ngreens, cap_greens;
    gr_sthread *threads;  /* in order of first sight */
    size_t nthreads, cap_threads;
    gr_gen *gens;
    size_t ngens, cap_gens;
    uint8_t *ckeep;       /* [t->nrecs] (NULL when built from a streamed trace,
                             gr_shape_build_path): for C_CALL, C_RETURN, C_EXCEPTION
                             records, 1 when the script reproduces the call by
                             its recorded name, 0 when by the neutral C call */
    uint64_t start_tid, start_gid;
    int has_start, has_stop;
    int start_at_top;     /* start() with no frame of the program open (whole-program
                             recording: the trace starts at the module's CALL) */
    int stop_at_exit;     /* recording ended at interpreter exit: no explicit stop */
    int stop_at_end;      /* no STOP and no frame open at the end: the script
                             stops at the end of its module */
    uint64_t module_tid;  /* thread acted out by the script's main thread */
    int launched_m;       /* the program was run with `python -m`: runpy's
                             launch frames below its <module> are left out
                             (launch.h), the script runs as a file */
    int uses_greenlet;    /* some gid is non-zero */
    uint64_t in_profile;  /* 1 + index of the first SWITCH/THROW made inside the
                             program's own profile function (callback mode), 0 none */
    gr_snote *notes;      /* in order of first occurrence */
    size_t nnotes, cap_notes;
    /* name numbering (anonymize) */
    uint64_t *qual_ids;   /* [t->nstrings + 1]: 1-based number of a qualname, 0 none */
    uint64_t *label_ids;  /* [t->nstrings + 1]: 1-based number of a label, 0 none */
    void *internal;       /* owned: lookup tables */
} gr_shape;

/* Build the shape of t (a trace read successfully, complete or truncated)
 * into *s (need not be initialised).  anonymize: number qualnames and
 * labels for gr_shape_name/gr_shape_label, and reproduce only the C calls
 * an anonymized script keeps by name (script_builtins.h).  Exits(2) on
 * out of memory.  Returns 0. */
int gr_shape_build(gr_shape *s, const gr_trace *t, int anonymize);

/* The same from the trace file at path, read as a stream twice (a first
 * pass for what the walk must know ahead of a record, then the walk): the
 * records are never all in memory, and the shape has no ckeep.  *t (need
 * not be initialised) is the second reading, left at its end: the
 * definitions (names) the shape refers to, gr_trace_count(t) records;
 * the shape borrows it.  Returns GR_READ_OK, or the reader's status with
 * the message in t->err (the shape then holds nothing).  gr_trace_free(t)
 * in every case.  Exits(2) on out of memory. */
int gr_shape_build_path(gr_shape *s, gr_trace *t, const char *path, int anonymize);

/* Greenlets spilled by gr_shape_build_path.  A dead greenlet that no later
 * record names (not a thread's root or first greenlet) is written, frames
 * and acts, to a temporary file once the walk passes its last record (its
 * C calls kept by name decided then), and its slots are reused: the shape
 * in memory holds the frames of the greenlets still alive or named later,
 * not the whole trace's.  A spilled greenlet's run is GR_NONE in
 * gr_green: gr_shape_spilled says so (and whether its outermost frame is
 * external); gr_shape_reload brings its frames back (new indices, returns
 * its outermost frame), gr_shape_green_frames lists them, and
 * gr_shape_unload frees them again.  Exits(2) if the file cannot be read
 * back. */
int gr_shape_spilled(const gr_shape *s, size_t green, int *run_external);
size_t gr_shape_reload(gr_shape *s, size_t green);
const uint32_t *gr_shape_green_frames(const gr_shape *s, size_t green, size_t *n);
void gr_shape_unload(gr_shape *s, size_t green);

/* Release what *s owns and zero it (t is not freed). */
void gr_shape_free(gr_shape *s);

/* Append the name the script gives code id `code`: its qualname, or "fN"
 * when anonymizing (Python code; C code keeps its name, which an
 * anonymized script never prints).  Raw bytes, not escaped. */
void gr_shape_name(const gr_shape *s, gr_sb *sb, uint32_t code);

/* Append the text of label string id `label`: raw, or "mN" when
 * anonymizing. */
void gr_shape_label(const gr_shape *s, gr_sb *sb, uint64_t label);

/* Whether code id `code` is greenreplay's own Python code (file under
 * "<greenreplay>/"). */
int gr_shape_is_recorder_code(const gr_trace *t, uint32_t code);

/* Thread tid, greenlet (tid, gid) of the shape, or NULL: one hash lookup
 * (scripts of 100,000 threads stay linear). */
const gr_sthread *gr_shape_thread(const gr_shape *s, uint64_t tid);
const gr_green *gr_shape_green(const gr_shape *s, uint64_t tid, uint64_t gid);

/* Whether code id `code` is a module's top-level Python code (qualname
 * "<module>"). */
int gr_shape_is_module_code(const gr_trace *t, uint32_t code);

/* Whether C code id `code` is named NAME (NUL-terminated) exactly, or ends
 * with "." NAME when suffix is non-zero. */
int gr_shape_c_named(const gr_trace *t, uint32_t code, const char *name, int suffix);

#endif
