/* test_handoff.c - the lock-free ring that hands the sampler's samples to
 * the recorder (tracer/handoff.c), pure C: entries come out whole, in
 * order, byte for byte; a full ring refuses a push without writing, and
 * takes it again once the consumer has released room; entries wrap at the
 * end of the buffer; the greatest entry fits an empty ring at every
 * position and a larger one never; and a producer thread racing a
 * consumer thread (as the sampler thread races the recorder) loses,
 * duplicates or tears no entry.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "handoff.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* Entry number k: its length (1..max) and its bytes. */
static size_t entry_len(uint64_t k, size_t max)
{
    return 1 + (size_t)((k * 2654435761u) % max);
}

static void entry_fill(uint64_t k, unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(k * 31 + i * 7);
}

static void check_entry(uint64_t k, const unsigned char *p, size_t n, size_t max)
{
    assert_int_equal(n, entry_len(k, max));
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(k * 31 + i * 7))
            fail_msg("entry %llu byte %zu differs", (unsigned long long)k, i);
}

static void test_order_and_bytes(void **state)
{
    (void)state;
    gr_handoff h;
    assert_int_equal(gr_handoff_init(&h, 1000), 0);
    assert_int_equal(h.cap, 1000);
    size_t n;
    assert_null(gr_handoff_peek(&h, &n));
    unsigned char buf[64];
    for (uint64_t k = 0; k < 5; k++) {
        entry_fill(k, buf, entry_len(k, 60));
        assert_int_equal(gr_handoff_push(&h, buf, entry_len(k, 60)), 0);
    }
    assert_true(gr_handoff_used(&h) > 0);
    for (uint64_t k = 0; k < 5; k++) {
        const unsigned char *p = gr_handoff_peek(&h, &n);
        assert_non_null(p);
        check_entry(k, p, n, 60);
        /* a second peek gives the same entry until it is popped */
        assert_ptr_equal(gr_handoff_peek(&h, &n), p);
        gr_handoff_pop(&h);
    }
    assert_null(gr_handoff_peek(&h, &n));
    assert_true(gr_handoff_used(&h) == 0);
    gr_handoff_free(&h);
    assert_null(h.buf);
}

static void test_full_then_room(void **state)
{
    (void)state;
    gr_handoff h;
    assert_int_equal(gr_handoff_init(&h, 256), 0);
    unsigned char buf[40];
    uint64_t pushed = 0, popped = 0;
    while (1) {
        entry_fill(pushed, buf, sizeof buf);
        uint64_t before = gr_handoff_used(&h);
        if (gr_handoff_push(&h, buf, sizeof buf) < 0) {
            assert_true(gr_handoff_used(&h) == before); /* nothing written */
            break;
        }
        pushed++;
    }
    assert_true(pushed == 256 / 44); /* 4-byte length + 40 bytes each */
    size_t n;
    const unsigned char *p = gr_handoff_peek(&h, &n);
    assert_non_null(p);
    gr_handoff_pop(&h);
    popped++;
    /* room again, and the ring wraps: many rounds through 256 bytes */
    for (int round = 0; round < 1000; round++) {
        entry_fill(pushed, buf, sizeof buf);
        assert_int_equal(gr_handoff_push(&h, buf, sizeof buf), 0);
        pushed++;
        p = gr_handoff_peek(&h, &n);
        assert_non_null(p);
        assert_int_equal(n, sizeof buf);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(p[i], (unsigned char)(popped * 31 + i * 7));
        gr_handoff_pop(&h);
        popped++;
    }
    gr_handoff_free(&h);
}

static void test_greatest_entry(void **state)
{
    (void)state;
    gr_handoff h;
    assert_int_equal(gr_handoff_init(&h, 128), 0);
    size_t max = gr_handoff_max_entry(&h);
    assert_int_equal(max, 60);
    unsigned char buf[128];
    memset(buf, 0xab, sizeof buf);
    assert_int_equal(gr_handoff_push(&h, buf, max + 1), -1);
    assert_true(gr_handoff_used(&h) == 0);
    /* from every position of an empty ring, the greatest entry fits */
    for (size_t shift = 0; shift < 2 * h.cap; shift += 4) {
        assert_int_equal(gr_handoff_push(&h, buf, max), 0);
        size_t n;
        const unsigned char *p = gr_handoff_peek(&h, &n);
        assert_non_null(p);
        assert_int_equal(n, max);
        assert_int_equal(p[max - 1], 0xab);
        gr_handoff_pop(&h);
        assert_true(gr_handoff_used(&h) == 0);
        /* move the position on by 4 bytes (an empty entry) */
        assert_int_equal(gr_handoff_push(&h, buf, 0), 0);
        assert_non_null(gr_handoff_peek(&h, &n));
        assert_int_equal(n, 0);
        gr_handoff_pop(&h);
    }
    gr_handoff_free(&h);
}

/* Two threads: the producer pushes N entries (retrying a full ring), the
 * consumer takes and checks them in order. */
#define RACE_N 300000u
#define RACE_MAX 300u

static void *producer(void *arg)
{
    gr_handoff *h = arg;
    unsigned char buf[RACE_MAX];
    for (uint64_t k = 0; k < RACE_N; k++) {
        size_t n = entry_len(k, RACE_MAX);
        entry_fill(k, buf, n);
        while (gr_handoff_push(h, buf, n) < 0)
            sched_yield();
    }
    return NULL;
}

static void test_race(void **state)
{
    (void)state;
    gr_handoff h;
    assert_int_equal(gr_handoff_init(&h, 4096), 0); /* small: full often, wraps often */
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, producer, &h), 0);
    uint64_t k = 0;
    while (k < RACE_N) {
        size_t n;
        const unsigned char *p = gr_handoff_peek(&h, &n);
        if (!p) {
            sched_yield();
            continue;
        }
        check_entry(k, p, n, RACE_MAX);
        gr_handoff_pop(&h);
        k++;
    }
    pthread_join(th, NULL);
    size_t n;
    assert_null(gr_handoff_peek(&h, &n));
    gr_handoff_free(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_bytes),
        cmocka_unit_test(test_full_then_room),
        cmocka_unit_test(test_greatest_entry),
        cmocka_unit_test(test_race),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
