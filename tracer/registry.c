/* registry.c - greenlet registry for the sampler (see registry.h). */
#include "registry.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RELAXED memory_order_relaxed

uint64_t gr_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define MAX_CAP (1u << 30)

gr_registry *gr_registry_new(enum gr_reg_mode mode, uint32_t cap)
{
    if (cap < 2)
        cap = 2;
    if (cap > MAX_CAP)
        cap = MAX_CAP;
    gr_registry *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    uint32_t m = 4;
    while (m < 2 * cap)
        m *= 2;
    r->slots = calloc(cap, sizeof *r->slots);
    r->free_slots = calloc(cap, sizeof *r->free_slots);
    r->map = calloc(m, sizeof *r->map);
    if (!r->slots || !r->free_slots || !r->map) {
        gr_registry_free(r);
        return NULL;
    }
    r->map_mask = m - 1;
    /* Never taken slots, lowest on top: slots are handed out from 1 up,
     * so the reader's scan (1..high) stays as short as the peak of live
     * greenlets. */
    for (uint32_t i = 1; i < cap; i++)
        r->free_slots[r->nfree++] = cap - i;
    r->mode = mode;
    r->cap = cap;
    pthread_mutex_init(&r->lock, NULL);
    return r;
}

void gr_registry_free(gr_registry *r)
{
    if (!r)
        return;
    if (r->cap)
        pthread_mutex_destroy(&r->lock);
    free(r->slots);
    free(r->free_slots);
    free(r->map);
    free(r);
}

size_t gr_registry_bytes(const gr_registry *r)
{
    return sizeof *r + (size_t)r->cap * (sizeof *r->slots + sizeof *r->free_slots) +
           ((size_t)r->map_mask + 1) * sizeof *r->map;
}

/* ---- the writer's gid -> slot table ------------------------------------ */

/* Home position of gid (Fibonacci hashing: gids are dense, neighbours
 * spread). */
static inline uint32_t map_home(const gr_registry *r, uint32_t gid)
{
    return (uint32_t)(((uint64_t)gid * 0x9E3779B97F4A7C15u) >> 32) & r->map_mask;
}

/* Position of gid in the table, or the empty position where it would go. */
static inline uint32_t map_find(const gr_registry *r, uint32_t gid)
{
    uint32_t i = map_home(r, gid);
    while (r->map[i].gid && r->map[i].gid != gid)
        i = (i + 1) & r->map_mask;
    return i;
}

/* Slot of gid, 0 if it has none. */
static inline uint32_t map_get(const gr_registry *r, uint32_t gid)
{
    if (!gid)
        return 0;
    const gr_reg_map *e = &r->map[map_find(r, gid)];
    return e->gid ? e->slot : 0;
}

/* Remove the entry at position i (backward-shift deletion: no tombstones,
 * so lookups stay short however many greenlets came and went). */
static void map_remove_at(gr_registry *r, uint32_t i)
{
    uint32_t j = i;
    for (;;) {
        j = (j + 1) & r->map_mask;
        if (!r->map[j].gid)
            break;
        uint32_t h = map_home(r, r->map[j].gid);
        /* the entry at j may move to i if its home is not in (i, j] */
        if (i <= j ? (h <= i || h > j) : (h <= i && h > j)) {
            r->map[i] = r->map[j];
            i = j;
        }
    }
    r->map[i].gid = 0;
    r->map[i].slot = 0;
}

/* Writer side of the sharing protocol around one slot update. */
static inline void begin_slot(gr_registry *r, gr_reg_slot *s)
{
    if (r->mode == GR_REG_SEQLOCK) {
        atomic_store_explicit(&s->seq, atomic_load_explicit(&s->seq, RELAXED) + 1, RELAXED);
        atomic_thread_fence(memory_order_release);
    }
}

static inline void end_slot(gr_registry *r, gr_reg_slot *s)
{
    if (r->mode == GR_REG_SEQLOCK)
        atomic_store_explicit(&s->seq, atomic_load_explicit(&s->seq, RELAXED) + 1, memory_order_release);
}

/* How long a writer that found the lock busy retries it before sleeping
 * on it.  The two-phase sampler holds the lock for a copy of the slots
 * (about 15 ns per greenlet, 30 us for 2,000), right after it woke up, so
 * it is rarely preempted while holding it: a writer that keeps its CPU
 * gets the lock as soon as it is free.  A writer that went to sleep in
 * pthread_mutex_lock instead waits, on top, for the scheduler to run it
 * again, which on a loaded machine is milliseconds (measured: 10 ms waits
 * behind a 3 us hold while other processes kept both cores busy).  Past
 * this budget it sleeps (hold-lock holds for milliseconds). */
#define SPIN_NS 200000u

/* Time this thread has spent runnable but waiting for a CPU, in ns: the
 * second field of /proc/thread-self/schedstat (Linux with schedstats;
 * UINT64_MAX when it cannot be read, and then no correction is made).  Only called on
 * the contended path (a few times per sample at most); errno preserved. */
static uint64_t runq_ns(void)
{
    int saved = errno;
    uint64_t v = UINT64_MAX;
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        char b[96];
        ssize_t k = read(fd, b, sizeof b - 1);
        close(fd);
        if (k > 0) {
            b[k] = '\0';
            const char *p = strchr(b, ' ');
            while (p && *p == ' ')
                p++;
            if (p && *p >= '0' && *p <= '9')
                v = 0;
            while (p && *p >= '0' && *p <= '9')
                v = v * 10 + (uint64_t)(*p++ - '0');
        }
    }
    errno = saved;
    return v;
}

/* Take the lock in lock modes; returns 1 if it was busy.  *wait_ns is the
 * wall time from the failed try to the acquisition less the time this
 * thread sat in the run queue meanwhile: the time the lock kept it, not
 * the time other processes on the machine kept its CPU (measured: 28 ms
 * "waits" behind 20 us holds with ten runnable processes on 2 CPUs). */
static inline int writer_lock(gr_registry *r, uint64_t *wait_ns)
{
    *wait_ns = 0;
    if (r->mode == GR_REG_SEQLOCK)
        return 0;
    if (pthread_mutex_trylock(&r->lock) == 0)
        return 0;
    uint64_t q0 = runq_ns();
    uint64_t t0 = gr_now_ns(), t = t0;
    int got = 0;
    while (t - t0 < SPIN_NS) {
        for (int i = 0; i < 64; i++) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        }
        if (pthread_mutex_trylock(&r->lock) == 0) {
            got = 1;
            break;
        }
        t = gr_now_ns();
    }
    if (!got)
        pthread_mutex_lock(&r->lock);
    uint64_t wall = gr_now_ns() - t0, q1 = runq_ns();
    if (q0 == UINT64_MAX || q1 == UINT64_MAX || q1 < q0)
        *wait_ns = wall;
    else
        *wait_ns = q1 - q0 < wall ? wall - (q1 - q0) : 0;
    r->contended++;
    return 1;
}

static inline void writer_unlock(gr_registry *r)
{
    if (r->mode != GR_REG_SEQLOCK)
        pthread_mutex_unlock(&r->lock);
}

void gr_registry_add(gr_registry *r, uint32_t gid, uint32_t parent, uint32_t name)
{
    if (!gid)
        return;
    uint32_t pos = map_find(r, gid);
    uint32_t slot = r->map[pos].gid ? r->map[pos].slot : 0;
    if (!slot) {
        if (!r->nfree) {
            r->overflow++;
            return;
        }
        slot = r->free_slots[--r->nfree];
        r->map[pos].gid = gid;
        r->map[pos].slot = slot;
        if (slot <= atomic_load_explicit(&r->high, RELAXED))
            r->reused++;
        if (++r->live > r->peak_live)
            r->peak_live = r->live;
    }
    uint64_t wait;
    writer_lock(r, &wait);
    gr_reg_slot *s = &r->slots[slot];
    begin_slot(r, s);
    atomic_store_explicit(&s->gid, gid, RELAXED);
    atomic_store_explicit(&s->parent, parent, RELAXED);
    atomic_store_explicit(&s->name, name, RELAXED);
    atomic_store_explicit(&s->frame, 0, RELAXED);
    atomic_store_explicit(&s->state, GR_REG_NEW, RELAXED);
    end_slot(r, s);
    if (slot > atomic_load_explicit(&r->high, RELAXED))
        atomic_store_explicit(&r->high, slot, memory_order_release);
    writer_unlock(r);
}

/* Empty slot `slot` (lock held in lock modes) and give it back; pos is
 * its gid's position in the table. */
static void release_slot(gr_registry *r, uint32_t pos, uint32_t slot)
{
    gr_reg_slot *s = &r->slots[slot];
    begin_slot(r, s);
    atomic_store_explicit(&s->state, GR_REG_EMPTY, RELAXED);
    atomic_store_explicit(&s->frame, 0, RELAXED);
    atomic_store_explicit(&s->parent, 0, RELAXED);
    atomic_store_explicit(&s->name, 0, RELAXED);
    atomic_store_explicit(&s->gid, 0, RELAXED);
    end_slot(r, s);
    map_remove_at(r, pos);
    r->free_slots[r->nfree++] = slot;
    r->live--;
}

void gr_registry_release(gr_registry *r, uint32_t gid)
{
    if (!gid)
        return;
    uint32_t pos = map_find(r, gid);
    if (!r->map[pos].gid)
        return;
    uint64_t wait;
    writer_lock(r, &wait);
    release_slot(r, pos, r->map[pos].slot);
    writer_unlock(r);
}

int gr_registry_switch(gr_registry *r, uint32_t origin, uintptr_t origin_frame, int origin_dead,
                       uint32_t target, uint32_t target_parent, uint64_t *wait_ns)
{
    /* Table lookups before the lock: the table is the writer's own. */
    uint32_t opos = origin ? map_find(r, origin) : 0;
    uint32_t oslot = origin && r->map[opos].gid ? r->map[opos].slot : 0;
    uint32_t tslot = target == origin && origin_dead ? 0 : map_get(r, target);
    int contended = writer_lock(r, wait_ns);
    r->updates++;
    if (oslot && origin_dead) {
        release_slot(r, opos, oslot);
    } else if (oslot) {
        gr_reg_slot *s = &r->slots[oslot];
        begin_slot(r, s);
        atomic_store_explicit(&s->frame, origin_frame, RELAXED);
        atomic_store_explicit(&s->state, GR_REG_SUSPENDED, RELAXED);
        end_slot(r, s);
    }
    if (tslot) {
        gr_reg_slot *s = &r->slots[tslot];
        begin_slot(r, s);
        atomic_store_explicit(&s->frame, 0, RELAXED);
        atomic_store_explicit(&s->parent, target_parent, RELAXED);
        atomic_store_explicit(&s->state, GR_REG_RUNNING, RELAXED);
        end_slot(r, s);
    }
    writer_unlock(r);
    return contended;
}

static inline void read_slot(const gr_reg_slot *s, gr_reg_entry *e)
{
    e->gid = atomic_load_explicit(&s->gid, RELAXED);
    e->state = atomic_load_explicit(&s->state, RELAXED);
    e->parent = atomic_load_explicit(&s->parent, RELAXED);
    e->name = atomic_load_explicit(&s->name, RELAXED);
    e->frame = atomic_load_explicit(&s->frame, RELAXED);
}

uint32_t gr_registry_copy(gr_registry *r, gr_reg_entry *out, uint32_t max, uint64_t *torn)
{
    uint32_t high = atomic_load_explicit(&r->high, memory_order_acquire);
    uint32_t n = 0;
    for (uint32_t slot = 1; slot <= high && slot < r->cap && n < max; slot++) {
        gr_reg_slot *s = &r->slots[slot];
        gr_reg_entry *e = &out[n];
        if (r->mode != GR_REG_SEQLOCK) {
            read_slot(s, e);
        } else {
            int tries = 0, ok = 0;
            while (!ok && tries < 4) {
                uint32_t s1 = atomic_load_explicit(&s->seq, memory_order_acquire);
                read_slot(s, e);
                atomic_thread_fence(memory_order_acquire);
                uint32_t s2 = atomic_load_explicit(&s->seq, RELAXED);
                ok = s1 == s2 && !(s1 & 1);
                if (!ok) {
                    (*torn)++;
                    tries++;
                }
            }
            if (!ok)
                continue; /* still being written: leave it out of this sample */
        }
        if (e->state == GR_REG_EMPTY || e->state == GR_REG_DEAD || !e->gid)
            continue;
        e->slot = slot;
        n++;
    }
    return n;
}
