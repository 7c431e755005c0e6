/* tomb.h - what `check` keeps of a greenlet whose shadow it freed at its
 * DEAD, so that its memory is bound by *live* greenlets and its verdicts
 * stay what they were when every shadow was kept for the whole run.
 *
 * Internal to replay/rules/ (the engine, shadow.c and check.c).  Kept per
 * greenlet id (docs/FORMAT.md §4: 1, 2, ... in order of first sight):
 *   - bits, in a gr_idbits (about 1 byte per greenlet ever seen, 64 ids a
 *     block): SEEN (the id had a shadow: coverage counts each greenlet
 *     once), MULTI (it had shadows on more than one thread: those are never
 *     freed), and for a buried greenlet DEAD with the three facts its shadow
 *     comes back with if a record still names it (a record after its DEAD,
 *     reported by switch_consistency): base unknown, STACK seen, ground
 *     truth seen (coverage);
 *   - its thread, as the thread slot (ck_slot numbering) shared by a block
 *     of 64 ids (the block's tag), or for an id buried on another thread
 *     than its block's, an entry of a small map;
 *   - the index of its DEAD and its shadow's creation number (the order of
 *     the verdicts at STOP), in a log of deaths (varint deltas, about 3
 *     bytes a death), read back only when a record names a buried
 *     greenlet, newest deaths first.
 */
#ifndef GR_TOMB_H
#define GR_TOMB_H

#include "idbits.h"
#include "idmap.h"

#include <stddef.h>
#include <stdint.h>

/* Planes of the tomb's idbits. */
enum {
    CK_TOMB_SEEN,
    CK_TOMB_MULTI,
    CK_TOMB_DEAD,
    CK_TOMB_BASE_UNKNOWN,
    CK_TOMB_STACK_SEEN,
    CK_TOMB_TRUTH,
};

/* A buried greenlet's facts (flags: CK_GRAVE_*). */
#define CK_GRAVE_BASE_UNKNOWN 1u
#define CK_GRAVE_STACK_SEEN 2u
#define CK_GRAVE_TRUTH 4u
typedef struct ck_grave {
    size_t slot;         /* its thread's slot */
    unsigned flags;
    uint64_t dead_index; /* index of its DEAD record */
    uint64_t seq;        /* its shadow's creation number */
} ck_grave;

/* One segment of the death log: where it starts and the values its first
 * entry's deltas are taken from. */
typedef struct ck_tomb_seg {
    size_t off;
    uint64_t index, gid, rel;
} ck_tomb_seg;

/* Zero-initialise before use. */
typedef struct ck_tomb {
    gr_idbits bits;      /* by gid (planes above); tag: the thread slot of
                            the block's buried ids while its DEAD plane is
                            not 0 */
    gr_idmap away;       /* (gid, 0) -> slot << 3 | flags: buried on
                            another thread than the block's */
    size_t buried;       /* greenlets buried now */
    uint8_t *log;        /* the death log (owned) */
    size_t nlog, cap_log;
    ck_tomb_seg *seg;    /* one per CK_TOMB_SEG deaths (owned) */
    size_t nseg, cap_seg;
    size_t deaths;       /* entries in the log */
    uint64_t last_index, last_gid, last_rel; /* the last entry's values */
} ck_tomb;

/* Deaths per segment of the log (a lookup decodes whole segments). */
#define CK_TOMB_SEG 256

/* Whether gid had a shadow (ck_tomb_see). */
static inline int ck_tomb_seen(const ck_tomb *t, uint64_t gid)
{
    return gr_idbits_test(&t->bits, gid, CK_TOMB_SEEN);
}

/* gid has a shadow now; returns 1 if it had none before (first sight). */
int ck_tomb_see(ck_tomb *t, uint64_t gid);

/* Whether gid had shadows on more than one thread / note that it has. */
int ck_tomb_multi(const ck_tomb *t, uint64_t gid);
void ck_tomb_set_multi(ck_tomb *t, uint64_t gid);

/* Bury gid (not buried now) with facts g: its DEAD at g->dead_index (not
 * below the previous burial's), on thread slot g->slot. */
void ck_tomb_bury(ck_tomb *t, uint64_t gid, const ck_grave *g);

/* Whether gid is buried; fills g's slot and flags, and when with_log its
 * dead_index and seq (from the death log: the cost of decoding back to its
 * death).  g may be NULL. */
int ck_tomb_find(const ck_tomb *t, uint64_t gid, ck_grave *g, int with_log);

/* gid (buried) has a shadow again: forget its burial (its log entry stays,
 * superseded by a later one if it dies again). */
void ck_tomb_raise(ck_tomb *t, uint64_t gid);

/* Bytes held, for measurements and tests. */
size_t ck_tomb_bytes(const ck_tomb *t);

/* Free everything and zero *t. */
void ck_tomb_free(ck_tomb *t);

#endif
