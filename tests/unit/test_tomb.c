/* test_tomb.c - what check keeps of freed dead greenlets: the sparse bit
 * planes (replay/util/idbits.h), the id map's delete (idmap.h) and the
 * tomb (replay/rules/tomb.h: burials, their thread, the death log). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "idbits.h"
#include "idmap.h"
#include "tomb.h"

#include <stdio.h>
#include <string.h>

static void test_idbits_planes(void **state)
{
    (void)state;
    gr_idbits s = {0};
    assert_int_equal(gr_idbits_test(&s, 5, 0), 0);
    gr_idbits_set(&s, 5, 0, 0); /* clearing an unseen id allocates nothing */
    assert_int_equal(s.n, 0);
    const uint64_t ids[] = {0, 1, 63, 64, 65, 1000, UINT64_C(1) << 40, UINT64_MAX - 1, UINT64_MAX};
    const size_t nids = sizeof ids / sizeof ids[0];
    for (size_t k = 0; k < nids; k++)
        gr_idbits_set(&s, ids[k], (int)(k % GR_IDBITS_PLANES), 1);
    for (size_t k = 0; k < nids; k++)
        for (int p = 0; p < GR_IDBITS_PLANES; p++)
            assert_int_equal(gr_idbits_test(&s, ids[k], p), p == (int)(k % GR_IDBITS_PLANES));
    assert_int_equal(gr_idbits_test(&s, 2, 0), 0);
    assert_int_equal(gr_idbits_test(&s, 62, 3), 0);
    gr_idbits_set(&s, 64, 3, 0);
    assert_int_equal(gr_idbits_test(&s, 64, 3), 0);
    assert_int_equal(gr_idbits_test(&s, 65, 4), 1);
    /* a block's tag survives growth of the table */
    gr_idbits_block_for(&s, 1000)->tag = 77;
    for (uint64_t i = 0; i < 100000; i++)
        gr_idbits_set(&s, 5000 + i, 1, 1);
    assert_int_equal(gr_idbits_find(&s, 1000)->tag, 77);
    for (uint64_t i = 0; i < 100000; i++)
        assert_int_equal(gr_idbits_test(&s, 5000 + i, 1), 1);
    /* dense ids: a 64-byte block per 64 ids, plus the table's slack */
    assert_true(gr_idbits_bytes(&s) <= 4 * 64 * (100000 / 64 + nids + 2));
    gr_idbits_free(&s);
    assert_null(s.b);
}

static void test_idmap_delete(void **state)
{
    (void)state;
    gr_idmap m = {0};
    assert_int_equal(gr_idmap_del(&m, 1, 2), 0);
    const size_t n = 20000;
    for (size_t i = 0; i < n; i++)
        gr_idmap_put(&m, i % 7, i, i * 3);
    /* delete every other one, in an order unlike the insertion */
    for (size_t i = n; i-- > 0;)
        if (i % 2)
            assert_int_equal(gr_idmap_del(&m, i % 7, i), 1);
    assert_int_equal(m.n, n / 2);
    for (size_t i = 0; i < n; i++) {
        size_t v = 0;
        int have = gr_idmap_get(&m, i % 7, i, &v);
        assert_int_equal(have, i % 2 == 0);
        if (have)
            assert_int_equal(v, i * 3);
    }
    assert_int_equal(gr_idmap_del(&m, 1, 1), 0); /* deleted already */
    for (size_t i = 1; i < n; i += 2) /* back in */
        gr_idmap_put(&m, i % 7, i, i);
    assert_int_equal(m.n, n);
    for (size_t i = 0; i < n; i++) {
        size_t v = 0;
        assert_int_equal(gr_idmap_get(&m, i % 7, i, &v), 1);
        assert_int_equal(v, i % 2 ? i : i * 3);
    }
    gr_idmap_free(&m);
}

static void test_tomb_bury_find_raise(void **state)
{
    (void)state;
    ck_tomb t = {0};
    ck_grave g;
    assert_int_equal(ck_tomb_find(&t, 2, &g, 1), 0);
    assert_int_equal(ck_tomb_see(&t, 2), 1); /* first sight */
    assert_int_equal(ck_tomb_see(&t, 2), 0);
    assert_int_equal(ck_tomb_see(&t, 3), 1);
    assert_int_equal(ck_tomb_seen(&t, 2), 1);
    assert_int_equal(ck_tomb_seen(&t, 4), 0);
    assert_int_equal(ck_tomb_multi(&t, 2), 0);
    ck_tomb_set_multi(&t, 3);
    assert_int_equal(ck_tomb_multi(&t, 3), 1);
    /* g2 on thread slot 0, g3 on slot 5 (same block: held aside) */
    ck_grave g2 = {.slot = 0, .flags = CK_GRAVE_BASE_UNKNOWN | CK_GRAVE_TRUTH, .dead_index = 10, .seq = 1};
    ck_grave g3 = {.slot = 5, .flags = CK_GRAVE_STACK_SEEN, .dead_index = 12, .seq = 2};
    ck_tomb_bury(&t, 2, &g2);
    ck_tomb_bury(&t, 3, &g3);
    assert_int_equal(t.buried, 2);
    assert_int_equal(t.away.n, 1);
    assert_int_equal(ck_tomb_find(&t, 2, &g, 1), 1);
    assert_int_equal(g.slot, 0);
    assert_int_equal(g.flags, CK_GRAVE_BASE_UNKNOWN | CK_GRAVE_TRUTH);
    assert_int_equal(g.dead_index, 10);
    assert_int_equal(g.seq, 1);
    assert_int_equal(ck_tomb_find(&t, 3, &g, 1), 1);
    assert_int_equal(g.slot, 5);
    assert_int_equal(g.flags, CK_GRAVE_STACK_SEEN);
    assert_int_equal(g.dead_index, 12);
    assert_int_equal(g.seq, 2);
    assert_int_equal(ck_tomb_find(&t, 4, NULL, 0), 0);
    /* raised, then dead again later: the second death is found */
    ck_tomb_raise(&t, 2);
    ck_tomb_raise(&t, 3);
    assert_int_equal(t.buried, 0);
    assert_int_equal(ck_tomb_find(&t, 2, &g, 1), 0);
    assert_int_equal(ck_tomb_seen(&t, 2), 1); /* seen stays */
    g2.dead_index = 40;
    g2.flags = 0;
    ck_tomb_bury(&t, 2, &g2);
    assert_int_equal(ck_tomb_find(&t, 2, &g, 1), 1);
    assert_int_equal(g.dead_index, 40);
    assert_int_equal(g.flags, 0);
    assert_int_equal(ck_tomb_find(&t, 3, NULL, 0), 0);
    ck_tomb_free(&t);
}

/* Many deaths, in another order than the ids, over many segments of the
 * log: every one found with its index and creation number; the bits cost
 * about a byte a greenlet, the log a few. */
static void test_tomb_many_deaths(void **state)
{
    (void)state;
    ck_tomb t = {0};
    const uint64_t n = 100000;
    for (uint64_t k = 0; k < n; k++) {
        uint64_t gid = 1 + (k * 7919) % n; /* a permutation of 1..n */
        ck_tomb_see(&t, gid);
        ck_grave g = {.slot = 0, .flags = (unsigned)(gid % 8), .dead_index = 100 + 37 * k,
                      .seq = gid + (gid % 3)};
        ck_tomb_bury(&t, gid, &g);
    }
    assert_int_equal(t.buried, n);
    assert_int_equal(t.nseg, (n + CK_TOMB_SEG - 1) / CK_TOMB_SEG);
    for (uint64_t k = 0; k < n; k += 997) {
        uint64_t gid = 1 + (k * 7919) % n;
        ck_grave g;
        assert_int_equal(ck_tomb_find(&t, gid, &g, 1), 1);
        assert_int_equal(g.dead_index, 100 + 37 * k);
        assert_int_equal(g.seq, gid + (gid % 3));
        assert_int_equal(g.flags, gid % 8);
    }
    size_t bytes = ck_tomb_bytes(&t);
    print_message("tomb: %llu deaths in %zu bytes (%.1f bits each; bits %zu, log %zu)\n",
                  (unsigned long long)n, bytes, 8.0 * (double)bytes / (double)n,
                  gr_idbits_bytes(&t.bits), t.nlog);
    assert_true(gr_idbits_bytes(&t.bits) <= 3 * n); /* ~1 byte each plus slack */
    assert_true(t.nlog <= 6 * n);
    ck_tomb_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idbits_planes),
        cmocka_unit_test(test_idmap_delete),
        cmocka_unit_test(test_tomb_bury_find_raise),
        cmocka_unit_test(test_tomb_many_deaths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
