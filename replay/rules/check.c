/* check.c - replay a trace against shadow stacks and report rule
 * violations (check.h; the rules are specified in docs/FORMAT.md §7). */
#include "check.h"

#include "dump.h"
#include "idmap.h"
#include "text.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

const char *gr_rule_name(enum gr_rule rule)
{
    switch (rule) {
    case GR_RULE_IMBALANCE: return "imbalance";
    case GR_RULE_BLIND_SPOT: return "blind_spot";
    case GR_RULE_SWITCH_CONSISTENCY: return "switch_consistency";
    case GR_RULE_PROPAGATION: return "propagation";
    case GR_RULE_STALL_WAIT: return "stall_wait";
    case GR_RULE_STALL_DEPTH: return "stall_depth";
    case GR_RULE_SAMPLE: return "sample";
    default: return "?";
    }
}

/* One shadow-stack entry. */
typedef struct entry {
    uint32_t code;
    uint8_t is_c;   /* pushed by C_CALL (or a C code id in a seed) */
    uint8_t seed;   /* came from the GREENLET record's seed */
    uint8_t gap_ok; /* seed entry: one unmatched C_RETURN/C_EXCEPTION is
                       tolerated while it is the top (a C call we never saw) */
} entry;

/* Shadow stack of one (thread, greenlet). */
typedef struct shadow {
    uint64_t tid, gid;
    entry *e;
    size_t n, cap;
    int base_unknown;   /* frames below e[0] unknown (seed cut, or never seeded) */
    int dead;
    uint64_t dead_index;
    int stack_seen;     /* a STACK record was compared */
    size_t truth;       /* ground-truth points seen in it */
    size_t pred;        /* 1 + index of its open prediction, 0 none */
} shadow;

#define RECENT 3

/* Per-thread state. */
typedef struct thread {
    uint64_t tid;
    int has_current;
    uint64_t current;       /* gid of the greenlet running on the thread */
    int expect_greenlet;    /* THREAD seen, its GREENLET not yet */
    size_t recent[RECENT];  /* last records of this thread, oldest first */
    int nrecent;
    int pending_mark;       /* a bracketed MARK waits for its C_RETURN */
    size_t mark_index;
    uint32_t mark_code;
    size_t mark_ctx[GR_CONTEXT_MAX];
    int mark_nctx;
    int skip_mark_return;   /* MARK without c_call already reported: accept
                               the C_RETURN of mark that follows */
    uint32_t skip_code;
    int sw_profiled;        /* the last SWITCH/THROW of th had our profile
                               function on with tracing 0 */
    size_t sw_index;
    size_t sw_ctx[GR_CONTEXT_MAX]; /* its context, when sw_profiled */
    int sw_nctx;
    int prop_reported;      /* propagation reported for `current` since it
                               was switched to */
    int unprofiled_reported;/* MARK without the profile function reported */
    /* The subject profiler (HOOK records): */
    int subject_off;        /* removed or displaced by the program */
    size_t off_index;       /* the HOOK that turned it off */
    size_t off_ctx[GR_CONTEXT_MAX];
    int off_nctx;
    uint64_t off_action, off_gid;
    uint32_t off_code;      /* the C call during which it happened */
    uint32_t off_frame;     /* innermost Python frame then (0 unknown) */
    uint64_t off_calls;     /* Python calls since, unseen by the subject */
    uint32_t off_first[3];  /* the first of them */
} thread;

/* A predicted blind spot (3.12+): a switch with profiling on landed in a
 * greenlet whose frames are not instrumented at the current version.  It is
 * about the *resumed frame*: the innermost Python frame of the greenlet at
 * the switch.  Only evidence about that frame decides it (see settle_event
 * and settle_mark): its own C_CALL/C_RETURN/C_EXCEPTION or RETURN refute it; a
 * MARK whose innermost frame is the resumed frame (or shallower: the frame
 * is gone) confirms it when it is a blind spot or not bracketed, refutes it
 * otherwise.  A MARK in a frame called afresh after the resume is no
 * evidence: a new frame is instrumented when it starts. */
typedef struct prediction {
    uint64_t tid, gid, version, frames, stale;
    size_t switch_index;
    size_t ctx[GR_CONTEXT_MAX];
    int nctx;
    int open;               /* waiting for evidence or a switch away */
    size_t level;           /* shadow index of the resumed frame, SIZE_MAX
                               when the shadow had no Python entry */
    uint32_t code;          /* its code id (when level is known) */
    size_t depth;           /* real Python depth of the resumed frame (INSTR
                               frames), 0 when unknown (at the cap) */
    size_t callee_mark;     /* 1 + index of the last MARK seen in a new
                               callee (no evidence), 0 none */
    size_t callee_depth;    /* that MARK's Python depth */
} prediction;

typedef struct gr_checker {
    const gr_trace *t;
    gr_check_result *res;
    size_t pos;             /* records replayed so far */
    shadow *sh;
    size_t nsh, cap_sh;
    gr_idmap shmap;
    gr_idmap glmap;         /* (gid, 0) -> first shadow of that gid */
    thread *th;
    size_t nth, cap_th;
    gr_idmap thmap;
    gr_sb msg;              /* scratch for messages */
    uint32_t *fa, *fb;      /* scratch stacks for comparisons */
    size_t cap_fa, cap_fb;
    prediction *pred;
    size_t npred, cap_pred;
    size_t program_events;  /* coverage: records of the program */
    size_t marks, truth_points, switch_truth, stacks;
    int profile_off;        /* META profile: off (no subject at all) */
    int stopped;
    size_t stop_index;
    size_t stop_ctx[GR_CONTEXT_MAX];
    int stop_nctx;
} ck;

/* ------------------------------------------------------------ helpers */

static thread *get_thread(ck *c, uint64_t tid)
{
    size_t i;
    if (!gr_idmap_get(&c->thmap, tid, 0, &i)) {
        c->th = gr_xgrow(c->th, &c->cap_th, c->nth + 1, sizeof *c->th);
        i = c->nth++;
        memset(&c->th[i], 0, sizeof c->th[i]);
        c->th[i].tid = tid;
        gr_idmap_put(&c->thmap, tid, 0, i);
    }
    return &c->th[i];
}

/* Index of the shadow of (tid, gid), created empty with an unknown base
 * when new.  Indices stay valid; pointers only until the next call. */
static size_t get_shadow(ck *c, uint64_t tid, uint64_t gid)
{
    size_t i;
    if (!gr_idmap_get(&c->shmap, tid, gid, &i)) {
        c->sh = gr_xgrow(c->sh, &c->cap_sh, c->nsh + 1, sizeof *c->sh);
        i = c->nsh++;
        memset(&c->sh[i], 0, sizeof c->sh[i]);
        c->sh[i].tid = tid;
        c->sh[i].gid = gid;
        c->sh[i].base_unknown = 1;
        gr_idmap_put(&c->shmap, tid, gid, i);
        size_t first;
        if (!gr_idmap_get(&c->glmap, gid, 0, &first))
            gr_idmap_put(&c->glmap, gid, 0, i);
    }
    return i;
}

static void push(shadow *s, uint32_t code, int is_c)
{
    s->e = gr_xgrow(s->e, &s->cap, s->n + 1, sizeof *s->e);
    s->e[s->n++] = (entry){.code = code, .is_c = (uint8_t)is_c};
}

/* Context of record index i on thread th: its recent records, then i. */
static int make_ctx(const thread *th, size_t i, size_t ctx[GR_CONTEXT_MAX])
{
    int n = 0;
    for (int k = 0; k < th->nrecent; k++)
        ctx[n++] = th->recent[k];
    ctx[n++] = i;
    return n;
}

static void remember(thread *th, size_t i)
{
    if (th->nrecent == RECENT) {
        memmove(th->recent, th->recent + 1, (RECENT - 1) * sizeof th->recent[0]);
        th->nrecent--;
    }
    th->recent[th->nrecent++] = i;
}

void gr_check_add_violation(gr_check_result *res, enum gr_rule rule, uint64_t index,
                            uint64_t tid, uint64_t gid, char *message, const size_t *ctx,
                            int nctx)
{
    res->v = gr_xgrow(res->v, &res->cap_v, res->nv + 1, sizeof *res->v);
    gr_violation *v = &res->v[res->nv];
    memset(v, 0, sizeof *v);
    v->rule = rule;
    v->index = index;
    v->tid = tid;
    v->gid = gid;
    v->message = message;
    for (int k = 0; k < nctx && k < GR_CONTEXT_MAX; k++)
        v->ctx[v->nctx++] = ctx[k];
    v->seq = res->nv++;
    if ((int)rule >= 0 && rule < GR_NRULES)
        res->counts[rule]++;
}

void gr_check_add_warning(gr_check_result *res, char *message)
{
    res->warnings = gr_xgrow(res->warnings, &res->cap_warnings, res->nwarnings + 1,
                             sizeof *res->warnings);
    res->warnings[res->nwarnings++] = message;
}

/* Record a violation whose message is in c->msg (which is then reset). */
static void violate_ctx(ck *c, enum gr_rule rule, uint64_t index, uint64_t tid, uint64_t gid,
                        const size_t *ctx, int nctx)
{
    gr_check_add_violation(c->res, rule, index, tid, gid, gr_sb_take(&c->msg), ctx, nctx);
}

/* Violation at record r of thread th (context: th's recent records + r). */
static void violate(ck *c, enum gr_rule rule, const gr_record *r, const thread *th, uint64_t gid)
{
    size_t ctx[GR_CONTEXT_MAX];
    int n = make_ctx(th, (size_t)r->index, ctx);
    violate_ctx(c, rule, r->index, r->tid, gid, ctx, n);
}

static void code_name(ck *c, uint32_t code)
{
    gr_dump_code(&c->msg, c->t, code);
}

/* Long stacks in messages show their first SHOW_HEAD and last SHOW_TAIL
 * entries around "... (N more) ...". */
#define SHOW_HEAD 4
#define SHOW_TAIL 8

/* Append code ids (outermost first) as "a > b", eliding the middle of long
 * stacks; "-" when n == 0. */
static void codes(ck *c, const uint32_t *ids, size_t n)
{
    if (n == 0) {
        gr_sb_putc(&c->msg, '-');
        return;
    }
    for (size_t k = 0; k < n; k++) {
        if (n > SHOW_HEAD + SHOW_TAIL + 1 && k == SHOW_HEAD) {
            gr_sb_printf(&c->msg, " > ... (%zu more) ...", n - SHOW_HEAD - SHOW_TAIL);
            k = n - SHOW_TAIL - 1;
            continue;
        }
        if (k)
            gr_sb_puts(&c->msg, " > ");
        code_name(c, ids[k]);
    }
}

/* Append shadow entries [from, to) of s like codes(). */
static void entries(ck *c, const shadow *s, size_t from, size_t to)
{
    size_t n = to - from;
    for (size_t k = 0; k < n; k++) {
        if (n > SHOW_HEAD + SHOW_TAIL + 1 && k == SHOW_HEAD) {
            gr_sb_printf(&c->msg, " > ... (%zu more) ...", n - SHOW_HEAD - SHOW_TAIL);
            k = n - SHOW_TAIL - 1;
            continue;
        }
        if (k)
            gr_sb_puts(&c->msg, " > ");
        code_name(c, s->e[from + k].code);
    }
}

static void add_note(ck *c, enum gr_note_kind kind, const shadow *s)
{
    gr_check_result *res = c->res;
    gr_sb_reset(&c->msg);
    entries(c, s, 0, s->n);
    res->notes = gr_xgrow(res->notes, &res->cap_notes, res->nnotes + 1, sizeof *res->notes);
    gr_note *nt = &res->notes[res->nnotes++];
    nt->kind = kind;
    nt->tid = s->tid;
    nt->gid = s->gid;
    nt->frames = gr_sb_take(&c->msg);
}

static void add_warning(ck *c)
{
    gr_check_add_warning(c->res, gr_sb_take(&c->msg));
}

static const char *kind_name(const gr_record *r)
{
    const char *k = gr_tag_name(r->tag);
    return k ? k : "?";
}

static int code_is_c(const gr_trace *t, uint32_t code)
{
    const gr_code *cd = gr_trace_code(t, code);
    return cd && cd->kind == GR_CODE_C;
}

int gr_code_is_own(const gr_trace *t, uint32_t code)
{
    const gr_code *cd = gr_trace_code(t, code);
    if (!cd)
        return 0;
    size_t n;
    const uint8_t *q;
    if (cd->kind == GR_CODE_C) {
        q = gr_trace_string(t, cd->qualname, &n);
        return q && ((n > 12 && memcmp(q, "greenreplay.", 12) == 0) ||
                     (n > 13 && memcmp(q, "_greenreplay.", 13) == 0));
    }
    q = gr_trace_string(t, cd->file, &n);
    return q && n > 14 && memcmp(q, "<greenreplay>/", 14) == 0;
}

int gr_check_ground_truth(const gr_trace *t, const gr_record *r)
{
    (void)t;
    if (r->tag == GR_MARK)
        return 1;
    /* A switch that carries the target's real stack, compared with the
     * target's shadow (switch_stack) unless seen inside a callback. */
    return (r->tag == GR_SWITCH || r->tag == GR_THROW) && (r->flags & GR_SW_REAL_STACK) &&
           r->tracing == 0;
}

/* Coverage counts of record r (gr_coverage). */
static void count_coverage(ck *c, const gr_record *r)
{
    switch (r->tag) {
    case GR_CALL:
    case GR_RETURN:
    case GR_C_CALL:
    case GR_C_RETURN:
    case GR_C_EXCEPTION:
        c->program_events += !gr_code_is_own(c->t, r->code);
        break;
    case GR_SWITCH:
    case GR_THROW:
        c->program_events++;
        break;
    case GR_MARK:
        c->program_events++;
        c->marks++;
        break;
    case GR_STACK:
        c->stacks++;
        break;
    default:
        break;
    }
    if (gr_check_ground_truth(c->t, r)) {
        int sw = r->tag == GR_SWITCH || r->tag == GR_THROW;
        c->truth_points++;
        c->switch_truth += sw;
        c->sh[get_shadow(c, r->tid, sw ? r->target : r->gid)].truth++;
    }
}

/* A record attributed to a dead greenlet: report once, then treat the
 * greenlet as alive again so one bad DEAD gives one violation. */
static void check_alive(ck *c, const gr_record *r, const thread *th, size_t si, uint64_t gid)
{
    shadow *s = &c->sh[si];
    if (!s->dead)
        return;
    gr_sb_printf(&c->msg, "%s record for g%" PRIu64 " after its DEAD at event %" PRIu64,
                 kind_name(r), gid, s->dead_index);
    s->dead = 0;
    violate(c, GR_RULE_SWITCH_CONSISTENCY, r, th, gid);
}

/* A CALL/RETURN/C_ * /MARK must come from the running greenlet.  On a
 * mismatch, report and adopt the record's greenlet (a switch was missed). */
static void check_running(ck *c, const gr_record *r, thread *th)
{
    if (!th->has_current) {
        th->has_current = 1;
        th->current = r->gid;
        return;
    }
    if (r->gid == th->current)
        return;
    gr_sb_printf(&c->msg,
                 "%s in g%" PRIu64 " but g%" PRIu64 " is running on t%" PRIu64
                 " (no SWITCH to g%" PRIu64 " seen)",
                 kind_name(r), r->gid, th->current, r->tid, r->gid);
    violate(c, GR_RULE_SWITCH_CONSISTENCY, r, th, r->gid);
    th->current = r->gid;
}

/* ----------------------------------------------------------- records */

static void on_greenlet(ck *c, const gr_record *r, thread *th)
{
    size_t si = get_shadow(c, r->tid, r->gid);
    check_alive(c, r, th, si, r->gid);
    shadow *s = &c->sh[si];
    const uint32_t *ids = gr_record_stack(c->t, r);
    s->n = 0;
    for (uint32_t k = 0; k < r->depth; k++)
        push(s, ids[k], code_is_c(c->t, ids[k]));
    for (uint32_t k = 0; k < r->depth; k++) {
        entry *e = &s->e[k];
        e->seed = 1;
        if (k + 1 == r->depth) /* top: suspended inside a C call (switch) */
            e->gap_ok = (r->flags & GR_GL_SUSPENDED) != 0;
        else /* a C call between this frame and the next is invisible */
            e->gap_ok = !e->is_c && !s->e[k + 1].is_c;
    }
    s->base_unknown = (r->flags & GR_GL_CUT) != 0;
    if (th->expect_greenlet) {
        th->expect_greenlet = 0;
        th->has_current = 1;
        th->current = r->gid;
    }
}

static const char *call_kind(int is_c)
{
    return is_c ? "C_CALL" : "CALL";
}

/* RETURN / C_RETURN / C_EXCEPTION: pop the matching entry or resync. */
static void on_return(ck *c, const gr_record *r, thread *th, int is_c)
{
    size_t si = get_shadow(c, r->tid, r->gid);
    shadow *s = &c->sh[si];
    entry *top = s->n ? &s->e[s->n - 1] : NULL;
    if (top && top->code == r->code && top->is_c == is_c) {
        s->n--;
        return;
    }
    if (is_c && top && top->seed && top->gap_ok) {
        top->gap_ok = 0; /* the C call the seed's frame was inside */
        return;
    }
    if (!top && s->base_unknown)
        return; /* returns below the known part of the stack */
    size_t k = s->n;
    while (k > 0 && !(s->e[k - 1].code == r->code && s->e[k - 1].is_c == is_c))
        k--;
    gr_sb_printf(&c->msg, "%s of ", kind_name(r));
    code_name(c, r->code);
    if (k > 0) {
        /* the entry is deeper: the returns above it were lost */
        gr_sb_puts(&c->msg, " but the shadow top is ");
        code_name(c, top->code);
        gr_sb_puts(&c->msg, ": profiler missed the return of ");
        entries(c, s, k, s->n);
        gr_sb_printf(&c->msg, "; resynced by popping %zu entr%s", s->n - (k - 1),
                     s->n - (k - 1) == 1 ? "y" : "ies");
        s->n = k - 1;
    } else {
        gr_sb_printf(&c->msg, " without a matching %s (shadow top: ", call_kind(is_c));
        if (top)
            code_name(c, top->code);
        else
            gr_sb_puts(&c->msg, "empty");
        gr_sb_puts(&c->msg, ")");
        if (is_c)
            gr_sb_puts(&c->msg, "; a c_return without its c_call is the CPython issue "
                                "122029 class (c_call not reported to the profiler)");
        gr_sb_puts(&c->msg, "; ignored");
    }
    violate(c, GR_RULE_IMBALANCE, r, th, r->gid);
}

/* Python frames of shadow s into c->fa; returns how many. */
static size_t shadow_py(ck *c, const shadow *s)
{
    c->fa = gr_xgrow(c->fa, &c->cap_fa, s->n + 1, sizeof *c->fa);
    size_t n = 0;
    for (size_t k = 0; k < s->n; k++)
        if (!s->e[k].is_c)
            c->fa[n++] = s->e[k].code;
    return n;
}

/* Python frames of a record's stack into c->fb; returns how many. */
static size_t record_py(ck *c, const gr_record *r)
{
    c->fb = gr_xgrow(c->fb, &c->cap_fb, (size_t)r->depth + 1, sizeof *c->fb);
    const uint32_t *ids = gr_record_stack(c->t, r);
    size_t n = 0;
    for (uint32_t k = 0; k < r->depth; k++)
        if (!code_is_c(c->t, ids[k]))
            c->fb[n++] = ids[k];
    return n;
}

/* Append "profiler missed WHAT of x, WHAT of y" for n frames (at most
 * SHOW_TAIL named); first: no "; " separator before it. */
static void missed(ck *c, const char *what, const uint32_t *ids, size_t n, int first)
{
    if (n == 0)
        return;
    gr_sb_printf(&c->msg, "%sprofiler missed %s of ", first ? "" : "; ", what);
    for (size_t k = 0; k < n && k < SHOW_TAIL; k++) {
        if (k)
            gr_sb_printf(&c->msg, ", %s of ", what);
        code_name(c, ids[k]);
    }
    if (n > SHOW_TAIL)
        gr_sb_printf(&c->msg, " and %zu more", n - SHOW_TAIL);
}

/* Compare shadow Python frames (c->fa, na) with the real ones (c->fb, nb),
 * outermost first.  real_cut: only the innermost real frames are listed;
 * base_unknown: only the innermost shadow frames are known.  On a
 * difference, appends to c->msg what the profiler missed and returns 1. */
static int compare(ck *c, size_t na, size_t nb, int real_cut, int base_unknown)
{
    const uint32_t *a = c->fa, *b = c->fb;
    if (real_cut && na > nb) {
        a += na - nb;
        na = nb;
    }
    if (base_unknown && nb > na) {
        b += nb - na;
        nb = na;
    }
    size_t p = 0;
    while (p < na && p < nb && a[p] == b[p])
        p++;
    if (p == na && p == nb)
        return 0;
    size_t s = 0;
    while (s < na - p && s < nb - p && a[na - 1 - s] == b[nb - 1 - s])
        s++;
    missed(c, "return", a + p, na - s - p, 1);
    missed(c, "call", b + p, nb - s - p, na - s - p == 0);
    gr_sb_puts(&c->msg, "; real stack: ");
    codes(c, b, nb);
    gr_sb_puts(&c->msg, "; shadow: ");
    codes(c, a, na);
    return 1;
}

/* Decide prediction p (open): `at` is the record that decides it (NULL:
 * the greenlet switched away or the trace ended without evidence),
 * `confirm` whether that record shows the blind spot (a MARK that is one,
 * or not bracketed), `why` names the evidence for a refutation. */
static void decide(ck *c, prediction *p, const gr_record *at, int confirm, const char *why)
{
    p->open = 0;
    size_t si;
    if (gr_idmap_get(&c->shmap, p->tid, p->gid, &si) && c->sh[si].pred == (size_t)(p - c->pred) + 1)
        c->sh[si].pred = 0;
    gr_sb_printf(&c->msg,
                 "predicted blind spot: profiling is on for t%" PRIu64 " but %" PRIu64 " of the %"
                 PRIu64 " frames of g%" PRIu64 " are not instrumented at monitoring version %" PRIu64
                 " (they will report no events of their own when resumed; CPython 3.12+ "
                 "sys.monitoring re-instruments only the current frame chain)",
                 p->tid, p->stale, p->frames, p->gid, p->version);
    if (at && !confirm) {
        gr_sb_printf(&c->msg, "; refuted by the %s at event %" PRIu64 ", %s", kind_name(at),
                     at->index, why);
        add_warning(c);
        return;
    }
    if (at)
        gr_sb_printf(&c->msg, "; confirmed by the blind spot at MARK %" PRIu64
                              " in the resumed frame",
                     at->index);
    else if (p->callee_mark)
        gr_sb_printf(&c->msg, "; not confirmed: the MARK at event %zu ran in a new callee "
                              "(Python depth %zu, the resumed frame is at depth %zu), which is "
                              "instrumented when it starts and cannot speak for the resumed "
                              "frame; no evidence about the resumed frame before g%" PRIu64
                              " switched away",
                     p->callee_mark - 1, p->callee_depth, p->depth, p->gid);
    else
        gr_sb_puts(&c->msg, "; not confirmed: no MARK ran in that greenlet before it switched "
                            "away");
    violate_ctx(c, GR_RULE_PROPAGATION, p->switch_index, p->tid, p->gid, p->ctx, p->nctx);
}

/* The open prediction of shadow s, or NULL. */
static prediction *open_pred(ck *c, const shadow *s)
{
    if (!s->pred)
        return NULL;
    prediction *p = &c->pred[s->pred - 1];
    return p->open ? p : NULL;
}

/* Settle the open prediction of (tid, gid), if any, without evidence (the
 * greenlet switched away, or the trace ended). */
static void settle(ck *c, uint64_t tid, uint64_t gid)
{
    size_t si;
    if (!gr_idmap_get(&c->shmap, tid, gid, &si))
        return;
    prediction *p = open_pred(c, &c->sh[si]);
    if (p)
        decide(c, p, NULL, 0, NULL);
}

/* Shadow index of the innermost Python entry of s, SIZE_MAX if none. */
static size_t innermost_py(const shadow *s)
{
    for (size_t k = s->n; k > 0; k--)
        if (!s->e[k - 1].is_c)
            return k - 1;
    return SIZE_MAX;
}

/* A CALL/RETURN/C_* record r of a greenlet with an open prediction, before
 * it is applied to shadow s: an event the resumed frame reported itself
 * refutes the prediction.  Its C calls' C_CALL, C_RETURN and C_EXCEPTION
 * (the innermost Python entry is still the resumed frame) and its own
 * RETURN are fired by its own instructions; a CALL is fired by the callee,
 * which is instrumented afresh, and is no evidence. */
static void settle_event(ck *c, const gr_record *r, const shadow *s)
{
    prediction *p = open_pred(c, s);
    if (!p || p->level == SIZE_MAX || r->tag == GR_CALL)
        return;
    size_t k = innermost_py(s);
    if (k != p->level || s->e[k].code != p->code)
        return;
    if (r->tag == GR_RETURN) {
        if (r->code == p->code && s->n == k + 1)
            decide(c, p, r, 0, "the return of the resumed frame itself");
        return;
    }
    decide(c, p, r, 0, "an event of a C call of the resumed frame itself");
}

/* A MARK of a greenlet with an open prediction; blind: it is a blind spot
 * or not bracketed.  nb: the MARK's Python depth. */
static void settle_mark(ck *c, const gr_record *r, const shadow *s, int blind, size_t nb)
{
    prediction *p = open_pred(c, s);
    if (!p)
        return;
    int cut = (r->flags & GR_MARK_CUT) != 0;
    if (!p->depth || cut)
        return; /* depths at the cap: the MARK cannot be placed */
    if (nb > p->depth) {
        p->callee_mark = (size_t)r->index + 1;
        p->callee_depth = nb;
        return;
    }
    if (blind) {
        decide(c, p, r, 1, NULL);
        return;
    }
    /* Not blind: the shadow equals the real stack.  At the resumed frame's
     * depth, its innermost frame is the resumed one when the code matches. */
    if (nb == p->depth && c->fb && nb && c->fb[nb - 1] == p->code)
        decide(c, p, r, 0, "which matched with the resumed frame innermost");
}

static void on_instr(ck *c, const gr_record *r, thread *th)
{
    if (!r->use_tracing || !th->sw_profiled || th->sw_index + 1 != r->index)
        return;
    /* One prediction per greenlet and instrumentation version: a greenlet
     * that keeps stale frames (a hub parked in its loop) is not reported
     * again at every switch into it. */
    for (size_t i = 0; i < c->npred; i++)
        if (c->pred[i].tid == r->tid && c->pred[i].gid == r->gid && c->pred[i].version == r->tracing)
            return;
    if (c->npred == c->cap_pred) {
        size_t n = c->cap_pred ? 2 * c->cap_pred : 8;
        prediction *p = realloc(c->pred, n * sizeof *p);
        if (!p)
            return;
        c->pred = p;
        c->cap_pred = n;
    }
    prediction *p = &c->pred[c->npred++];
    p->tid = r->tid;
    p->gid = r->gid;
    p->version = r->tracing;
    p->frames = r->parent;
    p->stale = r->use_tracing;
    p->switch_index = th->sw_index;
    memcpy(p->ctx, th->sw_ctx, sizeof p->ctx);
    p->nctx = th->sw_nctx;
    p->open = 1;
    p->callee_mark = 0;
    p->callee_depth = 0;
    p->depth = r->parent < GR_STACK_CAP ? (size_t)r->parent : 0;
    size_t si = get_shadow(c, r->tid, r->gid);
    shadow *s = &c->sh[si];
    p->level = innermost_py(s);
    p->code = p->level == SIZE_MAX ? 0 : s->e[p->level].code;
    s->pred = c->npred; /* 1 + index */
}

static void on_mark(ck *c, const gr_record *r, thread *th)
{
    if ((r->flags & GR_MARK_TRACING_OFF) && !th->prop_reported) {
        gr_sb_printf(&c->msg,
                     "profiling is on for t%" PRIu64 " but g%" PRIu64 " runs with use_tracing=0 "
                     "at this MARK: it produces no profile events (greenlet issue 256 / CPython "
                     "PR 25276 class)",
                     r->tid, r->gid);
        violate(c, GR_RULE_PROPAGATION, r, th, r->gid);
        th->prop_reported = 1;
    }
    if (!(r->flags & (GR_MARK_PROFILE_OURS | GR_MARK_IN_CALLBACK)) && !c->profile_off &&
        !th->subject_off && !th->unprofiled_reported) {
        gr_sb_printf(&c->msg,
                     "no profile function on t%" PRIu64 " at this MARK: the code of this thread "
                     "ran unseen (a thread the profiler never reached, e.g. one started with "
                     "_thread.start_new_thread)",
                     r->tid);
        violate(c, GR_RULE_BLIND_SPOT, r, th, r->gid);
        th->unprofiled_reported = 1;
    }
    size_t si = get_shadow(c, r->tid, r->gid);
    const shadow *s = &c->sh[si];
    size_t na = shadow_py(c, s), nb = record_py(c, r);
    gr_sb_puts(&c->msg, "stack at MARK differs from the profile events: ");
    int blind = compare(c, na, nb, (r->flags & GR_MARK_CUT) != 0, s->base_unknown);
    if (blind)
        violate(c, GR_RULE_BLIND_SPOT, r, th, r->gid);
    else
        gr_sb_reset(&c->msg);
    const entry *top = s->n ? &s->e[s->n - 1] : NULL;
    int bracketed = top && top->is_c && top->code == r->code;
    if (c->npred)
        settle_mark(c, r, s, blind || ((r->flags & GR_MARK_PROFILE_OURS) && !bracketed), nb);
    if (!(r->flags & GR_MARK_PROFILE_OURS))
        return;
    if (bracketed) {
        th->pending_mark = 1; /* the next record of th must be its C_RETURN */
        th->mark_index = (size_t)r->index;
        th->mark_code = r->code;
        th->mark_nctx = make_ctx(th, (size_t)r->index, th->mark_ctx);
        return;
    }
    gr_sb_puts(&c->msg, "mark not bracketed by c_call/c_return of mark: no C_CALL of ");
    code_name(c, r->code);
    gr_sb_puts(&c->msg, " before it (shadow top: ");
    if (top)
        code_name(c, top->code);
    else
        gr_sb_puts(&c->msg, "empty");
    gr_sb_puts(&c->msg, ")");
    violate(c, GR_RULE_BLIND_SPOT, r, th, r->gid);
    th->skip_mark_return = 1;
    th->skip_code = r->code;
}

/* The record after a bracketed MARK on the same thread. */
static void resolve_mark(ck *c, const gr_record *next, thread *th)
{
    th->pending_mark = 0;
    if (next && (next->tag == GR_C_RETURN || next->tag == GR_C_EXCEPTION) &&
        next->code == th->mark_code)
        return;
    const gr_record *m = &c->t->recs[th->mark_index];
    gr_sb_puts(&c->msg, "mark not bracketed by c_call/c_return of mark: ");
    if (next)
        gr_sb_printf(&c->msg, "the next record of t%" PRIu64 " is %s at event %" PRIu64
                              ", not the C_RETURN of ",
                     th->tid, kind_name(next), next->index);
    else
        gr_sb_puts(&c->msg, "the trace ends before the C_RETURN of ");
    code_name(c, th->mark_code);
    violate_ctx(c, GR_RULE_BLIND_SPOT, m->index, m->tid, m->gid, th->mark_ctx, th->mark_nctx);
}

/* Replace shadow si by the Python frames of record r's stack, as a seed
 * (after a blind spot at a ground-truth point, so that one loss is
 * reported once and not as a cascade of imbalances). */
static void reseed(ck *c, size_t si, const gr_record *r)
{
    shadow *s = &c->sh[si];
    const uint32_t *ids = gr_record_stack(c->t, r);
    s->n = 0;
    for (uint32_t k = 0; k < r->depth; k++)
        if (!code_is_c(c->t, ids[k]))
            push(s, ids[k], 0);
    for (size_t k = 0; k < s->n; k++) {
        s->e[k].seed = 1;
        s->e[k].gap_ok = 1;
    }
}

/* The end of an episode in which the subject profiler was off on th. */
static void subject_back(ck *c, thread *th, const char *until)
{
    if (!th->subject_off)
        return;
    th->subject_off = 0;
    if (!th->off_calls)
        return;
    gr_sb_printf(&c->msg, "the profile function of t%" PRIu64 " was %s (HOOK at event %zu",
                 th->tid,
                 th->off_action == GR_HOOK_SET ? "replaced by the program's own profile function"
                                               : "removed by the program",
                 th->off_index);
    if (th->off_code) {
        gr_sb_puts(&c->msg, ", during ");
        code_name(c, th->off_code);
    }
    if (th->off_frame) {
        gr_sb_puts(&c->msg, " in ");
        code_name(c, th->off_frame);
    }
    gr_sb_printf(&c->msg, "): %" PRIu64 " Python call%s ran unseen by it %s (first: ", th->off_calls,
                 th->off_calls == 1 ? "" : "s", until);
    for (uint64_t k = 0; k < th->off_calls && k < 3; k++) {
        if (k)
            gr_sb_puts(&c->msg, ", ");
        code_name(c, th->off_first[k]);
    }
    gr_sb_puts(&c->msg, ")");
    violate_ctx(c, GR_RULE_BLIND_SPOT, th->off_index, th->tid, th->off_gid, th->off_ctx, th->off_nctx);
}

/* HOOK: the program changed a profile slot; the observer kept recording.
 * The C call in progress (sys.setprofile, Profile.enable, ...) reports its
 * c_return to whatever the program installed, not to the recorder. */
static void on_hook(ck *c, const gr_record *r, thread *th)
{
    size_t si = get_shadow(c, r->tid, r->gid);
    shadow *s = &c->sh[si];
    if (r->code && s->n && s->e[s->n - 1].is_c && s->e[s->n - 1].code == r->code)
        s->n--;
    if (r->flags != GR_HOOK_PROFILE)
        return;
    int on = (r->parent & GR_HOOK_SUBJECT_ON) != 0;
    if (on) {
        char until[64];
        snprintf(until, sizeof until, "until event %" PRIu64, r->index);
        subject_back(c, th, until);
        return;
    }
    if (th->subject_off)
        return; /* still off: the first cause is the one named */
    th->subject_off = 1;
    th->off_index = (size_t)r->index;
    th->off_nctx = make_ctx(th, (size_t)r->index, th->off_ctx);
    th->off_action = r->tracing;
    th->off_gid = r->gid;
    th->off_code = r->code;
    th->off_frame = 0;
    for (size_t k = s->n; k-- > 0;)
        if (!s->e[k].is_c) {
            th->off_frame = s->e[k].code;
            break;
        }
    th->off_calls = 0;
}

/* A ground-truth stack at a switch (format 1.1): the target's real Python
 * frames where the switch was seen, against its shadow. */
static void switch_stack(ck *c, const gr_record *r, thread *th, size_t st)
{
    if (!(r->flags & GR_SW_REAL_STACK) || r->tracing != 0)
        return; /* no stack, or seen inside a callback */
    const shadow *s = &c->sh[st];
    size_t na = shadow_py(c, s), nb = record_py(c, r);
    gr_sb_printf(&c->msg, "real stack of g%" PRIu64 " at %s differs from the profile events: ",
                 r->target, kind_name(r));
    if (compare(c, na, nb, (r->flags & GR_SW_CUT) != 0, s->base_unknown)) {
        violate(c, GR_RULE_BLIND_SPOT, r, th, r->target);
        reseed(c, st, r);
    } else {
        gr_sb_reset(&c->msg);
    }
}

static void on_switch(ck *c, const gr_record *r, thread *th)
{
    size_t so = get_shadow(c, r->tid, r->gid);
    size_t st = get_shadow(c, r->tid, r->target);
    const char *k = kind_name(r);
    if (th->has_current && th->current != r->gid) {
        gr_sb_printf(&c->msg, "%s from g%" PRIu64 " but g%" PRIu64 " is running on t%" PRIu64,
                     k, r->gid, th->current, r->tid);
        violate(c, GR_RULE_SWITCH_CONSISTENCY, r, th, r->gid);
    }
    check_alive(c, r, th, so, r->gid);
    if (c->sh[st].dead) {
        gr_sb_printf(&c->msg, "%s to g%" PRIu64 " after its DEAD at event %" PRIu64, k, r->target,
                     c->sh[st].dead_index);
        c->sh[st].dead = 0;
        violate(c, GR_RULE_SWITCH_CONSISTENCY, r, th, r->target);
    }
    th->prop_reported = 0;
    uint64_t need = GR_SW_PROFILE_OURS | GR_SW_USE_TRACING_KNOWN;
    if ((r->flags & need) == need && r->use_tracing == 0 && r->tracing == 0) {
        gr_sb_printf(&c->msg,
                     "profiling is on for t%" PRIu64 " but g%" PRIu64
                     " %s with use_tracing=0: it %s no profile events "
                     "(greenlet issue 256 / CPython PR 25276 class)",
                     r->tid, r->target, (r->flags & GR_SW_AT_MARK) ? "runs" : "resumes",
                     (r->flags & GR_SW_AT_MARK) ? "produces" : "will produce");
        violate(c, GR_RULE_PROPAGATION, r, th, r->target);
        th->prop_reported = 1;
    }
    switch_stack(c, r, th, st);
    if (c->npred)
        settle(c, r->tid, r->gid);
    th->sw_profiled = (r->flags & GR_SW_PROFILE_OURS) && r->tracing == 0;
    th->sw_index = (size_t)r->index;
    if (th->sw_profiled)
        th->sw_nctx = make_ctx(th, (size_t)r->index, th->sw_ctx);
    th->has_current = 1;
    th->current = r->target;
}

static void on_dead(ck *c, const gr_record *r, thread *th)
{
    size_t si = get_shadow(c, r->tid, r->gid);
    check_alive(c, r, th, si, r->gid);
    shadow *s = &c->sh[si];
    if (s->n) {
        gr_sb_printf(&c->msg, "g%" PRIu64 " died with %zu open shadow entr%s: ", r->gid, s->n,
                     s->n == 1 ? "y" : "ies");
        entries(c, s, 0, s->n);
        violate(c, GR_RULE_IMBALANCE, r, th, r->gid);
    }
    s->n = 0;
    s->dead = 1;
    s->dead_index = r->index;
}

static void on_stack(ck *c, const gr_record *r, thread *th)
{
    size_t si = get_shadow(c, r->tid, r->gid);
    check_alive(c, r, th, si, r->gid);
    shadow *s = &c->sh[si];
    s->stack_seen = 1;
    size_t na = shadow_py(c, s), nb = record_py(c, r);
    gr_sb_printf(&c->msg, "g%" PRIu64 " at stop: open frames differ from its real stack: ",
                 r->gid);
    int differ = compare(c, na, nb, (r->flags & GR_STACK_CUT) != 0, s->base_unknown);
    if (differ && !(r->flags & GR_STACK_THREAD_ENDED)) {
        violate(c, GR_RULE_IMBALANCE, r, th, r->gid);
        return;
    }
    gr_sb_reset(&c->msg);
    if (s->n)
        add_note(c, (r->flags & GR_STACK_THREAD_ENDED) ? GR_NOTE_ABANDONED : GR_NOTE_OPEN_AT_STOP, s);
}

static void one_record(ck *c, const gr_record *r)
{
    thread *th = get_thread(c, r->tid);
    if (th->pending_mark)
        resolve_mark(c, r, th);
    int skip = th->skip_mark_return && (r->tag == GR_C_RETURN || r->tag == GR_C_EXCEPTION) &&
               r->code == th->skip_code;
    th->skip_mark_return = 0;
    switch (r->tag) {
    case GR_THREAD:
        th->expect_greenlet = 1;
        break;
    case GR_GREENLET:
        on_greenlet(c, r, th);
        break;
    case GR_CALL:
    case GR_C_CALL: {
        if (th->subject_off && r->tag == GR_CALL) {
            if (th->off_calls < 3)
                th->off_first[th->off_calls] = r->code;
            th->off_calls++;
        }
        check_running(c, r, th);
        size_t si = get_shadow(c, r->tid, r->gid);
        check_alive(c, r, th, si, r->gid);
        if (c->npred)
            settle_event(c, r, &c->sh[si]);
        push(&c->sh[si], r->code, r->tag == GR_C_CALL);
        break;
    }
    case GR_RETURN:
    case GR_C_RETURN:
    case GR_C_EXCEPTION: {
        check_running(c, r, th);
        size_t si = get_shadow(c, r->tid, r->gid);
        check_alive(c, r, th, si, r->gid);
        if (c->npred && !skip)
            settle_event(c, r, &c->sh[si]);
        if (!skip)
            on_return(c, r, th, r->tag != GR_RETURN);
        break;
    }
    case GR_SWITCH:
    case GR_THROW:
        on_switch(c, r, th);
        break;
    case GR_MARK: {
        check_running(c, r, th);
        check_alive(c, r, th, get_shadow(c, r->tid, r->gid), r->gid);
        on_mark(c, r, th);
        break;
    }
    case GR_DEAD:
        on_dead(c, r, th);
        break;
    case GR_START:
        check_alive(c, r, th, get_shadow(c, r->tid, r->gid), r->gid);
        break;
    case GR_STOP:
        check_alive(c, r, th, get_shadow(c, r->tid, r->gid), r->gid);
        c->stopped = 1;
        c->stop_index = (size_t)r->index;
        c->stop_nctx = make_ctx(th, (size_t)r->index, c->stop_ctx);
        break;
    case GR_STACK:
        on_stack(c, r, th);
        break;
    case GR_INSTR:
        on_instr(c, r, th);
        break;
    case GR_HOOK:
        on_hook(c, r, th);
        break;
    default:
        break;
    }
    count_coverage(c, r);
    remember(th, (size_t)r->index);
}

/* Fill res->coverage at the end of the replay. */
static void fill_coverage(ck *c)
{
    const gr_trace *t = c->t;
    gr_coverage *cv = &c->res->coverage;
    memset(cv, 0, sizeof *cv);
    cv->records = c->pos;
    cv->program_events = c->program_events;
    cv->threads = c->nth;
    cv->marks = c->marks;
    cv->truth_points = c->truth_points;
    cv->switch_truth = c->switch_truth;
    cv->stacks = c->stacks;
    cv->dropped = t->has_trailer ? t->trailer.dropped : 0;
    cv->gap = t->gap;
    cv->missing = t->has_trailer && t->trailer.events > t->nrecs ? t->trailer.events - t->nrecs : 0;
    /* One entry per greenlet (its first shadow), or per thread for gid 0. */
    for (size_t i = 0; i < c->nsh; i++) {
        const shadow *s = &c->sh[i];
        size_t first = i;
        if (s->gid) {
            gr_idmap_get(&c->glmap, s->gid, 0, &first);
            if (first != i)
                continue;
            cv->greenlets++;
        }
        cv->shadows++;
        cv->greenlets_truth += s->truth > 0;
    }
    if (t->nrecs == 0) {
        if (t->size == 0)
            cv->nothing = "the file is empty";
        else if (t->size < GR_HEADER_LEN)
            cv->nothing = "the file ends inside its 16-byte header";
        else if (t->has_trailer && t->trailer.dropped)
            cv->nothing = "every record was dropped: the trailer counts them";
        else if (t->has_trailer && t->trailer.events)
            cv->nothing = "every record was lost: the trailer counts events the file does not hold";
        else if (t->has_trailer)
            cv->nothing = "the trace holds no record";
        else if (t->truncated_at <= GR_HEADER_LEN)
            cv->nothing = "the file holds only its header: the recording ended before its first chunk";
        else
            cv->nothing = "no complete record before the trace was cut short";
    } else if (c->program_events == 0) {
        cv->nothing = "no event of the program: only the recorder's own records";
    }
}

static void finish(ck *c)
{
    const gr_trace *t = c->t;
    fill_coverage(c);
    for (size_t i = 0; i < c->nth; i++)
        subject_back(c, &c->th[i], c->stopped ? "until STOP" : "until the end of the trace");
    for (size_t i = 0; i < c->npred; i++)
        if (c->pred[i].open)
            decide(c, &c->pred[i], NULL, 0, NULL);
    for (size_t i = 0; i < c->nth; i++) {
        thread *th = &c->th[i];
        if (th->pending_mark) {
            if (t->truncated) /* its C_RETURN may be in the lost part */
                th->pending_mark = 0;
            else
                resolve_mark(c, NULL, th);
        }
    }
    for (size_t i = 0; i < c->nsh; i++) {
        shadow *s = &c->sh[i];
        if (s->dead || s->n == 0)
            continue;
        if (c->stopped) {
            if (s->stack_seen)
                continue;
            const gr_record *stop = &t->recs[c->stop_index];
            gr_sb_printf(&c->msg,
                         "g%" PRIu64 " on t%" PRIu64 " has %zu open shadow entr%s at STOP but "
                         "no STACK record: ",
                         s->gid, s->tid, s->n, s->n == 1 ? "y" : "ies");
            entries(c, s, 0, s->n);
            violate_ctx(c, GR_RULE_IMBALANCE, stop->index, s->tid, s->gid, c->stop_ctx,
                        c->stop_nctx);
        } else {
            add_note(c, t->truncated ? GR_NOTE_OPEN_AT_TRUNCATION : GR_NOTE_OPEN_AT_END, s);
        }
    }
    if (t->gap) {
        gr_sb_printf(&c->msg, "ring mode: %" PRIu64 " earlier records were dropped; greenlets "
                              "first seen before them start with unknown stacks",
                     t->gap);
        add_warning(c);
    }
    if (t->has_trailer) {
        const gr_trailer *tr = &t->trailer;
        if (tr->dropped) {
            gr_sb_printf(&c->msg, "trailer reports %" PRIu64 " dropped record%s: the recording "
                                  "is incomplete and violations may come from the loss",
                         tr->dropped, tr->dropped == 1 ? "" : "s");
            add_warning(c);
        }
        if (tr->errors) {
            gr_sb_printf(&c->msg, "trailer reports %" PRIu64 " internal recorder error%s",
                         tr->errors, tr->errors == 1 ? "" : "s");
            add_warning(c);
        }
        if (tr->reason == GR_STOP_WRITE_ERROR) {
            gr_sb_printf(&c->msg, "recording ended by a write error (disk full?): %" PRIu64
                                  " record%s lost after the last chunk in the file",
                         tr->dropped, tr->dropped == 1 ? "" : "s");
            add_warning(c);
        } else if (tr->reason == GR_STOP_SIZE_CAP) {
            gr_sb_puts(&c->msg, "the trace reached its size cap: later records were dropped");
            add_warning(c);
        } else if (!gr_reason_name(tr->reason)) {
            gr_sb_printf(&c->msg, "trailer has an unknown reason %" PRIu64, tr->reason);
            add_warning(c);
        }
        if (tr->events != t->nrecs) {
            gr_sb_printf(&c->msg, "trailer counts %" PRIu64 " events but the trace holds %zu "
                                  "records",
                         tr->events, t->nrecs);
            add_warning(c);
        }
    }
}

static int by_index(const void *pa, const void *pb)
{
    const gr_violation *a = pa, *b = pb;
    if (a->index != b->index)
        return a->index < b->index ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

void gr_check_sort(gr_check_result *res)
{
    if (res->nv > 1)
        qsort(res->v, res->nv, sizeof *res->v, by_index);
}

/* ------------------------------------------------------- step by step */

gr_checker *gr_checker_new(const gr_trace *t, gr_check_result *res)
{
    memset(res, 0, sizeof *res);
    res->nrules = GR_NRULES_CHECK;
    ck *c = gr_xrealloc(NULL, sizeof *c);
    memset(c, 0, sizeof *c);
    c->t = t;
    c->res = res;
    gr_sb_init(&c->msg);
    for (size_t i = 0; i < t->nmetas; i++) {
        size_t kl, vl;
        const uint8_t *k = gr_trace_string(t, t->metas[i].key, &kl);
        const uint8_t *v = gr_trace_string(t, t->metas[i].value, &vl);
        if (k && v && kl == 7 && memcmp(k, "profile", 7) == 0 && vl == 3 && memcmp(v, "off", 3) == 0)
            c->profile_off = 1;
    }
    return c;
}

void gr_checker_advance(gr_checker *c, size_t end)
{
    if (end > c->t->nrecs)
        end = c->t->nrecs;
    while (c->pos < end)
        one_record(c, &c->t->recs[c->pos++]);
}

size_t gr_checker_position(const gr_checker *c)
{
    return c->pos;
}

/* Index of gid's first shadow, or SIZE_MAX. */
static size_t shadow_of(const ck *c, uint64_t gid)
{
    size_t i;
    return gr_idmap_get(&c->glmap, gid, 0, &i) ? i : SIZE_MAX;
}

enum gr_shadow_state gr_checker_greenlet(const gr_checker *c, uint64_t gid, uint64_t *tid)
{
    size_t i = shadow_of(c, gid);
    *tid = 0;
    if (i == SIZE_MAX)
        return GR_SHADOW_UNSEEN;
    const shadow *s = &c->sh[i];
    *tid = s->tid;
    if (s->dead)
        return GR_SHADOW_DEAD;
    size_t ti;
    if (gr_idmap_get(&c->thmap, s->tid, 0, &ti) && c->th[ti].has_current &&
        c->th[ti].current == gid)
        return GR_SHADOW_RUNNING;
    return GR_SHADOW_IDLE;
}

int gr_checker_compare(gr_checker *c, uint64_t gid, const uint32_t *ids, size_t n, int cut,
                       char **diff)
{
    size_t i = shadow_of(c, gid);
    static const shadow none = {.base_unknown = 0};
    const shadow *s = i == SIZE_MAX ? &none : &c->sh[i];
    size_t na = shadow_py(c, s);
    c->fb = gr_xgrow(c->fb, &c->cap_fb, n + 1, sizeof *c->fb);
    size_t nb = 0;
    for (size_t k = 0; k < n; k++)
        if (!code_is_c(c->t, ids[k]))
            c->fb[nb++] = ids[k];
    gr_sb_reset(&c->msg);
    if (!compare(c, na, nb, cut, s->base_unknown))
        return 0;
    if (diff)
        *diff = gr_sb_take(&c->msg);
    else
        gr_sb_reset(&c->msg);
    return 1;
}

const uint32_t *gr_checker_shadow(gr_checker *c, uint64_t gid, size_t *n,
                                  int *base_unknown)
{
    size_t i = shadow_of(c, gid);
    *n = 0;
    *base_unknown = 0;
    if (i == SIZE_MAX)
        return NULL;
    const shadow *s = &c->sh[i];
    c->fa = gr_xgrow(c->fa, &c->cap_fa, s->n + 1, sizeof *c->fa);
    for (size_t k = 0; k < s->n; k++)
        c->fa[k] = s->e[k].code;
    *n = s->n;
    *base_unknown = s->base_unknown;
    return c->fa;
}

size_t gr_checker_finish(gr_checker *c)
{
    gr_check_result *res = c->res;
    gr_checker_advance(c, c->t->nrecs);
    finish(c);
    gr_check_sort(res);
    for (size_t i = 0; i < c->nsh; i++)
        free(c->sh[i].e);
    free(c->sh);
    free(c->th);
    gr_idmap_free(&c->shmap);
    gr_idmap_free(&c->glmap);
    gr_idmap_free(&c->thmap);
    gr_sb_free(&c->msg);
    free(c->fa);
    free(c->fb);
    free(c->pred);
    free(c);
    return res->nv;
}

size_t gr_check_run(const gr_trace *t, gr_check_result *res)
{
    return gr_checker_finish(gr_checker_new(t, res));
}

void gr_check_result_free(gr_check_result *res)
{
    for (size_t i = 0; i < res->nv; i++)
        free(res->v[i].message);
    free(res->v);
    for (size_t i = 0; i < res->nnotes; i++)
        free(res->notes[i].frames);
    free(res->notes);
    for (size_t i = 0; i < res->nwarnings; i++)
        free(res->warnings[i]);
    free(res->warnings);
    free(res->summary);
    memset(res, 0, sizeof *res);
}
