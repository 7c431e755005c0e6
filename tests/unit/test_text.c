/* test_text.c - replay/util/text.c and replay/util/idmap.c: buffers, escaping, UTF-8
 * validation and the id-pair hash map. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "idmap.h"
#include "text.h"

#include <stdlib.h>
#include <string.h>

static void test_buffer(void **state)
{
    (void)state;
    gr_sb sb;
    gr_sb_init(&sb);
    assert_string_equal(gr_sb_str(&sb), "");
    gr_sb_puts(&sb, "ab");
    gr_sb_putc(&sb, 'c');
    gr_sb_printf(&sb, "%d-%s", 42, "x");
    assert_string_equal(gr_sb_str(&sb), "abc42-x");
    assert_int_equal(sb.len, 7);
    /* longer than the printf fast path */
    char big[1000];
    memset(big, 'z', sizeof big - 1);
    big[sizeof big - 1] = 0;
    gr_sb_printf(&sb, "[%s]", big);
    assert_int_equal(sb.len, 7 + 1001);
    assert_int_equal(sb.s[sb.len - 1], ']');
    char *s = gr_sb_take(&sb);
    assert_null(sb.s);
    assert_int_equal(strlen(s), 1008);
    free(s);
    s = gr_sb_take(&sb);
    assert_string_equal(s, "");
    free(s);
    gr_sb_free(&sb);
}

static void test_utf8(void **state)
{
    (void)state;
    assert_int_equal(gr_utf8_len((const uint8_t *)"a", 1), 1);
    assert_int_equal(gr_utf8_len((const uint8_t *)"\xc3\xa9", 2), 2);
    assert_int_equal(gr_utf8_len((const uint8_t *)"\xc3", 1), 0);       /* cut */
    assert_int_equal(gr_utf8_len((const uint8_t *)"\xc0\x80", 2), 0);   /* overlong */
    assert_int_equal(gr_utf8_len((const uint8_t *)"\xe2\x82\xac", 3), 3);
    assert_int_equal(gr_utf8_len((const uint8_t *)"\xe0\x80\x80", 3), 0); /* overlong */
    assert_int_equal(gr_utf8_len((const uint8_t *)"\xed\xa0\x80", 3), 0); /* surrogate */
    assert_int_equal(gr_utf8_len((const uint8_t *)"\xf0\x9f\x98\x80", 4), 4);
    assert_int_equal(gr_utf8_len((const uint8_t *)"\xf4\x90\x80\x80", 4), 0); /* > U+10FFFF */
    assert_int_equal(gr_utf8_len((const uint8_t *)"\xf5\x80\x80\x80", 4), 0);
    assert_int_equal(gr_utf8_len((const uint8_t *)"\x80", 1), 0);
    assert_int_equal(gr_utf8_len((const uint8_t *)"\xe2\x28\xa1", 3), 0);
}

static void test_escape(void **state)
{
    (void)state;
    gr_sb sb;
    gr_sb_init(&sb);
    gr_sb_escape(&sb, "a\"b\\c\x00\x1f\x7f\xc3\xa9\xc3", 11, 1);
    assert_string_equal(gr_sb_str(&sb), "a\\\"b\\\\c\\x00\\x1f\\x7f\xc3\xa9\\xc3");
    gr_sb_reset(&sb);
    gr_sb_escape(&sb, "q\"", 2, 0);
    assert_string_equal(gr_sb_str(&sb), "q\"");
    gr_sb_free(&sb);
}

static void test_idmap(void **state)
{
    (void)state;
    gr_idmap m = {0};
    size_t v;
    assert_false(gr_idmap_get(&m, 1, 2, &v));
    for (uint64_t i = 0; i < 5000; i++)
        gr_idmap_put(&m, i * 7919, UINT64_MAX - i, (size_t)i);
    assert_int_equal(m.n, 5000);
    for (uint64_t i = 0; i < 5000; i++) {
        assert_true(gr_idmap_get(&m, i * 7919, UINT64_MAX - i, &v));
        assert_int_equal(v, i);
    }
    assert_false(gr_idmap_get(&m, 1, 1, &v));
    gr_idmap_put(&m, 0, UINT64_MAX, 77); /* replace */
    assert_true(gr_idmap_get(&m, 0, UINT64_MAX, &v));
    assert_int_equal(v, 77);
    assert_int_equal(m.n, 5000);
    gr_idmap_free(&m);
    assert_null(m.slots);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buffer),
        cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_escape),
        cmocka_unit_test(test_idmap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
