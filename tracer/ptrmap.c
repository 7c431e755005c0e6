/* ptrmap.c - open-addressing address-pair map (see ptrmap.h). */
#include "ptrmap.h"

#include <stdlib.h>

#define TOMB 1u

static size_t slot_of(size_t cap, uintptr_t a, uintptr_t b)
{
    return (size_t)((a >> 4) ^ (a >> 17) ^ (b * 0x9E3779B97F4A7C15ull)) & (cap - 1);
}

void gr_ptrmap_init(gr_ptrmap *m)
{
    m->slots = NULL;
    m->cap = 0;
    m->used = 0;
}

void gr_ptrmap_free(gr_ptrmap *m)
{
    free(m->slots);
    gr_ptrmap_init(m);
}

/* Rehash when live entries plus tombstones fill 3/4: into twice the
 * capacity if the live ones alone fill half, else into the same capacity
 * (tombstones dropped), so that a map of short-lived keys (greenlets)
 * stays bounded by its live entries. */
static int grow(gr_ptrmap *m)
{
    size_t live = 0;
    for (size_t i = 0; i < m->cap; i++)
        live += m->slots[i].a > TOMB;
    size_t ncap = !m->cap ? 256 : live * 2 >= m->cap ? m->cap * 2 : m->cap;
    gr_ptrmap_slot *ns = calloc(ncap, sizeof *ns);
    if (!ns)
        return -1;
    size_t used = 0;
    for (size_t i = 0; i < m->cap; i++) {
        gr_ptrmap_slot *s = &m->slots[i];
        if (s->a <= TOMB)
            continue;
        size_t j = slot_of(ncap, s->a, s->b);
        while (ns[j].a)
            j = (j + 1) & (ncap - 1);
        ns[j] = *s;
        used++;
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    m->used = used;
    return 0;
}

int gr_ptrmap_put(gr_ptrmap *m, uintptr_t a, uintptr_t b, uint32_t value)
{
    if ((m->used + 1) * 4 >= m->cap * 3 && grow(m) < 0)
        return -1;
    size_t mask = m->cap - 1, i = slot_of(m->cap, a, b);
    gr_ptrmap_slot *tomb = NULL;
    for (;; i = (i + 1) & mask) {
        gr_ptrmap_slot *s = &m->slots[i];
        if (s->a == a && s->b == b) {
            s->value = value;
            return 0;
        }
        if (s->a == TOMB && !tomb)
            tomb = s;
        if (s->a == 0) {
            if (tomb)
                s = tomb;
            else
                m->used++;
            s->a = a;
            s->b = b;
            s->value = value;
            return 0;
        }
    }
}

void gr_ptrmap_del(gr_ptrmap *m, uintptr_t a, uintptr_t b)
{
    if (!m->cap)
        return;
    size_t mask = m->cap - 1, i = slot_of(m->cap, a, b);
    for (;; i = (i + 1) & mask) {
        gr_ptrmap_slot *s = &m->slots[i];
        if (s->a == a && s->b == b) {
            s->b = 0;
            s->value = 0;
            if (m->slots[(i + 1) & mask].a != 0) {
                s->a = TOMB;
                return;
            }
            /* The end of a run: no probe goes past this slot, nor past
             * the tombstones right before it, so they are all empty now.
             * (Else a map whose keys were all deleted, as the greenlets'
             * when the program drops them before stop(), is tombstones
             * through and through, and every lookup of a key not there
             * walks them all.) */
            s->a = 0;
            m->used--;
            for (size_t j = (i - 1) & mask; m->slots[j].a == TOMB; j = (j - 1) & mask) {
                m->slots[j].a = 0;
                m->used--;
            }
            return;
        }
        if (s->a == 0)
            return;
    }
}

static int keymap_holds(const gr_keymap *m, const gr_keymap_slot *s)
{
    return s->key && (!m->keep || m->keep(m->ctx, s->key, s->value));
}

int gr_keymap_rebuild(gr_keymap *m)
{
    size_t live = 0;
    for (size_t i = 0; i < m->cap; i++)
        live += keymap_holds(m, &m->slots[i]);
    size_t ncap = !m->cap ? 64 : live * 2 >= m->cap ? m->cap * 2 : m->cap;
    gr_keymap_slot *ns = calloc(ncap, sizeof *ns);
    if (!ns)
        return -1;
    unsigned shift = 64 - (unsigned)__builtin_ctzll((uint64_t)ncap);
    for (size_t i = 0; i < m->cap; i++) {
        gr_keymap_slot *s = &m->slots[i];
        if (!keymap_holds(m, s))
            continue;
        size_t j = gr_keymap_at(shift, s->key);
        while (ns[j].key)
            j = (j + 1) & (ncap - 1);
        ns[j] = *s;
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    m->shift = shift;
    m->used = live;
    return 0;
}

void gr_keymap_free(gr_keymap *m)
{
    free(m->slots);
    m->slots = NULL;
    m->cap = 0;
    m->used = 0;
}
