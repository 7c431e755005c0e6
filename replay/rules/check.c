/* check.c - the checker's engine: one stream of records through the rule
 * table (rule.h, one file per rule in replay/rules/) over the shared
 * shadow stacks (shadow.h); results, coverage, and the step-by-step API
 * (check.h; the rules are specified in docs/RULES.md). */
#include "check.h"

#include "dump.h"
#include "rule.h"

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
    case GR_RULE_CALLBACK_GUARD: return "callback_guard";
    case GR_RULE_DISPLACED: return "displaced";
    case GR_RULE_UNREACHED: return "unreached";
    case GR_RULE_ATTRIBUTION: return "attribution";
    case GR_RULE_STALL_WAIT: return "stall_wait";
    case GR_RULE_STALL_DEPTH: return "stall_depth";
    case GR_RULE_SAMPLE: return "sample";
    default: return "?";
    }
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
    if (!gr_check_rule_fails(rule)) {
        v->advisory = 1;
        res->nadvisory++;
    }
}

/* Rules that do not fail by default, and those of them made to fail
 * (gr_check_fail_on): bits by enum gr_rule. */
#define ADVISORY_RULES ((UINT32_C(1) << GR_RULE_DISPLACED) | (UINT32_C(1) << GR_RULE_ATTRIBUTION))
static uint32_t fail_on_rules;

int gr_check_rule_fails(enum gr_rule rule)
{
    if ((int)rule < 0 || rule >= GR_NRULES)
        return 1;
    uint32_t bit = UINT32_C(1) << rule;
    return !(ADVISORY_RULES & bit) || (fail_on_rules & bit);
}

long gr_check_fail_on(const char *const *names, size_t n)
{
    uint32_t mask = 0;
    for (size_t k = 0; k < n; k++) {
        int rule = -1;
        for (int r = 0; r < GR_NRULES; r++)
            if (strcmp(gr_rule_name((enum gr_rule)r), names[k]) == 0)
                rule = r;
        if (rule < 0)
            return (long)k;
        mask |= UINT32_C(1) << rule;
    }
    fail_on_rules = mask;
    return -1;
}

size_t gr_check_failing(const gr_check_result *res)
{
    size_t n = 0;
    for (size_t i = 0; i < res->nv; i++)
        n += !res->v[i].allowed && !res->v[i].advisory;
    return n;
}

/* Whether message names fn as a code: the name, preceded by the start, a
 * space, '(' or '>' and followed by the end, a space, ',', ';' or ')'. */
static int names_function(const char *message, const char *fn, size_t fl)
{
    for (const char *p = strstr(message, fn); fl && p; p = strstr(p + 1, fn)) {
        char before = p == message ? ' ' : p[-1], after = p[fl];
        if ((before == ' ' || before == '(' || before == '>') &&
            (after == '\0' || after == ' ' || after == ',' || after == ';' || after == ')'))
            return 1;
    }
    return 0;
}

long gr_check_allow(gr_check_result *res, const char *const *specs, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        const char *colon = strchr(specs[k], ':');
        size_t rl = colon ? (size_t)(colon - specs[k]) : strlen(specs[k]);
        int rule = -1;
        for (int r = 0; r < GR_NRULES; r++)
            if (strlen(gr_rule_name((enum gr_rule)r)) == rl &&
                memcmp(gr_rule_name((enum gr_rule)r), specs[k], rl) == 0)
                rule = r;
        if (rule < 0)
            return (long)k;
        for (size_t i = 0; i < res->nv; i++) {
            gr_violation *v = &res->v[i];
            if (v->allowed || (int)v->rule != rule)
                continue;
            if (colon && !names_function(v->message, colon + 1, strlen(colon + 1)))
                continue;
            v->allowed = 1;
            res->nallowed++;
        }
    }
    return -1;
}

void gr_check_add_info(gr_check_result *res, char *message)
{
    res->infos = gr_xgrow(res->infos, &res->cap_infos, res->ninfos + 1, sizeof *res->infos);
    res->infos[res->ninfos++] = message;
}

void gr_check_add_warning(gr_check_result *res, char *message)
{
    res->warnings = gr_xgrow(res->warnings, &res->cap_warnings, res->nwarnings + 1,
                             sizeof *res->warnings);
    res->warnings[res->nwarnings++] = message;
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

static int code_own_slow(ck *c, uint32_t code);

/* gr_code_is_own of code, cached by code id. */
static inline int code_own(ck *c, uint32_t code)
{
    if (code < c->code.nown)
        return c->code.own[code];
    return code_own_slow(c, code);
}

/* code_own of a code past the cache: every code defined so far is added
 * to it (one byte each). */
static __attribute__((noinline)) int code_own_slow(ck *c, uint32_t code)
{
    size_t n = c->code.nown, want = c->t->ncodes + 1;
    if (want > n) {
        size_t cap = n;
        c->code.own = gr_xgrow(c->code.own, &cap, want, 1);
        for (size_t k = n; k < want; k++)
            c->code.own[k] = (uint8_t)gr_code_is_own(c->t, (uint32_t)k);
        c->code.nown = want;
    }
    return code < c->code.nown ? c->code.own[code] : gr_code_is_own(c->t, code);
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
        c->cov.program_events += !code_own(c, r->code);
        break;
    case GR_SWITCH:
    case GR_THROW:
        c->cov.program_events++;
        break;
    case GR_MARK:
        c->cov.program_events++;
        c->cov.marks++;
        break;
    case GR_STACK:
        c->cov.stacks++;
        break;
    default:
        break;
    }
    if (gr_check_ground_truth(c->t, r)) {
        int sw = r->tag == GR_SWITCH || r->tag == GR_THROW;
        c->cov.truth_points++;
        c->cov.switch_truth += sw;
        ck_shadow *s = &c->sh[ck_get_shadow(c, r->tid, sw ? r->target : r->gid)];
        if (s->truth++ == 0 && s->counted)
            c->cov.cov_truth++;
    } else if ((r->tag == GR_SWITCH || r->tag == GR_THROW) && (r->flags & GR_SW_CONTINUED)) {
        c->cov.continued++;
        ck_shadow *s = &c->sh[ck_get_shadow(c, r->tid, r->target)];
        if (s->truth++ == 0 && s->counted)
            c->cov.cov_truth++;
    }
}

/* ------------------------------------------------------------ engine */

/* Records decoded per batch of a streamed check (gr_trace_set_batch):
 * about 400 KB of records, which stay in the cache from the decoder to the
 * rules. */
#define GR_CHECK_BATCH 4096

/* The rules of `check`, in the order they run on each record: within one
 * record their violations come in this order.  A new rule is one file
 * (rule.h) and one line here. */
const gr_rule_ops *const gr_rule_table[] = {
    &gr_rule_switch_consistency,
    &gr_rule_propagation,
    &gr_rule_blind_spot,
    &gr_rule_imbalance,
    &gr_rule_callback_guard,
    &gr_rule_unreached,
    &gr_rule_attribution,
};
const size_t gr_rule_count = sizeof gr_rule_table / sizeof gr_rule_table[0];

static void remember(ck_thread *th, size_t i)
{
    ck_ringent *e = &th->ring[th->nseen++ % CK_RING];
    e->idx = i;
    e->own = 0;
}

void gr_checker_detach(gr_checker *c)
{
    if (!c->lines)
        return;
    for (size_t i = 0; i < c->nth; i++) {
        ck_thread *th = &c->th[i];
        if (!th->nseen || th->ring[(th->nseen - 1) % CK_RING].own)
            continue; /* no record in this batch: its ring is copied already */
        for (int k = 0; k < CK_RING && (uint64_t)k < th->nseen; k++) {
            ck_ringent *e = &th->ring[k];
            const gr_record *r = e->own ? NULL : gr_trace_record(c->t, e->idx);
            if (!r)
                continue;
            e->rec = *r;
            if (r->depth) {
                e->ids = gr_xgrow(e->ids, &e->cap, r->depth, sizeof *e->ids);
                memcpy(e->ids, gr_record_stack(c->t, r), r->depth * sizeof *e->ids);
            }
            e->own = 1;
        }
    }
}

/* One record: its thread and shadows, every rule, then the shared state. */
/* The shadow of (th, gid), through th's cache of its last one. */
static size_t shadow_miss(ck *c, ck_thread **th, uint64_t gid);

static inline size_t shadow_on(ck *c, ck_thread **th, uint64_t gid)
{
    if ((*th)->last_si != SIZE_MAX && (*th)->last_gid == gid)
        return (*th)->last_si;
    return shadow_miss(c, th, gid);
}

/* shadow_on when the thread's cache holds another greenlet. */
static __attribute__((noinline)) size_t shadow_miss(ck *c, ck_thread **th, uint64_t gid)
{
    size_t slot = (size_t)(*th - c->th);
    uint64_t tid = (*th)->tid;
    /* Then the direct-mapped cache by greenlet id: the live greenlets'
     * entries lie close together (consecutive ids), where the shadow map's
     * slots are scattered over a table that holds every greenlet ever seen
     * (a cache miss at nearly every switch of a long trace). */
    ck_shcache *e = &c->cache.shcache[(gid ^ (tid << 7)) & (CK_SHCACHE - 1)];
    size_t si;
    if (e->si1 && e->gid == gid && e->tid == tid) {
        si = e->si1 - 1;
    } else {
        si = ck_get_shadow(c, tid, gid);
        e->tid = tid;
        e->gid = gid;
        e->si1 = si + 1;
    }
    *th = &c->th[slot];
    (*th)->last_gid = gid;
    (*th)->last_si = si;
    return si;
}

/* After the DEAD of e->si's greenlet: free its shadow (ck_bury), unless
 * the greenlet had shadows on several threads (kept: rare, and their first
 * shadow is the one gid-keyed questions answer with), its gid is 0 (one
 * per thread), or a rule still holds state about it (rule.h, keeps).
 * Verdicts do not change: a record that names it later gets the shadow
 * back as it was (ck_get_shadow). */
static void maybe_bury(ck *c, const ck_event *e)
{
    size_t si = e->si;
    const ck_shadow *s = &c->sh[si];
    /* (not MULTI: si is the only shadow its gid ever had, so its first,
     * ck_get_shadow) */
    if (c->keep_dead || !s->dead || s->gid == 0 || ck_tomb_multi(&c->tomb, s->gid))
        return;
    for (size_t k = 0; k < gr_rule_count; k++)
        if (gr_rule_table[k]->keeps && gr_rule_table[k]->keeps(c, si))
            return;
    ck_shcache *ce = &c->cache.shcache[(s->gid ^ (s->tid << 7)) & (CK_SHCACHE - 1)];
    if (ce->si1 == si + 1)
        ce->si1 = 0;
    ck_thread *th = &c->th[e->th_index];
    if (th->last_si == si)
        th->last_si = SIZE_MAX;
    ck_bury(c, si, e->th_index);
}

static void one_record(ck *c, const gr_record *r)
{
    ck_thread *th;
    if (c->cache.last_th < c->nth && c->th[c->cache.last_th].tid == r->tid)
        th = &c->th[c->cache.last_th];
    else {
        th = ck_get_thread(c, r->tid);
        c->cache.last_th = (size_t)(th - c->th);
    }
    ck_event e = {.r = r, .si = SIZE_MAX, .st = SIZE_MAX, .th_index = c->cache.last_th};
    c->cmp_index = r->index;
    if (th->skip_mark_return) {
        e.skip = (r->tag == GR_C_RETURN || r->tag == GR_C_EXCEPTION) && r->code == th->skip_code;
        th->skip_mark_return = 0;
    }
    switch (r->tag) {
    case GR_THREAD:
    case GR_INSTR:
        break;
    case GR_SWITCH:
    case GR_THROW:
        e.si = shadow_on(c, &th, r->gid);
        e.st = shadow_on(c, &th, r->target);
        break;
    default:
        e.si = shadow_on(c, &th, r->gid);
        break;
    }
    e.th = th;
    e.th_index = (size_t)(th - c->th);
    if (c->split.prefix) { /* split.h: before the range, every record to every
                        rule that keeps state (its on_prefix, or on_record) */
        for (size_t k = 0; k < gr_rule_count; k++) {
            const gr_rule_ops *o = gr_rule_table[k];
            if (o->on_prefix)
                o->on_prefix(c, &e);
            else if (o->on_record && !o->stateless)
                o->on_record(c, &e);
        }
    } else {
        /* Only the rules that want this kind (rule.h), or this thread's
         * next record, in table order. */
        for (uint32_t m = c->kind_rules[r->tag] | th->want_next; m; m &= m - 1)
            gr_rule_table[__builtin_ctz(m)]->on_record(c, &e);
    }
    ck_apply(c, &e);
    count_coverage(c, r);
    remember(th, (size_t)r->index);
    if (r->tag == GR_DEAD)
        maybe_bury(c, &e);
}

/* Fill res->coverage at the end of the replay. */
static void fill_coverage(ck *c)
{
    const gr_trace *t = c->t;
    gr_coverage *cv = &c->res->coverage;
    memset(cv, 0, sizeof *cv);
    cv->records = c->pos;
    cv->program_events = c->cov.program_events;
    cv->threads = c->nth;
    cv->marks = c->cov.marks;
    cv->truth_points = c->cov.truth_points;
    cv->switch_truth = c->cov.switch_truth;
    cv->continued = c->cov.continued;
    cv->stacks = c->cov.stacks;
    cv->profile_off = c->profile_off;
    cv->dropped = t->has_trailer ? t->trailer.dropped : 0;
    cv->gap = t->gap;
    cv->missing = t->has_trailer && t->trailer.events > c->pos ? t->trailer.events - c->pos : 0;
    /* One entry per greenlet (its first shadow), or per thread for gid 0:
     * counted as they are created (ck_get_shadow), since a dead greenlet's
     * shadow may be freed long before the end. */
    cv->greenlets = c->cov.cov_greenlets;
    cv->shadows = c->cov.cov_shadows;
    cv->greenlets_truth = c->cov.cov_truth;
    if (c->pos == 0) {
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
        else if (t->truncated_at <= GR_HEADER_LEN && t->size > GR_HEADER_LEN)
            cv->nothing = "the first chunk is incomplete: the recording was cut short inside it";
        else if (t->truncated_at <= GR_HEADER_LEN)
            cv->nothing = "the file holds only its header: the recording ended before its first chunk";
        else
            cv->nothing = "no complete record before the trace was cut short";
    } else if (c->cov.program_events == 0) {
        cv->nothing = "no event of the program: only the recorder's own records";
    }
}

static void finish(ck *c)
{
    const gr_trace *t = c->t;
    fill_coverage(c);
    if (c->split.no_end) /* split.h: a range's worker that stopped early */
        return;
    for (size_t k = 0; k < gr_rule_count; k++)
        if (gr_rule_table[k]->finish)
            gr_rule_table[k]->finish(c);
    for (size_t k = 0; k < gr_rule_count; k++)
        if (gr_rule_table[k]->report)
            gr_rule_table[k]->report(c);
    if (c->notes.delegated) {
        gr_sb_printf(&c->msg,
                     "throw() delegated through a generator or coroutine: at %" PRIu64
                     " ground-truth point%s (the first at event %" PRIu64 ") the real stack held "
                     "a suspended generator or coroutine frame that delegates (yield from, await) "
                     "and that no profile event named; CPython passes a throw() (an asyncio "
                     "cancel) straight to the inner one without running the outer frame, for "
                     "every profiler (CPython issue 73776): not a violation",
                     c->notes.delegated, c->notes.delegated == 1 ? "" : "s", c->notes.delegated_first);
        ck_add_info(c);
    }
    if (t->gap) {
        gr_sb_printf(&c->msg, "ring mode: %" PRIu64 " earlier records were dropped; greenlets "
                              "first seen before them start with unknown stacks",
                     t->gap);
        ck_add_warning(c);
    }
    if (t->has_trailer) {
        const gr_trailer *tr = &t->trailer;
        if (tr->dropped) {
            gr_sb_printf(&c->msg, "trailer reports %" PRIu64 " dropped record%s: the recording "
                                  "is incomplete and violations may come from the loss",
                         tr->dropped, tr->dropped == 1 ? "" : "s");
            ck_add_warning(c);
        }
        if (tr->errors) {
            gr_sb_printf(&c->msg, "trailer reports %" PRIu64 " internal recorder error%s",
                         tr->errors, tr->errors == 1 ? "" : "s");
            ck_add_warning(c);
        }
        if (tr->replaced) {
            gr_sb_printf(&c->msg, "trailer reports %" PRIu64 " string%s written other than "
                                  "recorded: cut to fit a chunk (\"...[N bytes cut]\") or not "
                                  "UTF-8 (lone surrogates written as \\udcXX)",
                         tr->replaced, tr->replaced == 1 ? "" : "s");
            ck_add_warning(c);
        }
        if (tr->reason == GR_STOP_WRITE_ERROR) {
            gr_sb_printf(&c->msg, "recording ended by a write error (disk full?): %" PRIu64
                                  " record%s lost after the last chunk in the file",
                         tr->dropped, tr->dropped == 1 ? "" : "s");
            ck_add_warning(c);
        } else if (tr->reason == GR_STOP_SIGNAL) {
            gr_sb_printf(&c->msg, "the program crashed (fatal signal %" PRIu64 "): the trace holds "
                                  "its records up to the crash",
                         tr->signal);
            ck_add_warning(c);
        } else if (tr->reason == GR_STOP_SIZE_CAP) {
            gr_sb_puts(&c->msg, "the trace reached its size cap: later records were dropped");
            ck_add_warning(c);
        } else if (!gr_reason_name(tr->reason)) {
            gr_sb_printf(&c->msg, "trailer has an unknown reason %" PRIu64, tr->reason);
            ck_add_warning(c);
        }
        if (tr->events != c->pos) {
            gr_sb_printf(&c->msg, "trailer counts %" PRIu64 " events but the trace holds %zu "
                                  "records",
                         tr->events, c->pos);
            ck_add_warning(c);
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

/* The rule of bit `bit` (c->kind_rules) looks at the kinds in `kinds`
 * (GR_KIND bits, 0 every kind), and at their plain records unless
 * `skips` has their bit (rule.h). */
static void set_kinds(ck *c, uint32_t bit, uint64_t kinds, uint64_t skips)
{
    for (unsigned tag = 0; tag < 256; tag++) {
        unsigned b = tag - GR_FIRST_INDEXED;
        int in = tag >= GR_FIRST_INDEXED && b < 64;
        if (!kinds || (in && ((kinds >> b) & 1)))
            c->kind_rules[tag] |= bit;
        else
            c->kind_rules[tag] &= ~bit;
        if ((c->kind_rules[tag] & bit) && !(in && ((skips >> b) & 1)))
            c->plain_rules[tag] |= bit;
        else
            c->plain_rules[tag] &= ~bit;
    }
}

void ck_rule_kinds(ck *c, enum gr_rule id, uint64_t kinds)
{
    if ((int)id >= 0 && id < GR_NRULES && c->rule_bit[id])
        for (size_t k = 0; k < gr_rule_count; k++)
            if (gr_rule_table[k]->id == id)
                set_kinds(c, c->rule_bit[id], kinds, gr_rule_table[k]->skips_plain);
}

gr_checker *gr_checker_new(const gr_trace *t, gr_check_result *res)
{
    memset(res, 0, sizeof *res);
    res->nrules = GR_NRULES_CHECK;
    ck *c = gr_xrealloc(NULL, sizeof *c);
    memset(c, 0, sizeof *c);
    c->t = t;
    c->res = res;
    c->split.split_hi = UINT64_MAX;
    gr_sb_init(&c->msg);
    c->lines = t->streaming;
    c->cache.shcache = calloc(CK_SHCACHE, sizeof *c->cache.shcache);
    if (!c->cache.shcache)
        c->cache.shcache = gr_xrealloc(NULL, CK_SHCACHE * sizeof *c->cache.shcache); /* exits */
    /* Per record kind, the rules that look at it (bit k: gr_rule_table[k]),
     * and at its plain records. */
    for (unsigned tag = 0; tag < 256; tag++)
        if (tag < GR_CALL || tag > GR_C_EXCEPTION)
            c->plain_rules[tag] = CK_NEVER_PLAIN;
    for (size_t k = 0; k < gr_rule_count && k < 31; k++) {
        const gr_rule_ops *o = gr_rule_table[k];
        if (!o->on_record)
            continue;
        uint32_t bit = UINT32_C(1) << k;
        if ((int)o->id >= 0 && o->id < GR_NRULES)
            c->rule_bit[o->id] = bit;
        set_kinds(c, bit, o->kinds, o->skips_plain);
    }
    for (size_t k = 0; k < gr_rule_count; k++)
        if (gr_rule_table[k]->init)
            gr_rule_table[k]->init(c);
    return c;
}

/* META profile=off (no subject profiler): looked at as definitions come
 * (a streamed trace defines them in its first chunk). */
static void see_metas(ck *c)
{
    const gr_trace *t = c->t;
    for (; c->code.metas_seen < t->nmetas; c->code.metas_seen++) {
        size_t kl, vl;
        const uint8_t *k = gr_trace_string(t, t->metas[c->code.metas_seen].key, &kl);
        const uint8_t *v = gr_trace_string(t, t->metas[c->code.metas_seen].value, &vl);
        if (k && v && kl == 7 && memcmp(k, "profile", 7) == 0 && vl == 3 && memcmp(v, "off", 3) == 0)
            c->profile_off = 1;
        if (k && v && kl == 9 && memcmp(k, "generator", 9) == 0 && vl > 0 && vl < 11) {
            uint64_t id = 0;
            size_t i = 0;
            while (i < vl && v[i] >= '0' && v[i] <= '9')
                id = id * 10 + (uint64_t)(v[i++] - '0');
            /* an untrusted trace: only a code id it defines */
            if (i == vl && id > 0 && id <= t->ncodes) {
                uint8_t *g = ck_slot((void **)&c->code.gen, &c->code.ngen, (size_t)id, 1);
                *g = 1;
            }
        }
    }
}

/* The thread ring after a run of k records r[0..k) of th (remember). */
static void remember_run(ck_thread *th, const gr_record *r, size_t k)
{
    th->nseen += k;
    for (size_t j = 0; j < k && j < CK_RING; j++) {
        ck_ringent *e = &th->ring[(th->nseen - 1 - j) % CK_RING];
        e->idx = (size_t)r[k - 1 - j].index;
        e->own = 0;
    }
}

/* Replay the run of plain records (shadow.h, ck_plain_state) at r[0..n)
 * that no rule wants, on the thread and greenlet of the record before
 * them (their caches), with no HOOK made in the program's trace function
 * pending on the thread (ck_thread.intrace): what one_record would do with
 * each, without a ck_event and the rule table.  Returns how many were
 * replayed (0: r is not one). */
static size_t plain_run(ck *c, const gr_record *r, size_t n)
{
    if (c->plain_rules[r->tag] || c->cache.last_th >= c->nth)
        return 0;
    ck_thread *th = &c->th[c->cache.last_th];
    uint64_t tid = r->tid, gid = r->gid;
    if (th->tid != tid || th->last_gid != gid || th->last_si == SIZE_MAX || th->want_next ||
        th->intrace)
        return 0;
    ck_shadow *s = &c->sh[th->last_si];
    if (!ck_plain_state(th, s, gid))
        return 0;
    /* In locals: the compiler cannot tell that the stores to the stack
     * leave c and s alone. */
    const uint32_t *plain = c->plain_rules;
    const uint8_t *owns = c->code.own;
    size_t nowns = c->code.nown, k = 0, own = 0, depth = s->n;
    ck_entry *e = s->e;
    for (; k < n; k++) {
        /* plain (shadow.h): plain[tag] 0 is an event kind */
        const gr_record *q = &r[k];
        uint32_t code = q->code;
        unsigned tag = q->tag;
        if (q->tid != tid || q->gid != gid || plain[tag])
            break;
        if (ck_plain_pushes(tag)) {
            if (depth == s->cap) {
                s->n = depth;
                ck_push(s, code, tag == GR_C_CALL);
                e = s->e;
                depth = s->n;
            } else {
                e[depth++] = (ck_entry){.code = code, .is_c = tag == GR_C_CALL};
            }
        } else if (depth && e[depth - 1].code == code && e[depth - 1].is_c == (tag != GR_RETURN)) {
            depth--;
        } else {
            break;
        }
        if (code < nowns) {
            own += owns[code];
        } else {
            own += code_own_slow(c, code);
            owns = c->code.own; /* (grown) */
            nowns = c->code.nown;
        }
    }
    s->n = depth;
    if (k) {
        th->had_events = 1;
        c->cov.program_events += k - own;
        remember_run(th, r, k);
        c->cmp_index = r[k - 1].index;
    }
    return k;
}

void gr_checker_advance(gr_checker *c, size_t end)
{
    const gr_trace *t = c->t;
    if (end > gr_trace_count(t))
        end = (size_t)gr_trace_count(t);
    if (c->code.metas_seen < t->nmetas)
        see_metas(c);
    if (c->pos < t->first) /* records already dropped: cannot happen when used as documented */
        c->pos = end > t->first ? (size_t)t->first : end;
    const gr_record *recs = t->recs;
    size_t first = (size_t)t->first, pos = c->pos;
    while (pos < end) {
        const gr_record *r = &recs[pos - first];
        /* (split.h: before a range every record goes to the rules) */
        size_t k = c->split.prefix ? 0 : plain_run(c, r, end - pos);
        if (k) {
            pos += k;
            continue;
        }
        c->pos = ++pos;
        one_record(c, r);
    }
    c->pos = pos;
}

void gr_checker_plain(gr_checker *c, int on)
{
    for (unsigned tag = GR_CALL; tag <= GR_C_EXCEPTION; tag++) {
        c->plain_rules[tag] &= ~CK_NEVER_PLAIN;
        if (!on)
            c->plain_rules[tag] |= CK_NEVER_PLAIN;
    }
}

void gr_checker_keep_dead(gr_checker *c, int keep)
{
    c->keep_dead = keep != 0;
}

size_t gr_checker_position(const gr_checker *c)
{
    return c->pos;
}

/* gid's first shadow: a live one, or *tmp made from its burial (dead,
 * empty, as it was at its DEAD); NULL when gid was never seen. */
static const ck_shadow *shadow_of(const ck *c, uint64_t gid, ck_shadow *tmp)
{
    size_t i;
    if (gr_idmap_get(&c->glmap, gid, 0, &i))
        return &c->sh[i];
    ck_grave g;
    if (!ck_tomb_find(&c->tomb, gid, &g, 0) || g.slot >= c->nth)
        return NULL;
    memset(tmp, 0, sizeof *tmp);
    tmp->tid = c->th[g.slot].tid;
    tmp->gid = gid;
    tmp->dead = 1;
    tmp->base_unknown = (g.flags & CK_GRAVE_BASE_UNKNOWN) != 0;
    tmp->stack_seen = (g.flags & CK_GRAVE_STACK_SEEN) != 0;
    return tmp;
}

enum gr_shadow_state gr_checker_greenlet(const gr_checker *c, uint64_t gid, uint64_t *tid)
{
    ck_shadow tmp;
    const ck_shadow *s = shadow_of(c, gid, &tmp);
    *tid = 0;
    if (!s)
        return GR_SHADOW_UNSEEN;
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
    static const ck_shadow none = {.base_unknown = 0};
    ck_shadow tmp;
    const ck_shadow *s = shadow_of(c, gid, &tmp);
    if (!s)
        s = &none;
    size_t na = ck_shadow_py(c, s);
    c->fb = gr_xgrow(c->fb, &c->cap_fb, n + 1, sizeof *c->fb);
    size_t nb = 0;
    for (size_t k = 0; k < n; k++)
        if (!ck_code_is_c(c->t, ids[k]))
            c->fb[nb++] = ids[k];
    gr_sb_reset(&c->msg);
    if (!ck_compare(c, na, nb, cut, s->base_unknown))
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
    ck_shadow tmp;
    const ck_shadow *s = shadow_of(c, gid, &tmp);
    *n = 0;
    *base_unknown = 0;
    if (!s)
        return NULL;
    c->fa = gr_xgrow(c->fa, &c->cap_fa, s->n + 1, sizeof *c->fa);
    for (size_t k = 0; k < s->n; k++)
        c->fa[k] = s->e[k].code;
    *n = s->n;
    *base_unknown = s->base_unknown;
    return c->fa;
}

/* META jit (the recorder, CPython 3.13+): the program ran with CPython's JIT
 * enabled, whose executors no code runs in while a profile function is set.
 * A note, so that a clean verdict does not speak for JIT-only code paths. */
static void jit_note(ck *c)
{
    const gr_trace *t = c->t;
    for (size_t i = 0; i < t->nmetas; i++) {
        size_t kl, vl;
        const uint8_t *k = gr_trace_string(t, t->metas[i].key, &kl);
        const uint8_t *v = gr_trace_string(t, t->metas[i].value, &vl);
        if (!k || !v || kl != 3 || memcmp(k, "jit", 3) != 0)
            continue;
        gr_sb sb;
        gr_sb_init(&sb);
        gr_sb_puts(&sb, "jit: CPython's JIT was ");
        gr_sb_escape(&sb, v, vl, 0); /* the trace is untrusted */
        gr_sb_puts(&sb, " when recording started (META jit, PYTHON_JIT); a profile function keeps "
                        "its executors from running, so code paths only the JIT runs did not run "
                        "under recording and a clean verdict says nothing of them");
        gr_check_add_warning(c->res, gr_sb_take(&sb));
        return;
    }
}

size_t gr_checker_finish(gr_checker *c)
{
    gr_check_result *res = c->res;
    gr_checker_advance(c, (size_t)gr_trace_count(c->t));
    if (c->code.metas_seen < c->t->nmetas)
        see_metas(c);
    jit_note(c);
    finish(c);
    gr_check_sort(res);
    for (size_t i = 0; i < c->nsh; i++)
        free(c->sh[i].e);
    free(c->sh);
    for (size_t i = 0; i < c->cache.nspare; i++)
        free(c->cache.spare[i].e);
    free(c->code.gen);
    for (size_t i = 0; i < c->nth; i++)
        for (int k = 0; k < CK_RING; k++)
            free(c->th[i].ring[k].ids);
    free(c->th);
    ck_free_lines(c->stop.stop_text);
    for (size_t k = 0; k < gr_rule_count; k++)
        if (gr_rule_table[k]->release)
            gr_rule_table[k]->release(c);
    gr_idmap_free(&c->shmap);
    gr_idmap_free(&c->glmap);
    gr_idmap_free(&c->thmap);
    ck_tomb_free(&c->tomb);
    free(c->cache.free_si);
    gr_sb_free(&c->msg);
    free(c->fa);
    free(c->fb);
    free(c->code.own);
    free(c->cache.shcache);
    free(c);
    return res->nv;
}

size_t gr_check_run(const gr_trace *t, gr_check_result *res)
{
    return gr_checker_finish(gr_checker_new(t, res));
}

size_t gr_check_stream(gr_trace *t, gr_check_result *res)
{
    /* After the first chunk that holds records (decoded whole: its META
     * definitions are seen before its first record, as before), batches of records
     * that stay in the cache between decoding and checking (reader.h). */
    int batch_later = t->streaming && !t->io.batch;
    gr_checker *c = gr_checker_new(t, res);
    for (;;) {
        gr_checker_advance(c, (size_t)gr_trace_count(t));
        if (!t->streaming || t->done)
            break;
        gr_checker_detach(c);
        if (gr_trace_next_chunk(t) <= 0)
            break;
        if (batch_later && t->nrecs) {
            gr_trace_set_batch(t, GR_CHECK_BATCH);
            batch_later = 0;
        }
    }
    size_t nv = gr_checker_finish(c);
    if (t->err.status) {
        gr_check_result_free(res);
        return SIZE_MAX;
    }
    return nv;
}

void gr_check_result_free(gr_check_result *res)
{
    for (size_t i = 0; i < res->nv; i++) {
        free(res->v[i].message);
        for (int k = 0; k < GR_CONTEXT_MAX; k++)
            free(res->v[i].ctx_line[k]);
    }
    free(res->v);
    for (size_t i = 0; i < res->nnotes; i++)
        free(res->notes[i].frames);
    free(res->notes);
    for (size_t i = 0; i < res->nwarnings; i++)
        free(res->warnings[i]);
    free(res->warnings);
    for (size_t i = 0; i < res->ninfos; i++)
        free(res->infos[i]);
    free(res->infos);
    free(res->summary);
    free(res->folded);
    for (size_t i = 0; i < res->nprof; i++) {
        free(res->prof[i].own_fn);
        free(res->prof[i].missed_fn);
        free(res->prof[i].foreign_fn);
    }
    free(res->prof);
    memset(res, 0, sizeof *res);
}
