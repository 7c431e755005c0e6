/* stall.c - the sampler stall check: lock waits per switch, lock holds per
 * sample, sampled stacks against shadow stacks (stall.h). */
#include "stall.h"

#include "report.h"

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
    gr_sb sb;
    gr_sb_init(&sb);
    if (stray) {
        gr_sb_printf(&sb, "%zu switch entr%s of the side channel (first: index %" PRIu64
                          ") name no SWITCH/THROW record of the trace: is the side channel "
                          "from another recording?",
                     stray, stray == 1 ? "y" : "ies", stray_first);
        gr_check_add_warning(res, gr_sb_take(&sb));
    }
    if (!tm->truncated && nsw != tm->nwaits) {
        gr_sb_printf(&sb, "the trace has %zu SWITCH/THROW records but the side channel %zu "
                          "switch entries",
                     nsw, tm->nwaits);
        gr_check_add_warning(res, gr_sb_take(&sb));
    }
    if (tm->nwaits && st->wait_max_ns > st->threshold_ns) {
        uint64_t idx = st->wait_max_index, tid = 0, gid = 0;
        if (idx < t->nrecs && is_switch(&t->recs[idx])) {
            tid = t->recs[idx].tid;
            gid = t->recs[idx].target;
        }
        gr_sb_puts(&sb, "a switch waited ");
        put_ns(&sb, st->wait_max_ns);
        gr_sb_puts(&sb, " for the sampler's registry lock, over the threshold of ");
        put_ns(&sb, st->threshold_ns);
        gr_sb_printf(&sb, "; %zu of %zu switches waited longer than the threshold, ",
                     st->over_threshold, st->switches);
        gr_sb_puts(&sb, "summed wait ");
        put_ns(&sb, st->wait_sum_ns);
        gr_sb_puts(&sb, " (the sampler holds the lock that every switch needs for too long)");
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

static void sample_figures(const gr_trace *t, const gr_times *tm, gr_stall *st,
                           gr_check_result *res)
{
    size_t n = tm->nsamples;
    st->samples = n;
    if (!n)
        return;
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

    if (first_under == SIZE_MAX)
        return;
    const gr_sample *s = &tm->samples[first_under];
    gr_sb sb;
    gr_sb_init(&sb);
    gr_sb_printf(&sb,
                 "sample %zu (taken after event %" PRIu64 ") read %" PRIu64 " of its %" PRIu64
                 " frames while holding the registry lock (hold ",
                 first_under, s->idx_begin ? s->idx_begin - 1 : 0, s->frames_under_lock,
                 s->frames);
    put_ns(&sb, s->hold_ns);
    gr_sb_printf(&sb, "), so every switch waits for an unwind that grows with greenlets x "
                      "stack depth; %zu of %zu samples read frames under the lock "
                      "(%" PRIu64 " frames in all)",
                 st->samples_under_lock, n, st->frames_under_lock_sum);
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
            int unknown = 0, bad = 0;
            for (uint32_t d = 0; d < ss->depth; d++) {
                unknown |= ids[d] == 0;
                bad |= ids[d] > t->ncodes;
            }
            if (bad) {
                bad_ids++;
                st->stacks_unusable++;
                continue;
            }
            if (unknown) {
                st->stacks_unknown++;
                continue;
            }
            uint64_t tid;
            enum gr_shadow_state state = gr_checker_greenlet(c, ss->gid, &tid);
            int torn = contains(sw, nsw, ss->gid);
            if (state != GR_SHADOW_IDLE && (!torn || state != GR_SHADOW_RUNNING)) {
                if (torn) {
                    st->stacks_torn++;
                    continue;
                }
                st->stacks_mismatched++;
                gr_sb_printf(&sb, "sample %zu (taken after event %" PRIu64 "): g%" PRIu64
                                  " was sampled as suspended but %s at this point of the trace",
                             num, s->idx_begin ? s->idx_begin - 1 : 0, ss->gid,
                             state_text(state));
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
                gr_sb_printf(&sb, "sample %zu (taken after event %" PRIu64 "): sampled stack of "
                                  "suspended g%" PRIu64 " differs from its shadow stack: %s",
                             num, s->idx_begin ? s->idx_begin - 1 : 0, ss->gid, diff);
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

size_t gr_stall_run(const gr_trace *t, const gr_times *tm, uint64_t max_wait_ns, gr_stall *st,
                    gr_check_result *res)
{
    memset(st, 0, sizeof *st);
    st->threshold_ns = max_wait_ns;
    st->mode = meta(t, "sampler");
    st->interval_us = meta(t, "sampler_interval_us");
    gr_checker *c = gr_checker_new(t, res);
    res->nrules = GR_NRULES;

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
    char *untracked = meta(t, "sampler_untracked_greenlets");
    if (untracked) {
        gr_sb_printf(&sb, "%s greenlets were past the sampler registry's capacity (start(..., "
                          "max_greenlets=N)) and were never sampled",
                     untracked);
        gr_check_add_warning(res, gr_sb_take(&sb));
        free(untracked);
    }
    gr_sb_free(&sb);

    check_waits(t, tm, st, res);
    sample_figures(t, tm, st, res);
    char *profile = meta(t, "profile");
    if (profile && !strcmp(profile, "off")) {
        /* start(profile=False): no profile events, so no shadow stacks to
         * compare the samples with. */
        gr_sb_init(&sb);
        gr_sb_puts(&sb, "recorded without the profile function (profile=False): sampled stacks "
                        "were not compared");
        gr_check_add_warning(res, gr_sb_take(&sb));
    } else {
        check_stacks(t, tm, c, st, res);
    }
    free(profile);
    size_t nv = gr_checker_finish(c);

    gr_sb_init(&sb);
    gr_stall_summary(&sb, st);
    res->summary = gr_sb_take(&sb);
    return nv;
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
    json_object_set_new(o, "stacks", s);
    return o;
}

void gr_stall_free(gr_stall *st)
{
    free(st->mode);
    free(st->interval_us);
    memset(st, 0, sizeof *st);
}
