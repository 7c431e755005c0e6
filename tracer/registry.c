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

gr_registry *gr_registry_new(enum gr_reg_mode mode, uint32_t cap)
{
    if (cap < 2)
        cap = 2;
    gr_registry *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->slots = calloc(cap, sizeof *r->slots);
    if (!r->slots) {
        free(r);
        return NULL;
    }
    r->mode = mode;
    r->cap = cap;
    pthread_mutex_init(&r->lock, NULL);
    return r;
}

void gr_registry_free(gr_registry *r)
{
    if (!r)
        return;
    pthread_mutex_destroy(&r->lock);
    free(r->slots);
    free(r);
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
    if (gid >= r->cap) {
        r->overflow++;
        return;
    }
    uint64_t wait;
    writer_lock(r, &wait);
    gr_reg_slot *s = &r->slots[gid];
    begin_slot(r, s);
    atomic_store_explicit(&s->parent, parent, RELAXED);
    atomic_store_explicit(&s->name, name, RELAXED);
    atomic_store_explicit(&s->frame, 0, RELAXED);
    atomic_store_explicit(&s->state, GR_REG_NEW, RELAXED);
    end_slot(r, s);
    if (gid > atomic_load_explicit(&r->high, RELAXED))
        atomic_store_explicit(&r->high, gid, memory_order_release);
    writer_unlock(r);
}

int gr_registry_switch(gr_registry *r, uint32_t origin, uintptr_t origin_frame, int origin_dead,
                       uint32_t target, uint32_t target_parent, uint64_t *wait_ns)
{
    int contended = writer_lock(r, wait_ns);
    r->updates++;
    if (origin && origin < r->cap) {
        gr_reg_slot *s = &r->slots[origin];
        begin_slot(r, s);
        atomic_store_explicit(&s->frame, origin_dead ? 0 : origin_frame, RELAXED);
        atomic_store_explicit(&s->state, origin_dead ? GR_REG_DEAD : GR_REG_SUSPENDED, RELAXED);
        end_slot(r, s);
    }
    if (target && target < r->cap) {
        gr_reg_slot *s = &r->slots[target];
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
    e->state = atomic_load_explicit(&s->state, RELAXED);
    e->parent = atomic_load_explicit(&s->parent, RELAXED);
    e->name = atomic_load_explicit(&s->name, RELAXED);
    e->frame = atomic_load_explicit(&s->frame, RELAXED);
}

uint32_t gr_registry_copy(gr_registry *r, gr_reg_entry *out, uint32_t max, uint64_t *torn)
{
    uint32_t high = atomic_load_explicit(&r->high, memory_order_acquire);
    uint32_t n = 0;
    for (uint32_t gid = 1; gid <= high && gid < r->cap && n < max; gid++) {
        gr_reg_slot *s = &r->slots[gid];
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
        if (e->state == GR_REG_EMPTY || e->state == GR_REG_DEAD)
            continue;
        e->gid = gid;
        n++;
    }
    return n;
}
