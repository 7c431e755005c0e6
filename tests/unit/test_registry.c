/* test_registry.c - races on the sampler's greenlet registry
 * (tracer/registry.c), pure C: one writer thread plays the switch callback
 * (gr_registry_add, gr_registry_switch), one reader thread plays the
 * sampler (gr_registry_copy, holding the lock in lock modes, without it in
 * seqlock mode), in each mode; every copy is checked against invariants
 * that a torn copy would break.  Built into `make unit`, and run under
 * ThreadSanitizer (`make tsan`) and helgrind (`make helgrind`).
 *
 * The test names start with the mode, so that an argument selects them:
 * `test_registry lock` (the lock modes), `test_registry seqlock`.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "registry.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* helgrind understands pthreads, not C11 atomics.  Excluded from its
 * checks: the harness's own progress flags, and in seqlock mode the
 * registry's slots and `high`, which the seqlock reads without a lock on
 * purpose (every field an atomic, a torn copy retried; ThreadSanitizer,
 * which knows atomics, checks those).  Everything else, the lock modes
 * entirely, stays checked.  A no-op outside valgrind, and when its header
 * is missing. */
#if defined(__has_include)
#if __has_include(<valgrind/helgrind.h>)
#include <valgrind/helgrind.h>
#endif
#endif
#ifndef VALGRIND_HG_DISABLE_CHECKING
#define VALGRIND_HG_DISABLE_CHECKING(start, len) ((void)(start), (void)(len))
#endif

/* Greenlets 1..NG.  The writer switches at least SWITCHES times and until
 * the reader has made MIN_COPIES copies, so that the two overlap. */
#define NG 4
#define SWITCHES 100000
#define MIN_COPIES 3000

/* Fixed per greenlet: its name string id and its first parent. */
static uint32_t name_of(uint32_t gid) { return 1000 + gid; }
static uint32_t parent0_of(uint32_t gid) { return gid > 1 ? 1 : 0; }

/* Frame address of a greenlet suspended at step k: the gid in the high
 * half, the step in the low half, never 0. */
static uintptr_t frame_of(uint32_t gid, uint32_t k)
{
    return ((uintptr_t)gid << 32) | k;
}

typedef struct race {
    gr_registry *r;
    _Atomic int done;          /* writer finished */
    _Atomic uint64_t copies;   /* reader's progress */
    /* writer results */
    uint64_t switches, contended_returned, waited_ns, dead, adds;
    int bad_wait;              /* wait_ns != 0 without contention */
    /* reader results */
    uint64_t entries, torn, bad, bad_order;
    char first_bad[200];
} race;

/* A copy's entry is consistent: its fields come from one state of the
 * slot.  The writer keeps these relations in every state it writes:
 *   NEW       frame 0, parent = parent0_of(gid)
 *   RUNNING   frame 0, parent = the step at which it was switched in
 *   SUSPENDED frame = frame_of(gid, k) with k >= parent (suspended after
 *             it was switched in), never 0
 * and name = name_of(gid) always. */
static int consistent(const gr_reg_entry *e, char *why, size_t n)
{
    if (e->name != name_of(e->gid)) {
        if (why)
            snprintf(why, n, "g%u: name %u", e->gid, e->name);
        return 0;
    }
    switch (e->state) {
    case GR_REG_NEW:
        if (e->frame == 0 && e->parent == parent0_of(e->gid))
            return 1;
        break;
    case GR_REG_RUNNING:
        if (e->frame == 0)
            return 1;
        break;
    case GR_REG_SUSPENDED:
        if (e->frame >> 32 == e->gid && (uint32_t)e->frame >= e->parent && (uint32_t)e->frame)
            return 1;
        break;
    default: /* EMPTY and DEAD are never copied; anything else is garbage */
        break;
    }
    if (why)
        snprintf(why, n, "g%u: state %u parent %u frame %#lx", e->gid, e->state, e->parent,
                 (unsigned long)e->frame);
    return 0;
}

static void *writer(void *arg)
{
    race *x = arg;
    gr_registry *r = x->r;
    uint32_t cur = 1;
    int alive[NG + 1];
    for (uint32_t g = 1; g <= NG; g++)
        alive[g] = 1;
    uint64_t rng = 0x9E3779B97F4A7C15u;
    for (uint32_t k = 1;
         k <= SWITCHES || atomic_load_explicit(&x->copies, memory_order_relaxed) < MIN_COPIES;
         k++) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        uint32_t target = 1 + (uint32_t)(rng % NG);
        if (target == cur)
            target = cur % NG + 1;
        /* now and then the origin dies (never the main greenlet 1) and is
         * born again later with the same gid */
        int die = cur != 1 && rng % 97 == 0;
        if (!alive[target]) {
            gr_registry_add(r, target, parent0_of(target), name_of(target));
            alive[target] = 1;
            x->adds++;
        }
        uint64_t wait = 12345;
        int c = gr_registry_switch(r, cur, frame_of(cur, k), die, target, k, &wait);
        x->switches++;
        x->contended_returned += (uint64_t)c;
        x->waited_ns += wait;
        if (!c && wait != 0)
            x->bad_wait = 1;
        if (die) {
            alive[cur] = 0;
            x->dead++;
        }
        cur = target;
    }
    atomic_store_explicit(&x->done, 1, memory_order_release);
    return NULL;
}

/* Spin about ns nanoseconds (a sampler unwinding under the lock). */
static void busy(uint64_t ns)
{
    uint64_t t0 = gr_now_ns();
    while (gr_now_ns() - t0 < ns)
        ;
}

static void *reader(void *arg)
{
    race *x = arg;
    gr_registry *r = x->r;
    gr_reg_entry out[NG + 8];
    uint32_t last_high = 0;
    uint64_t copies = 0;
    while (!atomic_load_explicit(&x->done, memory_order_acquire)) {
        uint64_t torn = 0;
        uint32_t n;
        if (r->mode == GR_REG_SEQLOCK) {
            n = gr_registry_copy(r, out, NG + 8, &torn);
        } else {
            gr_registry_lock(r);
            n = gr_registry_copy(r, out, NG + 8, &torn);
            if (r->mode == GR_REG_HOLD_LOCK)
                busy(20000);
            gr_registry_unlock(r);
        }
        atomic_store_explicit(&x->copies, ++copies, memory_order_relaxed);
        x->entries += n;
        x->torn += torn;
        uint32_t high = atomic_load_explicit(&r->high, memory_order_acquire);
        if (high < last_high)
            x->bad_order++;
        last_high = high;
        /* A slot still torn after the retries is left out, so no entry
         * of a copy may be inconsistent. */
        uint64_t bad = 0;
        char why[120] = "";
        for (uint32_t i = 0; i < n; i++) {
            if (out[i].gid == 0 || out[i].gid > NG || (i && out[i].gid <= out[i - 1].gid))
                x->bad_order++;
            else if (!consistent(&out[i], bad ? NULL : why, bad ? 0 : sizeof why))
                bad++;
        }
        if (bad > 0) {
            x->bad += bad;
            if (!x->first_bad[0])
                snprintf(x->first_bad, sizeof x->first_bad, "copy %lu (torn %lu): %s",
                         (unsigned long)copies, (unsigned long)torn, why);
        }
    }
    return NULL;
}

static void run_race(enum gr_reg_mode mode)
{
    race x;
    memset(&x, 0, sizeof x);
    x.r = gr_registry_new(mode, NG + 1);
    assert_non_null(x.r);
    VALGRIND_HG_DISABLE_CHECKING(&x.done, sizeof x.done);
    VALGRIND_HG_DISABLE_CHECKING(&x.copies, sizeof x.copies);
    if (mode == GR_REG_SEQLOCK) {
        VALGRIND_HG_DISABLE_CHECKING(x.r->slots, x.r->cap * sizeof *x.r->slots);
        VALGRIND_HG_DISABLE_CHECKING(&x.r->high, sizeof x.r->high);
    }
    /* Every greenlet exists before the race; gr_registry_add's own
     * contention is not returned, so the counters below add up exactly. */
    for (uint32_t g = 1; g <= NG; g++)
        gr_registry_add(x.r, g, parent0_of(g), name_of(g));
    assert_int_equal(atomic_load(&x.r->high), NG);
    pthread_t w, rd;
    assert_int_equal(pthread_create(&rd, NULL, reader, &x), 0);
    assert_int_equal(pthread_create(&w, NULL, writer, &x), 0);
    assert_int_equal(pthread_join(w, NULL), 0);
    assert_int_equal(pthread_join(rd, NULL), 0);

    if (x.first_bad[0] || x.bad || x.bad_order)
        fail_msg("%s: %lu inconsistent entries beyond the given-up slots, %lu out of order; "
                 "first: %s",
                 mode == GR_REG_SEQLOCK ? "seqlock" : "lock mode", (unsigned long)x.bad,
                 (unsigned long)x.bad_order, x.first_bad[0] ? x.first_bad : "-");
    assert_true(atomic_load(&x.copies) >= MIN_COPIES);
    assert_true(x.entries > 0);
    /* writer-side counters add up (read after join: no race); the
     * contention of gr_registry_add (greenlets born again) is counted but
     * not returned */
    assert_true(x.switches >= SWITCHES);
    assert_int_equal(x.r->updates, x.switches);
    assert_true(x.r->contended >= x.contended_returned);
    assert_true(x.r->contended <= x.contended_returned + x.adds);
    assert_false(x.bad_wait);
    assert_int_equal(x.r->overflow, 0);
    if (mode == GR_REG_SEQLOCK) {
        assert_int_equal(x.r->contended, 0);
        assert_int_equal(x.waited_ns, 0);
    } else {
        assert_int_equal(x.torn, 0);
    }
    print_message("      %lu switches (%lu contended, waited %lu ns), %lu copies of %lu entries, "
                  "%lu torn retries, %lu deaths\n",
                  (unsigned long)x.switches, (unsigned long)x.contended_returned,
                  (unsigned long)x.waited_ns, (unsigned long)atomic_load(&x.copies),
                  (unsigned long)x.entries, (unsigned long)x.torn, (unsigned long)x.dead);
    gr_registry_free(x.r);
}

static void lock_two_phase_race(void **state) { (void)state; run_race(GR_REG_TWO_PHASE); }
static void lock_hold_lock_race(void **state) { (void)state; run_race(GR_REG_HOLD_LOCK); }
static void seqlock_race(void **state) { (void)state; run_race(GR_REG_SEQLOCK); }

/* ---- deterministic contention: the reader holds the lock first ------ */

typedef struct hold {
    gr_registry *r;
    _Atomic int held, release;
} hold;

static void *holder(void *arg)
{
    hold *h = arg;
    gr_registry_lock(h->r);
    atomic_store(&h->held, 1);
    while (!atomic_load(&h->release))
        ;
    struct timespec ts = {0, 2000000}; /* the writer is blocked by now */
    nanosleep(&ts, NULL);
    gr_registry_unlock(h->r);
    return NULL;
}

static void contention(enum gr_reg_mode mode)
{
    hold h;
    memset(&h, 0, sizeof h);
    VALGRIND_HG_DISABLE_CHECKING(&h.held, sizeof h.held);
    VALGRIND_HG_DISABLE_CHECKING(&h.release, sizeof h.release);
    h.r = gr_registry_new(mode, 8);
    assert_non_null(h.r);
    gr_registry_add(h.r, 1, 0, name_of(1));
    gr_registry_add(h.r, 2, 1, name_of(2));
    uint64_t wait = 99;
    assert_int_equal(gr_registry_switch(h.r, 1, frame_of(1, 1), 0, 2, 1, &wait), 0);
    assert_int_equal(wait, 0); /* free lock: no clock read, no wait */
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, holder, &h), 0);
    while (!atomic_load(&h.held))
        ;
    atomic_store(&h.release, 1);
    int c = gr_registry_switch(h.r, 2, frame_of(2, 2), 0, 1, 0, &wait);
    assert_int_equal(pthread_join(th, NULL), 0);
    if (mode == GR_REG_SEQLOCK) {
        assert_int_equal(c, 0); /* no lock on the switch path at all */
        assert_int_equal(wait, 0);
        assert_int_equal(h.r->contended, 0);
    } else {
        assert_int_equal(c, 1);
        /* The holder slept 2 ms before unlocking, but the recorded wait
         * leaves out the time the switching thread sat in the run queue
         * (registry.c: other processes' load is not a sampler stall), which
         * on a loaded machine can be most of those 2 ms: only its presence
         * is certain. */
        assert_true(wait > 0);
        assert_int_equal(h.r->contended, 1);
    }
    assert_int_equal(h.r->updates, 2);
    gr_reg_entry out[8];
    uint64_t torn = 0;
    gr_registry_lock(h.r);
    uint32_t n = gr_registry_copy(h.r, out, 8, &torn);
    gr_registry_unlock(h.r);
    assert_int_equal(n, 2);
    assert_true(out[0].gid == 1 && out[0].state == GR_REG_RUNNING && out[0].frame == 0);
    assert_true(out[1].gid == 2 && out[1].state == GR_REG_SUSPENDED &&
                out[1].frame == frame_of(2, 2) && out[1].parent == 1);
    assert_int_equal(torn, 0);
    gr_registry_free(h.r);
}

static void lock_two_phase_contention(void **state) { (void)state; contention(GR_REG_TWO_PHASE); }
static void lock_hold_lock_contention(void **state) { (void)state; contention(GR_REG_HOLD_LOCK); }
static void seqlock_no_contention(void **state) { (void)state; contention(GR_REG_SEQLOCK); }

/* A slot whose writer stopped half-way (seq odd, as when the writing thread
 * is descheduled inside gr_registry_switch): the reader retries 4 times,
 * then leaves the slot out and counts 4; the next slot is fine. */
static void seqlock_torn_slot_given_up(void **state)
{
    (void)state;
    gr_registry *r = gr_registry_new(GR_REG_SEQLOCK, 4);
    assert_non_null(r);
    gr_registry_add(r, 1, 0, name_of(1));
    gr_registry_add(r, 2, 1, name_of(2));
    assert_int_equal(atomic_load(&r->slots[1].seq) % 2, 0);
    atomic_fetch_add(&r->slots[1].seq, 1); /* writer "inside" slot 1 */
    gr_reg_entry out[4];
    uint64_t torn = 0;
    assert_int_equal(gr_registry_copy(r, out, 4, &torn), 1);
    assert_int_equal(torn, 4);
    assert_true(out[0].gid == 2);
    atomic_fetch_add(&r->slots[1].seq, 1); /* writer done */
    torn = 0;
    assert_int_equal(gr_registry_copy(r, out, 4, &torn), 2);
    assert_int_equal(torn, 0);
    assert_true(out[0].gid == 1 && out[1].gid == 2 && out[1].parent == 1);
    gr_registry_free(r);
}

/* ---- single-threaded edges ---------------------------------------------- */

static void lock_and_seqlock_edges(void **state)
{
    (void)state;
    for (int mode = GR_REG_TWO_PHASE; mode <= GR_REG_SEQLOCK; mode++) {
        gr_registry *r = gr_registry_new((enum gr_reg_mode)mode, 0); /* raised to 2 */
        assert_non_null(r);
        assert_int_equal(r->cap, 2);
        gr_registry_add(r, 1, 0, 7);
        gr_registry_add(r, 2, 1, 8); /* beyond capacity */
        gr_registry_add(r, 5, 1, 9);
        assert_int_equal(r->overflow, 2);
        uint64_t wait;
        gr_registry_switch(r, 1, 0x1000, 1, 3, 0, &wait); /* origin dies; target untracked */
        gr_reg_entry out[4];
        uint64_t torn = 0;
        gr_registry_lock(r);
        assert_int_equal(gr_registry_copy(r, out, 4, &torn), 0); /* dead: not copied */
        gr_registry_unlock(r);
        gr_registry_add(r, 1, 0, 7); /* born again */
        gr_registry_lock(r);
        assert_int_equal(gr_registry_copy(r, out, 0, &torn), 0); /* max 0 */
        assert_int_equal(gr_registry_copy(r, out, 4, &torn), 1);
        gr_registry_unlock(r);
        assert_true(out[0].state == GR_REG_NEW && out[0].name == 7 && out[0].frame == 0);
        assert_int_equal(torn, 0);
        gr_registry_free(r);
    }
    gr_registry_free(NULL);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lock_and_seqlock_edges),
        cmocka_unit_test(lock_two_phase_contention),
        cmocka_unit_test(lock_hold_lock_contention),
        cmocka_unit_test(seqlock_no_contention),
        cmocka_unit_test(seqlock_torn_slot_given_up),
        cmocka_unit_test(lock_two_phase_race),
        cmocka_unit_test(lock_hold_lock_race),
        cmocka_unit_test(seqlock_race),
    };
    if (argc > 1) {
        /* a test name prefix: "lock" or "seqlock" */
        static char pattern[64];
        snprintf(pattern, sizeof pattern, "%s*", argv[1]);
        cmocka_set_test_filter(pattern);
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
