/* diff.c - structural comparison of two traces (diff.h). */
#include "diff.h"

#include "diff_int.h"
#include "check.h"
#include "dump.h"
#include "idmap.h"
#include "launch.h"
#include "report.h"
#include "script_shape.h"
#include "text.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>


void gr_diff_defaults(gr_diff_opts *o)
{
    memset(o, 0, sizeof *o);
    o->context = 3;
    o->max_hunks = 3;
}

/* ---- token strings, interned -------------------------------------------- */

uint64_t gr_diff_fnv(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (uint8_t)p[i];
        h *= 1099511628211ull;
    }
    return h;
}

uint32_t gr_intern(gr_interner *in, const char *s, size_t n)
{
    uint64_t h = gr_diff_fnv(s, n);
    size_t id;
    if (gr_idmap_get(&in->map, h, n, &id)) {
        for (;;) {
            if (in->len[id] == n && memcmp(in->str[id], s, n) == 0)
                return (uint32_t)id;
            if (!in->next[id])
                break;
            id = in->next[id] - 1;
        }
    }
    in->str = gr_xgrow(in->str, &in->cap, in->n + 1, sizeof *in->str);
    in->len = gr_xgrow(in->len, &in->cap_len, in->n + 1, sizeof *in->len);
    in->next = gr_xgrow(in->next, &in->cap_next, in->n + 1, sizeof *in->next);
    size_t nid = in->n++;
    in->str[nid] = gr_xrealloc(NULL, n + 1);
    memcpy(in->str[nid], s, n);
    in->str[nid][n] = '\0';
    in->len[nid] = n;
    in->next[nid] = 0;
    if (gr_idmap_get(&in->map, h, n, &id))
        in->next[nid] = (uint32_t)id + 1; /* new head of the chain */
    gr_idmap_put(&in->map, h, n, nid);
    return (uint32_t)nid;
}

void gr_interner_free(gr_interner *in)
{
    for (size_t i = 0; i < in->n; i++)
        free(in->str[i]);
    free(in->str);
    free(in->len);
    free(in->next);
    gr_idmap_free(&in->map);
}

/* ---- one side ----------------------------------------------------------- */

typedef gr_diff_side side;
typedef gr_diff_ctx ctx;

static uint64_t rank(gr_idmap *m, uint64_t *counter, uint64_t a, uint64_t b)
{
    size_t v;
    if (gr_idmap_get(m, a, b, &v))
        return v;
    gr_idmap_put(m, a, b, (size_t)++*counter);
    return *counter;
}

/* A greenlet by order of first sight.  gid 0 (greenlet not importable:
 * one stack per thread) counts as a greenlet too, so that a trace without
 * greenlet compares with one that has it; as a parent, 0 is "none". */
static void put_g(side *s, gr_sb *sb, uint64_t tid, uint64_t gid)
{
    uint64_t g = rank(&s->granks, &s->ng, tid, gid);
    if (s->placeholders && s->nranks < GR_DIFF_RANKS) { /* diff_int.h */
        s->ranks[s->nranks++] = g;
        gr_sb_puts(sb, "g#");
    } else {
        gr_sb_printf(sb, "g%" PRIu64, g);
    }
}

uint64_t gr_diff_grank(gr_diff_side *s, uint64_t tid, uint64_t gid)
{
    return rank(&s->granks, &s->ng, tid, gid);
}

static void put_parent(side *s, gr_sb *sb, uint64_t tid, uint64_t gid)
{
    if (!gid)
        gr_sb_puts(sb, "none");
    else
        put_g(s, sb, tid, gid);
}

static void put_name(ctx *c, side *s, gr_sb *sb, uint32_t code, size_t rec, int in_stack)
{
    const gr_trace *t = s->t;
    const gr_code *cd = gr_trace_code(t, code);
    if (!cd) {
        gr_sb_printf(sb, "?code=%" PRIu32, code);
        return;
    }
    size_t n;
    const uint8_t *q = gr_trace_string(t, cd->qualname, &n);
    if (cd->kind == GR_CODE_C) {
        int named;
        if (c->o->c_names == GR_CNAMES_ANY)
            named = 0;
        else if (c->o->c_names == GR_CNAMES_SCRIPT && !in_stack)
            named = s->has_shape && rec < t->nrecs ? s->shape.ckeep[rec] : 1;
        else
            named = 1;
        if (named)
            gr_sb_escape(sb, q, n, 0);
        else
            gr_sb_puts(sb, "<C>");
        return;
    }
    if (c->o->rename && !gr_shape_is_recorder_code(t, code)) {
        gr_sb_printf(sb, "#%" PRIu64, rank(&s->qranks, &s->nq, gr_diff_fnv((const char *)q, n), n));
    } else {
        gr_sb_escape(sb, q, n, 0);
    }
    if (c->o->files) {
        size_t fn;
        const uint8_t *f = cd->file ? gr_trace_string(t, cd->file, &fn) : NULL;
        gr_sb_puts(sb, " (");
        if (f)
            gr_sb_escape(sb, f, fn, 0);
        else
            gr_sb_putc(sb, '?');
        gr_sb_printf(sb, ":%" PRIu64 ")", cd->line);
    }
}

/* Record r's stack without runpy's launch frames at its bottom (launch.h). */
static void put_stack(ctx *c, side *s, gr_sb *sb, const gr_record *r)
{
    const uint32_t *ids = gr_record_stack(s->t, r);
    uint32_t from = (uint32_t)gr_launch_record_prefix(s->t, r);
    gr_sb_puts(sb, " stack=");
    if (from >= r->depth)
        gr_sb_putc(sb, '-');
    for (uint32_t i = from; i < r->depth; i++) {
        if (i > from)
            gr_sb_puts(sb, " > ");
        put_name(c, s, sb, ids[i], GR_NONE, 1);
    }
}

static void put_cont_stack(ctx *c, side *s, gr_sb *sb, const gr_record *r);

/* The stack of GREENLET or STACK record i; --c-names script: without
 * greenreplay's own frames in the seed of the greenlet that called start()
 * (side.top_seed; with the <module> a whole-program recording calls first)
 * and in the STACK records at exit of the module thread (side.exit_at:
 * the recorder stops at exit in frames of its own, ending in its C stop,
 * or at an uncaught exception, where it writes none of them). */
static void put_seed(ctx *c, side *s, gr_sb *sb, const gr_record *r, size_t i)
{
    int at_exit = r->tag == GR_STACK && s->exit_at != GR_NONE && i > s->exit_at &&
                  r->tid == s->exit_tid;
    if (i != s->top_seed && !at_exit) {
        put_stack(c, s, sb, r);
        return;
    }
    const uint32_t *ids = gr_record_stack(s->t, r);
    size_t shown = 0;
    gr_sb_puts(sb, " stack=");
    for (uint32_t k = (uint32_t)gr_launch_record_prefix(s->t, r); k < r->depth; k++) {
        if (at_exit ? gr_code_is_own(s->t, ids[k]) : gr_shape_is_recorder_code(s->t, ids[k]))
            continue;
        if (shown++)
            gr_sb_puts(sb, " > ");
        put_name(c, s, sb, ids[k], GR_NONE, 1);
    }
    if (i == s->top_seed && s->top_module != GR_NONE) {
        if (shown++)
            gr_sb_puts(sb, " > ");
        put_name(c, s, sb, (uint32_t)s->top_module, GR_NONE, 1);
    }
    if (!shown)
        gr_sb_putc(sb, '-');
}

/* INSTR record i of side s: its `frames` and `stale` into *frames and
 * *stale, without runpy's launch frames of a -m program (launch.h) when
 * its target is the launch greenlet and they are still open there, so
 * that it compares with the program run as a file (or its script).  The
 * launch frames' code runs nowhere else: they lag the instrumentation
 * version exactly when the program's <module> above them does, so a
 * stale count of at least their number holds them.  A walk cut at the
 * recorder's cap (GR_STACK_CAP frames: the bottom ones not seen) is
 * compared as it is. */
static void instr_counts(const side *s, size_t i, const gr_record *r, uint64_t *frames,
                         uint64_t *stale)
{
    const gr_launch *l = &s->launch;
    *frames = r->parent;
    *stale = r->use_tracing;
    if (!l->found || r->tid != l->tid || r->gid != l->gid || r->parent >= GR_STACK_CAP)
        return;
    uint64_t open = 0;
    for (size_t k = 0; k < l->nframes; k++) {
        const gr_code *c = gr_trace_code(s->t, l->code[k]);
        if (c && c->kind == GR_CODE_PY && (l->ret_rec[k] == GR_LAUNCH_NONE || l->ret_rec[k] > i))
            open++;
    }
    if (open > *frames)
        return;
    *frames -= open;
    if (*stale >= open)
        *stale -= open;
}

static const char *const kinds[] = {"THREAD", "GREENLET", "CALL",  "RETURN", "C_CALL",
                                    "C_RETURN", "C_EXCEPTION", "SWITCH", "THROW", "MARK",
                                    "DEAD", "START", "STOP", "STACK", "INSTR", "HOOK"};

/* The token text of record i of side s (appended to sb); 0 if the record
 * is not compared. */
int gr_diff_token(ctx *c, side *s, const gr_record *r, size_t i, gr_sb *sb)
{
    if (r->tag == GR_INSTR && !c->cmp_instr)
        return 0;
    if (i == s->top_skip)
        return 0;
    /* The program's greenlet trace callback (HOOK slot greenlet): a script
     * (`greenreplay script`) does not install one, so with the names a
     * script reproduces it is not compared. */
    if (r->tag == GR_HOOK && r->flags == GR_HOOK_GREENLET && c->o->c_names == GR_CNAMES_SCRIPT)
        return 0;
    gr_sb_printf(sb, "%s t%" PRIu64, kinds[r->tag - GR_FIRST_INDEXED],
                 rank(&s->tranks, &s->nt, r->tid, 0));
    if (r->tag == GR_THREAD)
        return 1;
    gr_sb_putc(sb, ' ');
    put_g(s, sb, r->tid, r->gid);
    switch (r->tag) {
    case GR_GREENLET:
        gr_sb_puts(sb, " parent=");
        put_parent(s, sb, r->tid, r->parent);
        gr_sb_printf(sb, " flags=%" PRIu64, r->flags);
        put_seed(c, s, sb, r, i);
        break;
    case GR_CALL:
    case GR_RETURN:
    case GR_C_CALL:
    case GR_C_RETURN:
    case GR_C_EXCEPTION:
        gr_sb_putc(sb, ' ');
        put_name(c, s, sb, r->code, i, 0);
        break;
    case GR_SWITCH:
    case GR_THROW: {
        gr_sb_puts(sb, "->");
        put_g(s, sb, r->tid, r->target);
        gr_sb_puts(sb, " parent=");
        put_parent(s, sb, r->tid, r->parent);
        const char *prof = (r->flags & GR_SW_PROFILE_OURS)  ? "ours"
                           : (r->flags & GR_SW_PROFILE_SET) ? "other"
                                                            : "none";
        gr_sb_printf(sb, " prof=%s tracing=%" PRIu64, prof, r->tracing);
        if (c->cmp_ut)
            gr_sb_printf(sb, " use_tracing=%s",
                         !(r->flags & GR_SW_USE_TRACING_KNOWN) ? "n/a"
                         : r->use_tracing                      ? "on"
                                                               : "0");
        if (r->flags & GR_SW_ORIGIN_DEAD)
            gr_sb_puts(sb, " origin_dead");
        if (r->flags & GR_SW_REAL_STACK)
            put_stack(c, s, sb, r);
        else if ((r->flags & GR_SW_CONTINUED) && s->has_continued)
            put_cont_stack(c, s, sb, r);
        break;
    }
    case GR_HOOK:
        /* What the program did to which slot, and what the subject is
         * after it; the C call during which it happened is compared as
         * that C call's own record. */
        gr_sb_printf(sb, " slot=%" PRIu64 " action=%" PRIu64 " subject=%s", r->flags, r->tracing,
                     (r->parent & GR_HOOK_SUBJECT_ON) ? "on" : "off");
        break;
    case GR_MARK: {
        size_t n;
        const uint8_t *l = gr_trace_string(s->t, r->label, &n);
        if (c->o->rename)
            gr_sb_printf(sb, " L%" PRIu64, rank(&s->lranks, &s->nl, gr_diff_fnv((const char *)l, n), n));
        else {
            gr_sb_putc(sb, '"');
            gr_sb_escape(sb, l, n, 1);
            gr_sb_putc(sb, '"');
        }
        /* cut, ours, in a callback; not the tracing state, which only
         * 3.9-3.11 know (compared in SWITCH records when both know it) */
        gr_sb_printf(sb, " flags=%" PRIu64,
                     r->flags & (GR_MARK_CUT | GR_MARK_PROFILE_OURS | GR_MARK_IN_CALLBACK));
        if (c->cmp_ut && (r->flags & GR_MARK_TRACING_OFF))
            gr_sb_puts(sb, " use_tracing=0");
        put_stack(c, s, sb, r);
        break;
    }
    case GR_STACK:
        gr_sb_printf(sb, " flags=%" PRIu64, r->flags);
        put_seed(c, s, sb, r, i);
        break;
    case GR_INSTR: {
        uint64_t frames, stale;
        instr_counts(s, i, r, &frames, &stale);
        gr_sb_printf(sb, " frames=%" PRIu64 " stale=%" PRIu64, frames, stale);
        break;
    }
    default: break; /* DEAD, START, STOP */
    }
    return 1;
}

/* ---- continued switches' stacks -----------------------------------------
 *
 * A SWITCH/THROW flagged continued (passive mode with switch_stacks
 * "needed", docs/FORMAT.md §4) carries no stack: the recorder saw every
 * turn of the target since its last real stack, so its records give the
 * stack.  A trace recorded with switch_stacks "every" has the real stack
 * at the same switch.  So that the two compare alike (a user diffing a
 * trace of each mode), the Python stack of every (thread, greenlet) is
 * rebuilt here from the records as they are tokenized (a GREENLET seed or
 * a switch's real stack, then CALL and RETURN, as the checker's shadow)
 * and a continued switch's token carries it, cut to the innermost
 * GR_STACK_CAP frames as a real stack is.  A continued switch whose claim
 * were wrong then shows as a difference.  Where frames below the known
 * ones are unknown (a cut seed, since returned past) the token says so
 * ("? >") and differs from a real stack's. */
typedef struct cshadow {
    uint32_t *ids;
    size_t n, cap;
    int unknown_base;
} cshadow;

static cshadow *cshadow_of(side *s, uint64_t tid, uint64_t gid)
{
    size_t k;
    if (!gr_idmap_get(&s->cmap, tid, gid, &k)) {
        s->csh = gr_xgrow(s->csh, &s->cap_csh, s->ncsh + 1, sizeof *s->csh);
        k = s->ncsh++;
        memset(&s->csh[k], 0, sizeof *s->csh);
        gr_idmap_put(&s->cmap, tid, gid, k);
    }
    return &s->csh[k];
}

/* Python frames only: a seed's innermost C entry (the C call the thread
 * or greenlet was first seen in) is no frame, and a real stack has none. */
static void cshadow_set(cshadow *h, const gr_trace *t, const gr_record *r, int cut)
{
    const uint32_t *ids = gr_record_stack(t, r);
    h->ids = gr_xgrow(h->ids, &h->cap, r->depth + 1, sizeof *h->ids);
    h->n = 0;
    for (uint32_t k = (uint32_t)gr_launch_record_prefix(t, r); k < r->depth; k++) {
        const gr_code *cd = gr_trace_code(t, ids[k]);
        if (!cd || cd->kind != GR_CODE_C)
            h->ids[h->n++] = ids[k];
    }
    h->unknown_base = cut;
}

/* Record r (of side s, after its token) moves the stacks. */
void gr_diff_cshadow_apply(side *s, const gr_record *r)
{
    cshadow *h;
    switch (r->tag) {
    case GR_GREENLET:
        cshadow_set(cshadow_of(s, r->tid, r->gid), s->t, r, (r->flags & GR_GL_CUT) != 0);
        break;
    case GR_CALL:
        h = cshadow_of(s, r->tid, r->gid);
        h->ids = gr_xgrow(h->ids, &h->cap, h->n + 1, sizeof *h->ids);
        h->ids[h->n++] = r->code;
        break;
    case GR_RETURN:
        h = cshadow_of(s, r->tid, r->gid);
        for (size_t k = h->n; k-- > 0;)
            if (h->ids[k] == r->code) { /* the returns above it were lost */
                h->n = k;
                break;
            }
        break;
    case GR_SWITCH:
    case GR_THROW:
        if (r->flags & GR_SW_REAL_STACK)
            cshadow_set(cshadow_of(s, r->tid, r->target), s->t, r, (r->flags & GR_SW_CUT) != 0);
        break;
    default:
        break;
    }
}

static void put_cont_stack(ctx *c, side *s, gr_sb *sb, const gr_record *r)
{
    cshadow *h = cshadow_of(s, r->tid, r->target);
    size_t d = h->n < GR_STACK_CAP ? h->n : GR_STACK_CAP;
    gr_sb_puts(sb, " stack=");
    if (h->unknown_base && h->n < GR_STACK_CAP) /* the frames below are unknown */
        gr_sb_puts(sb, "? > ");
    if (!d)
        gr_sb_putc(sb, '-');
    for (size_t k = h->n - d; k < h->n; k++) {
        if (k > h->n - d)
            gr_sb_puts(sb, " > ");
        put_name(c, s, sb, h->ids[k], GR_NONE, 1);
    }
}

/* --c-names script (a script's recording against its original): where
 * the first START is, the two traces begin differently although the
 * script reproduces the original.  A whole-program recording (`record`
 * without --manual) starts with no frame of the program open and calls
 * its <module> first; its script calls greenreplay.start() at its top
 * level, so the recording of the script has <module> and start() in the
 * seed and returns from start() first.  Under --manual both return from
 * start() first.  Set s->top_* so that both compare as the seed with the
 * program's frames (<module> included) and without greenreplay's own. */
static void top_start_of(side *s)
{
    const gr_trace *t = s->t;
    size_t st = GR_NONE, seed = GR_NONE, k;
    for (k = 0; k < t->nrecs && st == GR_NONE; k++)
        if (t->recs[k].tag == GR_START)
            st = k;
    if (st == GR_NONE)
        return;
    const gr_record *r0 = &t->recs[st];
    for (k = st; k-- > 0;)
        if (t->recs[k].tag == GR_GREENLET && t->recs[k].tid == r0->tid && t->recs[k].gid == r0->gid) {
            seed = k;
            break;
        }
    if (seed == GR_NONE)
        return;
    const gr_record *first = NULL;
    for (k = st + 1; k < t->nrecs; k++) /* the first event (a HOOK of start() is none) */
        if (t->recs[k].tid == r0->tid && t->recs[k].tag != GR_THREAD && t->recs[k].tag != GR_GREENLET &&
            t->recs[k].tag != GR_HOOK && t->recs[k].tag != GR_INSTR) {
            first = &t->recs[k];
            break;
        }
    if (!first)
        return;
    if (first->tag == GR_RETURN && gr_shape_is_recorder_code(t, (uint32_t)first->code)) {
        s->top_seed = seed;
        s->top_skip = k;
        return;
    }
    const gr_record *g = &t->recs[seed];
    const uint32_t *ids = gr_record_stack(t, g);
    int program_below = 0; /* a frame of the program below start */
    for (uint32_t d = (uint32_t)gr_launch_record_prefix(t, g); d < g->depth && !program_below; d++)
        program_below = !gr_shape_is_recorder_code(t, ids[d]);
    if (!program_below && first->tag == GR_CALL && gr_shape_is_module_code(t, (uint32_t)first->code)) {
        s->top_seed = seed;
        s->top_skip = k;
        s->top_module = first->code;
    } else if (program_below) {
        /* A recorder that records none of its own frames: the program's
         * start() is in no record and the seed ends in the frame that
         * called it; nothing to skip. */
        s->top_seed = seed;
    }
}

/* --c-names script: the end of the program.  A script reproduces nothing
 * after the module thread's <module> returns (its own exit makes those
 * records: docs/WORKFLOW.md), while the original may have stopped at an
 * uncaught exception (in the recorder's hook, before the interpreter's
 * shutdown) or run exit handlers.  So the records of that thread after
 * the RETURN of <module>, but STOP and STACK, are not compared (counted in
 * s->exit_skipped; the report says how many).  The <module> is the one a
 * whole-program recording called first, or the outermost frame of the
 * seed of the greenlet that called start(). */
static void exit_of(side *s)
{
    const gr_trace *t = s->t;
    s->exit_at = GR_NONE;
    if (s->top_seed == GR_NONE)
        return;
    const gr_record *g = &t->recs[s->top_seed];
    uint64_t code = s->top_module;
    if (code == GR_NONE) {
        const uint32_t *ids = gr_record_stack(t, g);
        size_t b = gr_launch_record_prefix(t, g); /* below: runpy's, under -m */
        if (g->depth <= b || gr_shape_is_recorder_code(t, ids[b]) || !gr_shape_is_module_code(t, ids[b]))
            return;
        code = ids[b];
    }
    size_t k;
    for (k = s->top_skip == GR_NONE ? s->top_seed + 1 : s->top_skip + 1; k < t->nrecs; k++) {
        const gr_record *r = &t->recs[k];
        if (r->tag == GR_RETURN && r->tid == g->tid && r->gid == g->gid && r->code == code)
            break;
    }
    if (k >= t->nrecs)
        return;
    s->exit_at = k;
    s->exit_tid = g->tid;
    for (k++; k < t->nrecs; k++) {
        const gr_record *r = &t->recs[k];
        if (r->tid == s->exit_tid && r->tag != GR_STOP && r->tag != GR_STACK && s->keep[k]) {
            s->keep[k] = 0;
            s->exit_skipped++;
        }
    }
}

static void side_init(side *s, const gr_trace *t, const gr_diff_opts *o)
{
    memset(s, 0, sizeof *s);
    s->t = t;
    s->keep = gr_xrealloc(NULL, t->nrecs ? t->nrecs : 1);
    memset(s->keep, 1, t->nrecs ? t->nrecs : 1);
    gr_ignore_apply(t, o->ignore, s->keep, s->ignored);
    gr_launch_find(t, &s->launch);
    for (size_t k = 0; k < s->launch.nframes; k++) {
        size_t i = s->launch.ret_rec[k];
        if (i != GR_LAUNCH_NONE && s->keep[i]) {
            s->keep[i] = 0;
            s->launch_skipped++;
        }
    }
    s->top_seed = s->top_skip = s->top_module = s->exit_at = GR_NONE;
    if (o->c_names == GR_CNAMES_SCRIPT) {
        gr_shape_build(&s->shape, t, o->rename);
        s->has_shape = 1;
        top_start_of(s);
        exit_of(s);
    }
    for (size_t i = 0; i < t->nrecs; i++) {
        const gr_record *r = &t->recs[i];
        if (r->tag == GR_INSTR)
            s->has_instr = 1;
        if ((r->tag == GR_SWITCH || r->tag == GR_THROW) && (r->flags & GR_SW_USE_TRACING_KNOWN))
            s->knows_ut = 1;
        if ((r->tag == GR_SWITCH || r->tag == GR_THROW) && (r->flags & GR_SW_CONTINUED))
            s->has_continued = 1;
    }
}

static void side_tokens(ctx *c, side *s)
{
    const gr_trace *t = s->t;
    s->idx = gr_xrealloc(NULL, (t->nrecs + 1) * sizeof *s->idx);
    s->tok = gr_xrealloc(NULL, (t->nrecs + 1) * sizeof *s->tok);
    gr_sb sb;
    gr_sb_init(&sb);
    for (size_t i = 0; i < t->nrecs; i++) {
        if (s->keep[i]) {
            gr_sb_reset(&sb);
            if (gr_diff_token(c, s, &t->recs[i], i, &sb)) {
                s->idx[s->n] = i;
                s->tok[s->n] = gr_intern(&c->in, sb.s, sb.len);
                s->n++;
            }
        }
        if (s->has_continued) /* every record, the ignored ones too */
            gr_diff_cshadow_apply(s, &t->recs[i]);
    }
    gr_sb_free(&sb);
}

void gr_diff_side_free(side *s)
{
    free(s->keep);
    free(s->idx);
    free(s->tok);
    for (size_t k = 0; k < s->ncsh; k++)
        free(s->csh[k].ids);
    free(s->csh);
    gr_idmap_free(&s->cmap);
    if (s->has_shape)
        gr_shape_free(&s->shape);
    gr_idmap_free(&s->granks);
    gr_idmap_free(&s->tranks);
    gr_idmap_free(&s->qranks);
    gr_idmap_free(&s->lranks);
}

/* ---- report ------------------------------------------------------------- */

static void meta_of(const gr_trace *t, const char *key, gr_sb *sb)
{
    size_t kn = strlen(key);
    for (size_t i = 0; i < t->nmetas; i++) {
        size_t n, vn;
        const uint8_t *k = gr_trace_string(t, t->metas[i].key, &n);
        const uint8_t *v = gr_trace_string(t, t->metas[i].value, &vn);
        if (k && v && n == kn && memcmp(k, key, n) == 0) {
            gr_sb_escape(sb, v, vn, 0);
            return;
        }
    }
    gr_sb_putc(sb, '?');
}

/* "# A ends early (truncated: WHERE): the last N records of B are not
 * compared" for a truncated trace `side` (t) shorter than `other`; WHERE
 * from gr_report_cut_where. */
static void ends_early(FILE *out, char who, const gr_trace *t, char other, size_t n)
{
    gr_sb sb;
    gr_sb_init(&sb);
    if (t->truncated) {
        gr_sb_puts(&sb, "truncated: ");
        gr_report_cut_where(&sb, t);
    } else {
        gr_sb_printf(&sb, "the program crashed: fatal signal %" PRIu64, t->trailer.signal);
    }
    fprintf(out, "# %c ends early (%s): the last %zu records of %c are not compared\n", who, sb.s,
            n, other);
    gr_sb_free(&sb);
}

/* A trace cut short: by a kill (no trailer) or by a crash (tracer/crash.c
 * wrote the trailer, reason crash).  What the other trace has past its end
 * is not a divergence. */
static int ends_cut(const gr_trace *t)
{
    return t->truncated || (t->has_trailer && t->trailer.reason == GR_STOP_SIGNAL);
}

static void header_line(FILE *out, char sign, const gr_diff_sum *sum)
{
    const gr_trace *t = sum->t;
    gr_sb sb;
    gr_sb_init(&sb);
    gr_sb_printf(&sb, "%c%c%c ", sign, sign, sign);
    gr_sb_escape(&sb, sum->name, strlen(sum->name), 0);
    gr_sb_puts(&sb, "  (python ");
    meta_of(t, "python", &sb);
    gr_sb_puts(&sb, ", greenlet ");
    meta_of(t, "greenlet", &sb);
    gr_sb_printf(&sb, "; %" PRIu64 " records", sum->nrecs);
    if (t->truncated)
        {
        gr_sb_puts(&sb, ", truncated: ");
        gr_report_cut_where(&sb, t);
    }
    if (t->gap)
        gr_sb_printf(&sb, ", the last records of a ring: %" PRIu64 " earlier dropped", t->gap);
    gr_sb_puts(&sb, ")\n");
    fputs(sb.s, out);
    gr_sb_free(&sb);
}

/* The shadow stack of (tid, gid) in t just before record `upto`
 * (qualnames, " > "), at most the innermost 6 entries.  A GREENLET seed's
 * stack enters without runpy's launch frames at its bottom (launch.h), as
 * diff compares stacks; their returns then match no entry and pop none. */
static void shadow_before(const gr_trace *t, size_t upto, uint64_t tid, uint64_t gid, gr_sb *out)
{
    uint32_t *st = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < upto && i < t->nrecs; i++) {
        const gr_record *r = &t->recs[i];
        if (r->tid != tid || r->gid != gid)
            continue;
        switch (r->tag) {
        case GR_GREENLET: {
            const uint32_t *ids = gr_record_stack(t, r);
            n = 0;
            for (uint32_t k = (uint32_t)gr_launch_record_prefix(t, r); k < r->depth; k++) {
                st = gr_xgrow(st, &cap, n + 1, sizeof *st);
                st[n++] = ids[k];
            }
            break;
        }
        case GR_CALL:
        case GR_C_CALL:
            st = gr_xgrow(st, &cap, n + 1, sizeof *st);
            st[n++] = r->code;
            break;
        case GR_RETURN:
        case GR_C_RETURN:
        case GR_C_EXCEPTION: {
            size_t k = n;
            while (k > 0 && st[k - 1] != r->code)
                k--;
            if (k > 0)
                n = k - 1;
            break;
        }
        default: break;
        }
    }
    gr_diff_stack_text(t, st, n, out);
    free(st);
}

void gr_diff_stack_text(const gr_trace *t, const uint32_t *st, size_t n, gr_sb *out)
{
    if (n == 0)
        gr_sb_putc(out, '-');
    size_t from = n > 6 ? n - 6 : 0;
    if (from)
        gr_sb_puts(out, "... > ");
    for (size_t i = from; i < n; i++) {
        const gr_code *c = gr_trace_code(t, st[i]);
        size_t qn;
        const uint8_t *q = c ? gr_trace_string(t, c->qualname, &qn) : NULL;
        if (i > from)
            gr_sb_puts(out, " > ");
        if (q)
            gr_sb_escape(out, q, qn, 0);
        else
            gr_sb_putc(out, '?');
    }
}

/* ---- records of loaded traces (gr_diff_src) ------------------------------ */

typedef struct loaded {
    const side *s[2];
} loaded;

/* Record index of position p of a side (its n when p is past the end). */
static uint64_t loaded_rec_at(void *priv, int k, size_t p)
{
    const side *s = ((loaded *)priv)->s[k];
    return p < s->n ? s->idx[p] : s->t->nrecs;
}

static void loaded_line(void *priv, FILE *out, char sign, int k, size_t p)
{
    const gr_trace *t = ((loaded *)priv)->s[k]->t;
    gr_sb sb;
    gr_sb_init(&sb);
    gr_dump_record(&sb, t, &t->recs[loaded_rec_at(priv, k, p)]);
    fprintf(out, "%c%s\n", sign, gr_sb_str(&sb));
    gr_sb_free(&sb);
}

static void loaded_first(void *priv, int k, size_t p, gr_sb *hdr)
{
    const gr_trace *t = ((loaded *)priv)->s[k]->t;
    uint64_t frec = loaded_rec_at(priv, k, p);
    if (frec >= t->nrecs)
        return;
    const gr_record *r = &t->recs[frec];
    gr_sb_printf(hdr, " t%" PRIu64 " g%" PRIu64 " in %s: ", r->tid, r->gid, k ? "B" : "A");
    shadow_before(t, frec, r->tid, r->gid, hdr);
}

/* ---- report ------------------------------------------------------------- */

/* Print the hunk of runs[r0..r1) (r0 and r1 - 1 are changes) with up to
 * `context` equal records before and after. */
static void print_hunk(FILE *out, const gr_diff_src *src, const gr_edit *runs, size_t nruns,
                       size_t r0, size_t r1, int context)
{
    size_t nctx = context > 0 ? (size_t)context : 0;
    size_t pre = r0 > 0 && runs[r0 - 1].op == '=' ? runs[r0 - 1].n : 0;
    size_t post = r1 < nruns && runs[r1].op == '=' ? runs[r1].n : 0;
    pre = pre < nctx ? pre : nctx;
    post = post < nctx ? post : nctx;
    size_t a_from = runs[r0].a - pre, b_from = runs[r0].b - pre;
    size_t a_n = pre + post, b_n = pre + post;
    for (size_t k = r0; k < r1; k++) {
        if (runs[k].op != '+')
            a_n += runs[k].n;
        if (runs[k].op != '-')
            b_n += runs[k].n;
    }
    /* The first divergent record and its greenlet. */
    const gr_edit *first = &runs[r0];
    int fs = first->op == '+';
    gr_sb hdr;
    gr_sb_init(&hdr);
    gr_sb_printf(&hdr, "@@ -%" PRIu64 ",%zu +%" PRIu64 ",%zu @@", src->rec_at(src->priv, 0, a_from),
                 a_n, src->rec_at(src->priv, 1, b_from), b_n);
    src->first(src->priv, fs, fs ? first->b : first->a, &hdr);
    fprintf(out, "%s\n", gr_sb_str(&hdr));
    gr_sb_free(&hdr);
    for (size_t p = 0; p < pre; p++)
        src->line(src->priv, out, ' ', 0, a_from + p);
    for (size_t k = r0; k < r1; k++) {
        const gr_edit *e = &runs[k];
        for (size_t p = 0; p < e->n; p++) {
            if (e->op == '=')
                src->line(src->priv, out, ' ', 0, e->a + p);
            else if (e->op == '-')
                src->line(src->priv, out, '-', 0, e->a + p);
            else
                src->line(src->priv, out, '+', 1, e->b + p);
        }
    }
    for (size_t p = 0; p < post; p++)
        src->line(src->priv, out, ' ', 0, runs[r1].a + p);
}

/* The lines above the hunks: the two headers, what was compared, what was
 * not, what was ignored. */
static void report_head(FILE *out, const gr_diff_ctx *c, const gr_diff_sum *sa,
                        const gr_diff_sum *sb_)
{
    const gr_diff_opts *o = c->o;
    const side *A = sa->s, *B = sb_->s;
    header_line(out, '-', sa);
    header_line(out, '+', sb_);
    gr_sb sb;
    gr_sb_init(&sb);
    gr_sb_printf(&sb, "# compared: %zu and %zu records; Python code by %s%s; C functions %s", A->n,
                 B->n, o->rename ? "qualname up to renaming" : "qualname",
                 o->files ? ", file and first line" : "",
                 o->c_names == GR_CNAMES_EXACT    ? "by name"
                 : o->c_names == GR_CNAMES_SCRIPT ? "by the names a script reproduces"
                                                  : "not by name");
    if (o->rename)
        gr_sb_puts(&sb, "; mark labels up to renaming");
    fprintf(out, "%s\n", sb.s);
    gr_sb_reset(&sb);
    if (!c->cmp_instr && (A->has_instr || B->has_instr))
        gr_sb_printf(&sb, "INSTR records (only %s has them: CPython 3.12+)",
                     A->has_instr ? "A" : "B");
    if (!c->cmp_ut && (A->knows_ut || B->knows_ut))
        gr_sb_printf(&sb, "%suse_tracing (only %s knows it: CPython 3.9-3.11)", sb.len ? "; " : "",
                     A->knows_ut ? "A" : "B");
    if (A->exit_skipped || B->exit_skipped)
        gr_sb_printf(&sb, "%s%zu records of A and %zu of B after the program's <module> returned "
                          "(interpreter exit, which a script does not reproduce)",
                     sb.len ? "; " : "", A->exit_skipped, B->exit_skipped);
    if (A->launch_skipped || B->launch_skipped)
        gr_sb_printf(&sb, "%s%zu records of A and %zu of B returning from runpy's launch frames "
                          "(python -m; left out of stacks too)",
                     sb.len ? "; " : "", A->launch_skipped, B->launch_skipped);
    if (sb.len)
        fprintf(out, "# not compared: %s\n", sb.s);
    for (int i = 0; i < GR_IGNORE_COUNT; i++)
        if (o->ignore & (1u << i))
            fprintf(out, "# ignored (--ignore %s): %zu records of A, %zu of B\n", gr_ignore_name(i),
                    A->ignored[i], B->ignored[i]);
    gr_sb_free(&sb);
}

/* The summary line; returns gr_diff's status. */
static int report_summary(FILE *out, size_t na, size_t nb, size_t nhunks, size_t shown,
                          size_t only_a, size_t only_b, size_t tail_a, size_t tail_b)
{
    if (nhunks == 0 && !tail_a && !tail_b) {
        fprintf(out, "same structure (%zu records of A, %zu of B compared)\n", na, nb);
        return 0;
    }
    if (nhunks == 0) {
        /* one is cut short (a crashed recording, or its script's rerun):
         * the same as far as it goes, which the summary says */
        fprintf(out, "same structure as far as %s goes (%zu records of A, %zu of B compared), "
                     "but %s ends early: %zu records of %s not compared\n",
                tail_a ? "B" : "A", na - tail_a, nb - tail_b, tail_a ? "B" : "A",
                tail_a ? tail_a : tail_b, tail_a ? "A" : "B");
        return 0;
    }
    fprintf(out, "%zu difference%s: %zu records only in A, %zu only in B", nhunks,
            nhunks == 1 ? "" : "s", only_a, only_b);
    if (shown < nhunks)
        fprintf(out, " (first %zu shown; --max 0 shows all)", shown);
    fputc('\n', out);
    return 1;
}

int gr_diff_report(FILE *out, const gr_diff_ctx *c, const gr_diff_sum *sa, const gr_diff_sum *sb,
                   gr_edit *runs, size_t nruns, int exhausted, const gr_diff_src *src)
{
    const gr_diff_opts *o = c->o;
    const gr_trace *a = sa->t, *b = sb->t;
    size_t na = sa->s->n, nb = sb->s->n;
    report_head(out, c, sa, sb);
    /* A trace cut short: what the other has past its end is not a
     * divergence. */
    size_t tail_a = 0, tail_b = 0;
    if (nruns && runs[nruns - 1].op == '+' && ends_cut(a) && runs[nruns - 1].a == na) {
        tail_b = runs[--nruns].n;
    } else if (nruns && runs[nruns - 1].op == '-' && ends_cut(b) && runs[nruns - 1].b == nb) {
        tail_a = runs[--nruns].n;
    }
    size_t only_a = 0, only_b = 0, nhunks = 0;
    for (size_t i = 0; i < nruns; i++) {
        if (runs[i].op == '-')
            only_a += runs[i].n;
        else if (runs[i].op == '+')
            only_b += runs[i].n;
    }
    /* Hunks: changes separated by at most 2 * context equal records. */
    size_t shown = 0;
    size_t i = 0;
    while (i < nruns) {
        if (runs[i].op == '=') {
            i++;
            continue;
        }
        size_t j = i + 1;
        while (j < nruns) {
            if (runs[j].op == '=' && (j + 1 >= nruns || runs[j].n > 2 * (size_t)o->context))
                break;
            j++;
        }
        nhunks++;
        if (!o->max_hunks || shown < (size_t)o->max_hunks) {
            print_hunk(out, src, runs, nruns, i, j, o->context);
            shown++;
        }
        i = j;
    }
    if (tail_b)
        ends_early(out, 'A', a, 'B', tail_b);
    if (tail_a)
        ends_early(out, 'B', b, 'A', tail_a);
    if (exhausted)
        fprintf(out, "# the traces differ too much to align in full: a part is shown as "
                     "replaced as a whole\n");
    return report_summary(out, na, nb, nhunks, shown, only_a, only_b, tail_a, tail_b);
}

int gr_diff(FILE *out, const gr_trace *a, const char *name_a, const gr_trace *b,
            const char *name_b, const gr_diff_opts *o)
{
    ctx c;
    memset(&c, 0, sizeof c);
    c.o = o;
    side A, B;
    side_init(&A, a, o);
    side_init(&B, b, o);
    c.cmp_instr = A.has_instr && B.has_instr;
    c.cmp_ut = A.knows_ut && B.knows_ut;
    side_tokens(&c, &A);
    side_tokens(&c, &B);
    gr_edit *runs = NULL;
    int exhausted = 0;
    size_t nruns = gr_align(A.tok, A.n, B.tok, B.n, o->budget ? o->budget : GR_DIFF_DEFAULT_BUDGET,
                            &runs, &exhausted);
    gr_diff_sum sa = {a, name_a, a->nrecs, &A}, sb = {b, name_b, b->nrecs, &B};
    loaded l = {{&A, &B}};
    gr_diff_src src = {loaded_rec_at, loaded_line, loaded_first, &l};
    int rc = gr_diff_report(out, &c, &sa, &sb, runs, nruns, exhausted, &src);
    free(runs);
    gr_diff_side_free(&A);
    gr_diff_side_free(&B);
    gr_interner_free(&c.in);
    return rc;
}
