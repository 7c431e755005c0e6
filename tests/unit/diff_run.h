/* diff_run.h - header-only helper for unit tests of gr_diff (test_diff.c,
 * test_launch.c): two traces built with trace_builder.h compared as
 * `greenreplay diff A B` compares them.  Include after cmocka.h. */
#ifndef GR_DIFF_RUN_H
#define GR_DIFF_RUN_H

#include "diff.h"
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
    tb_cleanup(a);
    tb_cleanup(b);
    return rc;
}

#endif
