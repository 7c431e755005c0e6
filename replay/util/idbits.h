/* idbits.h - a sparse set of small bit fields by 64-bit id: for every id,
 * GR_IDBITS_PLANES bits (one per "plane"), and for every block of 64
 * consecutive ids one 64-bit tag the user gives a meaning to.
 *
 * Made for ids handed out in increasing order (greenlet ids, docs/FORMAT.md
 * §4: 1, 2, ... in order of first sight): 64 ids share one 64-byte block
 * (key, tag, planes), so a dense run costs 1 byte per id plus the hash
 * table's slack (its load stays between 3/8 and 3/4).  Any id works (ids
 * come from untrusted input); scattered ids cost a block each.  Blocks are
 * never removed: the table grows with the ids ever set.
 */
#ifndef GR_IDBITS_H
#define GR_IDBITS_H

#include <stddef.h>
#include <stdint.h>

#define GR_IDBITS_PLANES 6

typedef struct gr_idbits_block {
    uint64_t key1;                      /* id >> 6, plus 1; 0: empty slot */
    uint64_t tag;                       /* the user's, 0 when created */
    uint64_t plane[GR_IDBITS_PLANES];   /* bit (id & 63) of each plane */
} gr_idbits_block;

/* Zero-initialise before use. */
typedef struct gr_idbits {
    gr_idbits_block *b;  /* owned; cap slots (a power of two) */
    size_t cap, n;       /* slots, blocks in use */
} gr_idbits;

/* The block holding id, or NULL when no bit of its 64 ids was ever set
 * (the pointer stays valid until the next gr_idbits_block_for). */
gr_idbits_block *gr_idbits_find(const gr_idbits *s, uint64_t id);

/* The block holding id, created zeroed when new.  Exits(2) on out of
 * memory (text.h). */
gr_idbits_block *gr_idbits_block_for(gr_idbits *s, uint64_t id);

/* Bit of id in block b (b may be NULL: 0). */
static inline int gr_idbits_bit(const gr_idbits_block *b, uint64_t id, int plane)
{
    return b ? (int)((b->plane[plane] >> (id & 63)) & 1) : 0;
}

/* Bit `plane` of id: 1 or 0. */
int gr_idbits_test(const gr_idbits *s, uint64_t id, int plane);

/* Set bit `plane` of id to on (0 or 1); clearing an id never seen
 * allocates nothing. */
void gr_idbits_set(gr_idbits *s, uint64_t id, int plane, int on);

/* Bytes held (the table), for measurements. */
size_t gr_idbits_bytes(const gr_idbits *s);

/* Free the table and zero *s. */
void gr_idbits_free(gr_idbits *s);

#endif
