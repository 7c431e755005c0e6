/* stall.c - the sampler stall check: lock waits per switch, lock holds per
 * sample, sampled stacks against shadow stacks (stall.h). */
#include "stall.h"

#include "dump.h"
#include "report.h"
#include "shadow.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Append a duration in a readable unit. */
static void put_ns(gr_sb *sb, uint64_t ns)
{
    if (ns < 1000)
        gr_sb_printf(sb, "%" PRIu64 " ns", ns);
    else if (ns < 1000000)
        gr_sb_printf(sb, "%.1f us", (double)ns / 1e3);
    else if (ns < 1000000000)
        gr_sb_printf(sb, "%.1f ms", (double)ns / 1e6);
    else
        gr_sb_printf(sb, "%.2f s", (double)ns / 1e9);
}

/* Append a ratio of durations (ns per greenlet, per frame). */
static void put_ratio(gr_sb *sb, uint64_t ns, uint64_t per)
{
    double v = (double)ns / (double)per;
    if (v < 1000)
        gr_sb_printf(sb, "%.1f ns", v);
    else
        put_ns(sb, (uint64_t)v);
}

/* Escaped value of the first META record with this key, or NULL. */
static char *meta(const gr_trace *t, const char *key)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i < t->nmetas; i++) {
        size_t n;
        const uint8_t *k = gr_trace_string(t, t->metas[i].key, &n);
        if (!k || n != kl || memcmp(k, key, n) != 0)
            continue;
        const uint8_t *v = gr_trace_string(t, t->metas[i].value, &n);
        gr_sb sb;
        gr_sb_init(&sb);
        gr_sb_escape(&sb, v ? v : (const uint8_t *)"", n, 0);
        return gr_sb_take(&sb);
    }
    return NULL;
}

/* Context of a violation at `index`: up to 3 records of thread tid (any
 * thread when tid is 0) before index, then index itself if mark and it is
 * a record.  Looks back at most 4096 records. */
static int context(const gr_trace *t, uint64_t tid, uint64_t index, int mark,
                   size_t ctx[GR_CONTEXT_MAX])
{
    size_t before[GR_CONTEXT_MAX - 1];
    int n = 0;
    uint64_t end = index < t->nrecs ? index : t->nrecs;
    for (uint64_t i = end, seen = 0; i > 0 && n < GR_CONTEXT_MAX - 1 && seen < 4096; seen++) {
        i--;
        if (!tid || t->recs[i].tid == tid)
            before[n++] = (size_t)i;
    }
    int k = 0;
    while (n > 0)
        ctx[k++] = before[--n];
    if (mark && index < t->nrecs)
        ctx[k++] = (size_t)index;
    return k;
}

static int cmp_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

static uint64_t median_sorted(const uint64_t *v, size_t n)
{
    return n ? v[(n - 1) / 2] : 0;
}

static int is_switch(const gr_record *r)
{
    return r->tag == GR_SWITCH || r->tag == GR_THROW;
}

/* ------------------------------------------------------------ switches */

/* Figures of 'W' entry number i (file order). */
static void wait_figures(gr_stall *st, const gr_switch_wait *w, uint64_t i)
{
    if (i == 0 || w->wait_ns > st->wait_max_ns) {
        st->wait_max_ns = w->wait_ns;
        st->wait_max_index = w->index;
    }
    if (i == 0 || w->callback_ns > st->callback_max_ns) {
        st->callback_max_ns = w->callback_ns;
        st->callback_max_index = w->index;
    }
    st->wait_sum_ns = sat_add(st->wait_sum_ns, w->wait_ns);
    st->contended += w->contended;
    st->over_threshold += w->wait_ns > st->threshold_ns;
}

/* Whether the figures make a stall_wait violation. */
static int wait_flagged(const gr_stall *st)
{
    return st->switches && st->wait_max_ns > st->threshold_ns;
}

/* The stall_wait message into sb. */
static void wait_message(gr_sb *sb, const gr_stall *st)
{
    gr_sb_puts(sb, "a switch waited ");
    put_ns(sb, st->wait_max_ns);
    gr_sb_puts(sb, " for the sampler's registry lock, over the threshold of ");
    put_ns(sb, st->threshold_ns);
    gr_sb_printf(sb, "; %zu of %zu switches waited longer than the threshold, ",
                 st->over_threshold, st->switches);
    gr_sb_puts(sb, "summed wait ");
    put_ns(sb, st->wait_sum_ns);
    gr_sb_puts(sb, " (the sampler holds the lock that every switch needs for too long)");
}

/* The warnings about 'W' entries that do not fit the trace. */
static void stray_message(gr_sb *sb, size_t stray, uint64_t stray_first)
{
    gr_sb_printf(sb, "%zu switch entr%s of the side channel (first: index %" PRIu64
                     ") name no SWITCH/THROW record of the trace: is the side channel "
                     "from another recording?",
                 stray, stray == 1 ? "y" : "ies", stray_first);
}

static void count_message(gr_sb *sb, size_t nsw, size_t nwaits)
{
    gr_sb_printf(sb, "the trace has %zu SWITCH/THROW records but the side channel %zu "
                     "switch entries",
                 nsw, nwaits);
}

static void check_waits(const gr_trace *t, const gr_times *tm, gr_stall *st, gr_check_result *res)
{
    size_t stray = 0, nsw = 0;
    uint64_t stray_first = 0;
    for (size_t i = 0; i < t->nrecs; i++)
        nsw += is_switch(&t->recs[i]);
    st->switches = tm->nwaits;
    for (size_t i = 0; i < tm->nwaits; i++) {
        const gr_switch_wait *w = &tm->waits[i];
        if (w->index >= t->nrecs || !is_switch(&t->recs[w->index])) {
            if (!stray++)
                stray_first = w->index;
        }
        wait_figures(st, w, i);
    }
    gr_sb sb;
    gr_sb_init(&sb);
    if (stray) {
        stray_message(&sb, stray, stray_first);
        gr_check_add_warning(res, gr_sb_take(&sb));
    }
    if (!tm->truncated && nsw != tm->nwaits) {
        count_message(&sb, nsw, tm->nwaits);
        gr_check_add_warning(res, gr_sb_take(&sb));
    }
    if (wait_flagged(st)) {
        uint64_t idx = st->wait_max_index, tid = 0, gid = 0;
        if (idx < t->nrecs && is_switch(&t->recs[idx])) {
            tid = t->recs[idx].tid;
            gid = t->recs[idx].target;
        }
        wait_message(&sb, st);
        size_t ctx[GR_CONTEXT_MAX];
        int n = context(t, tid, idx, 1, ctx);
        gr_check_add_violation(res, GR_RULE_STALL_WAIT, idx, tid, gid, gr_sb_take(&sb), ctx, n);
    }
    gr_sb_free(&sb);
}

/* ------------------------------------------------------------- samples */

static const gr_times *sort_tm; /* qsort has no context argument */

/* Samples by frames read, then hold time, then position. */
static int by_frames(const void *pa, const void *pb)
{
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    const gr_sample *x = &sort_tm->samples[a], *y = &sort_tm->samples[b];
    if (x->frames != y->frames)
        return x->frames < y->frames ? -1 : 1;
    if (x->hold_ns != y->hold_ns)
        return x->hold_ns < y->hold_ns ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* Samples by idx_begin, then position. */
static int by_begin(const void *pa, const void *pb)
{
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    const gr_sample *x = &sort_tm->samples[a], *y = &sort_tm->samples[b];
    if (x->idx_begin != y->idx_begin)
        return x->idx_begin < y->idx_begin ? -1 : 1;
    return a < b ? -1 : a > b;
}

static void hold_table(const gr_times *tm, gr_stall *st)
{
    size_t n = tm->nsamples;
    if (!n)
        return;
    size_t *order = gr_xgrow(NULL, &(size_t){0}, n, sizeof *order);
    uint64_t *holds = gr_xgrow(NULL, &(size_t){0}, n, sizeof *holds);
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    sort_tm = tm;
    qsort(order, n, sizeof *order, by_frames);
    st->nbuckets = n < GR_STALL_BUCKETS ? n : GR_STALL_BUCKETS;
    for (size_t b = 0; b < st->nbuckets; b++) {
        size_t lo = n * b / st->nbuckets, hi = n * (b + 1) / st->nbuckets;
        gr_stall_bucket *bk = &st->buckets[b];
        for (size_t k = lo; k < hi; k++) {
            const gr_sample *s = &tm->samples[order[k]];
            if (k == lo || s->frames < bk->frames_min)
                bk->frames_min = s->frames;
            if (k == lo || s->frames > bk->frames_max)
                bk->frames_max = s->frames;
            if (k == lo || s->greenlets < bk->greenlets_min)
                bk->greenlets_min = s->greenlets;
            if (k == lo || s->greenlets > bk->greenlets_max)
                bk->greenlets_max = s->greenlets;
            bk->hold_sum = sat_add(bk->hold_sum, s->hold_ns);
            bk->frames_sum = sat_add(bk->frames_sum, s->frames);
            bk->greenlets_sum = sat_add(bk->greenlets_sum, s->greenlets);
            holds[k - lo] = s->hold_ns;
        }
        bk->samples = hi - lo;
        qsort(holds, hi - lo, sizeof *holds, cmp_u64);
        bk->hold_min = holds[0];
        bk->hold_median = median_sorted(holds, hi - lo);
        bk->hold_max = holds[hi - lo - 1];
    }
    free(order);
    free(holds);
}

/* Pearson correlation of hold_ns with frames (informational). */
static void correlation(const gr_times *tm, gr_stall *st)
{
    size_t n = tm->nsamples;
    if (n < 3)
        return;
    double mx = 0, my = 0;
    for (size_t i = 0; i < n; i++) {
        mx += (double)tm->samples[i].frames;
        my += (double)tm->samples[i].hold_ns;
    }
    mx /= (double)n;
    my /= (double)n;
    double sxx = 0, syy = 0, sxy = 0;
    for (size_t i = 0; i < n; i++) {
        double dx = (double)tm->samples[i].frames - mx, dy = (double)tm->samples[i].hold_ns - my;
        sxx += dx * dx;
        syy += dy * dy;
        sxy += dx * dy;
    }
    if (!(sxx > 0) || !(syy > 0) || !isfinite(sxx * syy))
        return;
    double r = sxy / sqrt(sxx * syy);
    if (!isfinite(r))
        return;
    st->has_correlation = 1;
    st->hold_frames_r = r < -1 ? -1 : r > 1 ? 1 : r;
}

/* Figures of the samples tm->samples (headers only); returns the number of
 * the first sample that read frames under the lock, SIZE_MAX if none. */
static size_t sample_stats(const gr_times *tm, gr_stall *st)
{
    size_t n = tm->nsamples;
    st->samples = n;
    if (!n)
        return SIZE_MAX;
    uint64_t *holds = gr_xgrow(NULL, &(size_t){0}, n, sizeof *holds);
    size_t first_under = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        const gr_sample *s = &tm->samples[i];
        holds[i] = s->hold_ns;
        st->hold_sum_ns = sat_add(st->hold_sum_ns, s->hold_ns);
        st->greenlets_sum = sat_add(st->greenlets_sum, s->greenlets);
        st->frames_sum = sat_add(st->frames_sum, s->frames);
        st->frames_under_lock_sum = sat_add(st->frames_under_lock_sum, s->frames_under_lock);
        st->failed_sum = sat_add(st->failed_sum, s->failed);
        st->torn_sum = sat_add(st->torn_sum, s->torn);
        if (s->frames_under_lock) {
            st->samples_under_lock++;
            if (first_under == SIZE_MAX)
                first_under = i;
        }
    }
    qsort(holds, n, sizeof *holds, cmp_u64);
    st->hold_min_ns = holds[0];
    st->hold_median_ns = median_sorted(holds, n);
    st->hold_max_ns = holds[n - 1];
    free(holds);
    hold_table(tm, st);
    correlation(tm, st);
    return first_under;
}

/* The stall_depth message of sample number `num` (s) into sb. */
static void depth_message(gr_sb *sb, const gr_stall *st, const gr_sample *s, size_t num)
{
    gr_sb_printf(sb,
                 "sample %zu (taken after event %" PRIu64 ") read %" PRIu64 " of its %" PRIu64
                 " frames while holding the registry lock (hold ",
                 num, s->idx_begin ? s->idx_begin - 1 : 0, s->frames_under_lock, s->frames);
    put_ns(sb, s->hold_ns);
    gr_sb_printf(sb, "), so every switch waits for an unwind that grows with greenlets x "
                     "stack depth; %zu of %zu samples read frames under the lock "
                     "(%" PRIu64 " frames in all)",
                 st->samples_under_lock, st->samples, st->frames_under_lock_sum);
}

static void sample_figures(const gr_trace *t, const gr_times *tm, gr_stall *st,
                           gr_check_result *res)
{
    size_t first_under = sample_stats(tm, st);
    if (first_under == SIZE_MAX)
        return;
    const gr_sample *s = &tm->samples[first_under];
    gr_sb sb;
    gr_sb_init(&sb);
    depth_message(&sb, st, s, first_under);
    size_t ctx[GR_CONTEXT_MAX];
    int nc = context(t, 0, s->idx_begin, 0, ctx);
    gr_check_add_violation(res, GR_RULE_STALL_DEPTH, s->idx_begin, 0, 0, gr_sb_take(&sb), ctx,
                           nc);
    gr_sb_free(&sb);
}

/* ------------------------------------------------------ sampled stacks */

/* Gids that are the origin or target of a SWITCH/THROW with index in
 * [lo, hi] (clamped to the trace), sorted, into *v; returns the count. */
static size_t switched_in(const gr_trace *t, uint64_t lo, uint64_t hi, uint64_t **v, size_t *cap)
{
    size_t n = 0;
    if (!t->nrecs)
        return 0;
    if (hi >= t->nrecs)
        hi = t->nrecs - 1;
    for (uint64_t i = lo; i <= hi && i < t->nrecs; i++) {
        const gr_record *r = &t->recs[i];
        if (!is_switch(r))
            continue;
        *v = gr_xgrow(*v, cap, n + 2, sizeof **v);
        (*v)[n++] = r->gid;
        (*v)[n++] = r->target;
    }
    if (n > 1) /* *v is NULL when no switch is in the window (qsort needs an array) */
        qsort(*v, n, sizeof **v, cmp_u64);
    return n;
}

static int contains(const uint64_t *v, size_t n, uint64_t x)
{
    return n && bsearch(&x, v, n, sizeof *v, cmp_u64) != NULL;
}

static const char *state_text(enum gr_shadow_state s)
{
    switch (s) {
    case GR_SHADOW_UNSEEN: return "has no record before it";
    case GR_SHADOW_RUNNING: return "is the running greenlet of its thread";
    case GR_SHADOW_DEAD: return "is dead";
    default: return "is suspended";
    }
}

/* Whether a sampled stack's code ids can be compared with a shadow: not
 * when one is not defined by the trace (counted unusable, and in
 * *bad_ids), nor when one is 0, a code the profile function never saw
 * (counted unknown). */
static int comparable(const gr_trace *t, gr_stall *st, const uint32_t *ids, uint32_t depth,
                      size_t *bad_ids)
{
    int unknown = 0, bad = 0;
    for (uint32_t d = 0; d < depth; d++) {
        unknown |= ids[d] == 0;
        bad |= ids[d] > t->ncodes;
    }
    if (bad) {
        (*bad_ids)++;
        st->stacks_unusable++;
        return 0;
    }
    if (unknown) {
        st->stacks_unknown++;
        return 0;
    }
    return 1;
}

/* The `sample` messages: gid sampled as suspended but in another state;
 * its stack differs from the shadow (diff: gr_checker_compare's text). */
static void state_message(gr_sb *sb, size_t num, const gr_sample *s, uint64_t gid,
                          enum gr_shadow_state state)
{
    gr_sb_printf(sb, "sample %zu (taken after event %" PRIu64 "): g%" PRIu64
                     " was sampled as suspended but %s at this point of the trace",
                 num, s->idx_begin ? s->idx_begin - 1 : 0, gid, state_text(state));
}

static void diff_message(gr_sb *sb, size_t num, const gr_sample *s, uint64_t gid,
                         const char *diff)
{
    gr_sb_printf(sb, "sample %zu (taken after event %" PRIu64 "): sampled stack of "
                     "suspended g%" PRIu64 " differs from its shadow stack: %s",
                 num, s->idx_begin ? s->idx_begin - 1 : 0, gid, diff);
}

/* A `sample` violation at the sample's idx_begin; message in sb. */
static void sample_violation(const gr_trace *t, gr_check_result *res, const gr_sample *s,
                             uint64_t tid, uint64_t gid, gr_sb *sb)
{
    size_t ctx[GR_CONTEXT_MAX];
    int nc = tid ? context(t, tid, s->idx_begin, 0, ctx) : 0;
    gr_check_add_violation(res, GR_RULE_SAMPLE, s->idx_begin, tid, gid, gr_sb_take(sb), ctx, nc);
}

static void check_stacks(const gr_trace *t, const gr_times *tm, gr_checker *c, gr_stall *st,
                         gr_check_result *res)
{
    size_t n = tm->nsamples;
    st->stacks = tm->nstacks;
    if (!n)
        return;
    size_t *order = gr_xgrow(NULL, &(size_t){0}, n, sizeof *order);
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    sort_tm = tm;
    qsort(order, n, sizeof *order, by_begin);
    uint64_t *sw = NULL;
    size_t cap_sw = 0, late = 0, bad_ids = 0;
    gr_sb sb;
    gr_sb_init(&sb);
    for (size_t k = 0; k < n; k++) {
        size_t num = order[k];
        const gr_sample *s = &tm->samples[num];
        if (!s->got)
            continue;
        if (s->idx_begin > t->nrecs) {
            late++;
            st->stacks_unusable += (size_t)s->got;
            continue;
        }
        gr_checker_advance(c, (size_t)s->idx_begin);
        size_t nsw = switched_in(t, s->idx_begin ? s->idx_begin - 1 : 0, s->idx_end, &sw, &cap_sw);
        for (uint64_t j = 0; j < s->got; j++) {
            const gr_sample_stack *ss = &tm->stacks[s->stack + j];
            const uint32_t *ids = gr_sample_codes(tm, ss);
            if (!comparable(t, st, ids, ss->depth, &bad_ids))
                continue;
            uint64_t tid;
            enum gr_shadow_state state = gr_checker_greenlet(c, ss->gid, &tid);
            int torn = contains(sw, nsw, ss->gid);
            if (state != GR_SHADOW_IDLE && (!torn || state != GR_SHADOW_RUNNING)) {
                if (torn) {
                    st->stacks_torn++;
                    continue;
                }
                st->stacks_mismatched++;
                state_message(&sb, num, s, ss->gid, state);
                sample_violation(t, res, s, tid, ss->gid, &sb);
                continue;
            }
            char *diff = NULL;
            if (!gr_checker_compare(c, ss->gid, ids, ss->depth, 0, &diff)) {
                st->stacks_equal++;
                continue;
            }
            int cut = s->failed > 0 || ss->depth >= GR_STALL_SAMPLE_CAP;
            if (cut && !gr_checker_compare(c, ss->gid, ids, ss->depth, 1, NULL)) {
                st->stacks_partial++;
            } else if (torn) {
                st->stacks_torn++;
            } else {
                st->stacks_mismatched++;
                diff_message(&sb, num, s, ss->gid, diff);
                sample_violation(t, res, s, tid, ss->gid, &sb);
            }
            free(diff);
        }
    }
    if (late) {
        gr_sb_printf(&sb, "%zu sample%s taken after the last record of the trace (%zu "
                          "records): their stacks were not compared",
                     late, late == 1 ? " was" : "s were", t->nrecs);
        gr_check_add_warning(res, gr_sb_take(&sb));
    }
    if (bad_ids) {
        gr_sb_printf(&sb, "%zu sampled stack%s code ids the trace does not define: not "
                          "compared (is the side channel from another recording?)",
                     bad_ids, bad_ids == 1 ? " uses" : "s use");
        gr_check_add_warning(res, gr_sb_take(&sb));
    }
    gr_sb_free(&sb);
    free(sw);
    free(order);
}

/* ----------------------------------------------------------------- run */

static void head_warnings(const gr_trace *t, const gr_times *tm, const gr_stall *st,
                          gr_check_result *res);
static void add_profile_off(gr_check_result *res);

size_t gr_stall_run(const gr_trace *t, const gr_times *tm, uint64_t max_wait_ns, gr_stall *st,
                    gr_check_result *res)
{
    memset(st, 0, sizeof *st);
    st->threshold_ns = max_wait_ns;
    st->mode = meta(t, "sampler");
    st->interval_us = meta(t, "sampler_interval_us");
    gr_checker *c = gr_checker_new(t, res);
    res->nrules = GR_NRULES;

    head_warnings(t, tm, st, res);

    check_waits(t, tm, st, res);
    sample_figures(t, tm, st, res);
    char *profile = meta(t, "profile");
    if (profile && !strcmp(profile, "off")) {
        /* start(profile=False): no profile events, so no shadow stacks to
         * compare the samples with. */
        st->stacks = st->stacks_not_compared = tm->nstacks;
        st->stacks_reason = GR_STALL_NO_PROFILE;
        add_profile_off(res);
    } else {
        check_stacks(t, tm, c, st, res);
    }
    free(profile);
    size_t nv = gr_checker_finish(c);

    gr_sb sb;
    gr_sb_init(&sb);
    gr_stall_summary(&sb, st);
    res->summary = gr_sb_take(&sb);
    return nv;
}

static void add_profile_off(gr_check_result *res)
{
    gr_sb sb;
    gr_sb_init(&sb);
    gr_sb_puts(&sb, "recorded without the profile function (profile=False): sampled stacks "
                    "were not compared");
    gr_check_add_warning(res, gr_sb_take(&sb));
}

/* The warnings before the rules' (in this order): no `sampler` META, the
 * side channel truncated, its trailer counts against the entries read, the
 * registry overflow META, the samples thinned or lost (META
 * sampler_samples_thinned, sampler_samples_lost_full,
 * sampler_samples_lost_large).  tm: nwaits and nsamples are the totals. */
static void head_warnings(const gr_trace *t, const gr_times *tm, const gr_stall *st,
                          gr_check_result *res)
{
    gr_sb sb;
    gr_sb_init(&sb);
    if (!st->mode) {
        gr_sb_puts(&sb, "the trace has no `sampler` META record (not recorded with the sampler)");
        gr_check_add_warning(res, gr_sb_take(&sb));
    }
    if (tm->truncated) {
        gr_sb_printf(&sb, "side channel %s ends at byte %" PRIu64 " without a trailer: the "
                          "sampler data are incomplete",
                     tm->name ? tm->name : "?", tm->truncated_at);
        gr_check_add_warning(res, gr_sb_take(&sb));
    }
    if (tm->has_sampler_trailer && tm->trailer_switches != tm->nwaits) {
        gr_sb_printf(&sb, "side channel trailer counts %" PRIu64 " switch entries but it holds %zu",
                     tm->trailer_switches, tm->nwaits);
        gr_check_add_warning(res, gr_sb_take(&sb));
    }
    if (tm->has_sampler_trailer && tm->trailer_samples != tm->nsamples) {
        gr_sb_printf(&sb, "side channel trailer counts %" PRIu64 " samples but it holds %zu",
                     tm->trailer_samples, tm->nsamples);
        gr_check_add_warning(res, gr_sb_take(&sb));
    }
    /* Counts the recorder writes at stop, each a warning: META key, then
     * what follows the count. */
    static const char *const counted[][2] = {
        {"sampler_untracked_greenlets",
         "greenlets were past the sampler registry's capacity (start(..., max_greenlets=N): "
         "greenlets alive at once) and were never sampled"},
        {"sampler_samples_thinned",
         "sampling times without a sample kept: the program recorded nothing for longer than "
         "the sampler's ring and own buffer hold, so the own buffer was thinned (the samples "
         "kept span the stretch, further apart)"},
        {"sampler_samples_lost_full",
         "samples lost: the sampler's ring and own buffer were full while the program "
         "recorded nothing, and the own buffer could not be thinned (too small, with "
         "GREENREPLAY_SAMPLER_RING_MAX; or a recorder that did not thin yet)"},
        {"sampler_samples_lost_large",
         "samples were larger than the sampler's ring takes (start(..., keep=N) too large for "
         "the ring's cap, 64 MiB or GREENREPLAY_SAMPLER_RING_MAX) and were dropped"},
    };
    for (size_t i = 0; i < sizeof counted / sizeof counted[0]; i++) {
        char *v = meta(t, counted[i][0]);
        if (v) {
            gr_sb_printf(&sb, "%s %s", v, counted[i][1]);
            gr_check_add_warning(res, gr_sb_take(&sb));
            free(v);
        }
    }
    gr_sb_free(&sb);
}

/* ------------------------------------------------------------ streamed */

char *gr_stall_side_error(const gr_times *tm, const char *path)
{
    gr_sb msg;
    gr_sb_init(&msg);
    if (tm->err.status) {
        gr_sb_puts(&msg, tm->err.msg);
        if (tm->err.kind == GR_E_IO)
            gr_sb_puts(&msg, " (check --stall reads the side channel of a recording made "
                             "with start(sampler=...))");
    } else if (!gr_times_has_sampler(tm)) {
        gr_sb_printf(&msg, "%s: no sampler data (record with start(sampler=...); the sampler "
                           "data are written at stop())",
                     path);
    } else {
        gr_sb_free(&msg);
        return NULL;
    }
    return gr_sb_take(&msg);
}

/* A record kept after its chunk went (context not about one thread). */
typedef struct kept {
    gr_record rec;
    uint32_t *ids;
    size_t cap;
    int used;
} kept;

/* A sampled stack whose verdict waits for the switches of its sample's
 * window [idx_begin - 1, idx_end] (torn or not). */
typedef struct pend {
    size_t num;                   /* sample number */
    gr_sample s;                  /* its header (messages) */
    uint64_t gid, tid;
    enum gr_shadow_state state;   /* at idx_begin */
    int cmp;                      /* 0 equal, 1 partial, 2 differs */
    char *diff;                   /* owned, cmp == 2 */
    int torn;                     /* a switch of gid in the window */
    size_t ctx[GR_CONTEXT_MAX];
    int nctx;
    char *text[GR_CONTEXT_MAX];   /* owned context lines */
} pend;

/* The streamed stall check in progress. */
typedef struct sst {
    gr_trace *t;
    gr_checker *c;
    gr_stall *st;
    gr_check_result *res;
    uint64_t pos;                 /* records replayed (the checker's position) */
    kept tail[CK_RECENT];         /* last records of the chunks gone, by index % CK_RECENT */
    gr_times wr;                  /* second reader of the side channel: its 'W' entries */
    size_t wi;                    /* next entry of wr.waits */
    int wdone;
    size_t stray, nsw;
    uint64_t stray_first;
    int wait_due, depth_due;      /* stall_wait / stall_depth violation not added yet */
    uint64_t depth_idx;
    size_t depth_num;
    gr_sample depth_s;
    pend *pd;                     /* pd[head..npd): verdicts waiting, FIFO */
    size_t npd, head, cap_pd;
    int side_bad;                 /* wr failed (the file changed since the first pass) */
} sst;

/* Record i for context: in the current chunk, or kept in the tail. */
static const gr_record *tail_record(const sst *ss, uint64_t i, const uint32_t **ids)
{
    const gr_record *r = gr_trace_record(ss->t, i);
    if (r) {
        *ids = r->depth ? gr_record_stack(ss->t, r) : NULL;
        return r;
    }
    const kept *k = &ss->tail[i % CK_RECENT];
    if (k->used && k->rec.index == i) {
        *ids = k->ids;
        return &k->rec;
    }
    return NULL;
}

/* Context not about one thread, like context(t, 0, idx, mark) when `end`
 * records are known: up to 3 records before min(idx, end), then idx if
 * mark and it is a record.  Lines into text[] (owned). */
static int any_ctx(const sst *ss, uint64_t idx, uint64_t end, int mark,
                   size_t ctx[GR_CONTEXT_MAX], char *text[GR_CONTEXT_MAX])
{
    uint64_t e = idx < end ? idx : end;
    uint64_t from = e > CK_RECENT ? e - CK_RECENT : 0;
    int n = 0;
    for (uint64_t i = from; i < e; i++)
        ctx[n++] = (size_t)i;
    if (mark && idx < end)
        ctx[n++] = (size_t)idx;
    for (int k = 0; k < GR_CONTEXT_MAX; k++)
        text[k] = NULL;
    for (int k = 0; k < n; k++) {
        gr_sb sb;
        gr_sb_init(&sb);
        const uint32_t *ids = NULL;
        const gr_record *r = tail_record(ss, ctx[k], &ids);
        if (r)
            gr_dump_record_ids(&sb, ss->t, r, ids);
        else
            gr_sb_printf(&sb, "%6zu ?", ctx[k]);
        text[k] = gr_sb_take(&sb);
    }
    return n;
}

/* Context of thread tid at the current position (its last records, from
 * the checker's ring), then idx if mark. */
static int thread_ctx(const sst *ss, uint64_t tid, uint64_t idx, int mark,
                      size_t ctx[GR_CONTEXT_MAX], char *text[GR_CONTEXT_MAX])
{
    const ck *c = ss->c;
    size_t ti;
    const ck_thread *th = gr_idmap_get(&c->thmap, tid, 0, &ti) ? &c->th[ti] : NULL;
    int n = 0;
    if (th) {
        n = ck_make_ctx(th, (size_t)idx, ctx);
        if (!mark)
            n--;
    } else if (mark) {
        ctx[n++] = (size_t)idx;
    }
    ck_ctx_lines(c, th, ctx, n, text);
    return n;
}

static void add_lines(sst *ss, enum gr_rule rule, uint64_t idx, uint64_t tid, uint64_t gid,
                      char *msg, const size_t *ctx, int n, char *text[GR_CONTEXT_MAX])
{
    gr_check_add_violation(ss->res, rule, idx, tid, gid, msg, ctx, n);
    gr_violation *v = &ss->res->v[ss->res->nv - 1];
    for (int k = 0; k < GR_CONTEXT_MAX; k++) {
        v->ctx_line[k] = text[k];
        text[k] = NULL;
    }
}

/* stall_wait at the current position (the record of the longest wait, or
 * the end of the trace when it lies beyond). */
static void fire_wait(sst *ss)
{
    gr_stall *st = ss->st;
    uint64_t idx = st->wait_max_index, tid = 0, gid = 0;
    const gr_record *r = ss->pos == idx ? gr_trace_record(ss->t, idx) : NULL;
    size_t ctx[GR_CONTEXT_MAX];
    char *text[GR_CONTEXT_MAX];
    int n;
    if (r && is_switch(r)) {
        tid = r->tid;
        gid = r->target;
        n = thread_ctx(ss, tid, idx, 1, ctx, text);
    } else {
        n = any_ctx(ss, idx, r ? idx + 1 : ss->pos, 1, ctx, text);
    }
    gr_sb sb;
    gr_sb_init(&sb);
    wait_message(&sb, st);
    add_lines(ss, GR_RULE_STALL_WAIT, idx, tid, gid, gr_sb_take(&sb), ctx, n, text);
    ss->wait_due = 0;
}

/* stall_depth at the current position. */
static void fire_depth(sst *ss)
{
    size_t ctx[GR_CONTEXT_MAX];
    char *text[GR_CONTEXT_MAX];
    int n = any_ctx(ss, ss->depth_idx, ss->pos, 0, ctx, text);
    gr_sb sb;
    gr_sb_init(&sb);
    depth_message(&sb, ss->st, &ss->depth_s, ss->depth_num);
    add_lines(ss, GR_RULE_STALL_DEPTH, ss->depth_idx, 0, 0, gr_sb_take(&sb), ctx, n, text);
    ss->depth_due = 0;
}

/* Match the 'W' entries (sorted by index) with the records read so far;
 * at_end: every entry left names no record. */
static int join_waits(sst *ss, int at_end)
{
    for (;;) {
        if (ss->wi >= ss->wr.nwaits) {
            if (ss->wdone)
                return 0;
            int k = gr_times_next_chunk(&ss->wr);
            if (k < 0)
                return ss->side_bad = 1, -1;
            /* Before 1.3 no 'W' chunk follows a 'P' one; from 1.3 on
             * they interleave with 'T' and 'P' chunks (FORMAT §5). */
            if (k == 0 || (ss->wr.minor < GR_SIDE_MINOR && ss->wr.last_tag == GR_CHUNK_SAMPLES)) {
                ss->wdone = 1;
                return 0;
            }
            if (ss->wr.last_tag == GR_CHUNK_SWITCHES)
                ss->wi = 0;
            continue;
        }
        const gr_switch_wait *w = &ss->wr.waits[ss->wi];
        if (!at_end && w->index >= gr_trace_count(ss->t))
            return 0;
        const gr_record *r = at_end ? NULL : gr_trace_record(ss->t, w->index);
        if (!r || !is_switch(r)) {
            if (!ss->stray++)
                ss->stray_first = w->index;
        }
        ss->wi++;
    }
}

/* Before the current chunk goes: its 'W' entries, its last records. */
static int leave_chunk(sst *ss)
{
    const gr_trace *t = ss->t;
    if (join_waits(ss, 0))
        return -1;
    size_t from = t->nrecs > CK_RECENT ? t->nrecs - CK_RECENT : 0;
    for (size_t i = from; i < t->nrecs; i++) {
        const gr_record *r = &t->recs[i];
        kept *k = &ss->tail[r->index % CK_RECENT];
        k->rec = *r;
        k->used = 1;
        if (r->depth) {
            k->ids = gr_xgrow(k->ids, &k->cap, r->depth, sizeof *k->ids);
            memcpy(k->ids, gr_record_stack(t, r), r->depth * sizeof *k->ids);
        }
    }
    return 0;
}

/* Make record ss->pos readable, decoding chunks as needed.  Returns 1, 0
 * at the end of the trace, -1 on an error (t->err, or ss->side_bad). */
static int need(sst *ss)
{
    gr_trace *t = ss->t;
    while (ss->pos >= gr_trace_count(t)) {
        if (t->done)
            return 0;
        if (leave_chunk(ss))
            return -1;
        gr_checker_detach(ss->c);
        int k = gr_trace_next_chunk(t);
        if (k < 0)
            return -1;
        if (k == 0)
            return 0;
        for (size_t i = 0; i < t->nrecs; i++)
            ss->nsw += is_switch(&t->recs[i]);
    }
    return 1;
}

static void resolve(sst *ss, pend *p)
{
    gr_stall *st = ss->st;
    int mismatch = 0; /* 1: state, 2: stack */
    if (p->state == GR_SHADOW_IDLE) {
        if (p->torn)
            st->stacks_torn++;
        else
            mismatch = 2;
    } else if (p->state == GR_SHADOW_RUNNING && p->torn) {
        if (p->cmp == 0)
            st->stacks_equal++;
        else if (p->cmp == 1)
            st->stacks_partial++;
        else
            st->stacks_torn++;
    } else if (p->torn) {
        st->stacks_torn++;
    } else {
        mismatch = 1;
    }
    if (mismatch) {
        st->stacks_mismatched++;
        gr_sb sb;
        gr_sb_init(&sb);
        if (mismatch == 1)
            state_message(&sb, p->num, &p->s, p->gid, p->state);
        else
            diff_message(&sb, p->num, &p->s, p->gid, p->diff);
        add_lines(ss, GR_RULE_SAMPLE, p->s.idx_begin, p->tid, p->gid, gr_sb_take(&sb), p->ctx,
                  p->nctx, p->text);
    }
    free(p->diff);
    ck_free_lines(p->text);
}

/* Verdicts whose window is behind the position (all of them at the end). */
static void resolve_ready(sst *ss, int all)
{
    while (ss->head < ss->npd && (all || ss->pd[ss->head].s.idx_end < ss->pos))
        resolve(ss, &ss->pd[ss->head++]);
    if (ss->head == ss->npd)
        ss->head = ss->npd = 0;
}

/* A switch record r seen: the waiting verdicts of its greenlets whose
 * window holds it are torn. */
static void see_switch(sst *ss, const gr_record *r)
{
    for (size_t k = ss->head; k < ss->npd; k++) {
        pend *p = &ss->pd[k];
        uint64_t lo = p->s.idx_begin ? p->s.idx_begin - 1 : 0;
        if (r->index >= lo && r->index <= p->s.idx_end && (p->gid == r->gid || p->gid == r->target))
            p->torn = 1;
    }
}

/* Replay up to record `end` (or the end of the trace), adding the
 * stall_wait / stall_depth violations when their record comes and the
 * verdicts whose window closed.  Returns 0, or -1 on an error. */
static int advance_to(sst *ss, uint64_t end)
{
    const gr_trace *t = ss->t;
    while (ss->pos < end) {
        int k = need(ss);
        if (k <= 0)
            return k;
        if (ss->wait_due && ss->st->wait_max_index == ss->pos)
            fire_wait(ss);
        if (ss->depth_due && ss->depth_idx == ss->pos)
            fire_depth(ss);
        uint64_t stop = gr_trace_count(t) < end ? gr_trace_count(t) : end;
        if (ss->wait_due && ss->st->wait_max_index > ss->pos && ss->st->wait_max_index < stop)
            stop = ss->st->wait_max_index;
        if (ss->depth_due && ss->depth_idx > ss->pos && ss->depth_idx < stop)
            stop = ss->depth_idx;
        if (ss->head < ss->npd)
            for (uint64_t i = ss->pos; i < stop; i++) {
                const gr_record *r = gr_trace_record(t, i);
                if (is_switch(r))
                    see_switch(ss, r);
            }
        gr_checker_advance(ss->c, (size_t)stop);
        ss->pos = stop;
        resolve_ready(ss, 0);
    }
    /* A violation due exactly here is added when its record is read. */
    return 0;
}

/* Sample number num of pr (its stacks in pr): compare its stacks with the
 * shadows at idx_begin. */
static int stream_sample(sst *ss, const gr_times *pr, const gr_sample *s, size_t num,
                         size_t *late, size_t *bad_ids)
{
    gr_stall *st = ss->st;
    if (!s->got)
        return 0;
    if (advance_to(ss, s->idx_begin) < 0)
        return -1;
    if (ss->pos < s->idx_begin) {
        (*late)++;
        st->stacks_unusable += (size_t)s->got;
        return 0;
    }
    const gr_trace *t = ss->t;
    for (uint64_t j = 0; j < s->got; j++) {
        const gr_sample_stack *sk = &pr->stacks[s->stack + j];
        const uint32_t *ids = gr_sample_codes(pr, sk);
        if (!comparable(t, st, ids, sk->depth, bad_ids))
            continue;
        uint64_t tid;
        enum gr_shadow_state state = gr_checker_greenlet(ss->c, sk->gid, &tid);
        int cmp = 0;
        char *diff = NULL;
        if (state == GR_SHADOW_IDLE || state == GR_SHADOW_RUNNING) {
            cmp = gr_checker_compare(ss->c, sk->gid, ids, sk->depth, 0, &diff);
            int cut = s->failed > 0 || sk->depth >= GR_STALL_SAMPLE_CAP;
            if (cmp && cut && !gr_checker_compare(ss->c, sk->gid, ids, sk->depth, 1, NULL))
                cmp = 1;
            else if (cmp)
                cmp = 2;
            if (state == GR_SHADOW_IDLE && cmp < 2) {
                st->stacks_equal += cmp == 0;
                st->stacks_partial += cmp == 1;
                free(diff);
                continue;
            }
        }
        /* The verdict depends on the switches up to idx_end. */
        ss->pd = gr_xgrow(ss->pd, &ss->cap_pd, ss->npd + 1, sizeof *ss->pd);
        pend *p = &ss->pd[ss->npd++];
        memset(p, 0, sizeof *p);
        p->num = num;
        p->s = *s;
        p->gid = sk->gid;
        p->tid = tid;
        p->state = state;
        p->cmp = cmp;
        p->diff = diff;
        if (tid)
            p->nctx = thread_ctx(ss, tid, s->idx_begin, 0, p->ctx, p->text);
        if (s->idx_begin) { /* the window starts one record back */
            const uint32_t *unused;
            const gr_record *r = tail_record(ss, s->idx_begin - 1, &unused);
            if (r && is_switch(r) && (r->gid == p->gid || r->target == p->gid))
                p->torn = 1;
        }
    }
    return 0;
}

/* Violation order of gr_stall_run: by index, then stall_wait, stall_depth,
 * sample, the checker's rules, then order of detection. */
static int group(enum gr_rule r)
{
    return r == GR_RULE_STALL_WAIT ? 0 : r == GR_RULE_STALL_DEPTH ? 1 : r == GR_RULE_SAMPLE ? 2 : 3;
}

static int by_index_group(const void *pa, const void *pb)
{
    const gr_violation *a = pa, *b = pb;
    if (a->index != b->index)
        return a->index < b->index ? -1 : 1;
    if (group(a->rule) != group(b->rule))
        return group(a->rule) < group(b->rule) ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* First pass over the side channel: the 'W' figures and the sample headers
 * (hdr->samples, stacks not kept), the totals and the trailer into hdr.
 * *ordered: 'W' entries and samples come in index order. */
static int scan_side(const char *path, gr_stall *st, gr_times *hdr, int *ordered, char **err)
{
    gr_times tm;
    int rc = gr_times_open(&tm, path);
    size_t cap = 0;
    uint64_t last_w = 0, last_p = 0, nw = 0;
    *ordered = 1;
    memset(hdr, 0, sizeof *hdr);
    while (rc == GR_READ_OK) {
        int k = gr_times_next_chunk(&tm);
        if (k < 0)
            rc = tm.err.status;
        if (k <= 0)
            break;
        for (size_t i = 0; i < tm.nwaits && tm.last_tag == GR_CHUNK_SWITCHES; i++, nw++) {
            const gr_switch_wait *w = &tm.waits[i];
            if (w->index < last_w)
                *ordered = 0;
            last_w = w->index;
            wait_figures(st, w, nw);
        }
        for (size_t i = 0; i < tm.nsamples && tm.last_tag == GR_CHUNK_SAMPLES; i++) {
            const gr_sample *s = &tm.samples[i];
            uint64_t num = tm.first_sample + i;
            if (num < hdr->nsamples) { /* carried over: more stacks */
                hdr->samples[num].got = s->got;
                continue;
            }
            if (s->idx_begin < last_p)
                *ordered = 0;
            last_p = s->idx_begin;
            hdr->samples = gr_xgrow(hdr->samples, &cap, hdr->nsamples + 1, sizeof *hdr->samples);
            hdr->samples[hdr->nsamples] = *s;
            hdr->samples[hdr->nsamples].stack = 0;
            hdr->nsamples++;
        }
    }
    *err = gr_stall_side_error(&tm, path);
    hdr->nwaits = (size_t)nw;
    hdr->truncated = tm.truncated;
    hdr->truncated_at = tm.truncated_at;
    hdr->has_sampler_trailer = tm.has_sampler_trailer;
    hdr->trailer_switches = tm.trailer_switches;
    hdr->trailer_samples = tm.trailer_samples;
    hdr->name = tm.name;
    tm.name = NULL;
    for (size_t i = 0; i < hdr->nsamples; i++)
        hdr->nstacks += (size_t)hdr->samples[i].got;
    gr_times_free(&tm);
    return *err ? -1 : 0;
}

/* The sampled stacks compared with the shadow stacks, chunk by chunk of
 * the side channel pr: 0, or -1 when the trace or the side channel is
 * unusable part way. */
static int stream_samples(sst *ss, gr_times *pr, size_t *late, size_t *bad_ids)
{
    int rc = 0;
    size_t next = 0; /* number of the next sample to compare */
    while (!rc) {
        for (; next < pr->first_sample + pr->nsamples; next++) {
            const gr_sample *s = &pr->samples[next - pr->first_sample];
            if (s->got < s->nstacks && !pr->done)
                break; /* its stacks continue in the next chunk */
            if ((rc = stream_sample(ss, pr, s, next, late, bad_ids)))
                break;
        }
        if (rc || pr->done)
            break;
        if (gr_times_next_chunk(pr) < 0)
            rc = -1, ss->side_bad = 1;
    }
    return rc;
}

/* Warnings in gr_stall_run's order, before the checker's, into pre. */
static void stream_warnings(sst *ss, const gr_times *hdr, int profile_off, size_t late, size_t bad_ids,
                            gr_check_result *pre)
{
    head_warnings(ss->t, hdr, ss->st, pre);
    gr_sb sb;
    gr_sb_init(&sb);
    if (ss->stray) {
        stray_message(&sb, ss->stray, ss->stray_first);
        gr_check_add_warning(pre, gr_sb_take(&sb));
    }
    if (!hdr->truncated && ss->nsw != hdr->nwaits) {
        count_message(&sb, ss->nsw, hdr->nwaits);
        gr_check_add_warning(pre, gr_sb_take(&sb));
    }
    if (profile_off)
        add_profile_off(pre);
    if (late) {
        gr_sb_printf(&sb, "%zu sample%s taken after the last record of the trace (%zu "
                          "records): their stacks were not compared",
                     late, late == 1 ? " was" : "s were", (size_t)ss->pos);
        gr_check_add_warning(pre, gr_sb_take(&sb));
    }
    if (bad_ids) {
        gr_sb_printf(&sb, "%zu sampled stack%s code ids the trace does not define: not "
                          "compared (is the side channel from another recording?)",
                     bad_ids, bad_ids == 1 ? " uses" : "s use");
        gr_check_add_warning(pre, gr_sb_take(&sb));
    }
    gr_sb_free(&sb);
}

/* The checker finished: its warnings after the stall ones, the
 * violations in order, the summary.  The number of violations. */
static size_t stream_results(sst *ss, const gr_times *hdr, int profile_off, size_t late, size_t bad_ids)
{
    gr_trace *t = ss->t;
    gr_stall *st = ss->st;
    gr_check_result *res = ss->res;
    /* Warnings in gr_stall_run's order, before the checker's. */
    st->mode = meta(t, "sampler");
    st->interval_us = meta(t, "sampler_interval_us");
    gr_check_result pre;
    memset(&pre, 0, sizeof pre);
    stream_warnings(ss, hdr, profile_off, late, bad_ids, &pre);
    gr_sb sb;

    size_t nv = gr_checker_finish(ss->c);
    for (size_t i = 0; i < res->nwarnings; i++)
        gr_check_add_warning(&pre, res->warnings[i]);
    free(res->warnings);
    res->warnings = pre.warnings;
    res->nwarnings = pre.nwarnings;
    res->cap_warnings = pre.cap_warnings;
    if (res->nv > 1)
        qsort(res->v, res->nv, sizeof *res->v, by_index_group);

    gr_sb_init(&sb);
    gr_stall_summary(&sb, st);
    res->summary = gr_sb_take(&sb);
    return nv;
}

int gr_stall_stream(gr_trace *t, const char *side, uint64_t max_wait_ns, gr_stall *st,
                    gr_check_result *res, size_t *nv, char **err)
{
    memset(st, 0, sizeof *st);
    memset(res, 0, sizeof *res);
    *nv = 0;
    *err = NULL;
    st->threshold_ns = max_wait_ns;
    gr_times hdr;
    int ordered;
    if (scan_side(side, st, &hdr, &ordered, err) < 0) {
        gr_times_free(&hdr);
        return GR_STALL_SIDE_UNUSABLE;
    }
    if (!ordered) {
        gr_times_free(&hdr);
        return GR_STALL_UNORDERED;
    }
    st->switches = hdr.nwaits;
    size_t first_under = sample_stats(&hdr, st);

    sst ss;
    memset(&ss, 0, sizeof ss);
    ss.t = t;
    ss.st = st;
    ss.res = res;
    ss.c = gr_checker_new(t, res);
    res->nrules = GR_NRULES;
    ss.wait_due = wait_flagged(st);
    if (first_under != SIZE_MAX) {
        ss.depth_due = 1;
        ss.depth_num = first_under;
        ss.depth_s = hdr.samples[first_under];
        ss.depth_idx = ss.depth_s.idx_begin;
    }
    gr_times pr;
    memset(&pr, 0, sizeof pr);
    int rc = gr_times_open(&ss.wr, side) == GR_READ_OK && gr_times_open(&pr, side) == GR_READ_OK
                 ? 0
                 : (ss.side_bad = 1, -1);
    size_t late = 0, bad_ids = 0;
    int profile_off = 0;
    if (!rc)
        rc = need(&ss) < 0 ? -1 : 0; /* the first chunk: its definitions */
    if (!rc) {
        char *profile = meta(t, "profile");
        profile_off = profile && !strcmp(profile, "off");
        free(profile);
    }
    if (!rc && profile_off) {
        st->stacks = st->stacks_not_compared = hdr.nstacks;
        st->stacks_reason = GR_STALL_NO_PROFILE;
    }
    if (!rc && !profile_off) {
        st->stacks = hdr.nstacks;
        rc = stream_samples(&ss, &pr, &late, &bad_ids);
    }
    if (!rc)
        rc = advance_to(&ss, UINT64_MAX);
    if (!rc && ss.wait_due)
        fire_wait(&ss);
    if (!rc && ss.depth_due)
        fire_depth(&ss);
    resolve_ready(&ss, 1);
    if (!rc)
        rc = join_waits(&ss, 1);

    *nv = stream_results(&ss, &hdr, profile_off, late, bad_ids);
    gr_sb sb;

    for (size_t k = ss.head; k < ss.npd; k++) {
        free(ss.pd[k].diff);
        ck_free_lines(ss.pd[k].text);
    }
    free(ss.pd);
    for (int k = 0; k < CK_RECENT; k++)
        free(ss.tail[k].ids);
    int status = GR_STALL_DONE;
    if (ss.side_bad) {
        const gr_times *bad = ss.wr.err.status ? &ss.wr : &pr;
        gr_sb_init(&sb);
        gr_sb_puts(&sb, bad->err.status ? bad->err.msg : side);
        gr_sb_puts(&sb, " (the side channel changed while it was read?)");
        *err = gr_sb_take(&sb);
        status = GR_STALL_SIDE_UNUSABLE;
    } else if (t->err.status) {
        status = GR_STALL_TRACE_CORRUPT;
    }
    gr_times_free(&ss.wr);
    gr_times_free(&pr);
    gr_times_free(&hdr);
    if (status != GR_STALL_DONE) {
        gr_check_result_free(res);
        gr_stall_free(st);
        *nv = 0;
    }
    return status;
}

/* ------------------------------------------------------------- output */

void gr_stall_summary(gr_sb *sb, const gr_stall *st)
{
    gr_sb_printf(sb, "sampler: %s, interval %s us; %zu switches, %zu samples\n",
                 st->mode ? st->mode : "?", st->interval_us ? st->interval_us : "?",
                 st->switches, st->samples);
    if (st->switches) {
        gr_sb_puts(sb, "lock wait per switch: max ");
        put_ns(sb, st->wait_max_ns);
        gr_sb_printf(sb, " (event %" PRIu64 "), sum ", st->wait_max_index);
        put_ns(sb, st->wait_sum_ns);
        gr_sb_printf(sb, ", contended %zu, over ", st->contended);
        put_ns(sb, st->threshold_ns);
        gr_sb_printf(sb, ": %zu\n", st->over_threshold);
        gr_sb_puts(sb, "switch callback: max ");
        put_ns(sb, st->callback_max_ns);
        gr_sb_printf(sb, " (event %" PRIu64 ")\n", st->callback_max_index);
    }
    if (st->samples) {
        gr_sb_puts(sb, "lock hold per sample: min ");
        put_ns(sb, st->hold_min_ns);
        gr_sb_puts(sb, ", median ");
        put_ns(sb, st->hold_median_ns);
        gr_sb_puts(sb, ", max ");
        put_ns(sb, st->hold_max_ns);
        gr_sb_puts(sb, ", sum ");
        put_ns(sb, st->hold_sum_ns);
        gr_sb_putc(sb, '\n');
        gr_sb_printf(sb, "  %-17s %-13s %7s  %-10s %-10s %-10s %-10s %s\n", "frames",
                     "greenlets", "samples", "hold min", "median", "max", "/greenlet",
                     "/frame");
        for (size_t b = 0; b < st->nbuckets; b++) {
            const gr_stall_bucket *bk = &st->buckets[b];
            char fr[48], gl[48];
            snprintf(fr, sizeof fr, "%" PRIu64 "-%" PRIu64, bk->frames_min, bk->frames_max);
            snprintf(gl, sizeof gl, "%" PRIu64 "-%" PRIu64, bk->greenlets_min,
                     bk->greenlets_max);
            gr_sb_printf(sb, "  %-17s %-13s %7zu ", fr, gl, bk->samples);
            for (int i = 0; i < 5; i++) {
                gr_sb tmp;
                gr_sb_init(&tmp);
                if (i == 0)
                    put_ns(&tmp, bk->hold_min);
                else if (i == 1)
                    put_ns(&tmp, bk->hold_median);
                else if (i == 2)
                    put_ns(&tmp, bk->hold_max);
                else if (i == 3 && bk->greenlets_sum)
                    put_ratio(&tmp, bk->hold_sum, bk->greenlets_sum);
                else if (i == 4 && bk->frames_sum)
                    put_ratio(&tmp, bk->hold_sum, bk->frames_sum);
                else
                    gr_sb_putc(&tmp, '-');
                gr_sb_printf(sb, " %-10s", gr_sb_str(&tmp));
                gr_sb_free(&tmp);
            }
            while (sb->len && sb->s[sb->len - 1] == ' ')
                sb->s[--sb->len] = '\0';
            gr_sb_putc(sb, '\n');
        }
        if (st->has_correlation)
            gr_sb_printf(sb, "  correlation of hold with frames read: %.2f (informational)\n",
                         st->hold_frames_r);
        gr_sb_printf(sb, "frames read: %" PRIu64 ", under the lock: %" PRIu64
                         " in %zu sample%s; failed reads: %" PRIu64 "; torn copies: %" PRIu64
                         "\n",
                     st->frames_sum, st->frames_under_lock_sum, st->samples_under_lock,
                     st->samples_under_lock == 1 ? "" : "s", st->failed_sum, st->torn_sum);
    }
    if (st->stacks_reason) {
        gr_sb_printf(sb, "sampled stacks: %zu, not compared (%s)\n", st->stacks,
                     st->stacks_reason);
        return;
    }
    gr_sb_printf(sb, "sampled stacks: %zu: %zu equal, %zu partial, %zu torn by a switch, "
                     "%zu with unknown code, %zu mismatched",
                 st->stacks, st->stacks_equal, st->stacks_partial, st->stacks_torn,
                 st->stacks_unknown, st->stacks_mismatched);
    if (st->stacks_unusable)
        gr_sb_printf(sb, ", %zu not comparable", st->stacks_unusable);
    gr_sb_putc(sb, '\n');
}

static json_t *opt_str(const char *s)
{
    return s ? gr_json_str(s) : json_null();
}

json_t *gr_stall_json(const gr_stall *st)
{
    json_t *o = json_object();
    json_object_set_new(o, "sampler", opt_str(st->mode));
    const char *iv = st->interval_us;
    if (iv && *iv && strspn(iv, "0123456789") == strlen(iv) && strlen(iv) < 19)
        json_object_set_new(o, "interval_us", json_integer(strtoll(iv, NULL, 10)));
    else
        json_object_set_new(o, "interval_us", opt_str(iv));
    json_object_set_new(o, "switches", json_integer((json_int_t)st->switches));
    json_object_set_new(o, "samples", json_integer((json_int_t)st->samples));

    json_t *w = json_object();
    json_object_set_new(w, "threshold_ns", gr_json_u64(st->threshold_ns));
    json_object_set_new(w, "max_ns", gr_json_u64(st->wait_max_ns));
    json_object_set_new(w, "max_index", st->switches ? gr_json_u64(st->wait_max_index)
                                                     : json_null());
    json_object_set_new(w, "sum_ns", gr_json_u64(st->wait_sum_ns));
    json_object_set_new(w, "contended", json_integer((json_int_t)st->contended));
    json_object_set_new(w, "over_threshold", json_integer((json_int_t)st->over_threshold));
    json_object_set_new(w, "callback_max_ns", gr_json_u64(st->callback_max_ns));
    json_object_set_new(w, "callback_max_index",
                        st->switches ? gr_json_u64(st->callback_max_index) : json_null());
    json_object_set_new(o, "wait", w);

    json_t *h = json_object();
    json_object_set_new(h, "min_ns", gr_json_u64(st->hold_min_ns));
    json_object_set_new(h, "median_ns", gr_json_u64(st->hold_median_ns));
    json_object_set_new(h, "max_ns", gr_json_u64(st->hold_max_ns));
    json_object_set_new(h, "sum_ns", gr_json_u64(st->hold_sum_ns));
    json_object_set_new(h, "correlation_frames",
                        st->has_correlation ? json_real(st->hold_frames_r) : json_null());
    json_t *rows = json_array();
    for (size_t b = 0; b < st->nbuckets; b++) {
        const gr_stall_bucket *bk = &st->buckets[b];
        json_t *r = json_object();
        json_object_set_new(r, "samples", json_integer((json_int_t)bk->samples));
        json_object_set_new(r, "frames_min", gr_json_u64(bk->frames_min));
        json_object_set_new(r, "frames_max", gr_json_u64(bk->frames_max));
        json_object_set_new(r, "greenlets_min", gr_json_u64(bk->greenlets_min));
        json_object_set_new(r, "greenlets_max", gr_json_u64(bk->greenlets_max));
        json_object_set_new(r, "hold_min_ns", gr_json_u64(bk->hold_min));
        json_object_set_new(r, "hold_median_ns", gr_json_u64(bk->hold_median));
        json_object_set_new(r, "hold_max_ns", gr_json_u64(bk->hold_max));
        json_object_set_new(r, "hold_per_greenlet_ns",
                            bk->greenlets_sum
                                ? json_real((double)bk->hold_sum / (double)bk->greenlets_sum)
                                : json_null());
        json_object_set_new(r, "hold_per_frame_ns",
                            bk->frames_sum
                                ? json_real((double)bk->hold_sum / (double)bk->frames_sum)
                                : json_null());
        json_array_append_new(rows, r);
    }
    json_object_set_new(h, "buckets", rows);
    json_object_set_new(o, "hold", h);

    json_object_set_new(o, "greenlets", gr_json_u64(st->greenlets_sum));
    json_object_set_new(o, "frames", gr_json_u64(st->frames_sum));
    json_object_set_new(o, "frames_under_lock", gr_json_u64(st->frames_under_lock_sum));
    json_object_set_new(o, "samples_under_lock", json_integer((json_int_t)st->samples_under_lock));
    json_object_set_new(o, "failed_reads", gr_json_u64(st->failed_sum));
    json_object_set_new(o, "torn_copies", gr_json_u64(st->torn_sum));

    json_t *s = json_object();
    json_object_set_new(s, "total", json_integer((json_int_t)st->stacks));
    json_object_set_new(s, "equal", json_integer((json_int_t)st->stacks_equal));
    json_object_set_new(s, "partial", json_integer((json_int_t)st->stacks_partial));
    json_object_set_new(s, "torn", json_integer((json_int_t)st->stacks_torn));
    json_object_set_new(s, "unknown", json_integer((json_int_t)st->stacks_unknown));
    json_object_set_new(s, "mismatched", json_integer((json_int_t)st->stacks_mismatched));
    json_object_set_new(s, "unusable", json_integer((json_int_t)st->stacks_unusable));
    json_object_set_new(s, "not_compared", json_integer((json_int_t)st->stacks_not_compared));
    json_object_set_new(s, "compared", json_boolean(st->stacks_reason == NULL));
    json_object_set_new(s, "reason", opt_str(st->stacks_reason));
    json_object_set_new(o, "stacks", s);
    return o;
}

void gr_stall_free(gr_stall *st)
{
    free(st->mode);
    free(st->interval_us);
    memset(st, 0, sizeof *st);
}
