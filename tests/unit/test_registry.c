/* test_registry.c - races on the sampler's greenlet registry
 * (tracer/registry.c), pure C: one writer thread plays the switch callback
 * (gr_registry_add, gr_registry_switch), one reader thread plays the
 * sampler (gr_registry_copy, holding the lock in lock modes, without it in
 * seqlock mode), in each mode; every copy is checked against invariants
 * that a torn copy would break.  Greenlets die and new ones (new gids, as
 * in a recording) take their slots, so the reader also races slot reuse:
 * a copied slot whose greenlet was released before the reader's
 * generation check (gr_registry_holds) must fail that check.  Single
 * threaded: slot reuse against a model of the live greenlets, 1 M
 * greenlets through a registry of 3 slots, the generation check of a
 * copy whose slot was given to a later greenlet.  Built into `make unit`,
 * and run under ThreadSanitizer (`make tsan`) and helgrind (`make
 * helgrind`).
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

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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

/* NG greenlets alive at once (positions 1..NG; position 1, gid 1, is the
 * main greenlet and never dies), in a registry of NG slots.  A greenlet
 * that dies is replaced by a new one with a new gid (below MAX_GID).  The
 * writer switches at least SWITCHES times and until the reader has made
 * MIN_COPIES copies, so that the two overlap. */
#define NG 4
#define SWITCHES 100000
#define MIN_COPIES 3000
#define MAX_GID (1u << 20)

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
    _Atomic int started, done; /* writer started, finished */
    _Atomic uint64_t copies;   /* reader's progress */
    _Atomic uint32_t next_gid; /* gids handed out so far + 1 */
    _Atomic unsigned char *released; /* MAX_GID flags: set once the writer's
                                  release of that gid has returned */
    uint64_t checks, detected; /* reader: generation checks, reuses caught */
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
    uint32_t cur = 1;             /* running position */
    uint32_t gid_at[NG + 1];      /* gid at each position, 0 dead */
    for (uint32_t p = 1; p <= NG; p++)
        gid_at[p] = p;
    uint64_t rng = 0x9E3779B97F4A7C15u;
    atomic_store_explicit(&x->started, 1, memory_order_release);
    for (uint32_t k = 1;
         k <= SWITCHES || atomic_load_explicit(&x->copies, memory_order_relaxed) < MIN_COPIES;
         k++) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        uint32_t target = 1 + (uint32_t)(rng % NG);
        if (target == cur)
            target = cur % NG + 1;
        /* now and then the origin dies (never the main greenlet); a new
         * greenlet with a new gid takes its position (and a free slot) */
        uint32_t next = atomic_load_explicit(&x->next_gid, memory_order_relaxed);
        int die = cur != 1 && rng % 97 == 0 && next < MAX_GID;
        if (!gid_at[target]) {
            gid_at[target] = next;
            atomic_store_explicit(&x->next_gid, next + 1, memory_order_relaxed);
            gr_registry_add(r, gid_at[target], parent0_of(gid_at[target]), name_of(gid_at[target]));
            x->adds++;
        }
        uint32_t og = gid_at[cur];
        uint64_t wait = 12345;
        int c = gr_registry_switch(r, og, frame_of(og, k), die, gid_at[target], k, &wait);
        x->switches++;
        x->contended_returned += (uint64_t)c;
        x->waited_ns += wait;
        if (!c && wait != 0)
            x->bad_wait = 1;
        if (die) {
            /* the release has returned: a reader that sees this flag
             * before its generation check must see the slot lost */
            atomic_store_explicit(&x->released[og], 1, memory_order_release);
            gid_at[cur] = 0;
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
    /* copies count once the writer runs: the two overlap */
    while (!atomic_load_explicit(&x->started, memory_order_acquire))
        ;
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
        uint32_t maxgid = atomic_load_explicit(&x->next_gid, memory_order_relaxed);
        for (uint32_t i = 0; i < n; i++) {
            if (out[i].gid == 0 || out[i].gid >= maxgid || out[i].slot == 0 || out[i].slot > NG ||
                (i && out[i].slot <= out[i - 1].slot))
                x->bad_order++;
            else if (!consistent(&out[i], bad ? NULL : why, bad ? 0 : sizeof why))
                bad++;
        }
        /* Phase 2 of a sample: "unwind" the suspended ones (a short
         * spin), then the generation check.  A greenlet whose release
         * returned before the check (flag seen first) must fail it. */
        for (uint32_t i = 0; i < n; i++) {
            if (out[i].state != GR_REG_SUSPENDED || out[i].gid >= MAX_GID)
                continue;
            busy(200);
            int gone = atomic_load_explicit(&x->released[out[i].gid], memory_order_acquire);
            int holds = gr_registry_holds(r, out[i].slot, out[i].gid);
            x->checks++;
            if (gone && holds) {
                bad++;
                if (!why[0])
                    snprintf(why, sizeof why, "g%u: released, but slot %u still holds it",
                             out[i].gid, out[i].slot);
            }
            x->detected += (uint64_t)!holds;
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
    x.released = calloc(MAX_GID, 1);
    assert_non_null(x.released);
    atomic_store(&x.next_gid, NG + 1);
    VALGRIND_HG_DISABLE_CHECKING(&x.done, sizeof x.done);
    VALGRIND_HG_DISABLE_CHECKING(&x.started, sizeof x.started);
    VALGRIND_HG_DISABLE_CHECKING(&x.copies, sizeof x.copies);
    VALGRIND_HG_DISABLE_CHECKING(&x.next_gid, sizeof x.next_gid);
    VALGRIND_HG_DISABLE_CHECKING(x.released, MAX_GID);
    /* The generation check reads a slot's gid without the lock in every
     * mode (on purpose, as the sampler does after phase 2). */
    VALGRIND_HG_DISABLE_CHECKING(x.r->slots, x.r->cap * sizeof *x.r->slots);
    if (mode == GR_REG_SEQLOCK)
        VALGRIND_HG_DISABLE_CHECKING(&x.r->high, sizeof x.r->high);
    /* Every greenlet exists before the race; gr_registry_add's own
     * contention is not returned, so the counters below add up exactly. */
    for (uint32_t g = 1; g <= NG; g++)
        gr_registry_add(x.r, g, parent0_of(g), name_of(g));
    assert_int_equal(atomic_load(&x.r->high), NG);
    assert_int_equal(x.r->live, NG);
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
    /* NG alive at once in NG slots: never full, every new greenlet took a
     * released slot */
    assert_int_equal(x.r->overflow, 0);
    assert_true(x.dead > 0);
    assert_int_equal(x.r->reused, x.adds);
    assert_int_equal(x.r->live, NG - (x.dead - x.adds));
    assert_int_equal(atomic_load(&x.r->high), NG);
    assert_true(x.checks > 0);
    if (mode == GR_REG_SEQLOCK) {
        assert_int_equal(x.r->contended, 0);
        assert_int_equal(x.waited_ns, 0);
    } else {
        assert_int_equal(x.torn, 0);
    }
    print_message("      %lu switches (%lu contended, waited %lu ns), %lu copies of %lu entries, "
                  "%lu torn retries, %lu deaths; %lu generation checks, %lu slots lost meanwhile\n",
                  (unsigned long)x.switches, (unsigned long)x.contended_returned,
                  (unsigned long)x.waited_ns, (unsigned long)atomic_load(&x.copies),
                  (unsigned long)x.entries, (unsigned long)x.torn, (unsigned long)x.dead,
                  (unsigned long)x.checks, (unsigned long)x.detected);
    gr_registry_free(x.r);
    free((void *)x.released);
}

static void lock_two_phase_race(void **state) { (void)state; run_race(GR_REG_TWO_PHASE); }
static void lock_hold_lock_race(void **state) { (void)state; run_race(GR_REG_HOLD_LOCK); }
static void seqlock_race(void **state) { (void)state; run_race(GR_REG_SEQLOCK); }

/* ---- deterministic contention: the reader holds the lock first ------ */

typedef struct hold {
    gr_registry *r;
    long writer_tid; /* the switching thread (the test's) */
    _Atomic int held, release, switched;
    int waited_for_writer; /* the holder saw the writer blocked on the lock */
} hold;

/* Whether thread tid of this process is blocked in a futex wait on a word
 * of the n bytes at addr, as pthread_mutex_lock on the mutex at addr waits
 * (on a member of it: the first in glibc): 1 yes, 0 not (running, or in
 * another system call), -1 unknown (no /proc/self/task/TID/syscall: not
 * Linux).  Read from that file: the system call's number, then its
 * arguments in hex. */
static int blocked_on(long tid, const void *addr, size_t n)
{
#if defined(__linux__) && defined(SYS_futex)
    char path[64], b[256];
    snprintf(path, sizeof path, "/proc/self/task/%ld/syscall", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t k = read(fd, b, sizeof b - 1);
    close(fd);
    if (k <= 0)
        return -1;
    b[k] = '\0';
    long nr;
    unsigned long a0;
    if (sscanf(b, "%ld %lx", &nr, &a0) != 2) /* "running" */
        return 0;
    return nr == SYS_futex && a0 >= (unsigned long)(uintptr_t)addr &&
           a0 < (unsigned long)(uintptr_t)addr + n;
#else
    (void)tid, (void)addr, (void)n;
    return -1;
#endif
}

/* Holds the lock until the writer, released to switch, is blocked on it
 * (so that its switch is contended however long the scheduler keeps it
 * from running: a fixed sleep here made the switch uncontended when the
 * writer was descheduled longer, on a loaded machine) or has switched
 * without it (seqlock mode), then 2 ms longer, and unlocks.  Without
 * /proc, the 2 ms alone; not seen blocked within 60 s (a C library whose
 * mutex waits elsewhere), it gives up rather than hang the test. */
static void *holder(void *arg)
{
    hold *h = arg;
    gr_registry_lock(h->r);
    atomic_store(&h->held, 1);
    while (!atomic_load(&h->release))
        ;
    int b = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!atomic_load(&h->switched) &&
           (b = blocked_on(h->writer_tid, &h->r->lock, sizeof h->r->lock)) == 0) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 60)
            break;
        sched_yield();
    }
    h->waited_for_writer = b == 1;
    struct timespec ts = {0, 2000000};
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
    VALGRIND_HG_DISABLE_CHECKING(&h.switched, sizeof h.switched);
    h.r = gr_registry_new(mode, 8);
    assert_non_null(h.r);
    gr_registry_add(h.r, 1, 0, name_of(1));
    gr_registry_add(h.r, 2, 1, name_of(2));
    uint64_t wait = 99;
    assert_int_equal(gr_registry_switch(h.r, 1, frame_of(1, 1), 0, 2, 1, &wait), 0);
    assert_int_equal(wait, 0); /* free lock: no clock read, no wait */
#ifdef SYS_gettid
    h.writer_tid = (long)syscall(SYS_gettid);
#endif
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, holder, &h), 0);
    while (!atomic_load(&h.held))
        ;
    atomic_store(&h.release, 1);
    int c = gr_registry_switch(h.r, 2, frame_of(2, 2), 0, 1, 0, &wait);
    atomic_store(&h.switched, 1);
    assert_int_equal(pthread_join(th, NULL), 0);
    if (mode == GR_REG_SEQLOCK) {
        assert_int_equal(c, 0); /* no lock on the switch path at all */
        assert_int_equal(wait, 0);
        assert_int_equal(h.r->contended, 0);
    } else {
        assert_int_equal(c, 1);
        /* The holder unlocked 2 ms after this thread blocked on the lock,
         * but the recorded wait leaves out the time it sat in the run
         * queue (registry.c: other processes' load is not a sampler
         * stall), which on a loaded machine can be most of the wall time:
         * only its presence is certain (the blocked time is never queued). */
        assert_true(wait > 0);
        assert_int_equal(h.r->contended, 1);
    }
    if (mode != GR_REG_SEQLOCK && !h.waited_for_writer)
        print_message("      (the writer was not seen blocked on the lock, no "
                      "/proc/self/task/TID/syscall: the holder slept 2 ms instead)\n");
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

/* ---- slot reuse ---------------------------------------------------------- */

/* Copy every slot (lock taken in lock modes). */
static uint32_t copy_all(gr_registry *r, gr_reg_entry *out, uint32_t max)
{
    uint64_t torn = 0;
    if (r->mode != GR_REG_SEQLOCK)
        gr_registry_lock(r);
    uint32_t n = gr_registry_copy(r, out, max, &torn);
    if (r->mode != GR_REG_SEQLOCK)
        gr_registry_unlock(r);
    assert_int_equal(torn, 0);
    return n;
}

/* A reader's copy, then the greenlet dies and a later greenlet (gid above
 * the old fixed capacity) takes its slot: the generation check fails for
 * the copy and holds for the new owner; the next copy names the new
 * gid. */
static void lock_and_seqlock_generation(void **state)
{
    (void)state;
    for (int mode = GR_REG_TWO_PHASE; mode <= GR_REG_SEQLOCK; mode++) {
        gr_registry *r = gr_registry_new((enum gr_reg_mode)mode, 4); /* 3 live */
        assert_non_null(r);
        uint64_t wait;
        gr_registry_add(r, 1, 0, name_of(1));
        gr_registry_add(r, 2, 1, name_of(2));
        gr_registry_add(r, 3, 1, name_of(3));
        gr_registry_switch(r, 1, 0, 0, 2, 1, &wait);
        gr_registry_switch(r, 2, frame_of(2, 7), 0, 1, 0, &wait); /* 2 suspended */
        gr_reg_entry out[4];
        assert_int_equal(copy_all(r, out, 4), 3);
        gr_reg_entry e2 = out[1];
        assert_true(e2.gid == 2 && e2.slot == 2 && e2.state == GR_REG_SUSPENDED &&
                    e2.frame == frame_of(2, 7));
        assert_true(gr_registry_holds(r, e2.slot, e2.gid));
        /* full: a fourth live greenlet is not tracked */
        gr_registry_add(r, 4, 1, name_of(4));
        assert_int_equal(r->overflow, 1);
        /* 2 is resumed and dies: its slot is released at once */
        gr_registry_switch(r, 1, 0, 0, 2, 1, &wait);
        gr_registry_switch(r, 2, 0, 1, 1, 0, &wait);
        assert_false(gr_registry_holds(r, e2.slot, e2.gid));
        assert_int_equal(r->live, 2);
        gr_registry_add(r, 70001, 1, name_of(70001));
        assert_false(gr_registry_holds(r, e2.slot, e2.gid)); /* reused: still lost */
        assert_true(gr_registry_holds(r, 2, 70001));
        assert_int_equal(r->reused, 1);
        gr_registry_switch(r, 1, 0, 0, 70001, 1, &wait);
        gr_registry_switch(r, 70001, frame_of(70001, 9), 0, 1, 0, &wait);
        assert_int_equal(copy_all(r, out, 4), 3);
        assert_true(out[1].gid == 70001 && out[1].slot == 2 && out[1].state == GR_REG_SUSPENDED &&
                    out[1].frame == frame_of(70001, 9) && out[1].name == name_of(70001));
        /* a freed (never finished) greenlet releases its slot too */
        gr_registry_release(r, 3);
        gr_registry_release(r, 3); /* twice: ignored */
        gr_registry_release(r, 999); /* never tracked: ignored */
        assert_int_equal(copy_all(r, out, 4), 2);
        assert_true(out[0].gid == 1 && out[1].gid == 70001);
        assert_int_equal(r->live, 2);
        assert_int_equal(r->peak_live, 3);
        assert_int_equal(atomic_load(&r->high), 3);
        gr_registry_free(r);
    }
}

/* 1 M greenlets over a run, each created, run, suspended and finished,
 * with up to 3 alive at once, through a registry of 3 live slots: none
 * is left untracked, the slots scanned stay 3, and the last ones (gids far
 * above any fixed capacity) are copied under their own gids. */
static void lock_and_seqlock_million(void **state)
{
    (void)state;
    for (int mode = GR_REG_TWO_PHASE; mode <= GR_REG_SEQLOCK; mode++) {
        gr_registry *r = gr_registry_new((enum gr_reg_mode)mode, 4);
        assert_non_null(r);
        size_t bytes = gr_registry_bytes(r);
        uint64_t wait;
        gr_registry_add(r, 1, 0, name_of(1));
        uint32_t gid = 2, prev = 0;
        for (uint32_t i = 0; i < 1000000; i++, gid++) {
            gr_registry_add(r, gid, 1, name_of(gid));
            gr_registry_switch(r, 1, 0, 0, gid, 1, &wait);
            gr_registry_switch(r, gid, frame_of(gid, 1), 0, 1, 0, &wait); /* suspended */
            if (prev) { /* the previous one finishes */
                gr_registry_switch(r, 1, 0, 0, prev, 1, &wait);
                gr_registry_switch(r, prev, 0, 1, 1, 0, &wait);
            }
            prev = gid;
        }
        assert_int_equal(r->overflow, 0);
        assert_int_equal(r->live, 2);
        assert_int_equal(r->peak_live, 3);
        assert_int_equal(atomic_load(&r->high), 3);
        assert_int_equal(gr_registry_bytes(r), bytes);
        gr_reg_entry out[4];
        assert_int_equal(copy_all(r, out, 4), 2);
        gr_reg_entry *last = out[0].gid == 1 ? &out[1] : &out[0];
        assert_int_equal(last->gid, prev);
        assert_true(prev > 1000000);
        assert_true(last->state == GR_REG_SUSPENDED && last->frame == frame_of(prev, 1) &&
                    last->name == name_of(prev));
        gr_registry_free(r);
    }
}

/* Random adds, switches, deaths and releases against a model of the live
 * greenlets, in a registry of 63 slots: every copy equals the model (the
 * writer's table stays right through any order of insertions and
 * deletions), overflow counts exactly the greenlets that found it full. */
#define MODEL_CAP 64
#define MODEL_GIDS 4096
static void lock_and_seqlock_model(void **state)
{
    (void)state;
    for (int mode = GR_REG_TWO_PHASE; mode <= GR_REG_SEQLOCK; mode++) {
        gr_registry *r = gr_registry_new((enum gr_reg_mode)mode, MODEL_CAP);
        assert_non_null(r);
        /* model: state of each gid (0 none/dead/untracked), frame */
        static uint32_t st[MODEL_GIDS];
        static uintptr_t fr[MODEL_GIDS];
        memset(st, 0, sizeof st);
        uint32_t live = 0, next = 1, ngids = 0;
        uint64_t overflow = 0, rng = 88172645463325252u, wait;
        static uint32_t alive[MODEL_GIDS];
        for (uint32_t k = 1; k <= 200000; k++) {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            uint32_t op = (uint32_t)(rng % 4);
            if (op == 0 && next < MODEL_GIDS) { /* a new greenlet */
                gr_registry_add(r, next, 1, name_of(next));
                if (live < MODEL_CAP - 1) {
                    st[next] = GR_REG_NEW;
                    fr[next] = 0;
                    alive[ngids++] = next;
                    live++;
                } else {
                    overflow++;
                }
                next++;
            } else if (ngids && op == 1) { /* one dies (switch) or is freed */
                uint32_t i = (uint32_t)((rng >> 8) % ngids), g = alive[i];
                if (rng & 0x10000)
                    gr_registry_switch(r, g, 0, 1, 0, 0, &wait);
                else
                    gr_registry_release(r, g);
                st[g] = 0;
                alive[i] = alive[--ngids];
                live--;
            } else if (ngids) { /* one is suspended */
                uint32_t g = alive[(rng >> 8) % ngids];
                gr_registry_switch(r, g, frame_of(g, k), 0, 0, 0, &wait);
                st[g] = GR_REG_SUSPENDED;
                fr[g] = frame_of(g, k);
            }
            if (k % 1000 == 0 || next == MODEL_GIDS) {
                gr_reg_entry out[MODEL_CAP];
                uint32_t n = copy_all(r, out, MODEL_CAP);
                assert_int_equal(n, live);
                for (uint32_t i = 0; i < n; i++) {
                    assert_true(out[i].gid < MODEL_GIDS && st[out[i].gid] == out[i].state);
                    assert_true(fr[out[i].gid] == out[i].frame && out[i].name == name_of(out[i].gid));
                    assert_true(gr_registry_holds(r, out[i].slot, out[i].gid));
                }
                if (next == MODEL_GIDS)
                    next = MODEL_GIDS + 1; /* stop adding; the rest only dies */
            }
        }
        assert_int_equal(r->overflow, overflow);
        assert_true(overflow > 0); /* the model did fill it */
        assert_int_equal(r->live, live);
        gr_registry_free(r);
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lock_and_seqlock_edges),
        cmocka_unit_test(lock_and_seqlock_generation),
        cmocka_unit_test(lock_and_seqlock_million),
        cmocka_unit_test(lock_and_seqlock_model),
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
