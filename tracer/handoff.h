/* handoff.h - a single-producer, single-consumer ring of variable-size
 * byte entries, shared by two threads without a lock.
 *
 * The sampler thread (producer, never takes the GIL) hands its encoded
 * samples to the recorder (consumer, holds the GIL), which turns code
 * addresses into code ids and writes them into the side channel during the
 * run (docs/FORMAT.md §5), so that neither side keeps the run's samples.
 *
 * The ring is allocated once (gr_handoff_init) and never resized: pushing
 * and taking entries neither allocates nor makes a system call nor waits.
 * A push that finds no room fails at once (the producer keeps the entry
 * and tries again later); the consumer never blocks the producer.
 *
 * Layout: positions grow without bound (64 bits) and are taken modulo the
 * capacity.  An entry is a 4-byte length (host order) and its bytes,
 * padded to 4; an entry that would not fit before the end of the buffer is
 * preceded by a wrap marker (length GR_HANDOFF_WRAP) and starts at offset
 * 0.  `tail` (written by the producer, release) says how far entries are
 * complete; `head` (written by the consumer, release) how far they have
 * been consumed.  C11 atomics; no other shared state.
 */
#ifndef GR_HANDOFF_H
#define GR_HANDOFF_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define GR_HANDOFF_WRAP 0xFFFFFFFFu

typedef struct {
    unsigned char *buf;       /* owned, cap bytes */
    size_t cap;               /* a multiple of 4, at least 64 */
    _Atomic uint64_t head;    /* bytes consumed (consumer writes) */
    _Atomic uint64_t tail;    /* bytes published (producer writes) */
} gr_handoff;

/* Allocate a ring of cap bytes (rounded up to a multiple of 4, at least
 * 64) into *h.  Returns 0, or -1 if memory runs out (*h is then zeroed,
 * and gr_handoff_free may still be called on it). */
int gr_handoff_init(gr_handoff *h, size_t cap);

/* Free the ring's buffer and zero *h.  Neither thread may use it any more. */
void gr_handoff_free(gr_handoff *h);

/* Greatest entry, in bytes, that a push can ever take: (cap - 8) / 2,
 * rounded down to a multiple of 4 (room for a wrap marker and the entry
 * whatever the position). */
static inline size_t gr_handoff_max_entry(const gr_handoff *h)
{
    return h->cap < 8 ? 0 : ((h->cap - 8) / 2) & ~(size_t)3;
}

/* Producer: append the n bytes at p as one entry.  Returns 0, or -1 when
 * there is no room now (the consumer has not taken enough yet) or n is
 * above gr_handoff_max_entry (never fits): nothing is written then.
 * Never blocks, never allocates. */
int gr_handoff_push(gr_handoff *h, const void *p, size_t n);

/* Consumer: the oldest entry not yet taken, or NULL when there is none;
 * *n receives its length.  The bytes stay valid and unchanged until
 * gr_handoff_pop. */
const unsigned char *gr_handoff_peek(gr_handoff *h, size_t *n);

/* Consumer: release the entry returned by the last gr_handoff_peek (its
 * room becomes the producer's again). */
void gr_handoff_pop(gr_handoff *h);

/* Bytes published and not yet consumed (either thread; a snapshot). */
static inline uint64_t gr_handoff_used(const gr_handoff *h)
{
    /* head first: it never passes the tail read after it */
    uint64_t head = atomic_load_explicit(&h->head, memory_order_acquire);
    return atomic_load_explicit(&h->tail, memory_order_acquire) - head;
}

#endif
