/* registry.h - the greenlet registry shared by the switch path and the sampler.
 *
 * The design reproduced here is the one of the second seed document
 * (dd-trace-py PR #16657): a native sampler thread keeps a map greenlet ->
 * {name, frame, parent}, written on every greenlet switch and read by the
 * sampler.  Pure C (pthreads, C11 atomics), no Python: the frame is an
 * address the sampler reads through unwind.h, never dereferenced here.
 *
 * Slots are indexed by gid (dense, from 1) in an array of fixed capacity
 * chosen at creation, so neither side ever allocates while the registry is
 * in use.  Writers are the switch callback (GIL held, never released);
 * the reader is the sampler thread (never takes the GIL).
 *
 * Three ways to share the slots, one per sampler mode:
 *  - GR_REG_TWO_PHASE: writer and reader take `lock`; the reader holds it
 *    only to copy the slots (phase 1) and unwinds after releasing it;
 *  - GR_REG_HOLD_LOCK: same lock, but the reader unwinds while holding it
 *    (the design the seed fixed, kept to reproduce the stall);
 *  - GR_REG_SEQLOCK: no lock; each slot has a sequence counter, odd while
 *    the writer changes it; the reader retries a torn copy and counts it.
 */
#ifndef GR_REGISTRY_H
#define GR_REGISTRY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

enum gr_reg_mode { GR_REG_TWO_PHASE = 0, GR_REG_HOLD_LOCK = 1, GR_REG_SEQLOCK = 2 };

/* Slot states. */
enum gr_reg_state { GR_REG_EMPTY = 0, GR_REG_NEW = 1, GR_REG_RUNNING = 2, GR_REG_SUSPENDED = 3, GR_REG_DEAD = 4 };

/* One greenlet.  Plain fields are written under the lock (lock modes) or
 * between two increments of seq (seqlock mode); they are relaxed atomics
 * so that the seqlock reader's racy copy is defined behaviour. */
typedef struct {
    _Atomic uint32_t seq;     /* seqlock mode: odd while being written */
    _Atomic uint32_t state;   /* enum gr_reg_state */
    _Atomic uint32_t parent;  /* gid of the parent, 0 none */
    _Atomic uint32_t name;    /* string id of the greenlet's name, 0 none */
    _Atomic uintptr_t frame;  /* address of the top PyFrameObject while
                                 suspended, else 0; borrowed, may be stale */
} gr_reg_slot;

/* A reader's copy of a slot. */
typedef struct {
    uint32_t gid, state, parent, name;
    uintptr_t frame;
} gr_reg_entry;

typedef struct {
    enum gr_reg_mode mode;
    uint32_t cap;             /* slots 1..cap-1 usable */
    gr_reg_slot *slots;       /* owned, cap entries */
    _Atomic uint32_t high;    /* highest gid registered */
    pthread_mutex_t lock;     /* lock modes */
    /* Writer-side statistics (written by the GIL-holding writer only). */
    uint64_t updates;         /* switches recorded */
    uint64_t contended;       /* lock acquisitions that had to wait */
    uint64_t overflow;        /* greenlets beyond capacity, not tracked */
} gr_registry;

/* Create a registry for gids below `cap` (at least 2) in `mode`.  Returns a
 * new registry owned by the caller, or NULL if memory runs out. */
gr_registry *gr_registry_new(enum gr_reg_mode mode, uint32_t cap);

/* Free it.  No reader or writer may use it any more.  r may be NULL. */
void gr_registry_free(gr_registry *r);

/* Writer: greenlet gid appears (state GR_REG_NEW) with its parent and name.
 * Gids at or above capacity are counted in `overflow` and ignored. */
void gr_registry_add(gr_registry *r, uint32_t gid, uint32_t parent, uint32_t name);

/* Writer, on every switch: origin becomes suspended at origin_frame (or
 * dead when origin_dead), target becomes running with parent
 * target_parent.  *wait_ns receives the time spent waiting for the lock
 * (0 when it was free: the clock is read only when the lock was busy; a
 * busy lock is retried for up to 200 us before the writer sleeps on it,
 * see SPIN_NS in registry.c), less the time the thread sat in the run
 * queue meanwhile (/proc/thread-self/schedstat, when readable), and
 * the return value is 1 if the acquisition was contended, else 0. */
int gr_registry_switch(gr_registry *r, uint32_t origin, uintptr_t origin_frame, int origin_dead,
                       uint32_t target, uint32_t target_parent, uint64_t *wait_ns);

/* Reader: copy every registered slot into out[0..max) (gid order) and
 * return the count.  In lock modes the caller must hold r->lock (see
 * gr_registry_lock); in seqlock mode no lock is taken and *torn counts the
 * copies that had to be retried, one per retry; a slot still being written
 * after 4 tries is left out of the copy (it costs 4).  No allocation, no
 * system call. */
uint32_t gr_registry_copy(gr_registry *r, gr_reg_entry *out, uint32_t max, uint64_t *torn);

/* Reader: take and release the lock (lock modes). */
static inline void gr_registry_lock(gr_registry *r) { pthread_mutex_lock(&r->lock); }
static inline void gr_registry_unlock(gr_registry *r) { pthread_mutex_unlock(&r->lock); }

/* Monotonic clock in ns. */
uint64_t gr_now_ns(void);

#endif
