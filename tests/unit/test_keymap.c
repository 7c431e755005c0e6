/* test_keymap.c - the address maps of tracer/ptrmap.h: the lazily pruned
 * one (gr_keymap, the recorder's suspensions): lookups, replacement, and a
 * size that follows the entries `keep` still accepts; and the pair map
 * (gr_ptrmap): deletion against a reference, and no tombstones left once
 * every key is gone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ptrmap.h"

/* Keys as frame addresses are: 16-byte aligned, close together. */
#define KEY(i) ((uintptr_t)0x7f0000001000u + (uintptr_t)(i) * 0x70u)

static void test_put_get_replace(void **state)
{
    (void)state;
    gr_keymap m = {0};
    assert_int_equal(gr_keymap_get(&m, KEY(1)), 0); /* empty, unallocated */
    for (uint32_t i = 1; i <= 1000; i++)
        assert_int_equal(gr_keymap_put(&m, KEY(i), i), 0);
    for (uint32_t i = 1; i <= 1000; i++)
        assert_int_equal(gr_keymap_get(&m, KEY(i)), i);
    assert_int_equal(gr_keymap_get(&m, KEY(1001)), 0);
    assert_int_equal(gr_keymap_put(&m, KEY(7), 77), 0); /* replaced, not added */
    assert_int_equal(gr_keymap_get(&m, KEY(7)), 77);
    assert_int_equal(m.used, 1000);
    gr_keymap_free(&m);
    assert_int_equal(gr_keymap_get(&m, KEY(7)), 0);
}

/* The owner's view: entry key -> value holds while value >= *floor. */
static int holds_from(void *ctx, uintptr_t key, uint32_t value)
{
    (void)key;
    return value >= *(uint32_t *)ctx;
}

static void test_stale_entries_dropped(void **state)
{
    (void)state;
    uint32_t floor = 1;
    gr_keymap m = {0};
    m.keep = holds_from;
    m.ctx = &floor;
    /* 100,000 suspensions, each in a new frame, of which only the last
     * 10 still hold: the map stays the size of a few dozen entries. */
    for (uint32_t i = 1; i <= 100000; i++) {
        floor = i > 10 ? i - 9 : 1;
        assert_int_equal(gr_keymap_put(&m, KEY(i), i), 0);
    }
    assert_true(m.cap <= 64);
    for (uint32_t i = 99991; i <= 100000; i++)
        assert_int_equal(gr_keymap_get(&m, KEY(i)), i);
    /* An entry that no longer holds may still be found before a rebuild:
     * the owner checks what it finds (susp_find). */
    gr_keymap_free(&m);
}

static void test_live_entries_grow(void **state)
{
    (void)state;
    uint32_t floor = 1; /* every entry holds */
    gr_keymap m = {0};
    m.keep = holds_from;
    m.ctx = &floor;
    for (uint32_t i = 1; i <= 10000; i++)
        assert_int_equal(gr_keymap_put(&m, KEY(i), i), 0);
    assert_true(m.cap >= 10000 * 4 / 3);
    for (uint32_t i = 1; i <= 10000; i++)
        assert_int_equal(gr_keymap_get(&m, KEY(i)), i);
    gr_keymap_free(&m);
}

/* gr_keymap_put_at: a hint that still names the key's slot is used, one
 * that does not (a rebuild moved the key, or another key took the slot)
 * falls back to the full store; either way the map says the same. */
static void test_put_at_hint(void **state)
{
    (void)state;
    uint32_t floor = 1;
    gr_keymap m = {0};
    m.keep = holds_from;
    m.ctx = &floor;
    uint32_t at = UINT32_MAX, at2 = UINT32_MAX;
    assert_int_equal(gr_keymap_put_at(&m, KEY(1), 1, &at), 0);
    assert_true(at < m.cap);
    assert_int_equal(m.slots[at].key, KEY(1));
    uint32_t was = at;
    assert_int_equal(gr_keymap_put_at(&m, KEY(1), 5, &at), 0); /* through the hint */
    assert_int_equal(at, was);
    assert_int_equal(gr_keymap_get(&m, KEY(1)), 5);
    assert_int_equal(m.used, 1);
    /* A hint naming another key's slot: the full store. */
    assert_int_equal(gr_keymap_put_at(&m, KEY(2), 2, &at), 0);
    assert_int_equal(gr_keymap_get(&m, KEY(1)), 5);
    assert_int_equal(gr_keymap_get(&m, KEY(2)), 2);
    assert_int_equal(m.slots[at].key, KEY(2));
    assert_int_equal(m.used, 2);
    /* Rebuilds that drop KEY(1) and KEY(2) (values below the floor),
     * then KEY(1) stored again through its old hint. */
    assert_int_equal(gr_keymap_put_at(&m, KEY(1), 6, &at2), 0);
    floor = 1000;
    for (uint32_t i = 3; i <= 500; i++)
        assert_int_equal(gr_keymap_put(&m, KEY(i), 1000 + i), 0);
    assert_int_equal(gr_keymap_put_at(&m, KEY(1), 1001, &at2), 0);
    assert_int_equal(gr_keymap_get(&m, KEY(1)), 1001);
    assert_int_equal(m.slots[at2].key, KEY(1));
    for (uint32_t i = 3; i <= 500; i++)
        assert_int_equal(gr_keymap_get(&m, KEY(i)), 1000 + i);
    /* An out-of-range hint. */
    uint32_t far = (uint32_t)m.cap + 5;
    assert_int_equal(gr_keymap_put_at(&m, KEY(501), 1501, &far), 0);
    assert_true(far < m.cap);
    assert_int_equal(gr_keymap_get(&m, KEY(501)), 1501);
    gr_keymap_free(&m);
}

/* gr_ptrmap: puts and deletes in a fixed pseudo-random order, checked
 * against a plain array after every step. */
static void test_ptrmap_against_reference(void **state)
{
    (void)state;
    enum { N = 3000 };
    static uint32_t ref[N];
    gr_ptrmap m;
    gr_ptrmap_init(&m);
    uint64_t x = 88172645463325252ull;
    for (int step = 0; step < 40000; step++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint32_t k = (uint32_t)(x % N);
        if ((x >> 20) % 3) {
            ref[k] = (uint32_t)step + 1;
            assert_int_equal(gr_ptrmap_put(&m, KEY(k), k & 1, ref[k]), 0);
        } else {
            ref[k] = 0;
            gr_ptrmap_del(&m, KEY(k), k & 1);
        }
        if (step % 997 == 0)
            for (uint32_t j = 0; j < N; j++)
                assert_int_equal(gr_ptrmap_get(&m, KEY(j), j & 1), ref[j]);
    }
    for (uint32_t j = 0; j < N; j++)
        assert_int_equal(gr_ptrmap_get(&m, KEY(j), j & 1), ref[j]);
    gr_ptrmap_free(&m);
}

/* Keys put in a row and deleted in the same order (the greenlets of a hub
 * dropped before stop()): the map ends empty, not full of tombstones that
 * every later lookup of an absent key would walk through. */
static void test_ptrmap_deleted_run_is_empty(void **state)
{
    (void)state;
    gr_ptrmap m;
    gr_ptrmap_init(&m);
    for (uint32_t i = 1; i <= 10000; i++)
        assert_int_equal(gr_ptrmap_put(&m, ((uintptr_t)i << 4) | 2, 0, i), 0);
    for (uint32_t i = 1; i <= 10000; i++)
        gr_ptrmap_del(&m, ((uintptr_t)i << 4) | 2, 0);
    assert_int_equal(m.used, 0);
    for (size_t i = 0; i < m.cap; i++)
        assert_int_equal(m.slots[i].a, 0);
    assert_int_equal(gr_ptrmap_get(&m, ((uintptr_t)5 << 4) | 2, 0), 0);
    gr_ptrmap_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_get_replace),
        cmocka_unit_test(test_stale_entries_dropped),
        cmocka_unit_test(test_live_entries_grow),
        cmocka_unit_test(test_put_at_hint),
        cmocka_unit_test(test_ptrmap_against_reference),
        cmocka_unit_test(test_ptrmap_deleted_run_is_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
