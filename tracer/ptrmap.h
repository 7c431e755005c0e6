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

/* ---- keymap: one address to a u32, entries dropped lazily ------------
 *
 * For keys whose entries go stale without being told (a greenlet's
 * suspension ends when it runs again): no delete; when the map fills, the
 * entries the owner's `keep` rejects are dropped instead of growing it,
 * so its size follows the entries that still hold.  Key 0 is reserved. */
typedef struct {
    uintptr_t key;   /* 0: empty */
    uint32_t value;
} gr_keymap_slot;

/* keep(ctx, key, value): whether an entry still holds (nonzero) when the
 * map is rebuilt. */
typedef int (*gr_keymap_keep)(void *ctx, uintptr_t key, uint32_t value);

typedef struct {
    gr_keymap_slot *slots; /* owned; `cap` entries, cap a power of two */
    size_t cap;
    size_t used;           /* entries */
    unsigned shift;        /* 64 - log2(cap): gr_keymap_at's (kept with
                              cap, not counted at every lookup) */
    gr_keymap_keep keep;   /* may be NULL: every entry holds */
    void *ctx;
} gr_keymap;

/* A key's first slot: the top bits of the key times 2^64 / phi (Fibonacci
 * hashing), which depend on every bit of the key.  Frames are the keys:
 * the frames greenlets suspend in sit at one offset of each greenlet's
 * own frame stack chunk, so their addresses differ by multiples of the
 * chunk size; a hash of a few shifted copies of the key put 10,000 of
 * them into long runs of taken slots. */
static inline size_t gr_keymap_at(unsigned shift, uintptr_t key)
{
    return (size_t)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> shift);
}

/* Value stored for key (non-zero), or 0 when absent. */
static inline uint32_t gr_keymap_get(const gr_keymap *m, uintptr_t key)
{
    if (!m->cap)
        return 0;
    size_t mask = m->cap - 1;
    for (size_t i = gr_keymap_at(m->shift, key);; i = (i + 1) & mask) {
        const gr_keymap_slot *s = &m->slots[i];
        if (s->key == key)
            return s->value;
        if (!s->key)
            return 0;
    }
}

/* Make room for one more entry (gr_keymap_put): drop the entries keep
 * rejects, grow if those left fill half.  0, or -1 when memory runs out. */
int gr_keymap_rebuild(gr_keymap *m);

/* Store value (non-zero) for key (non-zero), replacing any previous one.
 * Returns 0, or -1 when memory runs out (the map is unchanged then).
 * *at: where the caller's last store of this key went, a hint that is
 * checked (any value will do).  A key keeps its slot until the map is
 * rebuilt, so storing again under a key it holds (a greenlet suspending
 * again in the frame it suspended in before) skips the hash and the
 * probe; otherwise the full store, which leaves the slot in *at. */
static inline int gr_keymap_put_at(gr_keymap *m, uintptr_t key, uint32_t value, uint32_t *at)
{
    if (*at < m->cap && m->slots[*at].key == key) {
        m->slots[*at].value = value;
        return 0;
    }
    if ((m->used + 1) * 4 >= m->cap * 3 && gr_keymap_rebuild(m) < 0)
        return -1;
    size_t mask = m->cap - 1;
    for (size_t i = gr_keymap_at(m->shift, key);; i = (i + 1) & mask) {
        gr_keymap_slot *s = &m->slots[i];
        if (s->key == key || !s->key) {
            m->used += !s->key;
            s->key = key;
            s->value = value;
            *at = (uint32_t)i;
            return 0;
        }
    }
}

/* gr_keymap_put_at without a hint. */
static inline int gr_keymap_put(gr_keymap *m, uintptr_t key, uint32_t value)
{
    uint32_t at = UINT32_MAX; /* no hint */
    return gr_keymap_put_at(m, key, value, &at);
}

/* Free the slots; the map is empty (keep and ctx kept). */
void gr_keymap_free(gr_keymap *m);

#endif
