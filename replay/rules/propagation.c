/* propagation.c - the propagation rule (docs/FORMAT.md §7): a greenlet that
 * runs with tracing off while its thread's profile function is on (the
 * greenlet issue 256 / CPython PR 25276 class), seen directly at a SWITCH
 * or a MARK (3.9-3.11), or predicted from an INSTR record (3.12+: frames
 * not instrumented at the current monitoring version) and then confirmed
 * or refuted by evidence about the resumed frame. */
#include "rule.h"

#include "idmap.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

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
    char *text[GR_CONTEXT_MAX]; /* its lines (streamed; owned) */
    int open;               /* waiting for evidence or a switch away */
    size_t level;           /* shadow index of the resumed frame, SIZE_MAX
                               when the shadow had no Python entry */
    uint32_t code;          /* its code id (when level is known) */
    size_t depth;           /* real Python depth of the resumed frame (INSTR
                               frames), 0 when unknown (at the cap) */
    size_t callee_mark;     /* 1 + index of the last MARK seen in a new
                               callee (no evidence), 0 none */
    size_t callee_depth;    /* that MARK's Python depth */
    size_t si;              /* its shadow (shpred holds 1 + its index while
                               it is open), made by on_record */
    size_t gl;              /* its greenlet's entry in pstate.gl */
    uint64_t ordinal;       /* 1 for the greenlet's first prediction, ... */
} prediction;

/* Per greenlet with a prediction: how many were made (before a split
 * range too: on_prefix), and where the refuted ones counted, not listed
 * (those past its first GR_PROP_LISTED predictions), are counted. */
typedef struct pgreenlet {
    uint64_t tid, gid;
    uint64_t made;
    size_t folded;          /* 1 + its index in c->res->folded, 0 none yet */
} pgreenlet;

/* Per thread. */
typedef struct pthread {
    int sw_profiled;        /* the last SWITCH/THROW of th had our profile
                               function on with tracing 0 */
    size_t sw_index;
    size_t sw_ctx[GR_CONTEXT_MAX]; /* its context, when sw_profiled */
    int sw_nctx;
    int prop_reported;      /* propagation reported for `current` since it
                               was switched to */
    gr_idmap made;          /* the (gid, version) pairs predicted on this
                               thread (one prediction per greenlet and
                               version; values unused): predicted() in O(1) */
    gr_idmap gls;           /* (gid, 0) -> its index in pstate.gl */
} pthread;

typedef struct pstate {
    pthread *th;            /* by thread slot */
    size_t nth;
    size_t *shpred;         /* by shadow index: 1 + index of its open
                               prediction, 0 none */
    size_t nshpred;
    prediction *pred;       /* in the order made, which is the order of
                               their switch_index; the decided ones are
                               dropped now and then (compact): memory
                               for the open ones */
    size_t npred, cap_pred;
    size_t nopen;           /* how many of them are open */
    size_t first_open;      /* every prediction before it is decided (the
                               open one with the lowest switch_index, or
                               npred): pending() and finish() start there */
    int events_on;          /* the profile events are asked for (at the
                               first prediction of on_record; before a split
                               range on_prefix only marks the pairs made) */
    pgreenlet *gl;          /* greenlets with a prediction, in the order of
                               their first (pthread.gls finds them) */
    size_t ngl, cap_gl;
} pstate;

static pstate *st(ck *c)
{
    return c->rule_state[GR_RULE_PROPAGATION];
}

static size_t *shpred(ck *c, size_t si)
{
    pstate *p = st(c);
    return ck_slot((void **)&p->shpred, &p->nshpred, si, sizeof *p->shpred);
}

/* Move first_open past the decided predictions (each is passed once). */
static void advance(pstate *ps)
{
    while (ps->first_open < ps->npred && !ps->pred[ps->first_open].open)
        ps->first_open++;
}

/* Drop the decided predictions once they are at least half of the array
 * (each compaction moves at most as many as it drops: linear overall).
 * Their lines are gone already (decide); the open ones keep their order
 * (by switch_index) and lines, and shpred follows them. */
static void compact(ck *c)
{
    pstate *ps = st(c);
    if (ps->npred < 64 || ps->nopen * 2 > ps->npred)
        return;
    size_t n = 0;
    for (size_t i = 0; i < ps->npred; i++) {
        if (!ps->pred[i].open)
            continue;
        prediction *p = &ps->pred[n];
        if (n != i)
            *p = ps->pred[i];
        if (p->si < ps->nshpred && ps->shpred[p->si] == i + 1)
            ps->shpred[p->si] = n + 1;
        n++;
    }
    ps->npred = n;
    ps->first_open = 0;
}

/* One more prediction made for r's greenlet (on pt, r's thread): returns
 * its entry in ps->gl, made.  Counted before a split range too, so that
 * the ordinals, and the warnings listed, are those of the whole check. */
static size_t made_one(pstate *ps, pthread *pt, const gr_record *r)
{
    size_t k;
    if (!gr_idmap_get(&pt->gls, r->gid, 0, &k)) {
        ps->gl = gr_xgrow(ps->gl, &ps->cap_gl, ps->ngl + 1, sizeof *ps->gl);
        k = ps->ngl++;
        ps->gl[k] = (pgreenlet){.tid = r->tid, .gid = r->gid};
        gr_idmap_put(&pt->gls, r->gid, 0, k);
    }
    ps->gl[k].made++;
    return k;
}

static void init(ck *c)
{
    pstate *ps = gr_xrealloc(NULL, sizeof *ps);
    memset(ps, 0, sizeof *ps);
    c->rule_state[GR_RULE_PROPAGATION] = ps;
}

/* Decide prediction p (open): `at` is the record that decides it (NULL:
 * the greenlet switched away or the trace ended without evidence),
 * `confirm` whether that record shows the blind spot (a MARK that is one,
 * or not bracketed), `why` names the evidence for a refutation. */
static void decide(ck *c, prediction *p, const gr_record *at, int confirm, const char *why)
{
    p->open = 0;
    st(c)->nopen--;
    advance(st(c));
    size_t si;
    if (ck_find_shadow(c, p->tid, p->gid, &si) && *shpred(c, si) == (size_t)(p - st(c)->pred) + 1)
        *shpred(c, si) = 0;
    if (at && !confirm && p->ordinal > GR_PROP_LISTED) {
        /* Refuted, past the greenlet's first predictions: counted in the
         * greenlet's entry of c->res->folded (one line), not listed; at
         * once, as a split range's worker that stops early runs no
         * finish.  A switch past a split range is the next worker's to
         * count. */
        if (p->switch_index < c->split_hi) {
            pgreenlet *g = &st(c)->gl[p->gl];
            gr_check_result *res = c->res;
            if (!g->folded) {
                res->folded = gr_xgrow(res->folded, &res->cap_folded, res->nfolded + 1,
                                       sizeof *res->folded);
                res->folded[res->nfolded++] = (gr_folded){.rule = GR_RULE_PROPAGATION, .tid = g->tid,
                                                          .gid = g->gid, .count = 0};
                g->folded = res->nfolded;
            }
            res->folded[g->folded - 1].count++;
        }
        ck_free_lines(p->text);
        return;
    }
    gr_sb_printf(&c->msg,
                 "predicted blind spot: profiling is on for t%" PRIu64 " but %" PRIu64 " of the %"
                 PRIu64 " frames of g%" PRIu64 " are not instrumented at monitoring version %" PRIu64
                 " (they will report no events of their own when resumed; CPython 3.12+ "
                 "sys.monitoring re-instruments only the current frame chain)",
                 p->tid, p->stale, p->frames, p->gid, p->version);
    if (at && !confirm) {
        gr_sb_printf(&c->msg, "; refuted by the %s at event %" PRIu64 ", %s", ck_kind_name(at),
                     at->index, why);
        ck_add_warning(c);
        ck_free_lines(p->text); /* a warning has no context lines */
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
    ck_violate_lines(c, GR_RULE_PROPAGATION, p->switch_index, p->tid, p->gid, p->ctx, p->nctx,
                     NULL, c->lines ? p->text : NULL);
}

/* The open prediction of shadow si, or NULL. */
static prediction *open_pred(ck *c, size_t si)
{
    size_t k = *shpred(c, si);
    if (!k)
        return NULL;
    prediction *p = &st(c)->pred[k - 1];
    return p->open ? p : NULL;
}

/* Settle the open prediction of (tid, gid), if any, without evidence (the
 * greenlet switched away, or the trace ended). */
static void settle(ck *c, uint64_t tid, uint64_t gid)
{
    size_t si;
    if (!ck_find_shadow(c, tid, gid, &si))
        return;
    prediction *p = open_pred(c, si);
    if (p)
        decide(c, p, NULL, 0, NULL);
}

/* A CALL/RETURN/C_* record r of a greenlet with an open prediction, before
 * it is applied to shadow si: an event the resumed frame reported itself
 * refutes the prediction.  Its C calls' C_CALL, C_RETURN and C_EXCEPTION
 * (the innermost Python entry is still the resumed frame) and its own
 * RETURN are fired by its own instructions; a CALL is fired by the callee,
 * which is instrumented afresh, and is no evidence. */
static void settle_event(ck *c, const gr_record *r, size_t si)
{
    prediction *p = open_pred(c, si);
    if (!p || p->level == SIZE_MAX || r->tag == GR_CALL)
        return;
    const ck_shadow *s = &c->sh[si];
    size_t k = ck_innermost_py(s);
    if (k != p->level || s->e[k].code != p->code)
        return;
    if (r->tag == GR_RETURN) {
        if (r->code == p->code && s->n == k + 1)
            decide(c, p, r, 0, "the return of the resumed frame itself");
        return;
    }
    decide(c, p, r, 0, "an event of a C call of the resumed frame itself");
}

/* A MARK of a greenlet with an open prediction: a blind spot (its stack
 * differs from the shadow) or not bracketed confirms; at the resumed
 * frame's depth with that frame innermost, a clean MARK refutes. */
static void settle_mark(ck *c, const gr_record *r, size_t si)
{
    prediction *p = open_pred(c, si);
    if (!p)
        return;
    const ck_shadow *s = &c->sh[si];
    size_t na = ck_shadow_py(c, s), nb = ck_record_py(c, r);
    int differ = ck_differs(c, na, nb, (r->flags & GR_MARK_CUT) != 0, s->base_unknown);
    const ck_entry *top = s->n ? &s->e[s->n - 1] : NULL;
    int bracketed = top && top->is_c && top->code == r->code;
    int blind = differ || ((r->flags & GR_MARK_PROFILE_OURS) && !bracketed);
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

/* Whether a prediction was made for INSTR r's greenlet and version (on
 * pt, r's thread). */
static int predicted(const pthread *pt, const gr_record *r)
{
    size_t i;
    return gr_idmap_get(&pt->made, r->gid, r->tracing, &i);
}

static void on_instr(ck *c, const gr_record *r, const ck_event *e, pthread *pt)
{
    pstate *ps = st(c);
    if (!r->use_tracing || !pt->sw_profiled || pt->sw_index + 1 != r->index)
        return;
    /* One prediction per greenlet and instrumentation version: a greenlet
     * that keeps stale frames (a hub parked in its loop) is not reported
     * again at every switch into it. */
    if (predicted(pt, r))
        return;
    compact(c);
    ps->pred = gr_xgrow(ps->pred, &ps->cap_pred, ps->npred + 1, sizeof *ps->pred);
    gr_idmap_put(&pt->made, r->gid, r->tracing, 0);
    prediction *p = &ps->pred[ps->npred++];
    p->gl = made_one(ps, pt, r);
    p->ordinal = ps->gl[p->gl].made;
    if (!ps->events_on) { /* events can settle it from now on (on_record) */
        ck_rule_kinds(c, GR_RULE_PROPAGATION, gr_rule_propagation.kinds | GR_KINDS_EVENTS);
        ps->events_on = 1;
    }
    p->tid = r->tid;
    p->gid = r->gid;
    p->version = r->tracing;
    p->frames = r->parent;
    p->stale = r->use_tracing;
    p->switch_index = pt->sw_index;
    memcpy(p->ctx, pt->sw_ctx, sizeof p->ctx);
    p->nctx = pt->sw_nctx;
    if (c->lines) /* the switch and the records before it are th's ring */
        ck_ctx_lines(c, e->th, p->ctx, p->nctx, p->text);
    else
        memset(p->text, 0, sizeof p->text);
    p->open = 1;
    ps->nopen++;
    p->callee_mark = 0;
    p->callee_depth = 0;
    p->depth = r->parent < GR_STACK_CAP ? (size_t)r->parent : 0;
    size_t si = ck_get_shadow(c, r->tid, r->gid);
    const ck_shadow *s = &c->sh[si];
    p->level = ck_innermost_py(s);
    p->code = p->level == SIZE_MAX ? 0 : s->e[p->level].code;
    p->si = si;
    *shpred(c, si) = ps->npred; /* 1 + index */
}

static void on_switch(ck *c, const gr_record *r, const ck_event *e, pthread *pt)
{
    pt->prop_reported = 0;
    uint64_t need = GR_SW_PROFILE_OURS | GR_SW_USE_TRACING_KNOWN;
    if ((r->flags & need) == need && r->use_tracing == 0 && r->tracing == 0) {
        gr_sb_printf(&c->msg,
                     "profiling is on for t%" PRIu64 " but g%" PRIu64
                     " %s with use_tracing=0: it %s no profile events "
                     "(greenlet issue 256 / CPython PR 25276 class)",
                     r->tid, r->target, (r->flags & GR_SW_AT_MARK) ? "runs" : "resumes",
                     (r->flags & GR_SW_AT_MARK) ? "produces" : "will produce");
        ck_violate(c, GR_RULE_PROPAGATION, r, e->th, r->target);
        pt->prop_reported = 1;
    }
    if (st(c)->npred)
        settle(c, r->tid, r->gid);
    pt->sw_profiled = (r->flags & GR_SW_PROFILE_OURS) && r->tracing == 0;
    pt->sw_index = (size_t)r->index;
    if (pt->sw_profiled)
        pt->sw_nctx = ck_make_ctx(e->th, (size_t)r->index, pt->sw_ctx);
}

static void on_mark(ck *c, const gr_record *r, const ck_event *e, pthread *pt)
{
    if ((r->flags & GR_MARK_TRACING_OFF) && !pt->prop_reported) {
        gr_sb_printf(&c->msg,
                     "profiling is on for t%" PRIu64 " but g%" PRIu64 " runs with use_tracing=0 "
                     "at this MARK: it produces no profile events (greenlet issue 256 / CPython "
                     "PR 25276 class)",
                     r->tid, r->gid);
        ck_violate(c, GR_RULE_PROPAGATION, r, e->th, r->gid);
        pt->prop_reported = 1;
    }
    if (st(c)->npred)
        settle_mark(c, r, e->si);
}

static void on_record(ck *c, const ck_event *e)
{
    const gr_record *r = e->r;
    pstate *ps = st(c);
    pthread *pt = ck_slot((void **)&ps->th, &ps->nth, e->th_index, sizeof *pt);
    switch (r->tag) {
    case GR_CALL:
    case GR_C_CALL:
        if (ps->npred)
            settle_event(c, r, e->si);
        break;
    case GR_RETURN:
    case GR_C_RETURN:
    case GR_C_EXCEPTION:
        if (ps->npred && !e->skip)
            settle_event(c, r, e->si);
        break;
    case GR_SWITCH:
    case GR_THROW:
        on_switch(c, r, e, pt);
        break;
    case GR_MARK:
        on_mark(c, r, e, pt);
        break;
    case GR_INSTR:
        on_instr(c, r, e, pt);
        break;
    default:
        break;
    }
}

static void finish(ck *c)
{
    pstate *ps = st(c);
    for (size_t i = ps->first_open; i < ps->npred; i++)
        if (ps->pred[i].open)
            decide(c, &ps->pred[i], NULL, 0, NULL);
}

static void release(ck *c)
{
    pstate *ps = st(c);
    if (!ps)
        return;
    for (size_t i = 0; i < ps->npred; i++)
        ck_free_lines(ps->pred[i].text);
    free(ps->pred);
    for (size_t i = 0; i < ps->nth; i++) {
        gr_idmap_free(&ps->th[i].made);
        gr_idmap_free(&ps->th[i].gls);
    }
    free(ps->th);
    free(ps->gl);
    free(ps->shpred);
    free(ps);
    c->rule_state[GR_RULE_PROPAGATION] = NULL;
}

/* Before the range of a split check (rule.h): the verdicts about those
 * records are dropped, and a prediction made there is decided by the
 * worker of its switch; later verdicts depend on whether propagation was
 * reported since the thread's last switch, on that switch (for the INSTR
 * right after it), and on the predictions made (one per greenlet and
 * version): only their (gid, version) pairs are kept (pthread.made). */
static void on_prefix(ck *c, const ck_event *e)
{
    const gr_record *r = e->r;
    pstate *ps = st(c);
    pthread *pt;
    switch (r->tag) {
    case GR_SWITCH:
    case GR_THROW: {
        pt = ck_slot((void **)&ps->th, &ps->nth, e->th_index, sizeof *pt);
        uint64_t need = GR_SW_PROFILE_OURS | GR_SW_USE_TRACING_KNOWN;
        pt->prop_reported = (r->flags & need) == need && r->use_tracing == 0 && r->tracing == 0;
        pt->sw_profiled = (r->flags & GR_SW_PROFILE_OURS) && r->tracing == 0;
        pt->sw_index = (size_t)r->index;
        if (pt->sw_profiled)
            pt->sw_nctx = ck_make_ctx(e->th, (size_t)r->index, pt->sw_ctx);
        break;
    }
    case GR_MARK:
        pt = ck_slot((void **)&ps->th, &ps->nth, e->th_index, sizeof *pt);
        if (r->flags & GR_MARK_TRACING_OFF)
            pt->prop_reported = 1;
        break;
    case GR_INSTR:
        pt = ck_slot((void **)&ps->th, &ps->nth, e->th_index, sizeof *pt);
        /* made, for "one per greenlet and version"; nothing else of it is
         * needed (decided by the worker of its switch) */
        if (r->use_tracing && pt->sw_profiled && pt->sw_index + 1 == r->index &&
            !predicted(pt, r)) {
            gr_idmap_put(&pt->made, r->gid, r->tracing, 0);
            made_one(ps, pt, r);
        }
        break;
    default:
        break;
    }
}

/* A prediction about a switch before hi, still waiting for evidence. */
static int pending(const ck *c, uint64_t hi)
{
    const pstate *ps = c->rule_state[GR_RULE_PROPAGATION];
    /* the open prediction with the lowest switch_index (advance) */
    if (ps && ps->first_open < ps->npred && ps->pred[ps->first_open].switch_index < hi)
        return 1;
    /* A switch just before: the INSTR right after it makes a prediction
     * about it (on_instr). */
    for (size_t i = 0; ps && i < ps->nth; i++)
        if (ps->th[i].sw_profiled && ps->th[i].sw_index < hi && ps->th[i].sw_index + 1 >= c->pos)
            return 1;
    return 0;
}

/* A shadow with an open prediction stays (rule.h): the prediction is about
 * its resumed frame, and shpred is indexed by shadow. */
static int keeps(const ck *c, size_t si)
{
    const pstate *ps = c->rule_state[GR_RULE_PROPAGATION];
    return ps && si < ps->nshpred && ps->shpred[si] != 0;
}

const gr_rule_ops gr_rule_propagation = {
    .id = GR_RULE_PROPAGATION,
    /* and the profile events once a prediction exists (on_instr) */
    .kinds = GR_KIND(GR_SWITCH) | GR_KIND(GR_THROW) | GR_KIND(GR_MARK) | GR_KIND(GR_INSTR),
    .init = init,
    .on_record = on_record,
    .finish = finish,
    .release = release,
    .on_prefix = on_prefix,
    .pending = pending,
    .keeps = keeps,
};
