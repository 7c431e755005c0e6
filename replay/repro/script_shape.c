/* script_shape.c - the structure of a trace as the script acts it out
 * (script_shape.h). */
#include "script_shape.h"

#include "dump.h"
#include "idmap.h"
#include "launch.h"
#include "outfile.h"
#include "script_builtins.h"
#include "text.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Per thread (by its index in gr_shape.threads), what the pass over the
 * records before the walk follows. */
typedef struct pre_thread {
    uint64_t last;      /* its last record other than STACK */
    uint64_t call;      /* its last record, a CALL awaiting its thread's next record */
    uint64_t call_gid;
    uint32_t call_code;
    uint8_t has_call;   /* `call` is set */
    uint8_t seen;       /* bit 1: a profile event, bit 2: an unprofiled MARK */
    uint8_t has_run;    /* run_gid is set */
    uint64_t run_gid;   /* the greenlet its latest records name, */
    uint64_t run_last;  /* and the last of them: put in shape_maps.touch when
                           another greenlet's record comes (spilling) */
    uint8_t prof_set;   /* the program's own profile function is installed
                           (HOOK slot 1 set, until cleared) */
} pre_thread;

/* What the walk needs to know ahead of a record, gathered by one pass over
 * the records before it (pre_feed), so that the walk reads each record
 * once, in order: a streamed trace (gr_shape_build_path) holds only one
 * chunk of records at a time. */
typedef struct shape_pre {
    uint64_t nrecs;       /* records of the trace */
    uint64_t first_tid;   /* thread of the first record */
    int any;              /* a record was seen */
    gr_launch_scan launch; /* runpy's launch frames (launch.h) */
    pre_thread *pt;       /* [cap_pt], by thread index */
    size_t cap_pt;
    int prev_thread;      /* the previous record is THREAD of prev_tid */
    uint64_t prev_tid;
    uint8_t *pairs;       /* bit per record: a CALL whose thread's next record
                             is its RETURN (the frame returns at once) */
    size_t cap_pairs;
    uint16_t *resume;     /* [nsw] by SWITCH/THROW ordinal: Python frames its
                             origin has when it is resumed next (the INSTR
                             after that resume, CPython 3.12+), RESUME_NONE */
    size_t *waiting;      /* [nsw]: the ordinal waiting before it for the same
                             greenlet's resume, + 1 (freed after the pass) */
    size_t nsw, cap_resume, cap_waiting;
    gr_idmap pending;     /* (tid, gid) -> last ordinal + 1 of the greenlet's
                             switches away not resumed yet */
    size_t resolve;       /* ordinals + 1 whose value the next record gives
                             (a chain through waiting), 0 none */
    uint64_t resolve_tid, resolve_gid;
    int stop_seen, after_stop; /* a STOP was seen; the records since are STACK */
    uint64_t stop_tid, stop_gid;
    uint64_t stop_flags;  /* the running STACK record after STOP: flags, */
    size_t stop_n;        /* depth (GR_NONE: none) */
    uint32_t stop_ids[GR_STACK_CAP]; /* and code ids */
    size_t walk_sw;       /* walk: ordinal of the next SWITCH/THROW */
    int stopped;          /* walk: a STOP ended it */
    uint64_t last_tid;    /* walk: thread of the last record */
} shape_pre;

#define RESUME_NONE 0xFFFFu /* no INSTR: above GR_STACK_CAP, never trimmed to */

/* Per greenlet (by its index in gr_shape.greens): the frames made in it,
 * and where they went once spilled (gr_shape_build_path: a dead greenlet
 * that no record touches any more is written to a temporary file and read
 * back only while the script renders it). */
typedef struct green_spill {
    uint32_t *fl;         /* its frames, in the order they were made */
    size_t nfl, capfl;
    uint64_t off, len;    /* spilled: its bytes in the spill file */
    uint8_t spilled;
    uint8_t run_external; /* spilled: its outermost frame is external */
} green_spill;

/* A generator.close call kept by name (keep_c): its generator is made in
 * the order such calls were made, after the walk's own generators. */
typedef struct keep_gen {
    uint64_t ord;         /* ordinal of the call among generator.close frames */
    uint32_t code;        /* the generator's code, 0 unknown */
    size_t gen;           /* its index in gr_shape.gens, after the walk */
} keep_gen;

/* Where each frame or act slot of a greenlet being spilled goes in the
 * spill file: by slot, its index there; the entry is the greenlet's only
 * when the index leads back to the slot (slot[index] == slot), so that
 * nothing needs clearing between greenlets. */
typedef struct spill_local {
    uint32_t *at;         /* [cap]: by slot, local index */
    size_t cap;
    uint32_t *slot;       /* [cap_slot]: by local index, the slot */
    size_t n, cap_slot;
} spill_local;

/* Lookup tables (gr_shape.internal). */
typedef struct shape_maps {
    shape_pre pre;
    gr_idmap greens;  /* (tid, gid) -> index in greens */
    gr_idmap threads; /* (tid, 0) -> index in threads */
    gr_idmap notes;   /* (hash, len) -> index in notes */
    gr_idmap quals;   /* (hash, len) of a qualname -> number */
    gr_idmap labels;  /* (hash, len) of a label -> number */
    gr_idmap gencode; /* (code, 0) -> 1: code known to run as a generator */
    uint64_t *frecs;  /* with ckeep: [2 * frame] its CALL/C_CALL record (GR_NONE
                         for seed and rebuilt frames), [2 * frame + 1] its
                         RETURN/C_RETURN/C_EXCEPTION record (GR_NONE) */
    size_t cap_frecs;
    uint64_t nquals, nlabels;
    green_spill *gsp;     /* [cap_gsp] by green index */
    size_t cap_gsp;
    FILE *spill;          /* the spill file (gr_tmpfile(): gone when closed or
                             at exit), NULL before the first spill */
    uint64_t spill_end;   /* bytes written to it */
    int spill_on;         /* spill dead greenlets (a streamed walk) */
    gr_idmap touch;       /* (tid, gid) -> index + 1 of the last record that
                             names the greenlet (its own or a switch's target) */
    uint32_t *free_frames, *free_acts; /* slots to reuse */
    size_t nfree_frames, cap_free_frames, nfree_acts, cap_free_acts;
    struct late_spill {
        uint64_t at;      /* index + 1 of its last record */
        size_t gi;
    } *late;              /* dead greenlets named by later records: a
                             min-heap on `at` */
    size_t nlate, cap_late;
    keep_gen *kg;         /* generator.close calls kept by name */
    size_t nkg, cap_kg;
    uint64_t nclose;      /* generator.close frames made so far */
    spill_local lf, la;   /* spill_encode: frames and acts of the greenlet */
    size_t thread_hint, green_hint; /* index + 1 of the last thread and
                                       greenlet looked up (most records are
                                       of the same ones as the one before) */
} shape_maps;

/* gr_frame.gen of a generator.close frame until keep_c decides: this bit
 * and the ordinal of the call (keep_gen.ord). */
#define KG_TAG (SIZE_MAX / 2 + 1)

static shape_maps *maps(const gr_shape *s) { return (shape_maps *)s->internal; }

static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* ---- names -------------------------------------------------------------- */

int gr_shape_is_recorder_code(const gr_trace *t, uint32_t code)
{
    const gr_code *c = gr_trace_code(t, code);
    if (!c || c->kind != GR_CODE_PY || !c->file)
        return 0;
    size_t n;
    const uint8_t *f = gr_trace_string(t, c->file, &n);
    static const char pre[] = "<greenreplay>/";
    return f && n >= sizeof pre - 1 && memcmp(f, pre, sizeof pre - 1) == 0;
}

static int qual_is(const gr_trace *t, uint32_t code, const char *name, int suffix)
{
    const gr_code *c = gr_trace_code(t, code);
    if (!c)
        return 0;
    size_t n, k = strlen(name);
    const uint8_t *q = gr_trace_string(t, c->qualname, &n);
    if (!q)
        return 0;
    if (n == k && memcmp(q, name, k) == 0)
        return 1;
    return suffix && n > k && q[n - k - 1] == '.' && memcmp(q + n - k, name, k) == 0;
}

int gr_shape_c_named(const gr_trace *t, uint32_t code, const char *name, int suffix)
{
    const gr_code *c = gr_trace_code(t, code);
    return c && c->kind == GR_CODE_C && qual_is(t, code, name, suffix);
}

int gr_shape_is_module_code(const gr_trace *t, uint32_t code)
{
    const gr_code *c = gr_trace_code(t, code);
    return c && c->kind == GR_CODE_PY && qual_is(t, code, "<module>", 0);
}

static int is_c(const gr_trace *t, uint32_t code)
{
    const gr_code *c = gr_trace_code(t, code);
    return c && c->kind == GR_CODE_C;
}

/* The C function of greenlet's switch/throw methods ("greenlet.greenlet.switch"
 * on every greenlet version seen; any "*greenlet*.switch" is accepted). */
static int is_greenlet_method(const gr_trace *t, uint32_t code, const char *method)
{
    if (!gr_shape_c_named(t, code, method, 1))
        return 0;
    size_t n;
    const gr_code *c = gr_trace_code(t, code);
    const uint8_t *q = gr_trace_string(t, c->qualname, &n);
    for (size_t i = 0; i + 8 <= n; i++)
        if (memcmp(q + i, "greenlet", 8) == 0)
            return 1;
    return 0;
}

static uint64_t number_of(gr_idmap *m, uint64_t *counter, const uint8_t *p, size_t n)
{
    size_t v;
    uint64_t h = hash_bytes(p, n);
    if (gr_idmap_get(m, h, n, &v))
        return v;
    gr_idmap_put(m, h, n, (size_t)++*counter);
    return *counter;
}

/* Whether Python code c is a module's top frame: its qualname "<module>"
 * names no function of the program, so anonymizing keeps it.  Renamed, it
 * could not match the script's own <module> in `diff --rename`, and a
 * module imported while the program runs would break the mapping. */
static int is_module_code(const gr_shape *s, const gr_code *c)
{
    size_t n;
    const uint8_t *q = gr_trace_string(s->t, c->qualname, &n);
    return q && n == 8 && memcmp(q, "<module>", 8) == 0;
}

/* Number the qualname of a Python code (anonymize), in order of first use. */
static void number_code(gr_shape *s, uint32_t code)
{
    const gr_code *c = gr_trace_code(s->t, code);
    if (!c || c->kind != GR_CODE_PY || s->qual_ids[c->qualname] ||
        gr_shape_is_recorder_code(s->t, code) || is_module_code(s, c))
        return;
    size_t n;
    const uint8_t *q = gr_trace_string(s->t, c->qualname, &n);
    s->qual_ids[c->qualname] = number_of(&maps(s)->quals, &maps(s)->nquals, q, n);
}

static void number_label(gr_shape *s, uint64_t label)
{
    if (label > s->t->nstrings || s->label_ids[label])
        return;
    size_t n;
    const uint8_t *q = gr_trace_string(s->t, label, &n);
    s->label_ids[label] = number_of(&maps(s)->labels, &maps(s)->nlabels, q, n);
}

void gr_shape_name(const gr_shape *s, gr_sb *sb, uint32_t code)
{
    const gr_code *c = gr_trace_code(s->t, code);
    if (!c) {
        gr_sb_printf(sb, "?code=%" PRIu32, code);
        return;
    }
    if (s->anonymize && c->kind == GR_CODE_PY && !gr_shape_is_recorder_code(s->t, code) &&
        !is_module_code(s, c)) {
        uint64_t k = c->qualname <= s->t->nstrings ? s->qual_ids[c->qualname] : 0;
        gr_sb_printf(sb, "f%" PRIu64, k);
        return;
    }
    size_t n;
    const uint8_t *q = gr_trace_string(s->t, c->qualname, &n);
    /* Anonymized, a C function keeps its name only when the script may
     * call it (a builtin it knows): an extension's functions name their
     * module ("acme_billing.total"). */
    if (s->anonymize && c->kind != GR_CODE_PY && !gr_shape_is_recorder_code(s->t, code) &&
        !(q && gr_builtin_find((const char *)q, n))) {
        gr_sb_printf(sb, "C function c%" PRIu32, code);
        return;
    }
    gr_sb_put(sb, (const char *)q, n);
}

void gr_shape_label(const gr_shape *s, gr_sb *sb, uint64_t label)
{
    if (s->anonymize) {
        uint64_t k = label <= s->t->nstrings ? s->label_ids[label] : 0;
        gr_sb_printf(sb, "m%" PRIu64, k);
        return;
    }
    size_t n;
    const uint8_t *q = gr_trace_string(s->t, label, &n);
    gr_sb_put(sb, (const char *)q, n);
}

/* ---- notes -------------------------------------------------------------- */

static void note(gr_shape *s, uint64_t rec, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void note(gr_shape *s, uint64_t rec, const char *fmt, ...)
{
    gr_sb sb;
    gr_sb_init(&sb);
    va_list ap;
    va_start(ap, fmt);
    gr_sb_vprintf(&sb, fmt, ap);
    va_end(ap);
    size_t i;
    uint64_t h = hash_bytes((const uint8_t *)gr_sb_str(&sb), sb.len);
    if (gr_idmap_get(&maps(s)->notes, h, sb.len, &i)) {
        s->notes[i].count++;
        gr_sb_free(&sb);
        return;
    }
    s->notes = gr_xgrow(s->notes, &s->cap_notes, s->nnotes + 1, sizeof *s->notes);
    i = s->nnotes++;
    s->notes[i].text = gr_sb_take(&sb);
    s->notes[i].count = 1;
    s->notes[i].first_rec = rec;
    gr_idmap_put(&maps(s)->notes, h, strlen(s->notes[i].text), i);
}

/* Name of code id for a note (anonymized like the script).  Owned by the
 * caller's buffer; returned string valid until the buffer changes. */
static const char *nm(const gr_shape *s, gr_sb *sb, uint32_t code)
{
    gr_sb tmp;
    gr_sb_init(&tmp);
    gr_shape_name(s, &tmp, code);
    gr_sb_reset(sb);
    gr_sb_escape(sb, tmp.s ? tmp.s : "", tmp.len, 0);
    gr_sb_free(&tmp);
    return gr_sb_str(sb);
}

/* ---- building blocks ---------------------------------------------------- */

/* An index (of a frame, act or gen) for gr_act's 32-bit fields. */
static uint32_t idx32(size_t i)
{
    if (i == GR_NONE)
        return GR_NONE32;
    if (i >= GR_NONE32) {
        fputs("greenreplay: out of memory\n", stderr);
        exit(2);
    }
    return (uint32_t)i;
}

/* A free frame slot (a spilled greenlet's), or a new one. */
static size_t frame_slot(gr_shape *s)
{
    shape_maps *m = maps(s);
    if (m->nfree_frames)
        return m->free_frames[--m->nfree_frames];
    s->frames = gr_xgrow(s->frames, &s->cap_frames, s->nframes + 1, sizeof *s->frames);
    return s->nframes++;
}

/* Add frame f to greenlet gi's frames. */
static void green_frame(gr_shape *s, size_t gi, size_t f)
{
    green_spill *sp = &maps(s)->gsp[gi];
    sp->fl = gr_xgrow(sp->fl, &sp->capfl, sp->nfl + 1, sizeof *sp->fl);
    sp->fl[sp->nfl++] = idx32(f);
}

/* A new frame of greenlet g (thread tid) running code. */
static size_t new_frame(gr_shape *s, const gr_green *g, uint32_t code, uint64_t tid)
{
    size_t i = frame_slot(s);
    gr_frame *f = &s->frames[i];
    memset(f, 0, sizeof *f);
    f->code = code;
    f->is_c = (uint8_t)is_c(s->t, code);
    f->tid = tid;
    if (s->ckeep) {
        shape_maps *m = maps(s);
        m->frecs = gr_xgrow(m->frecs, &m->cap_frecs, 2 * (i + 1), sizeof *m->frecs);
        m->frecs[2 * i] = m->frecs[2 * i + 1] = GR_NONE;
    }
    f->gen = GR_NONE;
    if (f->is_c && gr_shape_c_named(s->t, code, "generator.close", 0))
        f->gen = KG_TAG | (size_t)maps(s)->nclose++; /* keep_c decides */
    number_code(s, code);
    green_frame(s, (size_t)(g - s->greens), i);
    return i;
}

/* Frame f's CALL/C_CALL record (end 0) or its end's (end 1), for ckeep. */
static void frame_rec(gr_shape *s, size_t f, int end, uint64_t rec)
{
    if (s->ckeep)
        maps(s)->frecs[2 * f + (size_t)end] = rec;
}

/* A free act slot (a spilled greenlet's), or a new one. */
static size_t act_slot(gr_shape *s)
{
    shape_maps *m = maps(s);
    if (m->nfree_acts)
        return m->free_acts[--m->nfree_acts];
    if (s->nacts >= UINT32_MAX) { /* gr_frame.acts holds 32-bit indices */
        fputs("greenreplay: out of memory\n", stderr);
        exit(2);
    }
    s->acts = gr_xgrow(s->acts, &s->cap_acts, s->nacts + 1, sizeof *s->acts);
    return s->nacts++;
}

static size_t new_act(gr_shape *s, int kind)
{
    size_t i = act_slot(s);
    gr_act *a = &s->acts[i];
    memset(a, 0, sizeof *a);
    a->kind = (uint8_t)kind;
    a->frame32 = GR_NONE32;
    a->arm32 = GR_NONE32; /* and gen32 */
    return i;
}

/* Frame f's acts, to change. */
static uint32_t *acts_of(gr_frame *f)
{
    return f->cap_acts > GR_FRAME_INLINE ? f->acts.heap : f->acts.in;
}

/* Room for one more act in f: most frames have one or two, held in the
 * frame itself (GR_FRAME_INLINE); beyond, an allocation that doubles. */
static void frame_room(gr_frame *f)
{
    if (f->cap_acts < GR_FRAME_INLINE)
        f->cap_acts = GR_FRAME_INLINE;
    if (f->nacts < f->cap_acts)
        return;
    if (f->cap_acts >= UINT32_MAX / 2) {
        fputs("greenreplay: out of memory\n", stderr);
        exit(2);
    }
    uint32_t cap = 2 * f->cap_acts;
    if (f->cap_acts == GR_FRAME_INLINE) {
        uint32_t *heap = gr_xrealloc(NULL, cap * sizeof *heap);
        memcpy(heap, f->acts.in, f->nacts * sizeof *heap);
        f->acts.heap = heap;
    } else {
        f->acts.heap = gr_xrealloc(f->acts.heap, cap * sizeof *f->acts.heap);
    }
    f->cap_acts = cap;
}

static void frame_add(gr_shape *s, size_t frame, size_t act)
{
    gr_frame *f = &s->frames[frame];
    frame_room(f);
    acts_of(f)[f->nacts++] = (uint32_t)act;
}

/* Insert act before position pos of frame's acts. */
static void frame_insert(gr_shape *s, size_t frame, size_t pos, size_t act)
{
    gr_frame *f = &s->frames[frame];
    frame_room(f);
    uint32_t *acts = acts_of(f);
    memmove(acts + pos + 1, acts + pos, (f->nacts - pos) * sizeof *acts);
    acts[pos] = (uint32_t)act;
    f->nacts++;
}

/* Remove act number i of frame f (the later ones move up). */
static void frame_remove(gr_frame *f, size_t i)
{
    uint32_t *acts = acts_of(f);
    memmove(acts + i, acts + i + 1, (f->nacts - i - 1) * sizeof *acts);
    f->nacts--;
}

static size_t new_gen(gr_shape *s, uint32_t code)
{
    s->gens = gr_xgrow(s->gens, &s->cap_gens, s->ngens + 1, sizeof *s->gens);
    s->gens[s->ngens].code = code;
    return s->ngens++;
}

static gr_sthread *thread_of(gr_shape *s, uint64_t tid, int create)
{
    size_t i, *hint = &maps(s)->thread_hint;
    if (*hint && s->threads[*hint - 1].tid == tid)
        return &s->threads[*hint - 1];
    if (gr_idmap_get(&maps(s)->threads, tid, 0, &i)) {
        *hint = i + 1;
        return &s->threads[i];
    }
    if (!create)
        return NULL;
    s->threads = gr_xgrow(s->threads, &s->cap_threads, s->nthreads + 1, sizeof *s->threads);
    i = s->nthreads++;
    gr_sthread *th = &s->threads[i];
    memset(th, 0, sizeof *th);
    th->tid = tid;
    th->last_settrace = GR_NONE;
    th->last_handover = GR_NONE;
    gr_idmap_put(&maps(s)->threads, tid, 0, i);
    return th;
}

const gr_sthread *gr_shape_thread(const gr_shape *s, uint64_t tid)
{
    size_t i;
    return gr_idmap_get(&maps(s)->threads, tid, 0, &i) ? &s->threads[i] : NULL;
}

const gr_green *gr_shape_green(const gr_shape *s, uint64_t tid, uint64_t gid)
{
    size_t i;
    return gr_idmap_get(&maps(s)->greens, tid, gid, &i) ? &s->greens[i] : NULL;
}

static gr_green *green_of(gr_shape *s, uint64_t tid, uint64_t gid)
{
    size_t i, *hint = &maps(s)->green_hint;
    if (*hint && s->greens[*hint - 1].gid == gid && s->greens[*hint - 1].tid == tid)
        return &s->greens[*hint - 1];
    if (gr_idmap_get(&maps(s)->greens, tid, gid, &i)) {
        *hint = i + 1;
        return &s->greens[i];
    }
    return NULL;
}

static gr_green *new_green(gr_shape *s, uint64_t tid, uint64_t gid, uint64_t rec)
{
    s->greens = gr_xgrow(s->greens, &s->cap_greens, s->ngreens + 1, sizeof *s->greens);
    size_t i = s->ngreens++;
    gr_green *g = &s->greens[i];
    memset(g, 0, sizeof *g);
    shape_maps *m = maps(s);
    if (i >= m->cap_gsp) {
        size_t old = m->cap_gsp;
        m->gsp = gr_xgrow(m->gsp, &m->cap_gsp, i + 1, sizeof *m->gsp);
        memset(m->gsp + old, 0, (m->cap_gsp - old) * sizeof *m->gsp);
    }
    g->tid = tid;
    g->gid = gid;
    g->first_rec = rec;
    g->run = GR_NONE;
    g->seed_top = GR_NONE;
    g->resume_act = g->resume_cframe = g->pending_arm = g->last_returned = GR_NONE;
    if (gid)
        s->uses_greenlet = 1;
    gr_idmap_put(&maps(s)->greens, tid, gid, i);
    return g;
}

/* The greenlet a record of (tid, gid) belongs to: created on the fly (a
 * record before the greenlet's GREENLET record, gid 0 traces). */
static gr_green *green_for(gr_shape *s, uint64_t tid, uint64_t gid, uint64_t rec)
{
    gr_green *g = green_of(s, tid, gid);
    if (g)
        return g;
    g = new_green(s, tid, gid, rec);
    if (gid)
        note(s, rec, "greenlet g%" PRIu64 " has records before its GREENLET record", gid);
    return g;
}

static size_t top(const gr_green *g) { return g->depth ? g->stack[g->depth - 1] : GR_NONE; }

static void push(gr_green *g, size_t frame)
{
    g->stack = gr_xgrow(g->stack, &g->cap, g->depth + 1, sizeof *g->stack);
    g->stack[g->depth++] = frame;
}

/* The frame an action of g goes into: its top frame. */
static size_t container(gr_shape *s, gr_green *g, uint64_t rec, const char *what)
{
    size_t f = top(g);
    if (f == GR_NONE)
        note(s, rec, "%s at the top level of a greenlet (no frame open): not reproduced", what);
    return f;
}

/* Is this greenlet the thread's running one?  If not, a switch was lost:
 * follow the records (like the checker). */
static gr_green *running(gr_shape *s, gr_sthread *th, uint64_t gid, uint64_t rec)
{
    gr_green *g = green_for(s, th->tid, gid, rec);
    if (th->running != gid && th->has_first) {
        note(s, rec, "events of a greenlet that is not the running one (a switch the "
                     "recorder did not see): reproduced as if it ran");
        th->running = gid;
    }
    g->fresh = 0;
    return g;
}

/* Pop the top frame, recording how it ended. */
static size_t pop(gr_shape *s, gr_green *g, int end, uint64_t rec)
{
    size_t f = g->stack[--g->depth];
    if (end) {
        s->frames[f].end = (uint8_t)end;
        frame_rec(s, f, 1, rec);
    }
    return f;
}

/* Pop frames above position keep (keep stays), as returns the profiler did
 * not see. */
static void pop_lost(gr_shape *s, gr_green *g, size_t keep, uint64_t rec)
{
    int lost_py = 0;
    while (g->depth > keep) {
        size_t f = pop(s, g, 0, rec);
        if (!s->frames[f].is_c && !s->frames[f].external)
            lost_py++;
    }
    if (lost_py)
        note(s, rec, "returns the profiler did not see: in the script those frames return "
                     "normally (seen unless the condition that hid them is reproduced)");
}

/* Python code ids of a real stack (C entries dropped). */
static size_t py_ids(const gr_trace *t, const uint32_t *ids, size_t n, uint32_t *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!is_c(t, ids[i]))
            out[k++] = ids[i];
    return k;
}

/* Make g's open Python frames equal the real stack ids[0..n) (outermost
 * first; cut: only the innermost frames).  Frames above the common part are
 * closed (returns not seen), missing ones opened (calls not seen). */
static void reconcile(gr_shape *s, gr_green *g, const uint32_t *ids_in, size_t n_in, int cut,
                      uint64_t rec)
{
    uint32_t ids[GR_STACK_CAP];
    if (!cut) { /* runpy's frames below a -m program's <module> (launch.h) */
        size_t skip = n_in ? gr_launch_prefix(s->t, ids_in, n_in) : 0;
        if (skip) { /* ids_in is NULL for a mark with an empty stack */
            ids_in += skip;
            n_in -= skip;
        }
    }
    size_t n = py_ids(s->t, ids_in, n_in > GR_STACK_CAP ? GR_STACK_CAP : n_in, ids);
    /* Stack positions of g's open Python frames, outermost first. */
    size_t *pos = gr_xrealloc(NULL, (g->depth + 1) * sizeof *pos), np = 0;
    for (size_t i = 0; i < g->depth; i++)
        if (!s->frames[g->stack[i]].is_c)
            pos[np++] = i;
    if (cut) {
        /* Only the innermost frames are known: compare those. */
        int same = np >= n;
        for (size_t i = 0; i < n && same; i++)
            same = s->frames[g->stack[pos[np - n + i]]].code == ids[i];
        if (!same)
            note(s, rec, "a real stack cut at the depth cap differs from the calls seen: not "
                         "rebuilt");
        free(pos);
        return;
    }
    size_t common = 0;
    while (common < np && common < n && s->frames[g->stack[pos[common]]].code == ids[common])
        common++;
    if (common == np && common == n) {
        free(pos);
        return;
    }
    if (common == 0 && g->run != GR_NONE && n > 0) {
        note(s, rec, "a real stack does not hold the greenlet's outermost frame: not rebuilt");
        free(pos);
        return;
    }
    size_t keep = common ? pos[common - 1] + 1 : 0;
    free(pos);
    pop_lost(s, g, keep, rec);
    if (common < n)
        note(s, rec, "calls the profiler did not see (rebuilt from a mark's real stack): the "
                     "script makes them");
    for (size_t i = common; i < n; i++) {
        size_t f = new_frame(s, g, ids[i], g->tid);
        s->frames[f].invisible = 1;
        size_t c = top(g);
        if (c == GR_NONE) {
            if (g->run == GR_NONE)
                g->run = f;
        } else {
            size_t a = new_act(s, GR_ACT_CALL);
            s->acts[a].frame32 = idx32(f);
            frame_add(s, c, a);
        }
        push(g, f);
    }
}

/* Move C frame c (on top of g's stack, its CCALL act in frame `from`) to
 * the current top of g: its act goes to the end of the new top's acts. */
static void move_c_call(gr_shape *s, gr_green *g, size_t c, size_t from)
{
    size_t now = top(g);
    if (from != GR_NONE && now != from) {
        gr_frame *b = &s->frames[from];
        for (size_t i = b->nacts; i-- > 0;) {
            size_t ai = gr_frame_acts(b)[i];
            const gr_act *a = &s->acts[ai];
            if ((a->kind == GR_ACT_CCALL) && gr_act_frame(a) == c) {
                frame_remove(b, i);
                if (now != GR_NONE)
                    frame_add(s, now, ai);
                break;
            }
        }
    }
    push(g, c);
}

/* 3.12+: g has f Python frames (an INSTR record says so): close the
 * innermost ones beyond that, as returns the profiler did not see.  A C
 * call on top that has done nothing yet (the switch() being made) moves
 * down with the frames. */
static void trim_py(gr_shape *s, gr_green *g, uint64_t f, uint64_t rec)
{
    size_t np = 0, keep = 0;
    for (size_t i = 0; i < g->depth; i++)
        if (!s->frames[g->stack[i]].is_c && ++np == f)
            keep = i + 1;
    if (np <= f)
        return;
    size_t t0 = top(g), c = GR_NONE;
    if (t0 != GR_NONE && s->frames[t0].is_c && s->frames[t0].nacts == 0 &&
        !s->frames[t0].external && g->depth >= 2) {
        c = t0;
        g->depth--;
    }
    size_t from = top(g);
    pop_lost(s, g, keep, rec);
    if (c != GR_NONE)
        move_c_call(s, g, c, from);
}

/* Whether the next record of CALL i's thread is its RETURN (same greenlet
 * and code): the frame returns at once. */
static int returns_at_once(const gr_shape *s, uint64_t i)
{
    const shape_pre *p = &maps(s)->pre;
    return i / 8 < p->cap_pairs && (p->pairs[i / 8] >> (i % 8) & 1);
}

/* ---- record handlers ---------------------------------------------------- */

static void on_greenlet(gr_shape *s, gr_sthread *th, const gr_record *r)
{
    if (green_of(s, r->tid, r->gid)) {
        note(s, r->index, "a second GREENLET record for greenlet g%" PRIu64 ": ignored", r->gid);
        return;
    }
    gr_green *g = new_green(s, r->tid, r->gid, r->index);
    g->parent_first = g->parent_now = r->parent;
    g->flags = r->flags;
    if (r->flags & GR_GL_MAIN) {
        g->root = 1;
        th->root = r->gid;
    }
    if (th->expect_first) {
        th->first = r->gid;
        th->has_first = 1;
        th->running = r->gid;
        th->expect_first = 0;
        g->running = 1;
        g->based = 1; /* runs at tracing level 0 */
    }
    if (r->flags & GR_GL_CUT)
        note(s, r->index, "a greenlet's frames go deeper than the recorder's cap of %d: the "
                          "outer ones are unknown and not made",
             GR_STACK_CAP);
    const uint32_t *ids = gr_record_stack(s->t, r);
    size_t prev = GR_NONE;
    /* runpy's frames below a -m program's <module> (launch.h): not made */
    for (uint32_t k = (uint32_t)gr_launch_record_prefix(s->t, r); k < r->depth; k++) {
        if (is_c(s->t, ids[k])) {
            if (!(th->late && !th->raw && k == r->depth - 1))
                note(s, r->index, "a C function in a greenlet's seed stack: not reproduced");
            continue;
        }
        size_t f = new_frame(s, g, ids[k], r->tid);
        gr_frame *fr = &s->frames[f];
        fr->seed = 1;
        fr->external = (uint8_t)(gr_shape_is_recorder_code(s->t, ids[k]) ||
                                 (prev != GR_NONE && s->frames[prev].external));
        if (prev == GR_NONE)
            g->run = f;
        else if (!fr->external) {
            size_t a = new_act(s, GR_ACT_CALL);
            s->acts[a].frame32 = idx32(f);
            frame_add(s, prev, a);
        }
        push(g, f);
        prev = f;
    }
    g->seeded = g->depth > 0;
    g->seed_top = top(g);
    if (g->seeded && !g->running) {
        g->idle_seed = 1;
        size_t c = top(g);
        if (s->frames[c].external)
            note(s, r->index, "a greenlet suspended inside greenreplay's own code: not "
                              "reproduced");
        else {
            size_t a = new_act(s, GR_ACT_SUSPEND);
            s->acts[a].gid = r->gid;
            frame_add(s, c, a);
            g->resume_act = a;
        }
    }
}

static void on_call(gr_shape *s, gr_sthread *th, const gr_record *r)
{
    gr_green *g = running(s, th, r->gid, r->index);
    size_t t0 = top(g);
    int ext = gr_shape_is_recorder_code(s->t, r->code) ||
              (t0 != GR_NONE && s->frames[t0].external);
    size_t f = new_frame(s, g, r->code, r->tid);
    frame_rec(s, f, 0, r->index);
    s->frames[f].external = (uint8_t)ext;
    if (ext) {
        push(g, f);
        return;
    }
    int pair = returns_at_once(s, r->index);
    size_t lr = g->last_returned;
    size_t dummy;
    int genlike = gr_idmap_get(&maps(s)->gencode, r->code, 0, &dummy);
    if (t0 == GR_NONE) {
        if (g->run == GR_NONE) {
            g->run = f;
        } else if (pair && lr == g->run) {
            /* A generator finalized after the run function returned (its
             * frame held the last reference): hold one in that frame. */
            size_t a = new_act(s, GR_ACT_GENLOCAL);
            s->acts[a].gen32 = idx32(new_gen(s, r->code));
            frame_add(s, lr, a);
            s->frames[f].finalizer = 1;
        } else {
            note(s, r->index, "a call after the greenlet's outermost frame returned: not "
                              "reproduced");
            s->frames[f].external = 1;
        }
    } else if (pair && lr != GR_NONE && genlike && !s->frames[lr].is_c) {
        /* A generator finalized when the frame that held it returned. */
        size_t a = new_act(s, GR_ACT_GENLOCAL);
        s->acts[a].gen32 = idx32(new_gen(s, r->code));
        frame_add(s, lr, a);
        s->frames[f].finalizer = 1;
    } else {
        size_t a = new_act(s, GR_ACT_CALL);
        s->acts[a].frame32 = idx32(f);
        if (g->pending_arm != GR_NONE) {
            if (s->frames[t0].is_c)
                note(s, r->index, "a switch made inside a trace function, followed by a call "
                                  "from C: reproduced without the trace function");
            else {
                s->acts[a].arm32 = idx32(g->pending_arm);
                if (th->last_settrace != GR_NONE)
                    s->frames[th->last_settrace].settrace_on = 1;
                else
                    s->acts[a].hidden_install = 1;
            }
            g->pending_arm = GR_NONE;
        }
        frame_add(s, t0, a);
        /* A Python frame called directly from a C function that resumes
         * generators: its code runs as a generator. */
        if (s->frames[t0].is_c) {
            uint32_t cc = s->frames[t0].code;
            if (gr_shape_c_named(s->t, cc, "builtins.next", 0) ||
                gr_shape_c_named(s->t, cc, "generator.send", 0) ||
                gr_shape_c_named(s->t, cc, "generator.throw", 0) ||
                gr_shape_c_named(s->t, cc, "generator.close", 0))
                gr_idmap_put(&maps(s)->gencode, r->code, 0, 1);
        }
    }
    g->last_returned = GR_NONE;
    push(g, f);
}

static void on_return(gr_shape *s, gr_sthread *th, const gr_record *r)
{
    gr_green *g = running(s, th, r->gid, r->index);
    size_t k = g->depth;
    while (k > 0) {
        const gr_frame *f = &s->frames[g->stack[k - 1]];
        if (!f->is_c && f->code == r->code)
            break;
        k--;
    }
    if (k == 0) {
        gr_sb b;
        gr_sb_init(&b);
        note(s, r->index, "a return of %s without its call: not reproduced", nm(s, &b, r->code));
        gr_sb_free(&b);
        return;
    }
    pop_lost(s, g, k, r->index);
    size_t f = pop(s, g, GR_END_RETURN, r->index);
    g->last_returned = f;
    if (g->depth == 0 && f == g->run && g->root && th->module)
        th->shutdown = 1;
}

static void on_c_call(gr_shape *s, gr_sthread *th, const gr_record *r)
{
    gr_green *g = running(s, th, r->gid, r->index);
    size_t t0 = top(g);
    size_t f = new_frame(s, g, r->code, r->tid);
    frame_rec(s, f, 0, r->index);
    g->last_returned = GR_NONE;
    if ((t0 != GR_NONE && s->frames[t0].external) ||
        gr_shape_c_named(s->t, r->code, "_greenreplay.stop", 1)) {
        s->frames[f].external = 1;
        push(g, f);
        return;
    }
    if (t0 == GR_NONE) {
        note(s, r->index, "a C call at the top level of a greenlet (no Python frame open): not "
                          "reproduced");
        s->frames[f].external = 1;
    } else if (s->frames[t0].is_c) {
        note(s, r->index, "a C call inside a C call (a return the profiler did not see): not "
                          "reproduced");
        s->frames[f].external = 1;
    } else {
        size_t a = new_act(s, GR_ACT_CCALL);
        s->acts[a].frame32 = idx32(f);
        frame_add(s, t0, a);
        if (gr_shape_c_named(s->t, r->code, "sys.settrace", 0))
            th->last_settrace = f;
    }
    push(g, f);
}

static void on_c_return(gr_shape *s, gr_sthread *th, const gr_record *r);

/* HOOK: the program changed the profile slot during the C call r->code
 * (sys.setprofile): that call's c_return went to the program's function.
 * Acted out as the same call: sys.setprofile(_P) when the program set a
 * function, sys.setprofile(None) when it cleared the slot. */
static void on_hook(gr_shape *s, gr_sthread *th, const gr_record *r)
{
    if (r->flags != GR_HOOK_PROFILE)
        return; /* the greenlet callback slot: no C call of its own to reshape */
    gr_green *g = green_for(s, th->tid, r->gid, r->index);
    if (!r->code) {
        /* Made through the recorder's own sys.setprofile: its c_return
         * follows; only say what the call did. */
        if (g->depth > 0) {
            gr_frame *f = &s->frames[g->stack[g->depth - 1]];
            if (f->is_c && gr_shape_c_named(s->t, f->code, "sys.setprofile", 0))
                f->setprofile_clear = r->tracing != GR_HOOK_SET;
        }
        return;
    }
    if (g->depth > 0) {
        gr_frame *f = &s->frames[g->stack[g->depth - 1]];
        if (f->is_c && f->code == r->code) {
            const gr_code *cd = gr_trace_code(s->t, f->code);
            size_t qn = 0;
            const uint8_t *q = cd ? gr_trace_string(s->t, cd->qualname, &qn) : NULL;
            const gr_builtin *b = q ? gr_builtin_find((const char *)q, qn) : NULL;
            if (b && b->expr && b->kind == GR_BUILTIN_PLAIN) {
                /* reproduced by name (cProfile's enable/disable): the
                 * script's call changes the slot the same way */
                gr_record ret = *r;
                ret.tag = GR_C_RETURN;
                on_c_return(s, th, &ret);
                return;
            }
            f->hook = 1;
            f->keep = 0;
            f->setprofile_clear = r->tracing != GR_HOOK_SET;
            gr_record ret = *r;
            ret.tag = GR_C_RETURN;
            on_c_return(s, th, &ret);
        }
    }
}

static void free_frame(gr_shape *s, size_t f, int acts);

/* C frame f of greenlet g (running, f just returned) is a switch() call
 * that made one switch and returned: when spilling (a streamed walk), its
 * CCALL act in the frame below becomes one CSWITCH act, which the script
 * writes as the kept call would be (G[gid].switch()), and f and its
 * SWITCH act are freed.  Nothing refers to them any more: the greenlet
 * runs (no resume point), f is its last frame and the last act below. */
static void shrink_switch_call(gr_shape *s, const gr_sthread *th, gr_green *g, size_t f)
{
    shape_maps *m = maps(s);
    const gr_frame *fr = &s->frames[f];
    size_t below = top(g);
    green_spill *sp = &m->gsp[(size_t)(g - s->greens)];
    if (!m->spill_on || !fr->is_c || fr->end != GR_END_RETURN || fr->hook || fr->external ||
        fr->bound || fr->nacts != 1 || fr->gen != GR_NONE || below == GR_NONE ||
        s->frames[below].is_c || !s->frames[below].nacts || !sp->nfl ||
        sp->fl[sp->nfl - 1] != f || th->last_settrace == f || g->resume_cframe == f ||
        !is_greenlet_method(s->t, fr->code, "switch"))
        return;
    size_t ai = gr_frame_acts(fr)[0];
    const gr_act *a0 = &s->acts[ai];
    gr_frame *bf = &s->frames[below];
    gr_act *cc = &s->acts[gr_frame_acts(bf)[bf->nacts - 1]];
    if (a0->kind != GR_ACT_SWITCH || a0->armed || a0->catch_ || ai == g->resume_act ||
        ai == g->pending_arm || ai == th->last_handover || cc->kind != GR_ACT_CCALL ||
        gr_act_frame(cc) != f)
        return;
    uint64_t gid = a0->gid;
    memset(cc, 0, sizeof *cc);
    cc->kind = GR_ACT_CSWITCH;
    cc->frame32 = GR_NONE32;
    cc->arm32 = GR_NONE32;
    cc->gid = gid;
    sp->nfl--;
    free_frame(s, f, 1);
}

static void on_c_return(gr_shape *s, gr_sthread *th, const gr_record *r)
{
    gr_green *g = green_for(s, th->tid, r->gid, r->index);
    int fresh = g->fresh;
    g = running(s, th, r->gid, r->index);
    g->last_returned = GR_NONE;
    size_t k = g->depth;
    while (k > 0) {
        const gr_frame *f = &s->frames[g->stack[k - 1]];
        if (f->is_c && f->code == r->code)
            break;
        if (!f->is_c && !f->external) {
            k = 0; /* not across a Python frame */
            break;
        }
        k--;
    }
    int end = r->tag == GR_C_EXCEPTION ? GR_END_EXCEPTION : GR_END_RETURN;
    if (k > 0) {
        pop_lost(s, g, k, r->index);
        shrink_switch_call(s, th, g, pop(s, g, end, r->index));
        return;
    }
    if (s->ckeep)
        s->ckeep[r->index] = 1;
    if (th->late && g->gid == th->first && gr_shape_c_named(s->t, r->code, "sys.setprofile", 0) &&
        !th->hook_seen) {
        th->hook_seen = 1; /* the c_return of threading's sys.setprofile(hook) */
        return;
    }
    if (fresh && g->idle_seed && g->resumes == 1 && g->resume_act == GR_NONE &&
        (is_greenlet_method(s->t, r->code, "switch") || is_greenlet_method(s->t, r->code, "throw"))) {
        /* The greenlet was suspended inside a switch() call before start:
         * its c_return shows, so make that switch a visible call. */
        for (size_t i = 0; i < s->nacts; i++)
            if (s->acts[i].kind == GR_ACT_SUSPEND && s->acts[i].gid == g->gid) {
                s->acts[i].visible = 1;
                break;
            }
        return;
    }
    /* A builtin whose c_return comes without its c_call (CPython 3.12.0-3.12.4,
     * issue 122029): called through a bound method object wrapping it. */
    const gr_code *cd = gr_trace_code(s->t, r->code);
    size_t qn;
    const uint8_t *q = cd ? gr_trace_string(s->t, cd->qualname, &qn) : NULL;
    const gr_builtin *bi = q ? gr_builtin_find((const char *)q, qn) : NULL;
    size_t c0 = top(g);
    if (bi && bi->kind == GR_BUILTIN_PLAIN && qn > 9 && memcmp(q, "builtins.", 9) == 0 &&
        r->tag == GR_C_RETURN && c0 != GR_NONE && !s->frames[c0].is_c && !s->frames[c0].external &&
        !s->anonymize) {
        size_t f = new_frame(s, g, r->code, r->tid);
        s->frames[f].bound = 1;
        s->frames[f].end = GR_END_RETURN;
        frame_rec(s, f, 1, r->index);
        size_t a = new_act(s, GR_ACT_CCALL);
        s->acts[a].frame32 = idx32(f);
        frame_add(s, c0, a);
        note(s, r->index, "a c_return without its c_call (CPython issue 122029): the builtin is "
                          "called through a bound method object, as in the programs that "
                          "showed it");
        return;
    }
    gr_sb b;
    gr_sb_init(&b);
    note(s, r->index, "a c_return of %s without its c_call (CPython issue 122029 class, or a "
                      "call the profiler did not see): not reproduced",
         nm(s, &b, r->code));
    gr_sb_free(&b);
}

static void on_mark(gr_shape *s, gr_sthread *th, const gr_record *r)
{
    gr_green *g = running(s, th, r->gid, r->index);
    number_label(s, r->label);
    g->last_returned = GR_NONE;
    /* A bracketing C call of mark stays on top while the frames below are
     * made equal to the real stack. */
    size_t t0 = top(g), bracket = GR_NONE;
    if (t0 != GR_NONE && s->frames[t0].is_c && s->frames[t0].code == r->code &&
        s->frames[t0].nacts == 0 && !s->frames[t0].external)
        bracket = t0;
    if (bracket != GR_NONE)
        g->depth--;
    size_t before = top(g);
    reconcile(s, g, gr_record_stack(s->t, r), r->depth, (r->flags & GR_MARK_CUT) != 0, r->index);
    if (bracket != GR_NONE) {
        size_t now = top(g);
        if (now != before && before != GR_NONE) {
            /* Move the C call of mark into the new top frame. */
            gr_frame *b = &s->frames[before];
            for (size_t i = b->nacts; i-- > 0;) {
                size_t ai = gr_frame_acts(b)[i];
                const gr_act *a = &s->acts[ai];
                if (a->kind == GR_ACT_CCALL && gr_act_frame(a) == bracket) {
                    frame_remove(b, i);
                    if (now != GR_NONE)
                        frame_add(s, now, ai);
                    break;
                }
            }
        }
        push(g, bracket);
        size_t a = new_act(s, GR_ACT_MARK);
        s->acts[a].label = r->label;
        frame_add(s, bracket, a);
        return;
    }
    size_t c = container(s, g, r->index, "a mark");
    if (c == GR_NONE)
        return;
    size_t a = new_act(s, GR_ACT_MARK);
    s->acts[a].label = r->label;
    frame_add(s, c, a);
}

/* Does the record at index i lie inside greenreplay's atexit handler? */
static int in_exit_handler(const gr_shape *s, const gr_green *g)
{
    for (size_t i = 0; i < g->depth; i++) {
        const gr_frame *f = &s->frames[g->stack[i]];
        if (!f->is_c && gr_shape_is_recorder_code(s->t, f->code) &&
            !qual_is(s->t, f->code, "stop", 0))
            return 1;
    }
    return 0;
}

static void on_stop(gr_shape *s, gr_sthread *th, const gr_record *r)
{
    gr_green *g = running(s, th, r->gid, r->index);
    s->has_stop = 1;
    if (th->shutdown || in_exit_handler(s, g)) {
        s->stop_at_exit = 1;
        return;
    }
    /* The real stack of the stopping greenlet (its STACK record, running
     * bit) without greenreplay's own frames on top. */
    const shape_pre *p = &maps(s)->pre;
    if (p->stop_n != GR_NONE) {
        const uint32_t *ids = p->stop_ids;
        size_t n = p->stop_n;
        while (n > 0 && (is_c(s->t, ids[n - 1]) || gr_shape_is_recorder_code(s->t, ids[n - 1])))
            n--;
        /* Leave the stop wrapper's frames alone while reconciling. */
        size_t keep = g->depth;
        while (keep > 0 && s->frames[g->stack[keep - 1]].external)
            keep--;
        size_t saved = g->depth;
        size_t *ext = NULL;
        size_t next = saved - keep;
        if (next) {
            ext = gr_xrealloc(NULL, next * sizeof *ext);
            memcpy(ext, g->stack + keep, next * sizeof *ext);
            g->depth = keep;
        }
        reconcile(s, g, n ? ids : NULL, n, (p->stop_flags & GR_STACK_CUT) != 0, r->index);
        for (size_t i = 0; i < next; i++)
            push(g, ext[i]);
        free(ext);
    }
    size_t k = g->depth;
    while (k > 0 && (s->frames[g->stack[k - 1]].external || s->frames[g->stack[k - 1]].is_c))
        k--;
    if (k == 0) {
        note(s, r->index, "stop() called with no frame of the program open: not reproduced");
        return;
    }
    size_t a = new_act(s, GR_ACT_STOP);
    frame_add(s, g->stack[k - 1], a);
}

static void on_switch(gr_shape *s, gr_sthread *th, const gr_record *r)
{
    int throw = r->tag == GR_THROW;
    int dying = (r->flags & GR_SW_ORIGIN_DEAD) != 0;
    gr_green *go = running(s, th, r->gid, r->index);
    gr_green *gt = green_for(s, r->tid, r->target, r->index);
    go = green_of(s, r->tid, r->gid); /* green_for may have moved the array */
    go->last_returned = GR_NONE;
    if (dying) {
        if (go->depth) {
            size_t py = 0;
            for (size_t i = 0; i < go->depth; i++)
                py += !s->frames[go->stack[i]].is_c && !s->frames[go->stack[i]].external;
            if (py)
                note(s, r->index, "a greenlet dies with frames whose return the profiler did "
                                  "not see: in the script they return normally");
            pop_lost(s, go, 0, r->index);
        }
        if (go->run != GR_NONE && !s->frames[go->run].is_c) {
            if (go->parent_now != r->target && r->target) {
                size_t a = new_act(s, GR_ACT_PARENT);
                s->acts[a].gid = go->gid;
                s->acts[a].gid2 = r->target;
                frame_add(s, go->run, a);
                go->parent_now = r->target;
            }
            if (throw)
                frame_add(s, go->run, new_act(s, GR_ACT_RAISE));
        } else if (go->parent_now != r->target) {
            note(s, r->index, "a greenlet that ran no visible code dies into a greenlet other "
                              "than its parent: not reproduced");
        }
        go->dead = 1;
        go->dies_throw = (uint8_t)throw;
        go->running = 0;
    } else {
        /* the walk's SWITCH/THROW ordinal of r is walk_sw - 1 */
        const shape_pre *pre = &maps(s)->pre;
        size_t ord = pre->walk_sw - 1;
        uint64_t f = ord < pre->nsw && pre->resume[ord] != RESUME_NONE ? pre->resume[ord]
                                                                       : UINT64_MAX;
        if (f < GR_STACK_CAP)
            trim_py(s, go, f, r->index);
        size_t t0 = top(go);
        size_t a = new_act(s, throw ? GR_ACT_THROW : GR_ACT_SWITCH);
        s->acts[a].gid = r->target;
        if (t0 == GR_NONE || s->frames[t0].external) {
            note(s, r->index, "a greenlet switches away with no frame of the program open: not "
                              "reproduced");
        } else {
            gr_frame *tf = &s->frames[t0];
            int visible = tf->is_c && tf->nacts == 0 &&
                          is_greenlet_method(s->t, tf->code, throw ? "throw" : "switch");
            /* Where a parent change goes: before the C call for a visible
             * switch, else right before the switch. */
            size_t pc = t0, ppos = tf->nacts;
            if (visible) {
                size_t below = go->depth >= 2 ? go->stack[go->depth - 2] : GR_NONE;
                pc = below;
                if (below != GR_NONE) {
                    gr_frame *bf = &s->frames[below];
                    ppos = bf->nacts;
                    for (size_t i = bf->nacts; i-- > 0;)
                        if (gr_act_frame(&s->acts[gr_frame_acts(bf)[i]]) == t0) {
                            ppos = i;
                            break;
                        }
                }
            }
            if (r->parent && gt->parent_now != r->parent && !gt->root && pc != GR_NONE) {
                size_t p = new_act(s, GR_ACT_PARENT);
                s->acts[p].gid = r->target;
                s->acts[p].gid2 = r->parent;
                frame_insert(s, pc, ppos, p);
                gt->parent_now = r->parent;
            }
            frame_add(s, t0, a);
            if (visible) {
                go->resume_cframe = t0;
                go->resume_act = GR_NONE;
            } else {
                go->resume_act = a;
                go->resume_cframe = GR_NONE;
            }
            if (r->tracing > go->resumed_tracing) {
                if (tf->is_c)
                    note(s, r->index, "a switch made inside a trace function from inside a C "
                                      "call: reproduced without the trace function");
                else {
                    s->acts[a].armed = 1;
                    go->pending_arm = a;
                }
            }
            if (throw && gt->run == GR_NONE && !gt->seeded)
                s->acts[a].unstarted = 1;
        }
        go->running = 0;
    }
    if (gt->dead)
        note(s, r->index, "a switch to a dead greenlet: not reproduced");
    if (throw && gt->run == GR_NONE && !gt->seeded)
        gt->thrown_unstarted = 1;
    if (throw) {
        if (gt->resume_act != GR_NONE)
            s->acts[gt->resume_act].catch_ = 1;
    }
    gt->resume_act = GR_NONE;
    gt->resume_cframe = GR_NONE;
    gt->running = 1;
    gt->resumes++;
    gt->fresh = 1;
    if (!gt->based) {
        /* The tracing level it runs at: that of the switch that started it
         * (a greenlet started from a trace function runs inside it). */
        gt->resumed_tracing = r->tracing;
        gt->based = 1;
    }
    th->running = r->target;
}

static void handover(gr_shape *s, gr_sthread *from, gr_sthread *to, uint64_t rec)
{
    gr_green *g = green_of(s, from->tid, from->running);
    size_t c = g ? top(g) : GR_NONE;
    if (c == GR_NONE || s->frames[c].external) {
        /* The thread has no frame open: it has ended (or only greenreplay's
         * code runs); the next thread runs after it. */
        if (!from->ended) {
            from->ended = 1;
            from->next_tid = to->tid;
        }
        return;
    }
    if (from->ended)
        note(s, rec, "a thread has records after its frames all returned: not reproduced");
    size_t a = new_act(s, GR_ACT_HANDOVER);
    s->acts[a].tid = from->tid;
    s->acts[a].tid2 = to->tid;
    s->acts[a].block = 1;
    if (to->late && !to->started) {
        s->acts[a].start = 1;
        to->started = 1;
    }
    frame_add(s, c, a);
    from->last_handover = a;
    from->last_handover_rec = rec;
}

/* ---- the C calls the script keeps by name ------------------------------- */

/* f (a generator.close call, ordinal ord) is kept by name and finalizes
 * a generator of code (0 unknown): its generator is made after the walk,
 * in the order of the calls (shape_gens). */
static void keep_gen_of(gr_shape *s, gr_frame *f, size_t ord, uint32_t code)
{
    shape_maps *m = maps(s);
    m->kg = gr_xgrow(m->kg, &m->cap_kg, m->nkg + 1, sizeof *m->kg);
    m->kg[m->nkg++] = (keep_gen){.ord = ord, .code = code, .gen = GR_NONE};
    f->gen = KG_TAG | ord;
}

static int keep_c(gr_shape *s, gr_frame *f)
{
    size_t ord = f->gen != GR_NONE && (f->gen & KG_TAG) ? f->gen & ~KG_TAG : GR_NONE;
    if (ord != GR_NONE)
        f->gen = GR_NONE; /* unless kept below */
    if (f->hook)
        return 0; /* acted out as sys.setprofile whatever it was (HOOK) */
    const gr_trace *t = s->t;
    if (f->external || f->bound)
        return 1;
    const gr_act *a0 = f->nacts ? &s->acts[gr_frame_acts(f)[0]] : NULL;
    if (f->nacts == 1 && a0->kind == GR_ACT_MARK && gr_shape_c_named(t, f->code, "mark", 1))
        return 1;
    if (f->nacts == 1 && !a0->armed && a0->kind == GR_ACT_SWITCH &&
        is_greenlet_method(t, f->code, "switch"))
        return 1;
    if (f->nacts == 1 && !a0->armed && a0->kind == GR_ACT_THROW &&
        is_greenlet_method(t, f->code, "throw"))
        return 1;
    if (gr_shape_c_named(t, f->code, "generator.close", 0) && f->end != GR_END_EXCEPTION) {
        if (f->nacts == 0) {
            keep_gen_of(s, f, ord, 0);
            return 1;
        }
        if (f->nacts == 1 && a0->kind == GR_ACT_CALL) {
            gr_frame *g = &s->frames[gr_act_frame(a0)];
            if (g->nacts == 0 && g->end == GR_END_RETURN && !g->invisible &&
                gr_act_arm(a0) == GR_NONE) {
                g->finalizer = 1;
                keep_gen_of(s, f, ord, g->code);
                return 1;
            }
        }
        return 0;
    }
    if (f->nacts || f->end == GR_END_EXCEPTION)
        return 0;
    const gr_code *c = gr_trace_code(t, f->code);
    size_t n;
    const uint8_t *q = gr_trace_string(t, c->qualname, &n);
    const gr_builtin *b = gr_builtin_find((const char *)q, n);
    if (!b)
        return 0;
    return !s->anonymize || gr_builtin_keep_anonymized(b);
}

static int keep_gen_cmp(const void *a, const void *b)
{
    const keep_gen *x = a, *y = b;
    return x->ord < y->ord ? -1 : x->ord > y->ord;
}

/* The generator of a kept generator.close call (f->gen with KG_TAG), or
 * GR_NONE: a search of the sorted keep_gen list. */
static size_t keep_gen_final(const gr_shape *s, size_t gen)
{
    if (gen == GR_NONE || !(gen & KG_TAG))
        return gen;
    const shape_maps *m = maps(s);
    size_t ord = gen & ~KG_TAG, lo = 0, hi = m->nkg;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->kg[mid].ord < ord)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->nkg && m->kg[lo].ord == ord ? m->kg[lo].gen : GR_NONE;
}

/* ---- spilling dead greenlets -------------------------------------------- */

/* A spilled greenlet in the spill file: this header, its frames, each
 * frame's act indices (local), its acts (frame and arm indices local),
 * each field of a frame and an act a byte or a varint (sp_frame, sp_act:
 * a third of the structs' size). */
typedef struct spill_head {
    uint64_t nframes, nacts, run; /* run: local index of its outermost frame */
} spill_head;

_Static_assert(sizeof(gr_frame) == 48 && sizeof(gr_act) == 32,
               "a new field of gr_frame or gr_act goes through sp_frame and sp_act too");

static void sp_u(gr_sb *b, uint64_t v)
{
    uint8_t d[10];
    size_t n = 0;
    for (; v >= 0x80; v >>= 7)
        d[n++] = (uint8_t)(0x80 | (v & 0x7F));
    d[n++] = (uint8_t)v;
    gr_sb_put(b, (const char *)d, n);
}

static void sp_frame(gr_sb *b, const gr_frame *f)
{
    const uint8_t by[] = {f->is_c, f->seed, f->external, f->invisible, f->finalizer, f->end,
                          f->keep, f->settrace_on, f->hook, f->setprofile_clear, f->bound};
    gr_sb_put(b, (const char *)by, sizeof by);
    sp_u(b, f->code);
    sp_u(b, (uint64_t)f->gen + 1); /* GR_NONE: 0 */
    sp_u(b, f->tid);
    sp_u(b, f->nacts);
}

static void sp_act(gr_sb *b, const gr_act *a)
{
    const uint8_t by[] = {a->kind, a->catch_, a->visible, a->armed,
                          a->block, a->start, a->hidden_install, a->unstarted};
    gr_sb_put(b, (const char *)by, sizeof by);
    sp_u(b, (uint64_t)a->frame32 + 1); /* GR_NONE32: 2^32 */
    sp_u(b, (uint64_t)a->arm32 + 1);   /* gen32 too (the same bytes) */
    sp_u(b, a->tid);                   /* gid, label: the same bytes */
    sp_u(b, a->tid2);                  /* gid2 */
}

/* Reading a spilled greenlet back: *p up to end. */
typedef struct sp_in {
    const uint8_t *p, *end;
} sp_in;

static void spill_read_fail(void);

static uint64_t sp_get(sp_in *in)
{
    uint64_t v = 0;
    for (unsigned sh = 0; in->p < in->end && sh < 64; sh += 7) {
        uint8_t c = *in->p++;
        v |= (uint64_t)(c & 0x7F) << sh;
        if (!(c & 0x80))
            return v;
    }
    spill_read_fail();
    return 0;
}

static void sp_bytes(sp_in *in, uint8_t *d, size_t n)
{
    if ((size_t)(in->end - in->p) < n)
        spill_read_fail();
    memcpy(d, in->p, n);
    in->p += n;
}

static void sp_get_frame(sp_in *in, gr_frame *f)
{
    uint8_t by[11];
    sp_bytes(in, by, sizeof by);
    memset(f, 0, sizeof *f);
    f->is_c = by[0], f->seed = by[1], f->external = by[2], f->invisible = by[3];
    f->finalizer = by[4], f->end = by[5], f->keep = by[6], f->settrace_on = by[7];
    f->hook = by[8], f->setprofile_clear = by[9], f->bound = by[10];
    f->code = (uint32_t)sp_get(in);
    f->gen = (size_t)(sp_get(in) - 1);
    f->tid = sp_get(in);
    f->nacts = (uint32_t)sp_get(in);
}

static void sp_get_act(sp_in *in, gr_act *a)
{
    uint8_t by[8];
    sp_bytes(in, by, sizeof by);
    memset(a, 0, sizeof *a);
    a->kind = by[0], a->catch_ = by[1], a->visible = by[2], a->armed = by[3];
    a->block = by[4], a->start = by[5], a->hidden_install = by[6], a->unstarted = by[7];
    a->frame32 = (uint32_t)(sp_get(in) - 1);
    a->arm32 = (uint32_t)(sp_get(in) - 1);
    a->tid = sp_get(in);
    a->tid2 = sp_get(in);
}

/* Free frame slot f and its acts (their slots too, when acts). */
static void free_frame(gr_shape *s, size_t f, int acts)
{
    shape_maps *m = maps(s);
    gr_frame *fr = &s->frames[f];
    const uint32_t *ai = gr_frame_acts(fr);
    for (uint32_t k = 0; acts && k < fr->nacts; k++) {
        memset(&s->acts[ai[k]], 0, sizeof s->acts[ai[k]]);
        m->free_acts = gr_xgrow(m->free_acts, &m->cap_free_acts, m->nfree_acts + 1,
                                sizeof *m->free_acts);
        m->free_acts[m->nfree_acts++] = ai[k];
    }
    if (fr->cap_acts > GR_FRAME_INLINE)
        free(fr->acts.heap);
    memset(fr, 0, sizeof *fr);
    m->free_frames = gr_xgrow(m->free_frames, &m->cap_free_frames, m->nfree_frames + 1,
                              sizeof *m->free_frames);
    m->free_frames[m->nfree_frames++] = idx32(f);
}

/* Whether greenlet g (index gi) can be spilled: dead, no frame open, not a
 * thread's root or first greenlet (the script's roots and the post-walk
 * changes reach those), and no thread's last sys.settrace call or last
 * hand-over in its frames (both changed later). */
static int spillable(gr_shape *s, const gr_green *g, size_t gi)
{
    shape_maps *m = maps(s);
    if (!m->spill_on || !g->dead || g->depth || g->root || !g->gid || g->run == GR_NONE ||
        m->gsp[gi].spilled)
        return 0;
    const gr_sthread *th = gr_shape_thread(s, g->tid);
    if (!th || (th->has_first && th->first == g->gid))
        return 0;
    const green_spill *sp = &m->gsp[gi];
    /* the frames' slots are scattered (reused): ask for a few ahead */
    for (size_t k = 0; k < sp->nfl && k < 8; k++)
        __builtin_prefetch(&s->frames[sp->fl[k]]);
    for (size_t k = 0; k < sp->nfl; k++) {
        if (k + 8 < sp->nfl)
            __builtin_prefetch(&s->frames[sp->fl[k + 8]]);
        const gr_frame *f = &s->frames[sp->fl[k]];
        if (sp->fl[k] == th->last_settrace)
            return 0;
        for (uint32_t j = 0; j < f->nacts; j++)
            if (gr_frame_acts(f)[j] == th->last_handover)
                return 0;
    }
    return 1;
}

/* Slot gets the next local index. */
static void local_add(spill_local *l, size_t slot)
{
    if (slot >= l->cap) {
        size_t old = l->cap;
        l->at = gr_xgrow(l->at, &l->cap, slot + 1, sizeof *l->at);
        memset(l->at + old, 0, (l->cap - old) * sizeof *l->at);
    }
    l->slot = gr_xgrow(l->slot, &l->cap_slot, l->n + 1, sizeof *l->slot);
    l->slot[l->n] = (uint32_t)slot;
    l->at[slot] = (uint32_t)l->n++;
}

/* The local index of slot (1), or 0: not the greenlet's. */
static int local_get(const spill_local *l, size_t slot, size_t *k)
{
    if (slot >= l->cap || l->at[slot] >= l->n || l->slot[l->at[slot]] != slot)
        return 0;
    *k = l->at[slot];
    return 1;
}

/* Greenlet gi's frames and acts, serialized (spill_head first) into b;
 * 0, or -1 when an act refers outside the greenlet (then not spilled). */
static int spill_encode(gr_shape *s, size_t gi, gr_sb *b)
{
    shape_maps *m = maps(s);
    const green_spill *sp = &m->gsp[gi];
    const gr_green *g = &s->greens[gi];
    spill_local *fmap = &m->lf, *amap = &m->la;
    fmap->n = amap->n = 0;
    spill_head h = {.nframes = sp->nfl, .nacts = 0, .run = GR_NONE};
    for (size_t k = 0; k < sp->nfl; k++) {
        local_add(fmap, sp->fl[k]);
        if (sp->fl[k] == g->run)
            h.run = k;
        const gr_frame *f = &s->frames[sp->fl[k]];
        for (uint32_t j = 0; j < f->nacts; j++, h.nacts++) {
            __builtin_prefetch(&s->acts[gr_frame_acts(f)[j]]); /* read below */
            local_add(amap, gr_frame_acts(f)[j]);
        }
    }
    int rc = h.run == GR_NONE ? -1 : 0;
    gr_sb_put(b, (const char *)&h, sizeof h);
    for (size_t k = 0; k < sp->nfl; k++) {
        gr_frame f = s->frames[sp->fl[k]];
        if (f.is_c) /* decided now (on the copy): nothing changes the frame any more */
            f.keep = (uint8_t)keep_c(s, &f);
        sp_frame(b, &f);
    }
    for (size_t k = 0; k < sp->nfl; k++) {
        const gr_frame *f = &s->frames[sp->fl[k]];
        for (uint32_t j = 0; j < f->nacts; j++) {
            size_t v = 0;
            (void)local_get(amap, gr_frame_acts(f)[j], &v);
            sp_u(b, v);
        }
    }
    for (size_t k = 0; k < sp->nfl && rc == 0; k++) {
        const gr_frame *f = &s->frames[sp->fl[k]];
        for (uint32_t j = 0; j < f->nacts && rc == 0; j++) {
            gr_act a = s->acts[gr_frame_acts(f)[j]];
            size_t v = 0;
            if (a.frame32 != GR_NONE32) {
                if (!local_get(fmap, a.frame32, &v))
                    rc = -1;
                a.frame32 = (uint32_t)v;
            }
            if (a.kind == GR_ACT_CALL && a.arm32 != GR_NONE32) {
                if (!local_get(amap, a.arm32, &v))
                    rc = -1;
                a.arm32 = (uint32_t)v;
            }
            sp_act(b, &a);
        }
    }
    return rc;
}

/* Spill greenlet gi when it can be: its frames go to the spill file, their
 * slots are reused.  A greenlet that cannot be written stays in memory. */
static void try_spill(gr_shape *s, size_t gi)
{
    shape_maps *m = maps(s);
    gr_green *g = &s->greens[gi];
    if (!spillable(s, g, gi))
        return;
    green_spill *sp = &m->gsp[gi];
    gr_sb b;
    gr_sb_init(&b);
    if (!m->spill)
        m->spill = gr_tmpfile();
    size_t nkg = m->nkg;
    int ok = m->spill && spill_encode(s, gi, &b) == 0 &&
             fwrite(b.s, 1, b.len, m->spill) == b.len;
    if (!ok) {
        m->nkg = nkg;     /* its generator.close calls are decided at the end */
        m->spill_on = 0;  /* keep everything in memory from now on */
        gr_sb_free(&b);
        return;
    }
    sp->off = m->spill_end;
    sp->len = b.len;
    m->spill_end += b.len;
    gr_sb_free(&b);
    sp->run_external = s->frames[g->run].external;
    for (size_t k = 0; k < sp->nfl; k++)
        free_frame(s, sp->fl[k], 1);
    free(sp->fl);
    sp->fl = NULL;
    sp->nfl = sp->capfl = 0;
    sp->spilled = 1;
    free(g->stack); /* empty: it is dead */
    g->stack = NULL;
    g->cap = 0;
    g->run = g->seed_top = GR_NONE;
    g->resume_act = g->resume_cframe = g->pending_arm = g->last_returned = GR_NONE;
}

static void late_push(shape_maps *m, uint64_t at, size_t gi)
{
    m->late = gr_xgrow(m->late, &m->cap_late, m->nlate + 1, sizeof *m->late);
    size_t i = m->nlate++;
    while (i > 0 && m->late[(i - 1) / 2].at > at) {
        m->late[i] = m->late[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    m->late[i] = (struct late_spill){at, gi};
}

static size_t late_pop(shape_maps *m)
{
    size_t gi = m->late[0].gi;
    struct late_spill last = m->late[--m->nlate];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= m->nlate)
            break;
        if (c + 1 < m->nlate && m->late[c + 1].at < m->late[c].at)
            c++;
        if (m->late[c].at >= last.at)
            break;
        m->late[i] = m->late[c];
        i = c;
    }
    if (m->nlate)
        m->late[i] = last;
    return gi;
}

/* After walk record r: spill the greenlet that died at r if no later
 * record names it, else once the walk is past the last one that does. */
static void spill_after(gr_shape *s, const gr_record *r)
{
    shape_maps *m = maps(s);
    if (!m->spill_on)
        return;
    uint64_t now = r->index + 1;
    int death = r->tag == GR_DEAD ||
                ((r->tag == GR_SWITCH || r->tag == GR_THROW) && (r->flags & GR_SW_ORIGIN_DEAD));
    size_t last = 0, gi;
    if (death && gr_idmap_get(&m->touch, r->tid, r->gid, &last) &&
        gr_idmap_get(&m->greens, r->tid, r->gid, &gi)) {
        if (last <= now)
            try_spill(s, gi);
        else
            late_push(m, last, gi);
    }
    while (m->nlate && m->late[0].at <= now && m->spill_on)
        try_spill(s, late_pop(m));
}

int gr_shape_spilled(const gr_shape *s, size_t green, int *run_external)
{
    const shape_maps *m = maps(s);
    if (green >= m->cap_gsp || !m->gsp[green].spilled)
        return 0;
    if (run_external)
        *run_external = m->gsp[green].run_external;
    return 1;
}

static void spill_read_fail(void)
{
    /* a full disk shows here: the writes went to the stream's buffer */
    fprintf(stderr,
            "greenreplay: script: writing or reading back a temporary file ($TMPDIR, else "
            "/tmp) failed: %s\n",
            errno ? strerror(errno) : "short read");
    exit(2);
}

size_t gr_shape_reload(gr_shape *s, size_t green)
{
    shape_maps *m = maps(s);
    green_spill *sp = &m->gsp[green];
    uint8_t *buf = gr_xrealloc(NULL, sp->len ? sp->len : 1);
    if (fflush(m->spill) != 0 || fseeko(m->spill, (off_t)sp->off, SEEK_SET) != 0 ||
        fread(buf, 1, sp->len, m->spill) != sp->len || sp->len < sizeof(spill_head))
        spill_read_fail();
    spill_head h;
    memcpy(&h, buf, sizeof h);
    sp_in in = {buf + sizeof h, buf + sp->len};
    if (h.run >= h.nframes)
        spill_read_fail();
    size_t *fidx = gr_xrealloc(NULL, (h.nframes + 1) * sizeof *fidx);
    size_t *aidx = gr_xrealloc(NULL, (h.nacts + 1) * sizeof *aidx);
    for (size_t k = 0; k < h.nframes; k++)
        fidx[k] = frame_slot(s);
    for (size_t k = 0; k < h.nacts; k++)
        aidx[k] = act_slot(s);
    sp->fl = gr_xrealloc(NULL, (h.nframes + 1) * sizeof *sp->fl);
    sp->nfl = sp->capfl = h.nframes;
    for (size_t k = 0; k < h.nframes; k++) {
        gr_frame *f = &s->frames[fidx[k]];
        sp_get_frame(&in, f);
        uint32_t n = f->nacts;
        f->nacts = 0;
        while (f->nacts < n) {
            frame_room(f);
            f->nacts++;
        }
        f->nacts = n;
        f->gen = keep_gen_final(s, f->gen);
        sp->fl[k] = idx32(fidx[k]);
    }
    for (size_t k = 0; k < h.nframes; k++) {
        gr_frame *f = &s->frames[fidx[k]];
        uint32_t *acts = acts_of(f);
        for (uint32_t j = 0; j < f->nacts; j++) {
            uint64_t l = sp_get(&in);
            if (l >= h.nacts)
                spill_read_fail();
            acts[j] = idx32(aidx[l]);
        }
    }
    for (size_t k = 0; k < h.nacts; k++) {
        gr_act *a = &s->acts[aidx[k]];
        sp_get_act(&in, a);
        if (a->frame32 != GR_NONE32) {
            if (a->frame32 >= h.nframes)
                spill_read_fail();
            a->frame32 = idx32(fidx[a->frame32]);
        }
        if (a->kind == GR_ACT_CALL && a->arm32 != GR_NONE32) {
            if (a->arm32 >= h.nacts)
                spill_read_fail();
            a->arm32 = idx32(aidx[a->arm32]);
        }
    }
    size_t run = fidx[h.run];
    free(fidx);
    free(aidx);
    free(buf);
    return run;
}

const uint32_t *gr_shape_green_frames(const gr_shape *s, size_t green, size_t *n)
{
    const green_spill *sp = &maps(s)->gsp[green];
    *n = sp->nfl;
    return sp->fl;
}

void gr_shape_unload(gr_shape *s, size_t green)
{
    green_spill *sp = &maps(s)->gsp[green];
    for (size_t k = 0; k < sp->nfl; k++)
        free_frame(s, sp->fl[k], 1);
    free(sp->fl);
    sp->fl = NULL;
    sp->nfl = sp->capfl = 0;
}

/* ---- driver ------------------------------------------------------------- */

/* The pass before the walk, one record at a time (shape_pre). */

static pre_thread *pre_thread_of(shape_pre *p, size_t k)
{
    if (k >= p->cap_pt) {
        size_t old = p->cap_pt;
        p->pt = gr_xgrow(p->pt, &p->cap_pt, k + 1, sizeof *p->pt);
        memset(p->pt + old, 0, (p->cap_pt - old) * sizeof *p->pt);
    }
    return &p->pt[k];
}

/* Switches: which resume of a greenlet gives the frames it has (the
 * INSTR right after a switch into it, 3.12+) to each of its switches
 * away. */
static void pre_switch(shape_pre *p, const gr_record *r)
{
    if (p->resolve) { /* r is the record after a switch into a waiting greenlet */
        int in = r->tag == GR_INSTR && r->gid == p->resolve_gid && r->tid == p->resolve_tid;
        uint16_t v = in ? (r->parent < RESUME_NONE ? (uint16_t)r->parent : RESUME_NONE)
                        : RESUME_NONE;
        for (size_t k = p->resolve; k; k = p->waiting[k - 1])
            p->resume[k - 1] = v;
        p->resolve = 0;
    }
    if (r->tag != GR_SWITCH && r->tag != GR_THROW)
        return;
    size_t ord = p->nsw++, head = 0;
    p->resume = gr_xgrow(p->resume, &p->cap_resume, p->nsw, sizeof *p->resume);
    p->waiting = gr_xgrow(p->waiting, &p->cap_waiting, p->nsw, sizeof *p->waiting);
    p->resume[ord] = RESUME_NONE;
    if (gr_idmap_get(&p->pending, r->tid, r->target, &head) && head) {
        p->resolve = head;
        p->resolve_tid = r->tid;
        p->resolve_gid = r->target;
        gr_idmap_put(&p->pending, r->tid, r->target, 0);
    }
    head = 0;
    (void)gr_idmap_get(&p->pending, r->tid, r->gid, &head);
    p->waiting[ord] = head;
    gr_idmap_put(&p->pending, r->tid, r->gid, ord + 1);
}

/* One record r of t (index r->index, in order): the threads in order of
 * first sight, the one start() was called in, those started during the
 * recording by threading (3.12+: the seed of their first greenlet ends in
 * the C call sys.setprofile(hook)), what the walk will need to look ahead
 * for (pairs, switches, the STACK records after STOP), runpy's launch. */
static void pre_feed(gr_shape *s, const gr_trace *t, const gr_record *r)
{
    shape_pre *p = &maps(s)->pre;
    uint64_t i = r->index;
    p->nrecs = i + 1;
    if (!p->any) {
        p->any = 1;
        p->first_tid = r->tid;
    }
    if (r->tag == GR_START && !s->has_start) {
        s->start_tid = r->tid;
        s->start_gid = r->gid;
        s->has_start = 1;
    }
    gr_sthread *th = thread_of(s, r->tid, 1);
    pre_thread *pt = pre_thread_of(p, (size_t)(th - s->threads));
    /* a late thread's candidate (not the main thread's: pre_finish) */
    if (p->prev_thread && r->tag == GR_GREENLET && r->tid == p->prev_tid && r->depth &&
        gr_shape_c_named(t, gr_record_stack(t, r)[r->depth - 1], "sys.setprofile", 0))
        th->late = 1;
    p->prev_thread = r->tag == GR_THREAD;
    p->prev_tid = r->tid;
    /* A switch made inside the program's own profile function (callback
     * mode: `tracing` 1 or more while it is installed): gr_shape.in_profile. */
    if (r->tag == GR_HOOK && r->flags == GR_HOOK_PROFILE)
        pt->prof_set = r->tracing == GR_HOOK_SET;
    if ((r->tag == GR_SWITCH || r->tag == GR_THROW) && r->tracing && pt->prof_set && !s->in_profile)
        s->in_profile = i + 1;
    pt->seen |= (uint8_t)(r->tag >= GR_CALL && r->tag <= GR_C_EXCEPTION ? 1
                          : r->tag == GR_MARK &&
                                  !(r->flags & (GR_MARK_PROFILE_OURS | GR_MARK_IN_CALLBACK))
                              ? 2
                              : 0);
    if (pt->has_call) {
        if (r->tag == GR_RETURN && r->gid == pt->call_gid && r->code == pt->call_code) {
            if (pt->call / 8 >= p->cap_pairs) {
                size_t old = p->cap_pairs;
                p->pairs = gr_xgrow(p->pairs, &p->cap_pairs, pt->call / 8 + 1, 1);
                memset(p->pairs + old, 0, p->cap_pairs - old);
            }
            p->pairs[pt->call / 8] |= (uint8_t)(1u << (pt->call % 8));
        }
        pt->has_call = 0;
    }
    if (r->tag == GR_CALL) {
        pt->has_call = 1;
        pt->call = i;
        pt->call_gid = r->gid;
        pt->call_code = r->code;
    }
    if (r->tag != GR_STACK)
        pt->last = i;
    if (maps(s)->spill_on) { /* the last record naming each greenlet */
        if (pt->has_run && pt->run_gid != r->gid)
            gr_idmap_put(&maps(s)->touch, r->tid, pt->run_gid, (size_t)pt->run_last + 1);
        pt->has_run = 1;
        pt->run_gid = r->gid;
        pt->run_last = i;
        if (r->tag == GR_SWITCH || r->tag == GR_THROW)
            gr_idmap_put(&maps(s)->touch, r->tid, r->target, (size_t)i + 1);
    }
    pre_switch(p, r);
    if (p->after_stop && r->tag != GR_STACK)
        p->after_stop = 0;
    if (p->after_stop) {
        th->alive_at_stop = 1;
        if (p->stop_n == GR_NONE && r->gid == p->stop_gid && r->tid == p->stop_tid &&
            (r->flags & GR_STACK_RUNNING)) {
            p->stop_n = r->depth > GR_STACK_CAP ? GR_STACK_CAP : r->depth;
            if (p->stop_n)
                memcpy(p->stop_ids, gr_record_stack(t, r), p->stop_n * sizeof *p->stop_ids);
            p->stop_flags = r->flags;
        }
    }
    if (r->tag == GR_STOP && !p->stop_seen) {
        p->stop_seen = p->after_stop = 1;
        p->stop_tid = r->tid;
        p->stop_gid = r->gid;
    }
    if (!(p->launch.l.found && p->launch.open == 0))
        gr_launch_scan_feed(&p->launch, t, r, (size_t)i);
}

/* After the pass: the thread the script's main thread acts out (the one
 * start() was called in: its root greenlet's outermost frame is the
 * module), and the threads the profile function never reached (no
 * profile event; a MARK that says so), started after start() without
 * threading's hook: the script starts them the same way, at their first
 * turn. */
static void pre_finish(gr_shape *s)
{
    shape_pre *p = &maps(s)->pre;
    for (size_t k = 0; k < s->nthreads && k < p->cap_pt; k++)
        if (p->pt[k].has_run) /* the last run of records of each thread */
            gr_idmap_put(&maps(s)->touch, s->threads[k].tid, p->pt[k].run_gid,
                         (size_t)p->pt[k].run_last + 1);
    free(p->waiting);
    p->waiting = NULL;
    p->cap_waiting = 0;
    gr_idmap_free(&p->pending);
    s->module_tid = s->has_start ? s->start_tid : (p->any ? p->first_tid : 1);
    gr_sthread *mt = thread_of(s, s->module_tid, 0);
    if (mt)
        mt->late = 0;
    if (s->has_start) {
        for (size_t k = 0; k < s->nthreads; k++) {
            gr_sthread *th = &s->threads[k];
            if (th->tid == s->module_tid || th->late)
                continue;
            if (pre_thread_of(p, k)->seen == 2) /* no event, an unprofiled mark */
                th->late = th->raw = 1;
        }
    }
    s->launched_m = p->launch.l.found;
}

/* START: its act in the innermost frame of the program open, or start()
 * at the script's top level. */
static void on_start(gr_shape *s, gr_sthread *th, const gr_record *r, size_t i)
{
    gr_green *g = running(s, th, r->gid, i);
    g->starting = 1;
    size_t k = g->depth;
    while (k > 0 && (s->frames[g->stack[k - 1]].external || s->frames[g->stack[k - 1]].is_c))
        k--;
    if (k == 0) {
        /* With no frame open at all (a whole-program recording:
         * `record` without --manual starts before the program's
         * <module>), start() at the script's top level is the
         * reproduction, which `diff --c-names script` compares
         * alike: nothing to note. */
        if (g->depth)
            note(s, i, "start() called with no frame of the program open: the script "
                       "calls it at its top level");
        s->start_at_top = 1;
    } else {
        frame_add(s, g->stack[k - 1], new_act(s, GR_ACT_START));
    }
}

/* The records, one by one, into frames, acts and hand-overs, until a STOP
 * (shape_pre.stopped); shape_pre.last_tid is the thread of the last
 * record. */
static void walk_record(gr_shape *s, const gr_record *r)
{
    shape_pre *p = &maps(s)->pre;
    if (p->stopped)
        return;
    size_t i = (size_t)r->index;
    if (r->tag == GR_SWITCH || r->tag == GR_THROW)
        p->walk_sw++; /* on_switch reads its resume frames by this ordinal */
    /* A program run with -m: runpy's launch frames are not made (seeds and
     * real stacks drop them, on_greenlet and reconcile) and their returns
     * are skipped, so that the script, run as a file, has the same frames
     * (launch.h). */
    if (gr_launch_is_return(&p->launch.l, i))
        return;
    gr_sthread *th = thread_of(s, r->tid, 1);
    if (r->tid == s->module_tid)
        th->module = 1;
    if (p->last_tid && r->tid != p->last_tid && r->tag != GR_STACK) {
        gr_sthread *from = thread_of(s, p->last_tid, 0);
        th = thread_of(s, r->tid, 0);
        if (!th->shutdown)
            handover(s, from, th, i);
    }
    p->last_tid = r->tid;
    if (r->tag != GR_THREAD && r->tag != GR_GREENLET && !th->has_first) {
        /* No GREENLET record (greenlet not importable: gid 0). */
        th->has_first = 1;
        th->first = r->gid;
        th->running = r->gid;
        th->expect_first = 0;
        gr_green *g = green_for(s, r->tid, r->gid, i);
        g->running = 1;
        g->based = 1;
    }
    if (th->shutdown && r->tag != GR_STOP && r->tag != GR_STACK)
        return; /* interpreter exit: the script's own exit makes these */
    switch (r->tag) {
    case GR_THREAD:
        if (th->has_first)
            note(s, i, "a second THREAD record for thread t%" PRIu64 ": ignored", r->tid);
        else
            th->expect_first = 1;
        break;
    case GR_GREENLET: on_greenlet(s, th, r); break;
    case GR_START:
        on_start(s, th, r, i);
        break;
    case GR_CALL: on_call(s, th, r); break;
    case GR_RETURN: on_return(s, th, r); break;
    case GR_C_CALL: on_c_call(s, th, r); break;
    case GR_C_RETURN:
    case GR_C_EXCEPTION: on_c_return(s, th, r); break;
    case GR_HOOK: on_hook(s, th, r); break;
    case GR_MARK: on_mark(s, th, r); break;
    case GR_SWITCH:
    case GR_THROW: on_switch(s, th, r); break;
    case GR_DEAD: {
        gr_green *g = green_for(s, r->tid, r->gid, i);
        g->dead = 1;
        break;
    }
    case GR_STOP:
        on_stop(s, th, r);
        p->stopped = 1;
        break;
    default: break; /* INSTR, STACK: state, not structure */
    }
}

static void walk_feed(gr_shape *s, const gr_record *r)
{
    walk_record(s, r);
    spill_after(s, r);
}

/* The notes on how the trace ends and on its threads, and where stop() goes
 * when no STOP record says. */
static void shape_ending(gr_shape *s, const gr_trace *t, int stopped, uint64_t last_tid)
{
    if (t->gap)
        note(s, GR_NONE, "the trace holds only the last records of a ring recording (%" PRIu64
                         " earlier records dropped): what happened before them is unknown and "
                         "the script starts from the records it has",
             t->gap);
    if (!s->has_start)
        note(s, GR_NONE, "the trace has no START record: the script starts recording before "
                         "its first action");
    if (!stopped) {
        if (t->has_trailer && t->trailer.reason == GR_STOP_EXIT) {
            s->stop_at_exit = 1;
        } else {
            if (t->truncated)
                note(s, GR_NONE, "the trace ends at byte %" PRIu64 " without a trailer (the "
                                 "recording was cut short): the script stops recording after "
                                 "the last record it has",
                     t->truncated_at);
            else
                note(s, GR_NONE, "the trace has no STOP record: the script stops recording "
                                 "after its last record");
            /* stop() in the last running greenlet of the last thread seen. */
            gr_sthread *th = last_tid ? thread_of(s, last_tid, 0) : NULL;
            gr_green *g = th ? green_of(s, th->tid, th->running) : NULL;
            size_t k = g ? g->depth : 0;
            while (k > 0 && (s->frames[g->stack[k - 1]].external || s->frames[g->stack[k - 1]].is_c))
                k--;
            if (k > 0)
                frame_add(s, g->stack[k - 1], new_act(s, GR_ACT_STOP));
            else
                s->stop_at_end = 1;
        }
    }
    if (s->nthreads > 1)
        note(s, GR_NONE, "%zu threads: the script runs one thread at a time, handing over where "
                         "the trace goes from one thread to another (scheduling inside "
                         "blocking calls is not reproduced)",
             s->nthreads);
    for (size_t i = 0; i < s->nthreads; i++) {
        gr_sthread *th = &s->threads[i];
        gr_green *r = green_of(s, th->tid, th->root);
        if (th->module && (!r || r->run == GR_NONE || !qual_is(t, s->frames[r->run].code, "<module>", 0)) &&
            th->root)
            note(s, GR_NONE, "the thread that called start() does not run the module frame at "
                             "its bottom: the script's module frame is below its frames");
    }
}

/* Threads other than the script's main one wait for their first turn
 * in their first greenlet's innermost seed frame, or before anything. */
static void shape_first_turns(gr_shape *s)
{
    for (size_t i = 0; i < s->nthreads; i++) {
        gr_sthread *th = &s->threads[i];
        if (th->module)
            continue;
        gr_green *fg = th->has_first ? green_of(s, th->tid, th->first) : NULL;
        size_t made = GR_NONE; /* the act inserted in the first frame, if any */
        if (th->raw) {
            /* started at its first turn and runs at once: nothing to wait
             * for, no profile hook to install */
        } else if (fg && fg->seed_top != GR_NONE && !s->frames[fg->seed_top].external) {
            size_t a = new_act(s, th->late ? GR_ACT_HOOK : GR_ACT_PARK);
            s->acts[a].tid = th->tid;
            frame_insert(s, fg->seed_top, 0, a);
            made = a;
        } else if (th->late) {
            th->late = 0;
            note(s, GR_NONE, "a thread started during the recording with no frame to install "
                             "the profile hook in: started before start() instead");
            th->park_first = 1;
        } else {
            th->park_first = 1;
        }
        if (th->late && !th->started) {
            th->late = 0; /* never handed over to: start it before start() */
            th->park_first = 0;
            if (made != GR_NONE) /* a raw thread has no act to turn into a park */
                s->acts[made].kind = GR_ACT_PARK;
        }
    }
}

/* A thread that is not alive at STOP ends after its last turn: its last
 * hand-over lets the next thread run and goes on (its remaining frames
 * return without events the trace saw). */
static void shape_threads_ended(gr_shape *s)
{
    /* alive_at_stop: a STACK record after STOP (pre_feed) */
    shape_pre *p = &maps(s)->pre;
    for (size_t i = 0; i < s->nthreads; i++) {
        gr_sthread *th = &s->threads[i];
        if (th->module || th->alive_at_stop || th->last_handover == GR_NONE)
            continue;
        /* only when the thread has no record after that hand-over */
        uint64_t from = th->last_handover_rec;
        if (pre_thread_of(p, i)->last < from)
            s->acts[th->last_handover].block = 0;
    }
}

/* Decide the C calls kept by name (those of spilled greenlets were decided
 * when they were spilled), then make the generators of the kept
 * generator.close calls, in the order of the calls. */
static void shape_keep_c(gr_shape *s)
{
    shape_maps *m = maps(s);
    uint64_t n = s->ckeep ? m->pre.nrecs : 0;
    for (size_t i = 0; i < s->nframes; i++) {
        gr_frame *f = &s->frames[i];
        if (!f->is_c)
            continue;
        f->keep = (uint8_t)keep_c(s, f);
        for (int e = 0; e < 2 && s->ckeep; e++) {
            uint64_t rec = m->frecs[2 * i + (size_t)e];
            if (rec != GR_NONE && rec < n)
                s->ckeep[rec] = f->keep;
        }
    }
    if (m->nkg)
        qsort(m->kg, m->nkg, sizeof *m->kg, keep_gen_cmp);
    for (size_t k = 0; k < m->nkg; k++)
        m->kg[k].gen = new_gen(s, m->kg[k].code);
    for (size_t i = 0; i < s->nframes; i++)
        if (s->frames[i].is_c)
            s->frames[i].gen = keep_gen_final(s, s->frames[i].gen);
}

/* Start a shape: what it owns, zero; ckeep: allocate gr_shape.ckeep for
 * nrecs records. */
static void shape_init(gr_shape *s, const gr_trace *t, int anonymize, int ckeep, size_t nrecs)
{
    memset(s, 0, sizeof *s);
    s->t = t;
    s->anonymize = anonymize;
    s->internal = gr_xrealloc(NULL, sizeof(shape_maps));
    memset(s->internal, 0, sizeof(shape_maps));
    maps(s)->pre.stop_n = GR_NONE;
    gr_launch_scan_init(&maps(s)->pre.launch);
    if (ckeep) {
        s->ckeep = gr_xrealloc(NULL, nrecs ? nrecs : 1);
        memset(s->ckeep, 0, nrecs ? nrecs : 1);
    }
}

/* The name tables, once the number of strings is known. */
static void shape_names(gr_shape *s, size_t nstrings)
{
    s->qual_ids = gr_xrealloc(NULL, (nstrings + 1) * sizeof *s->qual_ids);
    memset(s->qual_ids, 0, (nstrings + 1) * sizeof *s->qual_ids);
    s->label_ids = gr_xrealloc(NULL, (nstrings + 1) * sizeof *s->label_ids);
    memset(s->label_ids, 0, (nstrings + 1) * sizeof *s->label_ids);
}

/* After the walk (t: the trace with everything read, for its ending). */
static void shape_finish(gr_shape *s, const gr_trace *t)
{
    shape_maps *m = maps(s);
    shape_pre *p = &m->pre;
    shape_ending(s, t, p->stopped, p->last_tid);
    shape_first_turns(s);
    if (p->stopped)
        shape_threads_ended(s);
    shape_keep_c(s);
    /* What only the walk needed: freed before the script is rendered. */
    free(p->pairs);
    free(p->resume);
    p->pairs = NULL;
    p->resume = NULL;
    p->cap_pairs = p->cap_resume = p->nsw = 0;
    gr_idmap_free(&m->touch);
    free(m->late);
    m->late = NULL;
    m->nlate = m->cap_late = 0;
}

int gr_shape_build(gr_shape *s, const gr_trace *t, int anonymize)
{
    shape_init(s, t, anonymize, 1, t->nrecs);
    shape_names(s, t->nstrings);
    for (size_t i = 0; i < t->nrecs; i++)
        pre_feed(s, t, &t->recs[i]);
    pre_finish(s);
    for (size_t i = 0; i < t->nrecs && !maps(s)->pre.stopped; i++)
        walk_feed(s, &t->recs[i]);
    shape_finish(s, t);
    return 0;
}

int gr_shape_build_path(gr_shape *s, gr_trace *t, const char *path, int anonymize)
{
    memset(s, 0, sizeof *s);
    gr_trace t1;
    int st = gr_trace_open(&t1, path), k = 0;
    if (st == GR_READ_OK) {
        shape_init(s, &t1, anonymize, 0, 0);
        maps(s)->spill_on = 1;
        while ((k = gr_trace_next_chunk(&t1)) > 0)
            for (size_t i = 0; i < t1.nrecs; i++)
                pre_feed(s, &t1, &t1.recs[i]);
        if (k < 0)
            st = t1.err.status ? t1.err.status : GR_READ_CORRUPT;
        else
            shape_names(s, t1.nstrings);
    }
    if (st != GR_READ_OK) {
        if (s->internal)
            gr_shape_free(s);
        *t = t1; /* its error */
        return st;
    }
    gr_trace_free(&t1);
    pre_finish(s);
    st = gr_trace_open(t, path);
    s->t = t;
    while (st == GR_READ_OK && (k = gr_trace_next_chunk(t)) > 0)
        for (size_t i = 0; i < t->nrecs; i++)
            walk_feed(s, &t->recs[i]);
    if (st == GR_READ_OK && k < 0)
        st = t->err.status ? t->err.status : GR_READ_CORRUPT;
    if (st != GR_READ_OK) { /* the file changed between the two readings */
        gr_shape_free(s);
        return st;
    }
    shape_finish(s, t);
    /* what spilling needed: not while rendering (grows again if used) */
    shape_maps *m = maps(s);
    free(m->lf.at);
    free(m->la.at);
    free(m->lf.slot);
    free(m->la.slot);
    memset(&m->lf, 0, sizeof m->lf);
    memset(&m->la, 0, sizeof m->la);
    return GR_READ_OK;
}

void gr_shape_free(gr_shape *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nframes; i++)
        if (s->frames[i].cap_acts > GR_FRAME_INLINE)
            free(s->frames[i].acts.heap);
    free(s->frames);
    free(s->acts);
    for (size_t i = 0; i < s->ngreens; i++)
        free(s->greens[i].stack);
    free(s->greens);
    free(s->threads);
    free(s->gens);
    free(s->ckeep);
    for (size_t i = 0; i < s->nnotes; i++)
        free(s->notes[i].text);
    free(s->notes);
    free(s->qual_ids);
    free(s->label_ids);
    shape_maps *m = maps(s);
    if (m) {
        free(m->pre.pt);
        free(m->pre.pairs);
        free(m->pre.resume);
        free(m->pre.waiting);
        gr_idmap_free(&m->pre.pending);
        gr_idmap_free(&m->greens);
        gr_idmap_free(&m->threads);
        free(m->lf.at);
        free(m->la.at);
        free(m->lf.slot);
        free(m->la.slot);
        gr_idmap_free(&m->notes);
        gr_idmap_free(&m->quals);
        gr_idmap_free(&m->labels);
        gr_idmap_free(&m->gencode);
        free(m->frecs);
        for (size_t i = 0; i < m->cap_gsp; i++)
            free(m->gsp[i].fl);
        free(m->gsp);
        if (m->spill)
            fclose(m->spill);
        gr_idmap_free(&m->touch);
        free(m->late);
        free(m->free_frames);
        free(m->free_acts);
        free(m->kg);
        free(m);
    }
    memset(s, 0, sizeof *s);
}
