/* idmap.c - open-addressing hash map of id pairs (idmap.h). */
#include "idmap.h"

#include "text.h"

#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t a, uint64_t b)
{
    uint64_t x = a * UINT64_C(0x9E3779B97F4A7C15) ^ (b + UINT64_C(0x632BE59BD9B4E019));
    x ^= x >> 30;
    x *= UINT64_C(0xBF58476D1CE4E5B9);
    x ^= x >> 27;
    x *= UINT64_C(0x94D049BB133111EB);
    return x ^ (x >> 31);
}

/* Slot holding (a, b), or the empty slot where it would go. */
static gr_idmap_slot *find(gr_idmap_slot *slots, size_t cap, uint64_t a, uint64_t b)
{
    size_t i = (size_t)mix(a, b) & (cap - 1);
    for (;;) {
        gr_idmap_slot *s = &slots[i];
        if (s->value == 0 || (s->a == a && s->b == b))
            return s;
        i = (i + 1) & (cap - 1);
    }
}

int gr_idmap_get(const gr_idmap *m, uint64_t a, uint64_t b, size_t *out)
{
    if (m->cap == 0)
        return 0;
    gr_idmap_slot *s = find(m->slots, m->cap, a, b);
    if (s->value == 0)
        return 0;
    *out = s->value - 1;
    return 1;
}

void gr_idmap_put(gr_idmap *m, uint64_t a, uint64_t b, size_t value)
{
    if ((m->n + 1) * 4 > m->cap * 3) { /* keep load under 3/4 */
        size_t cap = 0; /* grows to exactly the wanted power of two */
        gr_idmap_slot *slots = gr_xgrow(NULL, &cap, m->cap ? m->cap * 2 : 16, sizeof *slots);
        memset(slots, 0, cap * sizeof *slots);
        for (size_t i = 0; i < m->cap; i++)
            if (m->slots[i].value)
                *find(slots, cap, m->slots[i].a, m->slots[i].b) = m->slots[i];
        free(m->slots);
        m->slots = slots;
        m->cap = cap;
    }
    gr_idmap_slot *s = find(m->slots, m->cap, a, b);
    if (s->value == 0) {
        s->a = a;
        s->b = b;
        m->n++;
    }
    s->value = value + 1;
}

int gr_idmap_del(gr_idmap *m, uint64_t a, uint64_t b)
{
    if (m->cap == 0)
        return 0;
    gr_idmap_slot *s = find(m->slots, m->cap, a, b);
    if (s->value == 0)
        return 0;
    /* Backward-shift deletion (linear probing): move later entries of the
     * run into the hole when their home slot is not between the hole and
     * them, so that every entry stays reachable from its home without
     * tombstones. */
    size_t mask = m->cap - 1, hole = (size_t)(s - m->slots), j = hole;
    for (;;) {
        j = (j + 1) & mask;
        gr_idmap_slot *n = &m->slots[j];
        if (n->value == 0)
            break;
        size_t home = (size_t)mix(n->a, n->b) & mask;
        /* n may move to the hole iff home is not in (hole, j] cyclically */
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            m->slots[hole] = *n;
            hole = j;
        }
    }
    m->slots[hole].value = 0;
    m->n--;
    return 1;
}

void gr_idmap_free(gr_idmap *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}
