/* registry.h - the greenlet registry shared by the switch path and the sampler.
 *
 * The design reproduced here is the one of the second seed document
 * (dd-trace-py PR #16657): a native sampler thread keeps a map greenlet ->
 * {name, frame, parent}, written on every greenlet switch and read by the
 * sampler.  Pure C (pthreads, C11 atomics), no Python: the frame is an
 * address the sampler reads through unwind.h, never dereferenced here.
 *
 * Slots live in an array of fixed capacity chosen at creation, so neither
 * side ever allocates or frees while the registry is in use.  A greenlet
 * takes a free slot when it appears (gr_registry_add) and gives it back
 * when it dies or is freed (gr_registry_switch with origin_dead,
 * gr_registry_release), so the capacity bounds the greenlets alive at
 * once, not the greenlets created over the run (a service that creates
 * millions over its life keeps its sampler coverage).  The writer finds a
 * gid's slot in a hash table of its own, sized at creation (the reader
 * never looks at it).  Each slot holds the gid of its greenlet: the gid is
 * never reused within a recording, so it is the slot's generation, and a
 * reader that copied a slot checks it after unwinding (gr_registry_holds)
 * to detect a slot given to another greenlet meanwhile.  Writers are the
 * switch callback (GIL held, never released); the reader is the sampler
 * thread (never takes the GIL).
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
#include <stddef.h>
#include <stdint.h>

enum gr_reg_mode { GR_REG_TWO_PHASE = 0, GR_REG_HOLD_LOCK = 1, GR_REG_SEQLOCK = 2 };

/* Slot states. */
enum gr_reg_state { GR_REG_EMPTY = 0, GR_REG_NEW = 1, GR_REG_RUNNING = 2, GR_REG_SUSPENDED = 3, GR_REG_DEAD = 4 };

/* One greenlet.  Plain fields are written under the lock (lock modes) or
 * between two increments of seq (seqlock mode); they are relaxed atomics
 * so that the seqlock reader's racy copy is defined behaviour. */
typedef struct {
    _Atomic uint32_t seq;     /* seqlock mode: odd while being written */
    _Atomic uint32_t gid;     /* the greenlet owning it, 0 free: its generation */
    _Atomic uint32_t state;   /* enum gr_reg_state */
    _Atomic uint32_t parent;  /* gid of the parent, 0 none */
    _Atomic uint32_t name;    /* string id of the greenlet's name, 0 none */
    _Atomic uintptr_t frame;  /* address of the top PyFrameObject while
                                 suspended, else 0; borrowed, may be stale */
} gr_reg_slot;

/* A reader's copy of a slot: gid is the slot's owner when copied, slot
 * its index (for gr_registry_holds). */
typedef struct {
    uint32_t gid, state, parent, name, slot;
    uintptr_t frame;
} gr_reg_entry;

/* The writer's gid -> slot table: open addressing, linear probing, at
 * most half full (sized at creation for cap - 1 live greenlets). */
typedef struct {
    uint32_t gid, slot;       /* gid 0: empty */
} gr_reg_map;

typedef struct {
    enum gr_reg_mode mode;
    uint32_t cap;             /* slots 1..cap-1 usable: cap - 1 live greenlets */
    gr_reg_slot *slots;       /* owned, cap entries */
    _Atomic uint32_t high;    /* highest slot index ever taken (never decreases) */
    pthread_mutex_t lock;     /* lock modes */
    /* Writer-side state (the GIL-holding writer only; never read by the
     * sampler thread). */
    gr_reg_map *map;          /* owned, map_mask + 1 entries */
    uint32_t map_mask;
    uint32_t *free_slots;     /* owned, cap entries: a stack of released slots */
    uint32_t nfree;
    uint32_t live;            /* slots taken now */
    uint32_t peak_live;       /* greatest `live` so far */
    /* Writer-side statistics (written by the GIL-holding writer only). */
    uint64_t updates;         /* switches recorded */
    uint64_t contended;       /* lock acquisitions that had to wait */
    uint64_t overflow;        /* greenlets that found every slot taken (more
                                 than cap - 1 alive at once), not tracked */
    uint64_t reused;          /* slots taken again after a release */
} gr_registry;

/* Create a registry for up to cap - 1 live greenlets (cap at least 2; at
 * most 2^30) in `mode`.  Memory, all allocated here: 32 bytes per slot
 * (slot), 4 (free stack) and 16 to 32 (the writer's table: the power of
 * two at or above 2 x cap entries of 8 bytes), 52 bytes per slot for a
 * power-of-two cap such as the default 65,536 (3.4 MB).  Returns a new registry owned by the caller, or NULL if
 * memory runs out. */
gr_registry *gr_registry_new(enum gr_reg_mode mode, uint32_t cap);

/* Bytes allocated by registry r (fixed for its life). */
size_t gr_registry_bytes(const gr_registry *r);

/* Free it.  No reader or writer may use it any more.  r may be NULL. */
void gr_registry_free(gr_registry *r);

/* Writer: greenlet gid (never 0) appears (state GR_REG_NEW) with its
 * parent and name, in its slot if it has one, else in a free slot (a
 * released one first).  With every slot taken (cap - 1 greenlets alive)
 * it is counted in `overflow` and not tracked (the recorder writes the
 * count in a META record at stop()). */
void gr_registry_add(gr_registry *r, uint32_t gid, uint32_t parent, uint32_t name);

/* Writer: greenlet gid died or was freed: its slot is emptied (gid 0,
 * state GR_REG_EMPTY) and free for another greenlet.  A gid without a
 * slot (untracked, or released already) is ignored. */
void gr_registry_release(gr_registry *r, uint32_t gid);

/* Writer, on every switch: origin becomes suspended at origin_frame (or,
 * when origin_dead, is released as by gr_registry_release), target
 * becomes running with parent target_parent; a gid without a slot is
 * ignored.  *wait_ns receives the time spent waiting for the lock
 * (0 when it was free: the clock is read only when the lock was busy; a
 * busy lock is retried for up to 200 us before the writer sleeps on it,
 * see SPIN_NS in registry.c), less the time the thread sat in the run
 * queue meanwhile (/proc/thread-self/schedstat, when readable), and
 * the return value is 1 if the acquisition was contended, else 0. */
int gr_registry_switch(gr_registry *r, uint32_t origin, uintptr_t origin_frame, int origin_dead,
                       uint32_t target, uint32_t target_parent, uint64_t *wait_ns);

/* Reader: copy every taken slot into out[0..max) (slot order, each with
 * its gid and slot index) and return the count.  In lock modes the caller must hold r->lock (see
 * gr_registry_lock); in seqlock mode no lock is taken and *torn counts the
 * copies that had to be retried, one per retry; a slot still being written
 * after 4 tries is left out of the copy (it costs 4).  No allocation, no
 * system call. */
uint32_t gr_registry_copy(gr_registry *r, gr_reg_entry *out, uint32_t max, uint64_t *torn);

/* Reader, after using a copy e (unwinding its frame): whether slot
 * e->slot still belongs to greenlet e->gid.  0: the greenlet died or was
 * freed, and its slot may be another greenlet's now, since the copy (the
 * stack read meanwhile may be another greenlet's or freed memory: drop
 * it).  Gids are never reused, so the gid is the slot's generation.  One
 * atomic load, no lock, any mode. */
static inline int gr_registry_holds(const gr_registry *r, uint32_t slot, uint32_t gid)
{
    /* the reads of the copy's frames before the load (seqlock idiom) */
    atomic_thread_fence(memory_order_acquire);
    return slot < r->cap && atomic_load_explicit(&r->slots[slot].gid, memory_order_relaxed) == gid;
}

/* Reader: take and release the lock (lock modes). */
static inline void gr_registry_lock(gr_registry *r) { pthread_mutex_lock(&r->lock); }
static inline void gr_registry_unlock(gr_registry *r) { pthread_mutex_unlock(&r->lock); }

/* Monotonic clock in ns. */
uint64_t gr_now_ns(void);

#endif
