/* idbits.c - sparse bit planes by id (idbits.h): an open-addressing table
 * of 64-id blocks, linear probing, load kept under 3/4. */
#include "idbits.h"

#include "text.h"

#include <stdlib.h>
#include <string.h>

static size_t home(uint64_t key1, size_t cap)
{
    uint64_t x = key1 * UINT64_C(0x9E3779B97F4A7C15);
    return (size_t)(x ^ (x >> 29)) & (cap - 1);
}

static gr_idbits_block *slot(gr_idbits_block *b, size_t cap, uint64_t key1)
{
    for (size_t i = home(key1, cap);; i = (i + 1) & (cap - 1))
        if (b[i].key1 == 0 || b[i].key1 == key1)
            return &b[i];
}

gr_idbits_block *gr_idbits_find(const gr_idbits *s, uint64_t id)
{
    if (!s->cap)
        return NULL;
    gr_idbits_block *b = slot(s->b, s->cap, (id >> 6) + 1);
    return b->key1 ? b : NULL;
}

gr_idbits_block *gr_idbits_block_for(gr_idbits *s, uint64_t id)
{
    uint64_t key1 = (id >> 6) + 1;
    if ((s->n + 1) * 4 > s->cap * 3) {
        size_t cap = 0;
        gr_idbits_block *nb = gr_xgrow(NULL, &cap, s->cap ? s->cap * 2 : 16, sizeof *nb);
        memset(nb, 0, cap * sizeof *nb);
        for (size_t i = 0; i < s->cap; i++)
            if (s->b[i].key1)
                *slot(nb, cap, s->b[i].key1) = s->b[i];
        free(s->b);
        s->b = nb;
        s->cap = cap;
    }
    gr_idbits_block *b = slot(s->b, s->cap, key1);
    if (!b->key1) {
        memset(b, 0, sizeof *b);
        b->key1 = key1;
        s->n++;
    }
    return b;
}

int gr_idbits_test(const gr_idbits *s, uint64_t id, int plane)
{
    return gr_idbits_bit(gr_idbits_find(s, id), id, plane);
}

void gr_idbits_set(gr_idbits *s, uint64_t id, int plane, int on)
{
    gr_idbits_block *b = on ? gr_idbits_block_for(s, id) : gr_idbits_find(s, id);
    if (!b)
        return;
    uint64_t bit = UINT64_C(1) << (id & 63);
    if (on)
        b->plane[plane] |= bit;
    else
        b->plane[plane] &= ~bit;
}

size_t gr_idbits_bytes(const gr_idbits *s)
{
    return s->cap * sizeof *s->b;
}

void gr_idbits_free(gr_idbits *s)
{
    free(s->b);
    memset(s, 0, sizeof *s);
}
