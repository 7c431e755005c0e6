/* handoff.c - lock-free single-producer, single-consumer entry ring (see
 * handoff.h). */
#include "handoff.h"

#include <stdlib.h>
#include <string.h>

#define PAD4(n) (((n) + 3u) & ~(size_t)3)

int gr_handoff_init(gr_handoff *h, size_t cap)
{
    memset(h, 0, sizeof *h);
    cap = PAD4(cap < 64 ? 64 : cap);
    h->buf = malloc(cap);
    if (!h->buf)
        return -1;
    h->cap = cap;
    atomic_init(&h->head, 0);
    atomic_init(&h->tail, 0);
    return 0;
}

void gr_handoff_free(gr_handoff *h)
{
    free(h->buf);
    memset(h, 0, sizeof *h);
}

static inline void put_len(unsigned char *at, uint32_t v) { memcpy(at, &v, sizeof v); }

static inline uint32_t get_len(const unsigned char *at)
{
    uint32_t v;
    memcpy(&v, at, sizeof v);
    return v;
}

int gr_handoff_push(gr_handoff *h, const void *p, size_t n)
{
    if (!h->buf || n > gr_handoff_max_entry(h))
        return -1;
    size_t need = 4 + PAD4(n);
    uint64_t tail = atomic_load_explicit(&h->tail, memory_order_relaxed); /* ours */
    uint64_t head = atomic_load_explicit(&h->head, memory_order_acquire);
    size_t room = h->cap - (size_t)(tail - head);
    size_t pos = (size_t)(tail % h->cap), before_end = h->cap - pos;
    size_t skip = before_end < need ? before_end : 0; /* wrap: marker, then from 0 */
    if (room < skip + need)
        return -1;
    if (skip) {
        put_len(h->buf + pos, GR_HANDOFF_WRAP); /* before_end >= 4: all is 4-aligned */
        pos = 0;
    }
    put_len(h->buf + pos, (uint32_t)n);
    memcpy(h->buf + pos + 4, p, n);
    /* The bytes before the new tail (release: the consumer's acquire). */
    atomic_store_explicit(&h->tail, tail + skip + need, memory_order_release);
    return 0;
}

const unsigned char *gr_handoff_peek(gr_handoff *h, size_t *n)
{
    if (!h->buf)
        return NULL;
    uint64_t head = atomic_load_explicit(&h->head, memory_order_relaxed); /* ours */
    uint64_t tail = atomic_load_explicit(&h->tail, memory_order_acquire);
    while (head < tail) {
        size_t pos = (size_t)(head % h->cap);
        uint32_t len = get_len(h->buf + pos);
        if (len == GR_HANDOFF_WRAP) {
            head += h->cap - pos;
            atomic_store_explicit(&h->head, head, memory_order_release);
            continue;
        }
        *n = len;
        return h->buf + pos + 4;
    }
    return NULL;
}

void gr_handoff_pop(gr_handoff *h)
{
    uint64_t head = atomic_load_explicit(&h->head, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&h->tail, memory_order_acquire);
    if (head >= tail)
        return;
    size_t pos = (size_t)(head % h->cap);
    uint32_t len = get_len(h->buf + pos);
    if (len == GR_HANDOFF_WRAP) /* peek skipped it already; be safe */
        return;
    /* Our reads of the entry before the room goes back (release). */
    atomic_store_explicit(&h->head, head + 4 + PAD4((size_t)len), memory_order_release);
}
