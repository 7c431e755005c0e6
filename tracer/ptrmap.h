/* ptrmap.h - open-addressing hash map from a pair of addresses to a u32 id.
 *
 * The recorder's hot path looks up code objects and greenlets by address
 * here; addresses never leave the process (the trace holds only ids).  Pure
 * C, no Python.  Keys (a, b) with a == 0 are reserved as "empty".
 */
#ifndef GR_PTRMAP_H
#define GR_PTRMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uintptr_t a, b;  /* key; a == 0 marks an empty slot, a == 1 a tombstone */
    uint32_t value;
} gr_ptrmap_slot;

typedef struct {
    gr_ptrmap_slot *slots; /* owned; `cap` entries, cap a power of two */
    size_t cap;
    size_t used;           /* live entries plus tombstones */
} gr_ptrmap;

/* Initialise an empty map (no allocation until the first insert). */
void gr_ptrmap_init(gr_ptrmap *m);

/* Free the slots; the map is empty and reusable afterwards. */
void gr_ptrmap_free(gr_ptrmap *m);

/* Value stored for (a, b), or 0 when absent.  a must be >= 2. */
static inline uint32_t gr_ptrmap_get(const gr_ptrmap *m, uintptr_t a, uintptr_t b)
{
    if (!m->cap)
        return 0;
    size_t mask = m->cap - 1;
    size_t i = (size_t)((a >> 4) ^ (a >> 17) ^ (b * 0x9E3779B97F4A7C15ull)) & mask;
    for (;;) {
        const gr_ptrmap_slot *s = &m->slots[i];
        if (s->a == a && s->b == b)
            return s->value;
        if (s->a == 0)
            return 0;
        i = (i + 1) & mask;
    }
}

/* Store value (non-zero) for (a, b), replacing any previous value.
 * Returns 0, or -1 when memory runs out (the map is unchanged then). */
int gr_ptrmap_put(gr_ptrmap *m, uintptr_t a, uintptr_t b, uint32_t value);

/* Remove (a, b) if present. */
void gr_ptrmap_del(gr_ptrmap *m, uintptr_t a, uintptr_t b);

#endif
