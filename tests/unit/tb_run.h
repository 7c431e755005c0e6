/* tb_run.h - header-only helpers for unit tests that run a command's core
 * on traces built with trace_builder.h: two traces compared as `greenreplay
 * diff A B` compares them (test_diff.c, test_launch.c), a trace's script
 * as `greenreplay script` writes it (test_script.c, test_launch.c).
 * Include after cmocka.h. */
#ifndef GR_TB_RUN_H
#define GR_TB_RUN_H

#include "diff.h"
#include "diff_stream.h"
#include "script.h"
#include "trace_builder.h"

#include <stdio.h>

/* Loads the finished traces of a and b (a trace that does not load fails
 * the test), runs gr_diff on them labelled "A" and "B" with options o,
 * frees them and removes both builders' files (tb_cleanup).  Returns
 * gr_diff's status (0 same structure, 1 different, 2 error); its output,
 * NUL-terminated, goes to *out (malloc'd, the caller frees), or nowhere
 * when out is NULL. */
static inline int tb_diff(tb *a, tb *b, const gr_diff_opts *o, char **out)
{
    gr_trace ta, tb_;
    assert_int_equal(tb_load(a, &ta), GR_READ_OK);
    assert_int_equal(tb_load(b, &tb_), GR_READ_OK);
    size_t len;
    FILE *f = out ? open_memstream(out, &len) : fopen("/dev/null", "w");
    assert_non_null(f);
    int rc = gr_diff(f, &ta, "A", &tb_, "B", o);
    fclose(f);
    gr_trace_free(&ta);
    gr_trace_free(&tb_);
    /* the streamed comparison (diff_stream.h) writes the same bytes */
    gr_diff_info da, db;
    assert_int_equal(gr_diff_scan(&da, a->path), GR_READ_OK);
    assert_int_equal(gr_diff_scan(&db, b->path), GR_READ_OK);
    if (gr_diff_streamable(o)) {
        char *sout = NULL;
        size_t slen;
        FILE *g = open_memstream(&sout, &slen);
        assert_non_null(g);
        assert_int_equal(gr_diff_stream(g, &da, a->path, "A", &db, b->path, "B", o), rc);
        fclose(g);
        if (out)
            assert_string_equal(sout, *out);
        free(sout);
    }
    gr_diff_info_free(&da);
    gr_diff_info_free(&db);
    tb_cleanup(a);
    tb_cleanup(b);
    return rc;
}

/* Loads the finished trace of b (one that does not load fails the test)
 * and writes its script with gr_script_write (options anonymize, and
 * source: the trace's name in the header, NULL none); the program and the
 * notes go to *prog and *notes (malloc'd, the caller frees).  The trace
 * read as a stream (gr_shape_build_path, gr_script_write_shape, as
 * `greenreplay script` reads a file) must give the same program, notes
 * and count.  b's file stays.  Returns gr_script_write's count. */
static inline size_t tb_script(tb *b, int anonymize, const char *source, char **prog,
                               char **notes)
{
    gr_trace t;
    assert_int_equal(tb_load(b, &t), GR_READ_OK);
    gr_script_opts o = {.anonymize = anonymize, .source = source};
    gr_sb p, n;
    gr_sb_init(&p);
    gr_sb_init(&n);
    size_t k = gr_script_write(&t, &o, &p, &n);
    gr_trace_free(&t);
    *prog = gr_sb_take(&p);
    *notes = gr_sb_take(&n);
    /* streamed: the same bytes */
    gr_shape s;
    gr_trace ts;
    assert_int_equal(gr_shape_build_path(&s, &ts, b->path, anonymize), GR_READ_OK);
    char *sprog = NULL;
    size_t slen, sk = 0;
    gr_sb sn;
    gr_sb_init(&sn);
    FILE *f = open_memstream(&sprog, &slen);
    assert_non_null(f);
    assert_int_equal(gr_script_write_shape(&s, &o, f, &sn, &sk), 0);
    fclose(f);
    assert_string_equal(sprog, *prog);
    assert_string_equal(gr_sb_str(&sn), *notes);
    assert_int_equal(sk, k);
    free(sprog);
    gr_sb_free(&sn);
    gr_shape_free(&s);
    gr_trace_free(&ts);
    return k;
}

#endif
