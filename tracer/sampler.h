/* sampler.h - reference greenlet sampler: a native thread that samples every
 * tracked greenlet's stack at a fixed interval.
 *
 * It reproduces the design of the second seed document (dd-trace-py's stack
 * profiler for gevent) so that its failure can be replayed and checked:
 * the switch path writes a registry (registry.h) under a lock that the
 * sampler also takes.  The sampler thread never takes the GIL; it reads
 * frames through unwind.h.  Pure C apart from what unwind.c reads.
 *
 * Modes (enum gr_reg_mode):
 *  - two-phase (default, the fix of dd-trace-py PR #16657): phase 1 copies
 *    the slots under the lock (no system call, no allocation, no foreign
 *    memory read); phase 2 unwinds with the lock released;
 *  - hold-lock: unwinds while holding the lock (the design before the fix);
 *  - seqlock: no lock at all; the writer bumps a per-slot sequence counter.
 *
 * Work per sample: two-phase and seqlock unwind at most `keep` suspended
 * greenlets per sample (round robin over samples), as dd-trace-py unwinds
 * at most 50 leaf greenlets per sample; hold-lock unwinds every suspended
 * greenlet under the lock, as the design before the fix did (that is its
 * stall: O(greenlets x depth) under the lock).  Unwinding all 2,000 x 50
 * frames of the seed scenario takes 30-150 ms here (process_vm_readv of
 * about 3 pages per greenlet), so an uncapped sampler cannot keep a 5 ms
 * interval and keeps one of the machine's cores busy.
 */
#ifndef GR_SAMPLER_H
#define GR_SAMPLER_H

#include "handoff.h"
#include "registry.h"
#include "unwind.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Greatest depth read per greenlet stack. */
#define GR_SAMPLE_DEPTH 256

/* Bounds of the ring's capacity cap (gr_sampler_start's ring_max,
 * GREENREPLAY_SAMPLER_RING_MAX), in bytes: 64 MiB by default and at most,
 * 1 KiB at least. */
#define GR_SAMPLER_RING_CAP (64u << 20)
#define GR_SAMPLER_RING_MAX_LEAST 1024u

/* Greatest `keep` (stacks stored per sample) gr_sampler_start takes.  The
 * sampler's memory grows with it: `codes` is keep x GR_SAMPLE_DEPTH
 * addresses (2 KiB per stack), and the ring and the own buffer are each
 * raised to four of the largest samples (112 + 2,580 x keep bytes, with its length and tick) up to
 * GR_SAMPLER_RING_CAP.  At 8192: 16 MiB of addresses, ring and buffer
 * 64 MiB each, 144 MiB at most; its largest sample (20.2 MiB) still fits
 * the 64 MiB ring's greatest entry, so only a ring_max makes samples too
 * large.  dd-trace-py unwinds 50 stacks per sample; the default is 64. */
#define GR_SAMPLER_KEEP_MAX 8192u

typedef struct {
    gr_registry *reg;           /* borrowed; outlives the sampler */
    const _Atomic uint64_t *events; /* borrowed: count of indexed records */
    uint64_t interval_ns;       /* sampling period */
    uint32_t keep;              /* stacks unwound and stored per sample (hold-lock:
                                   all unwound, `keep` stored) */
    uint64_t t0;                /* start time, ns */

    pthread_t thread;
    _Atomic int stop;
    int running;
    /* Dozing (sampler.c, doze): while the sampler thins, the ring is full
     * and the program writes no record, the thread sleeps until its next
     * sampling time that keeps a sample, not every interval; a drain that
     * takes samples wakes it (drains, dozing, wake_req). */
    struct {
        pthread_mutex_t wake_lock;  /* with `wake`: lets stop() and a drain cut a
                                       sleep short */
        pthread_cond_t wake;
        _Atomic uint64_t drains;    /* drains that took samples while running
                                       (consumer writes) */
        _Atomic int dozing;         /* the thread is in a doze (it writes) */
        int wake_req;               /* under wake_lock: a drain took samples
                                       during the doze */
        uint64_t drains_seen;       /* sampler thread: `drains` and the record
                                       count at the last sampling time */
        uint64_t events_seen;
        uint64_t wakes;             /* sampling times the thread woke for (a
                                       doze's are one); atomic stores */
        uint64_t dozed;             /* sampling times slept through (also in
                                       `thinned`); atomic stores */
        uint64_t woken;             /* dozes cut short by a drain; atomic stores */
    } doze;

    /* Owned by the sampler thread until gr_sampler_stop returns. */
    gr_reg_entry *snap;         /* phase-1 copy, reg->cap entries */
    uintptr_t *codes;           /* keep x GR_SAMPLE_DEPTH code addresses */
    gr_unwind_job *jobs;        /* reg->cap unwind jobs */
    uint32_t *gids;             /* gid of each job */
    uint32_t *slots;            /* registry slot of each job (its gid checked
                                   after the unwind: gr_registry_holds) */
    uint64_t recycled;          /* stacks dropped: their slot was released
                                   (greenlet died or freed) while unwound */
    unsigned char *out;         /* samples not handed over yet, each a 4-byte
                                   length n (host order) and n bytes: the
                                   8-byte tick of its sampling time (host
                                   order, for the consumer's thinning) and
                                   the sample (see gr_sampler_drain); the
                                   ring's entries are those n bytes;
                                   normally the one
                                   being taken, more when the handoff ring
                                   was full.  Allocated once at start,
                                   out_cap bytes: never grows */
    size_t out_len, out_cap;
    size_t largest;             /* bound of one entry of `out` (length
                                   prefix and sample) that `keep` allows */
    size_t out_peak;            /* greatest out_len seen (atomic: read by
                                   _sampler_registry() on another thread) */
    uint64_t nsamples;          /* samples taken and kept: what the consumer
                                   gets, the side channel's trailer count
                                   (atomic: read by other threads) */
    gr_handoff ho;              /* samples handed to the consumer (handoff.h) */
    /* Samples lost, never silently (the recorder writes them as META
     * records at stop: module.c).  Atomic stores: read by other threads. */
    uint64_t lost_full;         /* sampling times skipped: the ring full,
                                   `out` with less room than `largest` and
                                   fewer than two samples to thin: out_cap
                                   below `largest` plus the sample held,
                                   which needs a ring_max below two of the
                                   largest (without one out_cap >= 2 x
                                   largest for every keep up to
                                   GR_SAMPLER_KEEP_MAX) */
    uint64_t lost_large;        /* samples unwound, then dropped: larger
                                   than the ring's greatest entry (half of
                                   it); as rare: only a ring_max below two
                                   of the largest (half of 64 MiB holds
                                   the largest of every keep); not in
                                   nsamples */
    /* Thinning (gr_sampler_drain): while nobody drains and the own
     * buffer has filled, a sample is taken only every `stride` sampling
     * times, and the consumer thins the ring's samples to the same
     * stride.  Atomic stores (nsamples and thinned: atomic additions, as
     * both threads change them): read by other threads. */
    uint64_t ticks;             /* sampling times so far: each is a sample
                                   kept (nsamples), thinned, lost_full or
                                   lost_large (a doze's counted when it
                                   ends) */
    uint64_t stride;            /* 1, or a power of two while thinning */
    uint64_t stride_peak;       /* greatest stride so far */
    uint64_t last_kept;         /* tick of the newest sample kept */
    uint64_t thinned;           /* sampling times of thinned stretches
                                   without a kept sample: skipped between
                                   two kept ones (slept through: dozed),
                                   dropped from the own buffer when it was
                                   thinned, or dropped from the ring by the
                                   consumer (gr_sampler_drain) */
    uint32_t rr;                /* round-robin start for stored stacks */
} gr_sampler;

/* Start a sampler thread over `reg`, sampling every interval_ns (>= 100
 * µs), unwinding (hold-lock: storing) at most `keep` stacks per sample.  `events` is read
 * (relaxed) to stamp each sample with the trace's record count.
 * ring_bytes: capacity of the handoff ring and of the sampler's own buffer
 * each, in bytes; 0 for the default (see gr_sampler_drain); any value is
 * raised to four of the largest samples and cut to ring_max (a smaller one
 * is for tests: GREENREPLAY_SAMPLER_RING, module.c).  ring_max: the cap
 * of the ring's capacity in bytes, 0 for GR_SAMPLER_RING_CAP (64 MiB);
 * kept within [GR_SAMPLER_RING_MAX_LEAST, GR_SAMPLER_RING_CAP] (module.c
 * refuses values outside: GREENREPLAY_SAMPLER_RING_MAX).  A cap below four
 * of the largest samples lets a deep sample exceed the ring's greatest
 * entry: such samples are dropped and counted in lost_large (the tests
 * use it to make them).  The own buffer holds at least one largest
 * sample.  Returns a new sampler owned by the caller, or NULL (errno
 * set: EINVAL for interval_ns below 100 µs or keep over
 * GR_SAMPLER_KEEP_MAX, ENOMEM, or pthread_create's error). */
gr_sampler *gr_sampler_start(gr_registry *reg, const _Atomic uint64_t *events,
                             uint64_t interval_ns, uint32_t keep, size_t ring_bytes,
                             size_t ring_max);

/* Stop and join the thread (samples not handed over yet stay for
 * gr_sampler_drain). */
void gr_sampler_stop(gr_sampler *s);

/* Consumer (one thread other than the sampler's, the recorder holding the
 * GIL): call fn(ctx, p, n) for every sample handed over and not drained
 * yet, oldest first, then release them; after gr_sampler_stop, also for
 * the samples the sampler thread still held.  p/n is valid during the call
 * only.  Returns the number of samples passed.  Never blocks the sampler:
 * the samples come through a lock-free ring (handoff.h) that the sampler
 * thread fills after each sample; when it is full (the consumer has not
 * drained for a while), the sampler keeps its samples in its own buffer
 * and hands them over later.  The ring's capacity is fixed at
 * gr_sampler_start: 1 MiB, or four of the largest samples `keep` allows
 * when that is more (at most 64 MiB, or ring_max); the own buffer has the same
 * capacity, allocated once.  When both are full (the program recorded
 * nothing for that long: idle in C, blocked, or profile=False without a
 * switch), the sampler thins its own buffer: it keeps every other sample
 * there, counting from the newest, and from then on takes a sample only
 * every s->stride sampling times (2, then 4, 8... each time the buffer
 * fills again); meanwhile its thread sleeps through the sampling times it
 * would not take while no record is written (a drain that takes samples
 * wakes it: sampling at the full rate resumes at the next sampling time).
 * The ring holds the start of the stretch at the full rate, the own
 * buffer samples evenly spread over the rest, up to its newest sampling
 * time, in memory that stays within twice the ring's capacity however
 * long the program idles; this function thins the ring's samples to the
 * stride reached (read once per call: a sample is passed when it is at
 * least `stride` sampling times after the last one passed in the same
 * call, the first always), so that the samples passed are spread evenly
 * over the whole stretch, its start included.  Sampling times without a
 * kept sample are counted in s->thinned (never silently: stop() writes
 * META sampler_samples_thinned, after the last drain); the stride returns
 * to 1 once the ring has room for every sample of the own buffer again
 * (the consumer drained it: the own buffer is empty at a sampling time).
 * Only an own buffer that holds fewer than two samples and less room than
 * the largest cannot be thinned: the sampling time is then skipped and
 * counted in s->lost_full (META sampler_samples_lost_full).  That needs
 * out_cap below the largest sample plus the one held, so a ring_max below
 * two of the largest samples: without one, out_cap >= min(64 MiB, 4 x
 * largest + 64) >= 2 x largest for every keep (at GR_SAMPLER_KEEP_MAX the
 * largest is 20.2 MiB).  A sample above the ring's greatest entry (half of it: again only
 * with such a ring_max) is dropped when it is taken and counted in
 * s->lost_large, not in s->nsamples: the samples passed here are exactly
 * s->nsamples (thinned ones are subtracted from it as they are dropped).
 *
 * Each sample is a sequence of varints:
 *   idx_begin idx_end t_ns hold_ns greenlets frames frames_under_lock
 *   failed torn nstacks { gid depth code_address... (innermost first) }
 * where idx_begin/idx_end are the record counts at the start of phase 1
 * and after phase 2, t_ns the time since start, hold_ns how long the lock
 * was held (seqlock: the copy), greenlets the slots copied, frames the
 * frames read, frames_under_lock those read while holding the lock,
 * failed the failed reads plus the stacks dropped because their
 * greenlet's registry slot was released or given to another greenlet
 * while they were being unwound (s->recycled counts those alone), torn
 * the torn seqlock copies. */
uint64_t gr_sampler_drain(gr_sampler *s, void (*fn)(void *ctx, const unsigned char *p, size_t n),
                          void *ctx);

/* Whether samples wait for gr_sampler_drain in the ring (one atomic load
 * pair; any thread). */
static inline int gr_sampler_pending(const gr_sampler *s)
{
    return gr_handoff_used(&s->ho) != 0;
}

/* Free a stopped sampler.  s may be NULL. */
void gr_sampler_free(gr_sampler *s);

/* Parse "two-phase", "hold-lock" or "seqlock"; -1 if unknown. */
int gr_sampler_mode(const char *name);

/* Name of a mode. */
const char *gr_sampler_mode_name(int mode);

#endif
