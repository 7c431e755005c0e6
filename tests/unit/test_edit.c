/* test_edit.c - replay/repro/edit.c: dropping records keeps definitions and
 * GAPs, renumbers the rest, keeps the trailer (or its absence), rejects bad
 * indices. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "edit.h"
#include "trace_builder.h"

#include <stdio.h>
#include <string.h>

static void tmp_path(char *p)
{
    int fd = mkstemp(p);
    assert_true(fd >= 0);
    close(fd);
}

static void test_drop_keeps_rest(void **state)
{
    (void)state;
    tb b;
    tb_open(&b, 0);
    tb_meta(&b, "python", "3.12.1");
    uint32_t x = tb_py(&b, "x", "a.py", 5), y = tb_py(&b, "y", "a.py", 9);
    uint32_t big = tb_str(&b, "long"); /* and a string used by nothing */
    (void)big;
    tb_thread(&b, 1);                                   /* 0 */
    tb_greenlet(&b, 1, 1, 0, GR_GL_MAIN, 2, x, y);      /* 1 */
    tb_ev(&b, GR_CALL, 1, 1, x);                        /* 2 */
    tb_ev(&b, GR_CALL, 1, 1, y);                        /* 3 */
    tb_ev(&b, GR_RETURN, 1, 1, y);                      /* 4 */
    tb_switch(&b, GR_SWITCH, 1, 1, 2, 1, 5, 0, 255);    /* 5 */
    tb_finish_with(&b, 6, 1, 2, GR_STOP_EXIT);
    gr_trace in, out;
    assert_int_equal(tb_load(&b, &in), GR_READ_OK);
    char path[] = "/tmp/gr-unit-edit-XXXXXX";
    tmp_path(path);
    char err[256];
    uint64_t drop[3] = {4, 2, 4};
    assert_int_equal(gr_edit_drop(&in, drop, 3, path, err, sizeof err), 0);
    assert_int_equal(gr_trace_load(&out, path), GR_READ_OK);
    assert_int_equal(out.nrecs, 4);
    assert_int_equal(out.nstrings, in.nstrings);
    assert_int_equal(out.ncodes, in.ncodes);
    assert_int_equal(out.nmetas, 1);
    assert_int_equal(out.recs[0].tag, GR_THREAD);
    assert_int_equal(out.recs[1].tag, GR_GREENLET);
    assert_int_equal(out.recs[1].depth, 2);
    assert_int_equal(gr_record_stack(&out, &out.recs[1])[1], y);
    assert_int_equal(out.recs[2].tag, GR_CALL);
    assert_int_equal(out.recs[2].code, y);
    assert_int_equal(out.recs[2].index, 2);
    assert_int_equal(out.recs[3].tag, GR_SWITCH);
    assert_int_equal(out.recs[3].use_tracing, 255);
    assert_true(out.has_trailer);
    assert_int_equal(out.trailer.events, 4);
    assert_int_equal(out.trailer.dropped, 1);
    assert_int_equal(out.trailer.errors, 2);
    assert_int_equal(out.trailer.reason, GR_STOP_EXIT);
    gr_trace_free(&out);
    /* dropping nothing reproduces every record */
    assert_int_equal(gr_edit_drop(&in, NULL, 0, path, err, sizeof err), 0);
    assert_int_equal(gr_trace_load(&out, path), GR_READ_OK);
    assert_int_equal(out.nrecs, in.nrecs);
    for (size_t i = 0; i < in.nrecs; i++) {
        assert_int_equal(out.recs[i].tag, in.recs[i].tag);
        assert_int_equal(out.recs[i].len, in.recs[i].len);
    }
    gr_trace_free(&out);
    /* an index out of range */
    uint64_t bad = 6;
    assert_int_equal(gr_edit_drop(&in, &bad, 1, path, err, sizeof err), -1);
    assert_string_equal(err, "record 6 does not exist (the trace has 6 records)");
    gr_trace_free(&in);
    unlink(path);
    tb_cleanup(&b);
}

static void test_truncated_stays_truncated(void **state)
{
    (void)state;
    tb b;
    tb_open(&b, 0);
    tb_thread(&b, 1);
    tb_thread(&b, 2);
    tb_abandon(&b);
    gr_trace in, out;
    assert_int_equal(tb_load(&b, &in), GR_READ_OK);
    char path[] = "/tmp/gr-unit-edit-XXXXXX";
    tmp_path(path);
    char err[256];
    uint64_t drop = 0;
    assert_int_equal(gr_edit_drop(&in, &drop, 1, path, err, sizeof err), 0);
    assert_int_equal(gr_trace_load(&out, path), GR_READ_OK);
    assert_true(out.truncated);
    assert_int_equal(out.nrecs, 1);
    assert_int_equal(out.recs[0].tid, 2);
    gr_trace_free(&out);
    gr_trace_free(&in);
    /* unwritable output */
    assert_int_equal(gr_trace_load(&in, b.path), GR_READ_OK);
    assert_int_equal(gr_edit_drop(&in, NULL, 0, "/nonexistent/dir/o.grt", err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/dir/o.grt: "));
    gr_trace_free(&in);
    unlink(path);
    tb_cleanup(&b);
}

/* A META after records (the recorder writes some at stop) stays after the
 * remaining records, where dump prints it (docs/FORMAT.md §6.1): after the
 * record that followed it, or after the first remaining one when only
 * dropped records preceded it; one before the first record stays first. */
static void test_meta_positions_kept(void **state)
{
    (void)state;
    tb b;
    tb_open(&b, 0);
    tb_meta(&b, "python", "3.12.1");
    tb_thread(&b, 1);                                   /* 0 */
    tb_meta(&b, "early", "1");                          /* after 0 */
    tb_thread(&b, 2);                                   /* 1 */
    tb_thread(&b, 3);                                   /* 2 */
    tb_meta(&b, "mid", "1");                            /* after 2 */
    tb_thread(&b, 4);                                   /* 3 */
    tb_meta(&b, "at_stop", "1");                        /* after 3 */
    tb_finish(&b);
    gr_trace in, out;
    assert_int_equal(tb_load(&b, &in), GR_READ_OK);
    char path[] = "/tmp/gr-unit-edit-XXXXXX";
    tmp_path(path);
    char err[256];
    uint64_t drop[1] = {0}; /* "early" followed only the dropped record */
    assert_int_equal(gr_edit_drop(&in, drop, 1, path, err, sizeof err), 0);
    assert_int_equal(gr_trace_load(&out, path), GR_READ_OK);
    assert_int_equal(out.nrecs, 3);
    assert_int_equal(out.nmetas, 4);
    uint64_t want[4] = {0, 1, 2, 3}; /* python, early, mid, at_stop */
    for (int k = 0; k < 4; k++)
        assert_int_equal(out.metas[k].at, want[k]);
    gr_trace_free(&out);
    /* nothing dropped: every META where it was */
    assert_int_equal(gr_edit_drop(&in, NULL, 0, path, err, sizeof err), 0);
    assert_int_equal(gr_trace_load(&out, path), GR_READ_OK);
    assert_int_equal(out.nmetas, in.nmetas);
    for (size_t k = 0; k < in.nmetas; k++)
        assert_int_equal(out.metas[k].at, in.metas[k].at);
    gr_trace_free(&out);
    gr_trace_free(&in);
    unlink(path);
    tb_cleanup(&b);
}

/* GAP records (ring mode, §3) are kept whatever is dropped: each before the
 * first kept record that followed it, or after the last kept one; the
 * output's GAPs add up to the input's, so an edited trace counts the same
 * loss (check's "records lost", dump's ring lines). */
static void test_gaps_kept(void **state)
{
    (void)state;
    static const uint8_t gap5[] = {GR_GAP, 5}, gap3[] = {GR_GAP, 3}, gap2[] = {GR_GAP, 2};
    tb b;
    tb_open(&b, 0);
    tb_meta(&b, "python", "3.12.1");
    tb_raw(&b, gap5, sizeof gap5);                      /* head: before 0 */
    tb_thread(&b, 1);                                   /* 0 */
    tb_thread(&b, 2);                                   /* 1 */
    tb_raw(&b, gap3, sizeof gap3);                      /* between 1 and 2 */
    tb_thread(&b, 3);                                   /* 2 */
    tb_thread(&b, 4);                                   /* 3 */
    tb_raw(&b, gap2, sizeof gap2);                      /* after 3, the last */
    tb_finish(&b);
    gr_trace in, out;
    assert_int_equal(tb_load(&b, &in), GR_READ_OK);
    assert_int_equal(in.gap_defs.n, 3);
    assert_int_equal(in.gap, 10);
    assert_int_equal(in.gap_defs.head, 5);
    char path[] = "/tmp/gr-unit-edit-XXXXXX";
    tmp_path(path);
    char err[256];
    static const struct {
        uint64_t drop[4];
        size_t ndrop, nrecs;
        uint64_t at[3]; /* where each GAP is in the output */
        uint64_t head;  /* the part before the first record */
        uint64_t first_tid; /* the first kept record's thread, 0: none kept */
    } cases[] = {
        {{0}, 0, 4, {0, 2, 4}, 5, 1},           /* nothing dropped: as in */
        {{1}, 1, 3, {0, 1, 3}, 5, 1},           /* GAP 3 stays between threads 1 and 3 */
        {{0, 1}, 2, 2, {0, 0, 2}, 8, 3},        /* GAP 3 before the first kept record */
        {{2, 3}, 2, 2, {0, 2, 2}, 5, 1},        /* GAP 3 after the last kept record */
        {{3, 0, 2, 1}, 4, 0, {0, 0, 0}, 10, 0}, /* every record dropped: every GAP */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        assert_int_equal(gr_edit_drop(&in, cases[k].drop, cases[k].ndrop, path, err, sizeof err), 0);
        assert_int_equal(gr_trace_load(&out, path), GR_READ_OK);
        assert_int_equal(out.nrecs, cases[k].nrecs);
        assert_int_equal(out.gap_defs.n, 3);
        uint64_t n[3] = {5, 3, 2};
        for (int j = 0; j < 3; j++) {
            assert_int_equal(out.gap_defs.list[j].n, n[j]);
            assert_int_equal(out.gap_defs.list[j].at, cases[k].at[j]);
        }
        assert_int_equal(out.gap, 10);
        assert_int_equal(out.gap_defs.head, cases[k].head);
        if (cases[k].first_tid)
            assert_int_equal(out.recs[0].tid, cases[k].first_tid);
        assert_int_equal(out.nmetas, 1);
        assert_int_equal(out.metas[0].at, 0);
        gr_trace_free(&out);
    }
    /* a GAP that shares a chunk boundary with records: the same, with
     * chunks of a few records */
    uint64_t drop1 = 1;
    assert_int_equal(gr_edit_write(&in, &drop1, 1, 8, path, err, sizeof err), 0);
    assert_int_equal(gr_trace_load(&out, path), GR_READ_OK);
    assert_int_equal(out.gap_defs.n, 3);
    assert_int_equal(out.gap_defs.list[1].at, 1);
    assert_int_equal(out.gap, 10);
    gr_trace_free(&out);
    /* streamed, the reader keeps the sums only (no memory per GAP) */
    assert_int_equal(gr_trace_open(&out, path), GR_READ_OK);
    while (gr_trace_next_chunk(&out) > 0)
        ;
    assert_int_equal(out.err.status, 0);
    assert_int_equal(out.gap, 10);
    assert_int_equal(out.gap_defs.head, 5);
    assert_int_equal(out.gap_defs.n, 0);
    gr_trace_free(&out);
    gr_trace_free(&in);
    unlink(path);
    tb_cleanup(&b);
}

/* The records chunks of the file at path: [0] plain ('E'), [1] compressed
 * (FORMAT §2.1), counted from its bytes. */
static void count_chunks(const char *path, size_t count[2])
{
    tb f;
    memset(&f, 0, sizeof f);
    snprintf(f.path, sizeof f.path, "%s", path);
    size_t n;
    uint8_t *d = tb_bytes(&f, &n);
    count[0] = count[1] = 0;
    for (size_t off = GR_HEADER_LEN; off + GR_CHUNK_HEADER_LEN <= n;) {
        if (d[off] == GR_CHUNK_RECORDS)
            count[0]++;
        else if (d[off] == (uint8_t)GR_CHUNK_RECORDS_Z)
            count[1]++;
        off += GR_CHUNK_HEADER_LEN + gr_get_u32le(d + off + 1);
    }
    free(d);
}

/* A trace of many CALL/RETURN pairs (zstd shrinks its chunks), written
 * compressed or not. */
static void pairs_trace(tb *b, int compress)
{
    tb_open(b, 512);
    assert_int_equal(gr_writer_set_compress(b->w, compress), 0);
    uint32_t f = tb_py(b, "f", "a.py", 3);
    tb_thread(b, 1);
    tb_greenlet(b, 1, 1, 0, GR_GL_MAIN, 0);
    for (int i = 0; i < 400; i++) {
        tb_ev(b, GR_CALL, 1, 1, f);
        tb_ev(b, GR_RETURN, 1, 1, f);
    }
    tb_finish(b);
}

/* edit keeps the input's compression: a compressed trace (the recorder's
 * default) gives compressed chunks, one recorded with --no-compress plain
 * ones; both hold the same records. */
static void test_compression_kept(void **state)
{
    (void)state;
    size_t nrecs[2] = {0, 0};
    for (int z = 0; z <= 1; z++) {
        tb b;
        pairs_trace(&b, z);
        size_t count[2];
        count_chunks(b.path, count);
        assert_true(count[z] >= 2); /* the input is what it should be */
        if (!z)
            assert_int_equal(count[1], 0);
        gr_trace in, out;
        assert_int_equal(tb_load(&b, &in), GR_READ_OK);
        char path[] = "/tmp/gr-unit-edit-XXXXXX";
        tmp_path(path);
        char err[256];
        uint64_t drop = 2;
        assert_int_equal(gr_edit_write(&in, &drop, 1, 512, path, err, sizeof err), 0);
        count_chunks(path, count);
        if (z)
            assert_true(count[1] >= 2);
        else
            assert_int_equal(count[1], 0);
        assert_true(count[0] + count[1] >= 2);
        assert_int_equal(gr_trace_load(&out, path), GR_READ_OK);
        assert_int_equal(out.nrecs, in.nrecs - 1);
        for (size_t i = 2; i < out.nrecs; i++)
            assert_int_equal(out.recs[i].tag, in.recs[i + 1].tag);
        nrecs[z] = out.nrecs;
        gr_trace_free(&out);
        gr_trace_free(&in);
        unlink(path);
        tb_cleanup(&b);
    }
    assert_int_equal(nrecs[0], nrecs[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_drop_keeps_rest),
        cmocka_unit_test(test_truncated_stays_truncated),
        cmocka_unit_test(test_meta_positions_kept),
        cmocka_unit_test(test_gaps_kept),
        cmocka_unit_test(test_compression_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
