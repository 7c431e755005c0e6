/* sampler.c - the reference greenlet sampler thread (see sampler.h). */
#include "sampler.h"

#include "format.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int gr_sampler_mode(const char *name)
{
    if (!strcmp(name, "two-phase"))
        return GR_REG_TWO_PHASE;
    if (!strcmp(name, "hold-lock"))
        return GR_REG_HOLD_LOCK;
    if (!strcmp(name, "seqlock"))
        return GR_REG_SEQLOCK;
    return -1;
}

const char *gr_sampler_mode_name(int mode)
{
    switch (mode) {
    case GR_REG_TWO_PHASE: return "two-phase";
    case GR_REG_HOLD_LOCK: return "hold-lock";
    case GR_REG_SEQLOCK: return "seqlock";
    default: return "?";
    }
}

/* Whether n more bytes of output fit in s->out (allocated once at start:
 * never grows); 0 or -1.  take_sample checks for a whole sample first, so
 * this fails only on a bug. */
static int reserve(gr_sampler *s, size_t n)
{
    return s->out_cap - s->out_len >= n ? 0 : -1;
}

static void put(gr_sampler *s, uint64_t v)
{
    s->out_len = (size_t)(gr_put_varint(s->out + s->out_len, v) - s->out);
}

/* Unwind suspended greenlets of snap[0..n) (see gr_unwind_many), at most
 * `limit` of them, starting at a round-robin position that moves by `keep`
 * every sample; store the stacks of the first `keep` into the output.
 * Frames and failed reads of every stack unwound are counted. */
typedef struct {
    uint64_t frames, failed;
    uint32_t nstacks;
} unwind_totals;

static void unwind_some(gr_sampler *s, uint32_t n, uint32_t limit, unwind_totals *tot)
{
    gr_unwind_stats st = {0, 0};
    uint32_t start = n ? s->rr % n : 0, m = 0, kept = 0;
    for (uint32_t k = 0; k < n && m < limit; k++) {
        gr_reg_entry *e = &s->snap[(start + k) % n];
        if (e->state != GR_REG_SUSPENDED || !e->frame)
            continue;
        gr_unwind_job *j = &s->jobs[m++];
        j->frame = e->frame;
        j->max = GR_SAMPLE_DEPTH;
        j->codes = kept < s->keep ? s->codes + (size_t)kept++ * GR_SAMPLE_DEPTH : NULL;
        s->gids[m - 1] = e->gid;
        s->slots[m - 1] = e->slot;
    }
    tot->frames += gr_unwind_many(s->jobs, m, &st);
    tot->failed += st.failed;
    for (uint32_t i = 0; i < m; i++) {
        gr_unwind_job *j = &s->jobs[i];
        if (!j->codes)
            continue;
        /* The generation check: a greenlet that died or was freed during
         * the unwind may have had its frames freed, and its slot may be
         * another greenlet's now: its stack is not trusted (counted as a
         * failed read). */
        if (!gr_registry_holds(s->reg, s->slots[i], s->gids[i])) {
            /* atomic: read by _sampler_registry() on another thread */
            __atomic_store_n(&s->recycled, s->recycled + 1, __ATOMIC_RELAXED);
            tot->failed++;
            continue;
        }
        if (j->depth < 0 ||
            reserve(s, (size_t)(2 + j->depth) * GR_VARINT_MAX) < 0)
            continue;
        put(s, s->gids[i]);
        put(s, (uint64_t)j->depth);
        for (int d = 0; d < j->depth; d++)
            put(s, j->codes[d]);
        tot->nstacks++;
    }
    s->rr += s->keep;
}

/* Hand the samples of s->out to the consumer, oldest first, as many as
 * the ring takes now; the rest move to the front of s->out.  Sampler
 * thread only (or the consumer once the thread is joined). */
static void hand_over(gr_sampler *s)
{
    size_t at = 0, max = gr_handoff_max_entry(&s->ho);
    while (s->out_len - at >= 4) {
        uint32_t n;
        memcpy(&n, s->out + at, 4);
        /* take_sample keeps no entry above the ring's greatest (n > max
         * would never be pushed): stop there rather than spin. */
        if (n > max || gr_handoff_push(&s->ho, s->out + at + 4, n) < 0)
            break;
        at += 4 + (size_t)n;
    }
    if (at) {
        memmove(s->out, s->out + at, s->out_len - at);
        s->out_len -= at;
    }
}

/* The ring and the own buffer are full, and the own buffer holds fewer
 * than two samples (out_cap below the largest sample plus the one held:
 * only a ring_max below two of the largest samples, sampler.h): this
 * sampling time is skipped and counted (no unwinding either: nothing
 * could keep its result). */
static void lose_sample(gr_sampler *s)
{
    __atomic_store_n(&s->lost_full, s->lost_full + 1, __ATOMIC_RELAXED);
}

/* Counts n sampling times of a thinned stretch without a kept sample.
 * An atomic addition: the consumer thins too (gr_sampler_drain). */
static void thinned(gr_sampler *s, uint64_t n)
{
    __atomic_fetch_add(&s->thinned, n, __ATOMIC_RELAXED);
}

/* The own buffer is full while the ring is (nobody drains): keep every
 * other sample of it, counting from the newest (which stays), and double
 * the stride, so that its samples stay evenly spread, `stride` sampling
 * times apart, from the oldest it holds to the newest.  Returns -1 when it
 * holds fewer than two samples (nothing to thin).  Sampler thread only. */
static int thin(gr_sampler *s)
{
    size_t m = 0, at = 0;
    while (s->out_len - at >= 4) {
        uint32_t n;
        memcpy(&n, s->out + at, 4);
        at += 4 + (size_t)n;
        m++;
    }
    if (m < 2)
        return -1;
    size_t to = 0, i = 0;
    at = 0;
    while (s->out_len - at >= 4) {
        uint32_t n;
        memcpy(&n, s->out + at, 4);
        size_t len = 4 + (size_t)n;
        if ((m - 1 - i) % 2 == 0) {
            memmove(s->out + to, s->out + at, len);
            to += len;
        }
        at += len;
        i++;
    }
    s->out_len = to;
    uint64_t dropped = m / 2;
    __atomic_fetch_sub(&s->nsamples, dropped, __ATOMIC_RELAXED);
    thinned(s, dropped);
    __atomic_store_n(&s->stride, s->stride * 2, __ATOMIC_RELAXED);
    if (s->stride > s->stride_peak)
        __atomic_store_n(&s->stride_peak, s->stride, __ATOMIC_RELAXED);
    return 0;
}

static void take_sample(gr_sampler *s)
{
    gr_registry *reg = s->reg;
    uint64_t idx_begin, hold, torn = 0, under = 0;
    uint32_t n;
    unwind_totals tot = {0, 0, 0};

    uint64_t tick = s->ticks + 1;
    __atomic_store_n(&s->ticks, tick, __ATOMIC_RELAXED);
    /* What a doze after this sampling time compares with (sampler_main):
     * the drains so far, read before hand_over finds the ring full, and
     * the records so far. */
    s->doze.drains_seen = atomic_load_explicit(&s->doze.drains, memory_order_seq_cst);
    s->doze.events_seen = atomic_load_explicit(s->events, memory_order_relaxed);
    /* Room for the largest sample, or the own buffer is thinned (sampler.h
     * gr_sampler_drain): the samples waiting for the consumer stay within
     * s->out, spread over the whole stretch in which the program records
     * nothing, however long. */
    if (s->out_len)
        hand_over(s); /* the consumer may have made room since */
    if (!s->out_len && s->stride > 1) /* the ring took all of it: drained, stretch over */
        __atomic_store_n(&s->stride, 1, __ATOMIC_RELAXED);
    for (;;) {
        if (s->stride > 1 && tick - s->last_kept < s->stride) {
            thinned(s, 1); /* between two kept sampling times: not taken */
            return;
        }
        if (s->out_cap - s->out_len >= s->largest)
            break;
        if (thin(s) < 0) {
            lose_sample(s);
            return;
        }
    }
    /* Length prefix now, patched below, and the sampling time's tick (for
     * the consumer's thinning, gr_sampler_drain); the header is put in
     * front of the stacks at the end. */
    unsigned char hdr[10 * GR_VARINT_MAX];
    size_t entry_at = s->out_len;
    memcpy(s->out + entry_at + 4, &tick, 8);
    s->out_len += 4 + 8;
    size_t body_at = s->out_len;
    if (reg->mode == GR_REG_SEQLOCK) {
        idx_begin = atomic_load_explicit(s->events, memory_order_relaxed);
        uint64_t t1 = gr_now_ns();
        n = gr_registry_copy(reg, s->snap, reg->cap, &torn);
        hold = gr_now_ns() - t1;
        unwind_some(s, n, s->keep, &tot);
    } else if (reg->mode == GR_REG_HOLD_LOCK) {
        gr_registry_lock(reg);
        uint64_t t1 = gr_now_ns();
        idx_begin = atomic_load_explicit(s->events, memory_order_relaxed);
        n = gr_registry_copy(reg, s->snap, reg->cap, &torn);
        /* The stall of the seed: every read of foreign memory happens here,
         * with every switch waiting.  Stacks are stored (into the own
         * buffer, which never grows: room was checked above). */
        unwind_some(s, n, UINT32_MAX, &tot);
        under = tot.frames;
        hold = gr_now_ns() - t1;
        gr_registry_unlock(reg);
    } else {
        /* Phase 1: a flat copy of the slots, nothing else. */
        gr_registry_lock(reg);
        uint64_t t1 = gr_now_ns();
        idx_begin = atomic_load_explicit(s->events, memory_order_relaxed);
        n = gr_registry_copy(reg, s->snap, reg->cap, &torn);
        hold = gr_now_ns() - t1;
        gr_registry_unlock(reg);
        /* Phase 2: unwind with the lock released. */
        unwind_some(s, n, s->keep, &tot);
    }
    uint64_t idx_end = atomic_load_explicit(s->events, memory_order_relaxed);

    /* Move the stacks behind the header. */
    unsigned char *h = hdr;
    uint64_t fields[10] = {idx_begin, idx_end, gr_now_ns() - s->t0, hold, n, tot.frames,
                           under, tot.failed, torn, tot.nstacks};
    for (int i = 0; i < 10; i++)
        h = gr_put_varint(h, fields[i]);
    size_t hl = (size_t)(h - hdr), body = s->out_len - body_at;
    if (reserve(s, hl) < 0) { /* cannot happen: room for `largest` was checked */
        s->out_len = entry_at;
        lose_sample(s);
        return;
    }
    if (8 + hl + body > gr_handoff_max_entry(&s->ho)) {
        /* Larger than the ring can ever take (its greatest entry, half of
         * it: only with GREENREPLAY_SAMPLER_RING_MAX, as half of 64 MiB
         * holds the largest sample of every keep): dropped
         * here and counted as such, not as taken, so that the trailer's
         * sample count is what the side channel holds. */
        s->out_len = entry_at;
        __atomic_store_n(&s->lost_large, s->lost_large + 1, __ATOMIC_RELAXED);
        hand_over(s);
        return;
    }
    memmove(s->out + body_at + hl, s->out + body_at, body);
    memcpy(s->out + body_at, hdr, hl);
    s->out_len += hl;
    uint32_t len = (uint32_t)(s->out_len - entry_at - 4); /* tick and sample */
    memcpy(s->out + entry_at, &len, 4);
    /* Atomic: read by _sampler_samples() on another thread, and the
     * consumer's thinning subtracts from it. */
    __atomic_fetch_add(&s->nsamples, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&s->last_kept, tick, __ATOMIC_RELAXED);
    if (s->out_len > s->out_peak)
        __atomic_store_n(&s->out_peak, s->out_len, __ATOMIC_RELAXED);
    hand_over(s);
}

/* Sleep until `next` (CLOCK_MONOTONIC) or until gr_sampler_stop wakes us.
 * Returns 1 when stopping. */
static int sleep_until(gr_sampler *s, const struct timespec *next)
{
    pthread_mutex_lock(&s->doze.wake_lock);
    while (!atomic_load_explicit(&s->stop, memory_order_acquire)) {
        int rc = pthread_cond_timedwait(&s->doze.wake, &s->doze.wake_lock, next);
        if (rc == ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&s->doze.wake_lock);
    return atomic_load_explicit(&s->stop, memory_order_acquire);
}

static void add_ns(struct timespec *t, uint64_t ns)
{
    ns += (uint64_t)t->tv_nsec;
    t->tv_sec += (time_t)(ns / 1000000000u);
    t->tv_nsec = (long)(ns % 1000000000u);
}

/* Longest doze, in ns: a minute (far more than any stride reaches in
 * practice; it only keeps the arithmetic in range). */
#define DOZE_MAX_NS (60ull * 1000000000ull)

/* After a sampling time: how many of the next sampling times the thread
 * may sleep through (0: wake at the next one).  Only while it thins (the
 * stride above 1), its own buffer still holds samples the ring did not
 * take (nobody drained: the ring full), and no record was written since
 * the sampling time (the program idle): then every sampling time before
 * last_kept + stride would only be counted as thinned (take_sample), so
 * the thread sleeps until that one.  Sampler thread only. */
static uint64_t doze_skip(const gr_sampler *s)
{
    if (s->stride <= 1 || !s->out_len ||
        atomic_load_explicit(s->events, memory_order_relaxed) != s->doze.events_seen)
        return 0;
    uint64_t taken = s->last_kept + s->stride; /* the next sampling time taken */
    if (taken <= s->ticks + 1)
        return 0;
    uint64_t skip = taken - s->ticks - 1, most = DOZE_MAX_NS / s->interval_ns;
    return skip < most ? skip : most;
}

/* Sleep through `skip` sampling times, the first at *next: until the
 * sampling time after them, unless a drain (gr_sampler_drain) takes
 * samples meanwhile, or stop.  The sampling times passed (all of them, or
 * those up to now when cut short) are counted as thinned, as take_sample
 * would have, and *next moves past them.  Returns 1 when stopping, else
 * 0; *early receives whether a drain cut it short. */
static int doze(gr_sampler *s, struct timespec *next, uint64_t skip, int *early)
{
    struct timespec until = *next;
    add_ns(&until, skip * s->interval_ns);
    pthread_mutex_lock(&s->doze.wake_lock);
    /* Dozing first, then the drains: a drain either sees `dozing` (and
     * wakes the thread) or has counted itself before this load (seq_cst,
     * both sides), so that no drain goes unseen. */
    atomic_store_explicit(&s->doze.dozing, 1, memory_order_seq_cst);
    int drained = atomic_load_explicit(&s->doze.drains, memory_order_seq_cst) != s->doze.drains_seen;
    while (!drained && !s->doze.wake_req && !atomic_load_explicit(&s->stop, memory_order_acquire)) {
        if (pthread_cond_timedwait(&s->doze.wake, &s->doze.wake_lock, &until) == ETIMEDOUT)
            break;
    }
    *early = drained || s->doze.wake_req;
    s->doze.wake_req = 0;
    atomic_store_explicit(&s->doze.dozing, 0, memory_order_relaxed);
    pthread_mutex_unlock(&s->doze.wake_lock);
    int stopping = atomic_load_explicit(&s->stop, memory_order_acquire);
    uint64_t passed = skip;
    if (*early || stopping) { /* the sampling times up to now */
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        int64_t d = (int64_t)(now.tv_sec - next->tv_sec) * 1000000000 +
                    (now.tv_nsec - next->tv_nsec);
        passed = d < 0 ? 0 : 1 + (uint64_t)d / s->interval_ns;
        passed = passed < skip ? passed : skip;
        if (*early)
            __atomic_store_n(&s->doze.woken, s->doze.woken + 1, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&s->ticks, s->ticks + passed, __ATOMIC_RELAXED);
    __atomic_store_n(&s->doze.dozed, s->doze.dozed + passed, __ATOMIC_RELAXED);
    thinned(s, passed);
    add_ns(next, passed * s->interval_ns);
    return stopping;
}

static void *sampler_main(void *arg)
{
    gr_sampler *s = arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (;;) {
        add_ns(&next, s->interval_ns);
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > next.tv_sec || (now.tv_sec == next.tv_sec && now.tv_nsec > next.tv_nsec)) {
            /* Behind (the last sample took longer than the interval): wait
             * a full interval from now rather than sample back to back, as
             * dd-trace-py's sampler does (sleep_until(now + interval)). */
            next = now;
            add_ns(&next, s->interval_ns);
        }
        uint64_t skip = doze_skip(s);
        int early = 0;
        if (skip) {
            if (doze(s, &next, skip, &early))
                break;
            /* Cut short: sample at the next sampling time from now on. */
            if (early && sleep_until(s, &next))
                break;
        } else if (sleep_until(s, &next)) {
            break;
        }
        __atomic_store_n(&s->doze.wakes, s->doze.wakes + 1, __ATOMIC_RELAXED);
        take_sample(s);
    }
    return NULL;
}

gr_sampler *gr_sampler_start(gr_registry *reg, const _Atomic uint64_t *events,
                             uint64_t interval_ns, uint32_t keep, size_t ring_bytes,
                             size_t ring_max)
{
    if (interval_ns < 100000 || keep > GR_SAMPLER_KEEP_MAX) {
        errno = EINVAL;
        return NULL;
    }
    gr_sampler *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->reg = reg;
    s->events = events;
    s->interval_ns = interval_ns;
    s->keep = keep;
    s->t0 = gr_now_ns();
    s->stride = s->stride_peak = 1;
    pthread_mutex_init(&s->doze.wake_lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->doze.wake, &ca);
    pthread_condattr_destroy(&ca);
    s->snap = calloc(reg->cap, sizeof *s->snap);
    s->codes = calloc((size_t)(keep ? keep : 1) * GR_SAMPLE_DEPTH, sizeof *s->codes);
    s->jobs = calloc(reg->cap, sizeof *s->jobs);
    s->gids = calloc(reg->cap, sizeof *s->gids);
    s->slots = calloc(reg->cap, sizeof *s->slots);
    /* The ring takes 1 MiB or ring_bytes, raised to four of the largest
     * samples, then cut to the cap (ring_max, 64 MiB by default; a cap
     * below four of the largest lets deep samples exceed the ring's
     * greatest entry: lost_large).  The consumer drains it at every switch, every side
     * channel chunk and at a record when a quarter of it is used or a
     * second has passed (recorder.c gr_times_entry), so it rarely holds
     * more than a few.  The own buffer, as large, holds what the ring
     * cannot take while the program records nothing; both are allocated
     * once (pages the samples never reach stay untouched). */
    s->largest = 4 + 8 + 10 * GR_VARINT_MAX + (size_t)keep * (2 + GR_SAMPLE_DEPTH) * GR_VARINT_MAX;
    size_t cap = ring_max ? ring_max : GR_SAMPLER_RING_CAP;
    cap = cap < GR_SAMPLER_RING_MAX_LEAST ? GR_SAMPLER_RING_MAX_LEAST : cap;
    cap = cap > GR_SAMPLER_RING_CAP ? GR_SAMPLER_RING_CAP : cap;
    size_t ring = ring_bytes ? ring_bytes : (1u << 20), least = 4 * s->largest + 64;
    ring = ring < least ? least : ring;
    ring = ring > cap ? cap : ring;
    s->out_cap = ring < s->largest ? s->largest : ring;
    s->out = malloc(s->out_cap);
    if (!s->snap || !s->codes || !s->jobs || !s->gids || !s->slots || !s->out ||
        gr_handoff_init(&s->ho, ring) < 0)
        goto fail;
    int rc = pthread_create(&s->thread, NULL, sampler_main, s);
    if (rc) {
        errno = rc;
        goto fail;
    }
    s->running = 1;
    return s;
fail:
    gr_sampler_free(s);
    return NULL;
}

void gr_sampler_stop(gr_sampler *s)
{
    if (!s || !s->running)
        return;
    pthread_mutex_lock(&s->doze.wake_lock);
    atomic_store_explicit(&s->stop, 1, memory_order_release);
    pthread_cond_signal(&s->doze.wake);
    pthread_mutex_unlock(&s->doze.wake_lock);
    pthread_join(s->thread, NULL);
    s->running = 0;
}

void gr_sampler_free(gr_sampler *s)
{
    if (!s)
        return;
    gr_sampler_stop(s);
    pthread_cond_destroy(&s->doze.wake);
    pthread_mutex_destroy(&s->doze.wake_lock);
    free(s->snap);
    free(s->codes);
    free(s->jobs);
    free(s->gids);
    free(s->slots);
    free(s->out);
    gr_handoff_free(&s->ho);
    free(s);
}

/* One entry (tick and sample, n bytes at p) for the consumer: passed to
 * fn, or, while the sampler thins (stride above 1) and it is less than
 * `stride` sampling times after the last one passed in this drain (*last,
 * *have), dropped and counted as thinned.  Returns 1 when passed. */
static int pass_entry(gr_sampler *s, const unsigned char *p, size_t n, uint64_t stride,
                      uint64_t *last, int *have,
                      void (*fn)(void *ctx, const unsigned char *p, size_t n), void *ctx)
{
    uint64_t tick;
    memcpy(&tick, p, 8);
    if (stride > 1 && *have && tick - *last < stride) {
        __atomic_fetch_sub(&s->nsamples, 1, __ATOMIC_RELAXED);
        thinned(s, 1);
        return 0;
    }
    *last = tick;
    *have = 1;
    fn(ctx, p + 8, n - 8);
    return 1;
}

uint64_t gr_sampler_drain(gr_sampler *s, void (*fn)(void *ctx, const unsigned char *p, size_t n),
                          void *ctx)
{
    uint64_t k = 0, popped = 0, last = 0;
    int have = 0;
    if (!s)
        return 0;
    /* The stride the sampler thins its own buffer to: the ring's samples
     * (the start of the idle stretch, at the full rate) are thinned to it
     * here, so that the stretch is kept evenly, not its start more
     * densely. */
    uint64_t stride = __atomic_load_n(&s->stride, __ATOMIC_RELAXED);
    for (;;) {
        size_t n;
        const unsigned char *p = gr_handoff_peek(&s->ho, &n);
        if (!p)
            break;
        k += (uint64_t)pass_entry(s, p, n, stride, &last, &have, fn, ctx);
        gr_handoff_pop(&s->ho);
        popped++;
    }
    if (popped && s->running) {
        /* Room in the ring again: a dozing sampler thread wakes (seq_cst:
         * see doze). */
        atomic_fetch_add_explicit(&s->doze.drains, 1, memory_order_seq_cst);
        if (atomic_load_explicit(&s->doze.dozing, memory_order_seq_cst)) {
            pthread_mutex_lock(&s->doze.wake_lock);
            s->doze.wake_req = 1;
            pthread_cond_signal(&s->doze.wake);
            pthread_mutex_unlock(&s->doze.wake_lock);
        }
    }
    if (s->running)
        return k;
    /* Joined: what the thread still held, in order after the ring's. */
    size_t at = 0;
    while (s->out_len - at >= 4) {
        uint32_t n;
        memcpy(&n, s->out + at, 4);
        k += (uint64_t)pass_entry(s, s->out + at + 4, n, stride, &last, &have, fn, ctx);
        at += 4 + (size_t)n;
    }
    s->out_len = 0;
    return k;
}
