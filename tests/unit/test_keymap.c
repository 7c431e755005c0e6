/* test_keymap.c - the lazily pruned address map of tracer/ptrmap.h
 * (gr_keymap, the recorder's suspensions): lookups, replacement, and a
 * size that follows the entries `keep` still accepts. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_get_replace),
        cmocka_unit_test(test_stale_entries_dropped),
        cmocka_unit_test(test_live_entries_grow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
