/* split_check.h - header-only helper for unit tests: a trace file checked in
 * pieces (replay/rules/split.h, `check --from A --to B`), cut at every chunk
 * boundary into 2 ranges and at a spread of pairs of boundaries into 3,
 * gives exactly the violations of the whole streamed check: same rule,
 * record, thread, greenlet, message and context lines, in the same order
 * (none lost, none doubled).  Include after cmocka.h. */
#ifndef GR_SPLIT_CHECK_H
#define GR_SPLIT_CHECK_H

#include "check.h"
#include "split.h"
#include "text.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Violations of the ranges cut at cuts[0..ncuts) (ascending chunk
 * indices), merged into *out as docs/ARCHITECTURE.md merges the workers'
 * (appended in range order, then sorted by index, stably: a violation the
 * last range's worker keeps at an earlier index, split.h, goes there);
 * caller frees with gr_check_result_free. */
static inline void split_run(const char *path, const uint64_t *cuts, int ncuts, uint64_t nchunks,
                             gr_check_result *out)
{
    memset(out, 0, sizeof *out);
    for (int k = 0; k <= ncuts; k++) {
        gr_split sp = {.from = k ? cuts[k - 1] : 0, .to = k < ncuts ? cuts[k] : UINT64_MAX};
        gr_trace t;
        gr_check_result r;
        assert_int_equal(gr_trace_open(&t, path), GR_READ_OK);
        assert_int_equal(gr_check_split(&t, &sp, &r), GR_SPLIT_OK);
        assert_true(sp.chunks == nchunks);
        for (size_t i = 0; i < r.nv; i++) {
            out->v = gr_xgrow(out->v, &out->cap_v, out->nv + 1, sizeof *out->v);
            out->v[out->nv++] = r.v[i]; /* takes over message and lines */
        }
        r.nv = 0;
        gr_check_result_free(&r);
        gr_trace_free(&t);
    }
    for (size_t i = 1; i < out->nv; i++) { /* insertion sort: stable */
        gr_violation v = out->v[i];
        size_t j = i;
        for (; j > 0 && out->v[j - 1].index > v.index; j--)
            out->v[j] = out->v[j - 1];
        out->v[j] = v;
    }
}

static inline void split_expect_same(const gr_check_result *whole, const gr_check_result *parts,
                                     const uint64_t *cuts, int ncuts)
{
    int same = whole->nv == parts->nv;
    for (size_t i = 0; same && i < whole->nv; i++) {
        const gr_violation *a = &whole->v[i], *b = &parts->v[i];
        same = a->rule == b->rule && a->index == b->index && a->tid == b->tid &&
               a->gid == b->gid && strcmp(a->message, b->message) == 0 && a->nctx == b->nctx;
        for (int k = 0; same && k < a->nctx; k++)
            same = (!a->ctx_line[k] && !b->ctx_line[k]) ||
                   (a->ctx_line[k] && b->ctx_line[k] && strcmp(a->ctx_line[k], b->ctx_line[k]) == 0);
    }
    if (!same) {
        print_error("split at chunks %llu%s%llu: %zu violations, the whole check has %zu\n",
                    (unsigned long long)cuts[0], ncuts > 1 ? "," : "",
                    ncuts > 1 ? (unsigned long long)cuts[1] : 0ULL, parts->nv, whole->nv);
        for (size_t i = 0; i < whole->nv; i++)
            print_error("  whole: %s at %llu: %s\n", gr_rule_name(whole->v[i].rule),
                        (unsigned long long)whole->v[i].index, whole->v[i].message);
        for (size_t i = 0; i < parts->nv; i++)
            print_error("  split: %s at %llu: %s\n", gr_rule_name(parts->v[i].rule),
                        (unsigned long long)parts->v[i].index, parts->v[i].message);
        fail();
    }
}

/* Check the trace at path whole and in pieces; returns the number of
 * chunks it has. */
static inline uint64_t split_same_as_whole(const char *path)
{
    gr_trace t;
    gr_check_result whole;
    assert_int_equal(gr_trace_open(&t, path), GR_READ_OK);
    assert_int_not_equal(gr_check_stream(&t, &whole), SIZE_MAX);
    gr_trace_free(&t);
    /* the number of chunks, from a worker over all of them */
    gr_split all = {.from = 0, .to = UINT64_MAX};
    gr_check_result r;
    assert_int_equal(gr_trace_open(&t, path), GR_READ_OK);
    int rc = gr_check_split(&t, &all, &r);
    gr_trace_free(&t);
    if (rc == GR_SPLIT_PAST_END) { /* no chunk at all */
        assert_int_equal(whole.nv, 0);
        gr_check_result_free(&whole);
        return 0;
    }
    assert_int_equal(rc, GR_SPLIT_OK);
    gr_check_result_free(&r);
    uint64_t n = all.chunks, step = n / 8 + 1;
    for (uint64_t a = 1; a < n; a++) {
        gr_check_result parts;
        split_run(path, &a, 1, n, &parts);
        split_expect_same(&whole, &parts, &a, 1);
        gr_check_result_free(&parts);
    }
    for (uint64_t a = 1; a < n; a += step)
        for (uint64_t b = a + 1; b < n; b += step) {
            uint64_t cuts[2] = {a, b};
            gr_check_result parts;
            split_run(path, cuts, 2, n, &parts);
            split_expect_same(&whole, &parts, cuts, 2);
            gr_check_result_free(&parts);
        }
    gr_check_result_free(&whole);
    return n;
}

#endif
