/* propagation.c - the propagation rule (docs/RULES.md): a greenlet that
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
    int listed;             /* refuted, its warning is listed: one of its
                               greenlet's first GR_PROP_LISTED, and of
                               those one of the trace's first
                               GR_PROP_TRACE_LISTED (made_one) */
} prediction;

/* Per greenlet with a prediction, until its DEAD (forget): how many were
 * made (before a split range too: on_prefix), the versions predicted, and
 * where the refuted ones counted, not listed (those past its first
 * GR_PROP_LISTED predictions), are counted.  A free entry (forget) holds
 * in `made` 1 + the index of the next free one (0: the last). */
typedef struct pgreenlet {
    uint64_t tid, gid;
    uint64_t made;          /* predictions made: its (gid, version) pairs in
                               pthread.made, a chain from last_v */
    uint64_t last_v;        /* the version of its latest prediction; the
                               pair (gid, v) holds the version predicted
                               before v (the chain forget walks) */
    size_t folded;          /* 1 + its index in c->res->folded, 0 none yet */
    uint8_t unchained;      /* a version too large for an idmap value
                               (>= SIZE_MAX, only in a made-up trace) broke
                               the chain: never forgotten */
    uint8_t dead;           /* forgotten at its DEAD with a prediction
                               still open: freed when that is decided */
    uint8_t own_line;       /* its refutations past its first
                               GR_PROP_LISTED predictions are counted in a
                               line of its own: one of the trace's first
                               GR_PROP_FOLDED_LINES greenlets to have that
                               many (made_one); else in the trace's line */
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
                               thread since the greenlet's last DEAD (one
                               prediction per greenlet and version):
                               predicted() in O(1); value: the version
                               predicted before (pgreenlet.last_v) */
    gr_idmap gls;           /* (gid, 0) -> its index in pstate.gl, for the
                               greenlets predicted since their last DEAD */
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
    pgreenlet *gl;          /* greenlets with a prediction (pthread.gls
                               finds them); an entry is reused after its
                               greenlet's DEAD (forget) */
    size_t ngl, cap_gl;
    size_t free_gl;         /* 1 + index of the first free entry of gl, 0 none */
    uint64_t listable;      /* predictions made (before a split range too)
                               that are among their greenlet's first
                               GR_PROP_LISTED: the first GR_PROP_TRACE_LISTED
                               of them are listed when refuted */
    uint64_t lined;         /* greenlets (lives) that reached GR_PROP_LISTED
                               + 1 predictions (before a split range too):
                               the first GR_PROP_FOLDED_LINES of them get a
                               line of their own (pgreenlet.own_line) */
    size_t whole_folded;    /* 1 + index in c->res->folded of the count of
                               the trace's refutations past those caps, 0
                               none */
    size_t psw1;            /* 1 + index of the last SWITCH/THROW replayed
                               when it set its thread's sw_profiled, else 0
                               (pending) */
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

/* One more prediction made for INSTR r's greenlet and version (on pt,
 * r's thread; not predicted() yet): its pair goes into pt->made.  Returns
 * its greenlet's entry in ps->gl, made; *listed receives whether its
 * refutation would be listed.  Counted before a split range too, so that
 * the ordinals, and the warnings listed, are those of the whole check. */
static size_t made_one(pstate *ps, pthread *pt, const gr_record *r, int *listed)
{
    size_t k;
    if (!gr_idmap_get(&pt->gls, r->gid, 0, &k)) {
        if (ps->free_gl) {
            k = ps->free_gl - 1;
            ps->free_gl = (size_t)ps->gl[k].made;
        } else {
            ps->gl = gr_xgrow(ps->gl, &ps->cap_gl, ps->ngl + 1, sizeof *ps->gl);
            k = ps->ngl++;
        }
        ps->gl[k] = (pgreenlet){.tid = r->tid, .gid = r->gid};
        gr_idmap_put(&pt->gls, r->gid, 0, k);
    }
    pgreenlet *g = &ps->gl[k];
    if (g->made && g->last_v >= SIZE_MAX)
        g->unchained = 1;
    gr_idmap_put(&pt->made, r->gid, r->tracing, g->made && !g->unchained ? (size_t)g->last_v : 0);
    g->last_v = r->tracing;
    g->made++;
    *listed = 0;
    if (g->made <= GR_PROP_LISTED)
        *listed = ++ps->listable <= GR_PROP_TRACE_LISTED;
    else if (g->made == GR_PROP_LISTED + 1)
        g->own_line = ++ps->lined <= GR_PROP_FOLDED_LINES;
    return k;
}

/* Greenlet gid of thread pt is dead (its DEAD record): forget its entries
 * (its pairs in pt->made and its entry in ps->gl), so that they do not
 * grow with every greenlet ever predicted; `open` says a prediction of it
 * is still open (its entry is freed when that is decided).  A record of
 * the greenlet after its DEAD starts it afresh: predicted again at any
 * version, its predictions counted from 1. */
static void forget(pstate *ps, pthread *pt, uint64_t gid, int open)
{
    size_t k;
    if (!gr_idmap_get(&pt->gls, gid, 0, &k))
        return;
    pgreenlet *g = &ps->gl[k];
    if (g->unchained)
        return;
    uint64_t v = g->last_v;
    for (uint64_t i = 0; i < g->made; i++) {
        size_t prev = 0;
        gr_idmap_get(&pt->made, gid, v, &prev);
        gr_idmap_del(&pt->made, gid, v);
        v = prev;
    }
    gr_idmap_del(&pt->gls, gid, 0);
    if (open) {
        g->dead = 1;
        return;
    }
    g->made = ps->free_gl;
    ps->free_gl = k + 1;
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
    pstate *ps = st(c);
    p->open = 0;
    ps->nopen--;
    advance(ps);
    /* its shadow lives while the prediction is open (keeps) */
    if (ps->shpred[p->si] == (size_t)(p - ps->pred) + 1)
        ps->shpred[p->si] = 0;
    pgreenlet *g = &ps->gl[p->gl];
    /* counted by the worker whose range holds the switch (split.h) */
    int mine = !c->split.prefix && p->switch_index >= c->split.split_lo && p->switch_index < c->split.split_hi;
    int folded = at && !confirm && !p->listed;
    if (folded) {
        /* Refuted, past the greenlet's first predictions: counted in the
         * greenlet's entry of c->res->folded (one line; past the trace's
         * caps, in the trace's), not listed; at once, as a split range's
         * worker that stops early runs no finish.  A switch past a split
         * range is the next worker's to count. */
        if (mine) {
            int whole = p->ordinal <= GR_PROP_LISTED || !g->own_line;
            size_t *at_folded = whole ? &ps->whole_folded : &g->folded;
            gr_check_result *res = c->res;
            if (!*at_folded) {
                res->folded = gr_xgrow(res->folded, &res->cap_folded, res->nfolded + 1,
                                       sizeof *res->folded);
                res->folded[res->nfolded++] = (gr_folded){.rule = GR_RULE_PROPAGATION,
                                                          .whole = whole,
                                                          .tid = whole ? 0 : g->tid,
                                                          .gid = whole ? 0 : g->gid, .count = 0};
                *at_folded = res->nfolded;
            }
            res->folded[*at_folded - 1].count++;
        }
        ck_free_lines(p->text);
    }
    if (g->dead) { /* its greenlet died while it was open (forget) */
        g->dead = 0;
        g->made = ps->free_gl;
        ps->free_gl = p->gl + 1;
    }
    if (folded)
        return;
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
    if (!at) {
        /* No evidence either way: a note, counted (only evidence makes a
         * violation). */
        gr_sb_reset(&c->msg);
        ck_free_lines(p->text);
        if (mine && !c->notes.unconfirmed++)
            c->notes.unconfirmed_first = p->switch_index;
        return;
    }
    if (at->tag == GR_MARK) {
        gr_sb_printf(&c->msg, "; confirmed by the blind spot at MARK %" PRIu64
                              " in the resumed frame (that MARK's own findings are this cause, "
                              "not reported again)",
                     at->index);
        c->notes.explained_mark = at->index + 1;
    } else {
        gr_sb_printf(&c->msg, "; confirmed by the %s at event %" PRIu64 ": the resumed frame "
                              "switched away with no C_CALL of its own seen (the call it "
                              "switched in was not reported)",
                     ck_kind_name(at), at->index);
    }
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

/* Settle the open prediction of shadow si, if any, without evidence (its
 * greenlet switched away). */
static void settle(ck *c, size_t si)
{
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
    prediction *p = &ps->pred[ps->npred++];
    p->gl = made_one(ps, pt, r, &p->listed);
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
    } else if ((r->flags & GR_SW_UNSEEN) && (r->flags & GR_SW_PROFILE_OURS) && r->tracing == 0 &&
               (r->flags & GR_SW_REAL_STACK) && r->depth > 0) {
        /* Found from the origin's C_RETURN of switch()/throw(): the target
         * ran Python code (it is suspended in a Python frame) and not one
         * event of it was delivered. */
        gr_sb_printf(&c->msg,
                     "profiling is on for t%" PRIu64 " but g%" PRIu64 " ran Python code with no profile "
                     "event at all: it was found suspended in ",
                     r->tid, r->target);
        ck_code_name(c, gr_record_stack(c->t, r)[r->depth - 1]);
        gr_sb_printf(&c->msg, " when g%" PRIu64 "'s call that switched to it returned (greenlet issue 256 / "
                              "CPython PR 25276 class)",
                     r->gid);
        ck_violate(c, GR_RULE_PROPAGATION, r, e->th, r->target);
    }
    if (st(c)->npred) {
        /* The origin left while its resumed frame, still innermost, had
         * no C call open: the call it switched in (switch(), or one that
         * switched from C) was not reported, evidence of the blind spot. */
        prediction *p = r->tracing == 0 ? open_pred(c, e->si) : NULL;
        const ck_shadow *s = &c->sh[e->si];
        if (p && p->level != SIZE_MAX && s->n == p->level + 1 && !s->e[p->level].is_c &&
            s->e[p->level].code == p->code)
            decide(c, p, r, 1, NULL);
        else
            settle(c, e->si); /* the origin's */
    }
    pt->sw_profiled = (r->flags & GR_SW_PROFILE_OURS) && r->tracing == 0;
    pt->sw_index = (size_t)r->index;
    st(c)->psw1 = pt->sw_profiled ? pt->sw_index + 1 : 0;
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
    case GR_DEAD:
        forget(ps, pt, r->gid, open_pred(c, e->si) != NULL);
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

/* One note for the predictions nothing decided. */
static void report(ck *c)
{
    if (!c->notes.unconfirmed)
        return; /* a split check: each range says its own (split.h) */
    gr_sb_printf(&c->msg,
                 "propagation: %" PRIu64 " predicted blind spot%s (3.12+: a greenlet resumed with "
                 "frames not instrumented at the current monitoring version; the first at the "
                 "switch at event %" PRIu64 ") neither confirmed nor refuted: no MARK in the "
                 "resumed frame and no event of its own before the greenlet switched away; "
                 "not violations (add a greenreplay.mark() after the switch to decide them)",
                 c->notes.unconfirmed, c->notes.unconfirmed == 1 ? "" : "s", c->notes.unconfirmed_first);
    ck_add_info(c);
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

/* Before the range of a split check (rule.h) the rule runs as in it
 * (on_record): a prediction made there may be confirmed by a MARK in the
 * range, whose own blind_spot findings are then not reported
 * (ck.notes.explained_mark); the verdicts about switches before the range are
 * dropped or not counted there (decide: split.split_lo). */

/* A prediction about a switch before hi, still waiting for evidence. */
static int pending(const ck *c, uint64_t hi)
{
    const pstate *ps = c->rule_state[GR_RULE_PROPAGATION];
    /* the open prediction with the lowest switch_index (advance) */
    if (ps && ps->first_open < ps->npred && ps->pred[ps->first_open].switch_index < hi)
        return 1;
    /* The last record replayed is a switch that set its thread's
     * sw_profiled: the INSTR right after it makes a prediction about it
     * (on_instr).  (Only the last record can be the switch just before the
     * next one.) */
    return ps && ps->psw1 && ps->psw1 - 1 < hi && ps->psw1 >= c->pos;
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
    .kinds = GR_KIND(GR_SWITCH) | GR_KIND(GR_THROW) | GR_KIND(GR_MARK) | GR_KIND(GR_INSTR) |
             GR_KIND(GR_DEAD),
    .init = init,
    .on_record = on_record,
    .finish = finish,
    .report = report,
    .release = release,
    .pending = pending,
    .keeps = keeps,
};
