/* test_sampler.c - the sampler thread's buffering (tracer/sampler.c) while
 * its consumer does not drain, pure C: the unwinder is replaced by a stub
 * that "reads" three frames per stack and counts its calls, so the test
 * needs no interpreter.  Checked in every registry mode:
 *  - the ring and the own buffer get the sizes asked (raised to four of
 *    the largest samples; 1 MiB each by default);
 *  - with nobody draining, the own buffer never holds more than its
 *    capacity: once full it is thinned (every other sample kept, then a
 *    sample every 2, 4, 8... sampling times), so the samples kept span the
 *    whole idle stretch, its start and its end; every sampling time is
 *    accounted for (kept, thinned, lost), and the stride returns to 1 once
 *    a consumer has taken every sample;
 *  - every sample kept reaches the consumer, once, whole and in order
 *    (the drain after stop passes exactly nsamples);
 *  - a consumer that drains keeps the sampler from losing any;
 *  - a sample larger than the ring takes (ring_max cuts it) is dropped
 *    and counted as such (lost_large), not as taken: the consumer gets
 *    exactly the samples counted in nsamples;
 *  - samples are lost (lost_full, lost_large) only with a ring_max below
 *    two of the largest samples: without one, for every keep, the own
 *    buffer holds two of them and the ring's greatest entry one; with a
 *    ring_max of 1 KiB, sampling times are skipped and counted lost_full.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "format.h"
#include "sampler.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the unwinder's stub (unwind.h) ------------------------------- */

static _Atomic uint64_t unwinds; /* gr_unwind_many calls (one per sample taken) */
static _Atomic int deep_every; /* when > 0: every deep_every-th call reads
                                  GR_SAMPLE_DEPTH frames, not 3 */

void gr_unwind_init(void) {}

uint64_t gr_unwind_many(gr_unwind_job *jobs, size_t n, gr_unwind_stats *st)
{
    uint64_t frames = 0, call = atomic_fetch_add(&unwinds, 1);
    int every = atomic_load(&deep_every);
    int depth = every > 0 && call % (uint64_t)every == 0 ? GR_SAMPLE_DEPTH : 3;
    for (size_t i = 0; i < n; i++) {
        jobs[i].depth = depth;
        if (jobs[i].codes)
            for (int d = 0; d < depth; d++)
                jobs[i].codes[d] = jobs[i].frame + (uintptr_t)d;
        frames += (uint64_t)depth;
    }
    st->reads += n;
    return frames;
}

int gr_safe_read(void *dst, uintptr_t addr, size_t n)
{
    (void)dst, (void)addr, (void)n;
    return -1;
}

/* ---- helpers ------------------------------------------------------ */

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* A registry of greenlets 1..4: 1 running, 2..4 suspended in frames
 * 0x2000, 0x3000, 0x4000. */
static gr_registry *four_greenlets(enum gr_reg_mode mode)
{
    gr_registry *r = gr_registry_new(mode, 8);
    assert_non_null(r);
    for (uint32_t g = 1; g <= 4; g++)
        gr_registry_add(r, g, g == 1 ? 0 : 1, 0);
    uint64_t wait;
    for (uint32_t g = 2; g <= 4; g++) {
        gr_registry_switch(r, 1, 0, 0, g, 1, &wait);
        gr_registry_switch(r, g, (uintptr_t)g << 12, 0, 1, 0, &wait);
    }
    return r;
}

typedef struct {
    uint64_t n, last_t, first_t;
    uint64_t cut, last_before_cut; /* the newest t_ns below cut (if set) */
    int bad;
    /* want_gap > 0: samples passed less than want_gap sampling times after
     * the one before (since have_prev was cleared) are counted in close */
    uint64_t want_gap, prev_tick, close;
    int have_prev;
} drained;

/* The tick of the sampling time of the sample p that gr_sampler_drain
 * passes: the 8 bytes in front of it (sampler.h, `out`; internal). */
static uint64_t tick_of(const unsigned char *p)
{
    uint64_t t;
    memcpy(&t, p - 8, 8);
    return t;
}

/* A sample (sampler.h): ten header varints, then nstacks stacks of gid,
 * depth and depth code addresses; checks its shape and its order. */
static void take(void *ctx, const unsigned char *p, size_t n)
{
    drained *d = ctx;
    const unsigned char *end = p + n;
    uint64_t h[10], tick = tick_of(p);
    if (d->have_prev && tick <= d->prev_tick) /* ticks: in order */
        d->bad++;
    if (d->want_gap && d->have_prev && tick - d->prev_tick < d->want_gap)
        d->close++;
    d->prev_tick = tick;
    d->have_prev = 1;
    for (int i = 0; i < 10; i++)
        if (gr_get_varint(&p, end, &h[i]) < 0)
            d->bad++;
    if (d->n && h[2] <= d->last_t) /* t_ns: taken in order */
        d->bad++;
    if (!d->n)
        d->first_t = h[2];
    d->last_t = h[2];
    if (h[2] < d->cut)
        d->last_before_cut = h[2];
    if (h[9] != 1 || h[4] != 4) /* keep=1 stack; 4 slots copied */
        d->bad++;
    for (uint64_t s = 0; s < h[9]; s++) {
        uint64_t gid, depth, c;
        if (gr_get_varint(&p, end, &gid) < 0 || gr_get_varint(&p, end, &depth) < 0 || gid < 2 ||
            gid > 4 || depth != 3) {
            d->bad++;
            return;
        }
        for (uint64_t k = 0; k < depth; k++)
            if (gr_get_varint(&p, end, &c) < 0 || c != (gid << 12) + k)
                d->bad++;
    }
    if (p != end)
        d->bad++;
    d->n++;
}

static const _Atomic uint64_t no_events;

/* ---- tests -------------------------------------------------------- */

static void test_sizes(void **state)
{
    (void)state;
    gr_registry *r = four_greenlets(GR_REG_TWO_PHASE);
    /* keep=1: the largest sample is 4 + 10 + 258 varints of 10 bytes. */
    size_t largest = 4 + 8 + 10 * GR_VARINT_MAX + (2 + GR_SAMPLE_DEPTH) * GR_VARINT_MAX;
    gr_sampler *s = gr_sampler_start(r, &no_events, 50u * 1000 * 1000, 1, 0, 0);
    assert_non_null(s);
    assert_int_equal(s->ho.cap, 1u << 20);
    assert_int_equal(s->out_cap, 1u << 20);
    assert_int_equal(s->largest, largest);
    gr_sampler_free(s);
    s = gr_sampler_start(r, &no_events, 50u * 1000 * 1000, 1, 1, 0); /* raised */
    assert_non_null(s);
    assert_true(s->ho.cap >= 4 * largest && s->ho.cap < 4 * largest + 128);
    assert_int_equal(s->out_cap, s->ho.cap);
    gr_sampler_free(s);
    s = gr_sampler_start(r, &no_events, 50u * 1000 * 1000, 1, 100000, 0);
    assert_non_null(s);
    assert_int_equal(s->ho.cap, 100000);
    assert_int_equal(s->out_cap, 100000);
    gr_sampler_free(s);
    /* ring_max cuts the ring below four of the largest samples; the own
     * buffer still holds one; a ring_max out of bounds is brought in. */
    s = gr_sampler_start(r, &no_events, 50u * 1000 * 1000, 1, 100000, 2048);
    assert_non_null(s);
    assert_int_equal(s->ho.cap, 2048);
    assert_int_equal(s->out_cap, largest);
    gr_sampler_free(s);
    s = gr_sampler_start(r, &no_events, 50u * 1000 * 1000, 1, 0, 1);
    assert_non_null(s);
    assert_int_equal(s->ho.cap, GR_SAMPLER_RING_MAX_LEAST);
    gr_sampler_free(s);
    s = gr_sampler_start(r, &no_events, 50u * 1000 * 1000, 1, (size_t)1 << 30, (size_t)1 << 30);
    assert_non_null(s);
    assert_int_equal(s->ho.cap, GR_SAMPLER_RING_CAP);
    gr_sampler_free(s);
    /* keep: at most GR_SAMPLER_KEEP_MAX, whose buffers stay within the
     * documented bound and whose largest sample fits the ring's greatest
     * entry (half of it); one more is refused, nothing allocated. */
    s = gr_sampler_start(r, &no_events, 50u * 1000 * 1000, GR_SAMPLER_KEEP_MAX, 0, 0);
    assert_non_null(s);
    assert_int_equal(s->ho.cap, GR_SAMPLER_RING_CAP);
    assert_int_equal(s->out_cap, GR_SAMPLER_RING_CAP);
    assert_true(s->largest <= GR_SAMPLER_RING_CAP / 2);
    gr_sampler_free(s);
    errno = 0;
    assert_null(gr_sampler_start(r, &no_events, 50u * 1000 * 1000, GR_SAMPLER_KEEP_MAX + 1, 0, 0));
    assert_int_equal(errno, EINVAL);
    errno = 0;
    assert_null(gr_sampler_start(r, &no_events, 50u * 1000 * 1000, UINT32_MAX, 0, 0));
    assert_int_equal(errno, EINVAL);
    gr_registry_free(r);
}

static uint64_t ld(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

/* Waits (at most 20 s: a loaded machine) until cond(s) holds; 0 or -1. */
static int wait_for(gr_sampler *s, int (*cond)(gr_sampler *, uint64_t), uint64_t arg)
{
    for (int i = 0; i < 2000; i++) {
        if (cond(s, arg))
            return 0;
        sleep_ms(10);
    }
    return -1;
}
static int stride_at_least(gr_sampler *s, uint64_t k) { return ld(&s->stride) >= k; }
static int ticks_at_least(gr_sampler *s, uint64_t k) { return ld(&s->ticks) >= k; }
static int kept_after(gr_sampler *s, uint64_t tick) { return ld(&s->last_kept) > tick; }

/* Nobody drains, a sample every 100 us, into a ring and a buffer of about
 * 11 KB each (some 580 samples of 38 bytes together).  Once both are full
 * the own buffer is thinned (stride 2, 4, 8...), never more memory, and
 * the samples kept span the idle stretch: the first ones (before it was
 * ever thinned, t < t_full) and one taken after the stride reached 8 (t >=
 * t_late, the end of the stretch).  Meanwhile the thread sleeps through
 * the sampling times it does not take: at a stride of 8 or more, at most
 * one wake in 4 sampling times (counted, not timed).  Then a consumer
 * drains: its first drain passes the ring's samples thinned to the stride
 * (none closer than the stride reached: the start of the stretch is not
 * kept more densely than the rest), the first of them kept; the stride
 * returns to 1.  Every sampling time is accounted for: kept, thinned, or
 * lost (none here). */
static void idle_in(enum gr_reg_mode mode)
{
    gr_registry *r = four_greenlets(mode);
    atomic_store(&unwinds, 0);
    gr_sampler *s = gr_sampler_start(r, &no_events, 100u * 1000, 1, 1, 0);
    assert_non_null(s);
    assert_int_equal(wait_for(s, stride_at_least, 2), 0);
    uint64_t t_full = gr_now_ns() - s->t0;
    assert_int_equal(wait_for(s, stride_at_least, 8), 0);
    uint64_t t_late = gr_now_ns() - s->t0, tick = ld(&s->ticks);
    assert_int_equal(wait_for(s, kept_after, tick), 0); /* a sample after t_late */
    assert_true(ld(&s->thinned) > 0);
    assert_true(ld(&s->out_peak) <= s->out_cap);
    /* Dozing: 64 sampling times more at a stride of 8 or more, the thread
     * woke for at most a quarter of them (one per stride, and the end of
     * a doze counted late). */
    uint64_t t0 = ld(&s->ticks), w0 = ld(&s->doze.wakes);
    assert_int_equal(wait_for(s, ticks_at_least, t0 + 64), 0);
    uint64_t t1 = ld(&s->ticks), w1 = ld(&s->doze.wakes);
    if ((w1 - w0) * 4 > t1 - t0 + 8)
        fail_msg("%llu wakes for %llu sampling times at stride %llu", (unsigned long long)(w1 - w0),
                 (unsigned long long)(t1 - t0), (unsigned long long)ld(&s->stride));
    assert_true(ld(&s->doze.dozed) > 0);
    assert_true(ld(&s->doze.wakes) < ld(&s->ticks));
    /* A consumer now: it takes everything, the stretch is over.  The
     * samples of the stretch are those before d.cut.  The first drain
     * passes the ring's samples at the stride reached at least (it can
     * only grow before the drain reads it). */
    drained d = {0};
    d.cut = gr_now_ns() - s->t0;
    d.want_gap = ld(&s->stride);
    assert_true(d.want_gap >= 8);
    assert_true(gr_sampler_drain(s, take, &d) > 0);
    assert_int_equal(d.close, 0);
    d.want_gap = 0;
    for (int i = 0; i < 2000 && ld(&s->stride) != 1; i++) {
        gr_sampler_drain(s, take, &d);
        sleep_ms(2);
    }
    assert_int_equal(ld(&s->stride), 1);
    gr_sampler_stop(s);
    gr_sampler_drain(s, take, &d);
    assert_true(d.first_t < t_full);          /* the start of the stretch is kept */
    assert_true(d.last_before_cut >= t_late); /* and its end */
    assert_int_equal(d.n, s->nsamples);
    assert_int_equal(d.bad, 0);
    assert_int_equal(gr_sampler_drain(s, take, &d), 0); /* nothing twice */
    assert_int_equal(s->lost_full, 0);
    assert_int_equal(s->lost_large, 0);
    assert_true(s->stride_peak >= 8);
    assert_true(s->out_peak <= s->out_cap);
    /* Each sampling time: kept, or thinned (skipped, or dropped when the
     * buffer was thinned: those were unwound). */
    assert_int_equal(s->ticks, s->nsamples + s->thinned + s->lost_full + s->lost_large);
    assert_true(atomic_load(&unwinds) >= s->nsamples);
    assert_true(atomic_load(&unwinds) < s->ticks);
    gr_sampler_free(s);
    gr_registry_free(r);
}

static void test_idle_two_phase(void **state) { (void)state; idle_in(GR_REG_TWO_PHASE); }
static void test_idle_hold_lock(void **state) { (void)state; idle_in(GR_REG_HOLD_LOCK); }
static void test_idle_seqlock(void **state) { (void)state; idle_in(GR_REG_SEQLOCK); }

/* A consumer draining every 2 ms: the sampler loses nothing (a sample
 * every 1 ms into a ring of 11 KB: some 240 samples, 240 ms of slack). */
static void test_drained_loses_none(void **state)
{
    (void)state;
    gr_registry *r = four_greenlets(GR_REG_TWO_PHASE);
    gr_sampler *s = gr_sampler_start(r, &no_events, 1000u * 1000, 1, 1, 0);
    assert_non_null(s);
    drained d = {0};
    for (int i = 0; i < 100; i++) {
        gr_sampler_drain(s, take, &d);
        sleep_ms(2);
    }
    gr_sampler_stop(s);
    gr_sampler_drain(s, take, &d);
    assert_true(s->nsamples > 0);
    assert_int_equal(d.n, s->nsamples);
    assert_int_equal(d.bad, 0);
    assert_int_equal(s->lost_full, 0);
    gr_sampler_free(s);
    gr_registry_free(r);
}

/* A ring capped at 1 KiB (greatest entry 508 bytes) and every third
 * sample one stack of GR_SAMPLE_DEPTH frames (about 530 bytes): those are
 * dropped and counted in lost_large, not in nsamples; the consumer gets
 * exactly nsamples samples, all of the 3-frame stacks, so the trailer's
 * count (nsamples) agrees with the side channel's. */
static void test_oversized_dropped(void **state)
{
    (void)state;
    gr_registry *r = four_greenlets(GR_REG_TWO_PHASE);
    atomic_store(&unwinds, 0);
    atomic_store(&deep_every, 3);
    gr_sampler *s = gr_sampler_start(r, &no_events, 1000u * 1000, 1, 0, 1024);
    assert_non_null(s);
    assert_int_equal(s->ho.cap, 1024);
    drained d = {0};
    for (int i = 0; i < 2000 && (__atomic_load_n(&s->lost_large, __ATOMIC_RELAXED) < 3 ||
                                 __atomic_load_n(&s->nsamples, __ATOMIC_RELAXED) < 6);
         i++) {
        gr_sampler_drain(s, take, &d);
        sleep_ms(2);
    }
    gr_sampler_stop(s);
    gr_sampler_drain(s, take, &d);
    atomic_store(&deep_every, 0);
    assert_true(s->lost_large >= 3);
    assert_true(s->nsamples >= 6);
    assert_int_equal(d.n, s->nsamples);
    assert_int_equal(d.bad, 0);
    /* Every sampling time unwound is either kept or dropped as too large;
     * one lost for a full ring and own buffer (lost_full: only when this
     * thread, descheduled, did not drain for some 40 ms, the ring's 1 KiB
     * of samples) unwinds nothing; none is thinned (the own buffer holds
     * one largest sample: nothing to thin); each is accounted for. */
    assert_int_equal(atomic_load(&unwinds), s->nsamples + s->lost_large);
    assert_int_equal(s->thinned, 0);
    assert_int_equal(s->ticks, s->nsamples + s->lost_large + s->lost_full);
    gr_sampler_free(s);
    gr_registry_free(r);
}

/* When samples can be lost: only a ring_max below two of the largest
 * samples.  Without one (any `keep` up to GR_SAMPLER_KEEP_MAX, any ring
 * size asked), the own buffer holds two of the largest samples, so it can
 * always be thinned (lost_full never counts), and the largest sample fits
 * the ring's greatest entry (lost_large never counts): at KEEP_MAX the
 * largest sample is 20.2 MiB, the ring and the buffer 64 MiB each. */
static void test_loss_needs_ring_max(void **state)
{
    (void)state;
    gr_registry *r = four_greenlets(GR_REG_TWO_PHASE);
    static const uint32_t keeps[] = {0, 1, 64, 101, 102, 3250, 6502, 6503, GR_SAMPLER_KEEP_MAX};
    static const size_t rings[] = {0, GR_SAMPLER_RING_MAX_LEAST, (size_t)1 << 20, GR_SAMPLER_RING_CAP};
    for (size_t i = 0; i < sizeof keeps / sizeof *keeps; i++)
        for (size_t j = 0; j < sizeof rings / sizeof *rings; j++) {
            gr_sampler *s = gr_sampler_start(r, &no_events, 50u * 1000 * 1000, keeps[i], rings[j], 0);
            assert_non_null(s);
            if (s->out_cap < 2 * s->largest || s->largest > gr_handoff_max_entry(&s->ho))
                fail_msg("keep %u, ring %zu: own buffer %zu, ring's greatest entry %zu, largest sample %zu",
                         keeps[i], rings[j], s->out_cap, gr_handoff_max_entry(&s->ho), s->largest);
            gr_sampler_free(s);
        }
    gr_registry_free(r);
}

/* The other way: a ring_max of 1 KiB with keep=1 leaves an own buffer of
 * one largest sample (2,684 bytes); nobody drains.  Once the ring is full
 * the buffer holds one 3-frame sample, has less room than the largest and
 * nothing to thin: every later sampling time is skipped and counted in
 * lost_full (not unwound), and each is accounted for. */
static void test_lost_full_small_ring_max(void **state)
{
    (void)state;
    gr_registry *r = four_greenlets(GR_REG_TWO_PHASE);
    atomic_store(&unwinds, 0);
    gr_sampler *s = gr_sampler_start(r, &no_events, 200u * 1000, 1, 0, GR_SAMPLER_RING_MAX_LEAST);
    assert_non_null(s);
    assert_int_equal(s->out_cap, s->largest);
    for (int i = 0; i < 2000 && ld(&s->lost_full) < 5; i++)
        sleep_ms(10);
    gr_sampler_stop(s);
    assert_true(s->lost_full >= 5);
    assert_int_equal(s->lost_large, 0);
    assert_int_equal(s->thinned, 0);
    assert_int_equal(s->ticks, s->nsamples + s->thinned + s->lost_full + s->lost_large);
    assert_int_equal(atomic_load(&unwinds), s->nsamples); /* a lost sampling time unwinds nothing */
    drained d = {0};
    gr_sampler_drain(s, take, &d);
    assert_int_equal(d.n, s->nsamples);
    assert_int_equal(d.bad, 0);
    gr_sampler_free(s);
    gr_registry_free(r);
}

static void count_only(void *ctx, const unsigned char *p, size_t n)
{
    (void)p, (void)n;
    (*(uint64_t *)ctx)++;
}

/* A drain cuts a doze short: with nobody draining and every sample deep
 * (some 540 bytes, about 19 to a 11 KB ring), a sample every 2 ms reaches
 * a stride of 64 within about a second, and the thread then dozes up to
 * 126 ms at a time; a drain while it dozes wakes it (woken), and it
 * samples again at the full rate once its buffer is handed over (the
 * stride back to 1).  Not timed: a drain that comes just after a doze
 * ended (the test thread descheduled for most of 100 ms) wakes nothing,
 * and the test waits for the next doze, up to 5 times. */
static void test_doze_cut_by_drain(void **state)
{
    (void)state;
    gr_registry *r = four_greenlets(GR_REG_TWO_PHASE);
    atomic_store(&deep_every, 1);
    gr_sampler *s = gr_sampler_start(r, &no_events, 2000u * 1000, 1, 1, 0);
    assert_non_null(s);
    uint64_t passed = 0;
    int cut = 0;
    for (int attempt = 0; attempt < 5 && !cut; attempt++) {
        assert_int_equal(wait_for(s, stride_at_least, 64), 0);
        for (int i = 0; i < 20000 && !atomic_load(&s->doze.dozing); i++)
            sleep_ms(1);
        uint64_t w0 = ld(&s->doze.woken);
        assert_true(gr_sampler_drain(s, count_only, &passed) > 0);
        uint64_t t0 = ld(&s->ticks);
        for (int i = 0; i < 2000 && ld(&s->doze.woken) == w0 && ld(&s->ticks) < t0 + 128; i++)
            sleep_ms(1);
        cut = ld(&s->doze.woken) > w0;
        for (int i = 0; i < 2000 && ld(&s->stride) != 1; i++) { /* the stretch is over */
            gr_sampler_drain(s, count_only, &passed);
            sleep_ms(2);
        }
        assert_int_equal(ld(&s->stride), 1);
    }
    gr_sampler_stop(s);
    gr_sampler_drain(s, count_only, &passed);
    atomic_store(&deep_every, 0);
    assert_true(cut);
    assert_int_equal(passed, s->nsamples);
    assert_int_equal(s->ticks, s->nsamples + s->thinned + s->lost_full + s->lost_large);
    gr_sampler_free(s);
    gr_registry_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_idle_two_phase),
        cmocka_unit_test(test_idle_hold_lock),
        cmocka_unit_test(test_idle_seqlock),
        cmocka_unit_test(test_drained_loses_none),
        cmocka_unit_test(test_doze_cut_by_drain),
        cmocka_unit_test(test_oversized_dropped),
        cmocka_unit_test(test_loss_needs_ring_max),
        cmocka_unit_test(test_lost_full_small_ring_max),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
