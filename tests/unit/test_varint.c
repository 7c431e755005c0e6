/* test_varint.c - LEB128 varint coding of tracer/format.h: round trips,
 * exact encodings at the byte boundaries, overlong and truncated input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "format.h"

#include <string.h>

/* Encode v, check the length, decode it back. */
static void round_trip(uint64_t v, size_t want_len)
{
    uint8_t buf[GR_VARINT_MAX + 2];
    memset(buf, 0xEE, sizeof buf);
    uint8_t *end = gr_put_varint(buf, v);
    assert_int_equal((size_t)(end - buf), want_len);
    assert_int_equal(buf[want_len], 0xEE); /* nothing written past the end */
    const uint8_t *p = buf;
    uint64_t out = 12345;
    assert_int_equal(gr_get_varint(&p, end, &out), 0);
    assert_true(out == v);
    assert_ptr_equal(p, end);
}

static void test_edges(void **state)
{
    (void)state;
    round_trip(0, 1);
    round_trip(1, 1);
    round_trip(127, 1);
    round_trip(128, 2);
    round_trip(16383, 2);
    round_trip(16384, 3);
    round_trip(UINT32_MAX, 5);
    round_trip((UINT64_C(1) << 63) - 1, 9);
    round_trip(UINT64_C(1) << 63, 10);
    round_trip(UINT64_MAX, 10);
}

static void test_exact_bytes(void **state)
{
    (void)state;
    uint8_t buf[GR_VARINT_MAX];
    assert_int_equal(gr_put_varint(buf, 0) - buf, 1);
    assert_int_equal(buf[0], 0x00);
    assert_int_equal(gr_put_varint(buf, 127) - buf, 1);
    assert_int_equal(buf[0], 0x7f);
    assert_int_equal(gr_put_varint(buf, 128) - buf, 2);
    assert_int_equal(buf[0], 0x80);
    assert_int_equal(buf[1], 0x01);
    assert_int_equal(gr_put_varint(buf, 300) - buf, 2);
    assert_int_equal(buf[0], 0xac);
    assert_int_equal(buf[1], 0x02);
    assert_int_equal(gr_put_varint(buf, UINT64_MAX) - buf, 10);
    for (int i = 0; i < 9; i++)
        assert_int_equal(buf[i], 0xff);
    assert_int_equal(buf[9], 0x01);
}

static void test_many_values(void **state)
{
    (void)state;
    /* every power of two and its neighbours */
    for (int s = 0; s < 64; s++) {
        uint64_t v = UINT64_C(1) << s;
        uint64_t vals[3] = {v - 1, v, v + 1};
        for (int k = 0; k < 3; k++) {
            uint64_t x = vals[k];
            size_t len = 1;
            for (uint64_t y = x; y >= 0x80; y >>= 7)
                len++;
            round_trip(x, len);
        }
    }
}

static void test_overlong(void **state)
{
    (void)state;
    /* 11 bytes: ten continuation bytes then 0 */
    uint8_t b[11];
    memset(b, 0x80, 10);
    b[10] = 0;
    const uint8_t *p = b;
    uint64_t v = 7;
    assert_int_equal(gr_get_varint(&p, b + sizeof b, &v), -2);
    assert_ptr_equal(p, b); /* unchanged */
    assert_true(v == 7);
    /* 10 bytes whose last one carries more than bit 63: overflow */
    uint8_t c[10];
    memset(c, 0xff, 9);
    c[9] = 0x02;
    p = c;
    assert_int_equal(gr_get_varint(&p, c + sizeof c, &v), -2);
    assert_ptr_equal(p, c);
    /* 10 bytes ending in 0x01 is exactly UINT64_MAX: fine */
    c[9] = 0x01;
    p = c;
    assert_int_equal(gr_get_varint(&p, c + sizeof c, &v), 0);
    assert_true(v == UINT64_MAX);
    /* non-minimal but short encodings are accepted (0 in two bytes) */
    uint8_t d[2] = {0x80, 0x00};
    p = d;
    assert_int_equal(gr_get_varint(&p, d + 2, &v), 0);
    assert_true(v == 0);
}

static void test_truncated(void **state)
{
    (void)state;
    uint8_t buf[GR_VARINT_MAX];
    uint8_t *end = gr_put_varint(buf, UINT64_MAX);
    for (size_t cut = 0; cut < (size_t)(end - buf); cut++) {
        const uint8_t *p = buf;
        uint64_t v = 99;
        assert_int_equal(gr_get_varint(&p, buf + cut, &v), -1);
        assert_ptr_equal(p, buf);
        assert_true(v == 99);
    }
    /* empty input */
    const uint8_t *p = buf;
    uint64_t v;
    assert_int_equal(gr_get_varint(&p, buf, &v), -1);
}

static void test_sequence(void **state)
{
    (void)state;
    uint8_t buf[5 * GR_VARINT_MAX], *q = buf;
    uint64_t in[5] = {0, 128, 1, UINT64_MAX, 300};
    for (int i = 0; i < 5; i++)
        q = gr_put_varint(q, in[i]);
    const uint8_t *p = buf;
    for (int i = 0; i < 5; i++) {
        uint64_t v;
        assert_int_equal(gr_get_varint(&p, q, &v), 0);
        assert_true(v == in[i]);
    }
    assert_ptr_equal(p, q);
}

static void test_fixed_width(void **state)
{
    (void)state;
    uint8_t b[4];
    gr_put_u32le(b, 0x11223344u);
    assert_int_equal(b[0], 0x44);
    assert_int_equal(b[3], 0x11);
    assert_int_equal(gr_get_u32le(b), 0x11223344u);
    gr_put_u16le(b, 0xabcd);
    assert_int_equal(b[0], 0xcd);
    assert_int_equal(gr_get_u16le(b), 0xabcd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_exact_bytes),
        cmocka_unit_test(test_many_values),
        cmocka_unit_test(test_overlong),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_sequence),
        cmocka_unit_test(test_fixed_width),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
