/* idmap.h - hash map from a pair of 64-bit ids (thread id, greenlet id) to
 * a size_t, used by the checker and stats to find per-thread and
 * per-greenlet state.  Ids come from untrusted input, so any value works.
 */
#ifndef GR_IDMAP_H
#define GR_IDMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct gr_idmap_slot {
    uint64_t a, b;
    size_t value; /* stored value + 1; 0 marks an empty slot */
} gr_idmap_slot;

/* Zero-initialise before use. */
typedef struct gr_idmap {
    gr_idmap_slot *slots; /* owned; cap entries (power of two) */
    size_t cap, n;
} gr_idmap;

/* Look up (a, b).  Returns 1 and stores the value in *out if present, else
 * 0. */
int gr_idmap_get(const gr_idmap *m, uint64_t a, uint64_t b, size_t *out);

/* Insert or replace (a, b) -> value (value < SIZE_MAX).  Exits(2) on out of
 * memory (see text.h). */
void gr_idmap_put(gr_idmap *m, uint64_t a, uint64_t b, size_t value);

/* Remove (a, b) if present; returns 1 if it was.  The table keeps its
 * size (a map that grew for many entries stays that big; its load drops),
 * so lookups of the remaining entries stay valid and no memory is
 * allocated. */
int gr_idmap_del(gr_idmap *m, uint64_t a, uint64_t b);

/* Free the table and zero *m. */
void gr_idmap_free(gr_idmap *m);

#endif
