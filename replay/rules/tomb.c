/* tomb.c - what check keeps of a freed dead greenlet (tomb.h). */
#include "tomb.h"

#include "text.h"

#include <stdlib.h>
#include <string.h>

int ck_tomb_see(ck_tomb *t, uint64_t gid)
{
    gr_idbits_block *b = gr_idbits_block_for(&t->bits, gid);
    uint64_t bit = UINT64_C(1) << (gid & 63);
    int first = !(b->plane[CK_TOMB_SEEN] & bit);
    b->plane[CK_TOMB_SEEN] |= bit;
    return first;
}

int ck_tomb_multi(const ck_tomb *t, uint64_t gid)
{
    return gr_idbits_test(&t->bits, gid, CK_TOMB_MULTI);
}

void ck_tomb_set_multi(ck_tomb *t, uint64_t gid)
{
    gr_idbits_set(&t->bits, gid, CK_TOMB_MULTI, 1);
}

/* ---- the death log: per death, zigzag varints of the deltas of the DEAD
 * index, the gid and (creation number - gid) from the previous death. */

static uint64_t zig(uint64_t d)
{
    return (d << 1) ^ (uint64_t)-(int64_t)(d >> 63);
}

static uint64_t unzig(uint64_t z)
{
    return (z >> 1) ^ (uint64_t)-(int64_t)(z & 1);
}

/* (room for it made by the caller) */
static inline void put_varint(ck_tomb *t, uint64_t v)
{
    while (v >= 0x80) {
        t->log[t->nlog++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    t->log[t->nlog++] = (uint8_t)v;
}

static uint64_t get_varint(const uint8_t *p, size_t *i)
{
    uint64_t v = 0;
    for (int sh = 0; sh < 64; sh += 7) {
        uint8_t b = p[(*i)++];
        v |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80))
            break;
    }
    return v;
}

static void log_death(ck_tomb *t, uint64_t gid, uint64_t index, uint64_t seq)
{
    uint64_t rel = seq - gid;
    if (t->deaths % CK_TOMB_SEG == 0) {
        t->seg = gr_xgrow(t->seg, &t->cap_seg, t->nseg + 1, sizeof *t->seg);
        t->seg[t->nseg++] = (ck_tomb_seg){.off = t->nlog, .index = t->last_index,
                                          .gid = t->last_gid, .rel = t->last_rel};
    }
    if (t->nlog + 30 > t->cap_log)
        t->log = gr_xgrow(t->log, &t->cap_log, t->nlog + 30, 1);
    put_varint(t, zig(index - t->last_index));
    put_varint(t, zig(gid - t->last_gid));
    put_varint(t, zig(rel - t->last_rel));
    t->last_index = index;
    t->last_gid = gid;
    t->last_rel = rel;
    t->deaths++;
}

/* The last death of gid in the log: segments from the newest back. */
static int log_find(const ck_tomb *t, uint64_t gid, uint64_t *index, uint64_t *seq)
{
    for (size_t k = t->nseg; k > 0; k--) {
        const ck_tomb_seg *s = &t->seg[k - 1];
        size_t end = k < t->nseg ? t->seg[k].off : t->nlog, i = s->off;
        uint64_t ix = s->index, g = s->gid, rel = s->rel;
        int found = 0;
        while (i < end) {
            ix += unzig(get_varint(t->log, &i));
            g += unzig(get_varint(t->log, &i));
            rel += unzig(get_varint(t->log, &i));
            if (g == gid) {
                found = 1;
                *index = ix;
                *seq = rel + g;
            }
        }
        if (found)
            return 1;
    }
    return 0;
}

/* ---- burial */

void ck_tomb_bury(ck_tomb *t, uint64_t gid, const ck_grave *g)
{
    gr_idbits_block *b = gr_idbits_block_for(&t->bits, gid);
    if (b->plane[CK_TOMB_DEAD] == 0)
        b->tag = g->slot;
    if (b->tag == g->slot) {
        uint64_t bit = UINT64_C(1) << (gid & 63);
        b->plane[CK_TOMB_DEAD] |= bit;
        if (g->flags & CK_GRAVE_BASE_UNKNOWN)
            b->plane[CK_TOMB_BASE_UNKNOWN] |= bit;
        if (g->flags & CK_GRAVE_STACK_SEEN)
            b->plane[CK_TOMB_STACK_SEEN] |= bit;
        if (g->flags & CK_GRAVE_TRUTH)
            b->plane[CK_TOMB_TRUTH] |= bit;
    } else {
        gr_idmap_put(&t->away, gid, 0, (g->slot << 3) | (g->flags & 7u));
    }
    t->buried++;
    log_death(t, gid, g->dead_index, g->seq);
}

int ck_tomb_find(const ck_tomb *t, uint64_t gid, ck_grave *g, int with_log)
{
    if (!t->buried)
        return 0;
    const gr_idbits_block *b = gr_idbits_find(&t->bits, gid);
    size_t slot;
    unsigned flags = 0;
    if (gr_idbits_bit(b, gid, CK_TOMB_DEAD)) {
        slot = (size_t)b->tag;
        flags |= gr_idbits_bit(b, gid, CK_TOMB_BASE_UNKNOWN) ? CK_GRAVE_BASE_UNKNOWN : 0;
        flags |= gr_idbits_bit(b, gid, CK_TOMB_STACK_SEEN) ? CK_GRAVE_STACK_SEEN : 0;
        flags |= gr_idbits_bit(b, gid, CK_TOMB_TRUTH) ? CK_GRAVE_TRUTH : 0;
    } else {
        size_t v;
        if (!gr_idmap_get(&t->away, gid, 0, &v))
            return 0;
        slot = v >> 3;
        flags = (unsigned)(v & 7u);
    }
    if (g) {
        memset(g, 0, sizeof *g);
        g->slot = slot;
        g->flags = flags;
        if (with_log)
            log_find(t, gid, &g->dead_index, &g->seq);
    }
    return 1;
}

void ck_tomb_raise(ck_tomb *t, uint64_t gid)
{
    gr_idbits_block *b = gr_idbits_find(&t->bits, gid);
    uint64_t bit = UINT64_C(1) << (gid & 63);
    if (b && (b->plane[CK_TOMB_DEAD] & bit)) {
        b->plane[CK_TOMB_DEAD] &= ~bit;
        b->plane[CK_TOMB_BASE_UNKNOWN] &= ~bit;
        b->plane[CK_TOMB_STACK_SEEN] &= ~bit;
        b->plane[CK_TOMB_TRUTH] &= ~bit;
        t->buried--;
    } else if (gr_idmap_del(&t->away, gid, 0)) {
        t->buried--;
    }
}

size_t ck_tomb_bytes(const ck_tomb *t)
{
    return gr_idbits_bytes(&t->bits) + t->away.cap * sizeof *t->away.slots + t->cap_log +
           t->cap_seg * sizeof *t->seg;
}

void ck_tomb_free(ck_tomb *t)
{
    gr_idbits_free(&t->bits);
    gr_idmap_free(&t->away);
    free(t->log);
    free(t->seg);
    memset(t, 0, sizeof *t);
}
