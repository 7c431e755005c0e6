/* test_export.c - replay/report/export.c: Chrome Trace Event and speedscope export
 * of built traces: tracks per (thread, greenlet) and their names, B/E
 * nesting per track with unbalanced input (a return without its call, a
 * lost return, frames open at a death and at the end), flows per switch,
 * marks and violations as instant events, times from the side channel or
 * from record order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"
#include "export.h"
#include "trace_builder.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* t1: g1 (main, seed <module>) calls f, a lost return of g (no call),
 * C call len without its c_return, switch to g2 (run h: a call of h, a
 * mark whose stack misses the frame `h` -> blind_spot), g2 calls k and
 * dies with k open, back in g1: f returns; end without STOP (<module>
 * still open). */
static void build(tb *b)
{
    tb_open(b, 0);
    uint32_t mod = tb_py(b, "<module>", "m.py", 1), f = tb_py(b, "f", "m.py", 3),
             g = tb_py(b, "g", "m.py", 5), h = tb_py(b, "h", "m.py", 7),
             k = tb_py(b, "k", "m.py", 9), len = tb_c(b, "builtins.len"),
             mark = tb_c(b, "greenreplay._greenreplay.mark");
    uint32_t label = tb_str(b, "in \"h\"");
    tb_thread(b, 1);                                   /* 0 */
    tb_greenlet(b, 1, 1, 0, GR_GL_MAIN, 1, mod);       /* 1 */
    tb_ev(b, GR_CALL, 1, 1, f);                        /* 2 */
    tb_ev(b, GR_RETURN, 1, 1, g);                      /* 3: no call */
    tb_ev(b, GR_C_CALL, 1, 1, len);                    /* 4: never returns */
    tb_greenlet(b, 1, 2, 1, 0, 0);                     /* 5 */
    tb_switch(b, GR_SWITCH, 1, 1, 2, 1, 1, 0, 0);      /* 6 */
    tb_ev(b, GR_CALL, 1, 2, h);                        /* 7 */
    tb_ev(b, GR_C_CALL, 1, 2, mark);                   /* 8 */
    tb_mark(b, 1, 2, label, mark, 2, 0);               /* 9: stack misses h */
    tb_ev(b, GR_C_RETURN, 1, 2, mark);                 /* 10 */
    tb_ev(b, GR_CALL, 1, 2, k);                        /* 11 */
    tb_switch(b, GR_SWITCH, 1, 2, 1, 0, 1 | 8, 0, 0);  /* 12: origin dead */
    tb_simple(b, GR_DEAD, 1, 2);                       /* 13 */
    tb_ev(b, GR_RETURN, 1, 1, f);                      /* 14: closes len too */
    tb_finish_with(b, 15, 0, 0, GR_STOP_EXIT);
}

/* Export t to a string. */
static char *export_str(const gr_trace *t, enum gr_export_format fmt, const gr_times *tm,
                        const gr_check_result *res, gr_export_stats *st)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    assert_non_null(f);
    assert_int_equal(gr_export(f, fmt, t, tm, res, "t.grt", st), 0);
    fclose(f);
    return buf;
}

/* The events of a chrome document with ph and tid (tid 0: any). */
static size_t count_ph(json_t *evs, const char *ph, int tid)
{
    size_t n = 0, i;
    json_t *ev;
    json_array_foreach(evs, i, ev) {
        if (strcmp(json_string_value(json_object_get(ev, "ph")), ph) == 0 &&
            (tid == 0 || json_integer_value(json_object_get(ev, "tid")) == tid))
            n++;
    }
    return n;
}

static void test_chrome(void **state)
{
    (void)state;
    tb b;
    build(&b);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    gr_check_result res;
    size_t nv = gr_check_run(&t, &res);
    assert_true(nv >= 1);
    gr_export_stats st;
    char *s = export_str(&t, GR_EXPORT_CHROME, NULL, &res, &st);
    json_error_t err;
    json_t *doc = json_loads(s, 0, &err);
    if (!doc)
        fail_msg("not JSON: %s at %d: %s", err.text, err.position, s);
    json_t *evs = doc; /* the array form */
    assert_true(json_is_array(evs));

    assert_int_equal(st.tracks, 2);
    assert_int_equal(st.slices, 6); /* <module>, f, len, h, mark, k */
    assert_int_equal(st.unmatched, 1);          /* return of g */
    assert_int_equal(st.closed_at_end, 3); /* h and k at DEAD, <module> at the end */
    assert_int_equal(st.switches, 2);
    assert_int_equal(st.marks, 1);
    assert_int_equal(st.violations, nv);
    assert_false(st.timed);

    /* Every event has the required fields; B/E nest per tid, with names. */
    json_t *stacks = json_object();
    size_t i;
    json_t *ev;
    double last_ts = -1;
    json_array_foreach(evs, i, ev) {
        for (const char **k = (const char *[]){"ph", "ts", "pid", "tid", "name", NULL}; *k; k++)
            if (!json_object_get(ev, *k))
                fail_msg("event %zu lacks %s", i, *k);
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        char key[32];
        snprintf(key, sizeof key, "%lld", json_integer_value(json_object_get(ev, "tid")));
        json_t *st_ = json_object_get(stacks, key);
        if (!st_) {
            st_ = json_array();
            json_object_set_new(stacks, key, st_);
        }
        double ts = json_number_value(json_object_get(ev, "ts"));
        if (strcmp(ph, "B") == 0 || strcmp(ph, "E") == 0) {
            assert_true(ts >= last_ts); /* one thread: time never goes back */
            last_ts = ts;
        }
        if (strcmp(ph, "B") == 0)
            json_array_append(st_, json_object_get(ev, "name"));
        else if (strcmp(ph, "E") == 0) {
            size_t n = json_array_size(st_);
            assert_true(n > 0);
            assert_string_equal(json_string_value(json_array_get(st_, n - 1)),
                                json_string_value(json_object_get(ev, "name")));
            json_array_remove(st_, n - 1);
        }
    }
    const char *k_;
    json_t *v_;
    json_object_foreach(stacks, k_, v_) assert_int_equal(json_array_size(v_), 0);
    json_decref(stacks);

    /* Order-based time: record i at i us (record 1 = the seed at 1). */
    json_t *first = json_array_get(evs, 0);
    assert_string_equal(json_string_value(json_object_get(first, "ph")), "B");
    assert_string_equal(json_string_value(json_object_get(first, "name")), "<module>");
    assert_int_equal(json_integer_value(json_object_get(first, "ts")), 1);

    assert_int_equal(count_ph(evs, "B", 1), 3);
    assert_int_equal(count_ph(evs, "B", 2), 3);
    assert_int_equal(count_ph(evs, "s", 0), 2);
    assert_int_equal(count_ph(evs, "f", 0), 2);
    /* Track names, a mark (label escaped), the unmatched return, the violation. */
    assert_non_null(strstr(s, "\"thread_name\",\"args\":{\"name\":\"thread 1 greenlet 1 (main)\"}"));
    assert_non_null(strstr(s, "\"thread_name\",\"args\":{\"name\":\"thread 1 greenlet 2 (run h)\"}"));
    assert_non_null(strstr(s, "\"name\":\"mark: in \\\"h\\\"\""));
    assert_non_null(strstr(s, "\"name\":\"return without call: g\""));
    assert_non_null(strstr(s, "\"cat\":\"violation\",\"name\":\"violation: blind_spot\""));
    assert_non_null(strstr(s, "event order: 1 us per record"));
    json_decref(doc);
    free(s);

    /* Without a check result there is no violation event. */
    s = export_str(&t, GR_EXPORT_CHROME, NULL, NULL, &st);
    assert_null(strstr(s, "\"violation\""));
    assert_int_equal(st.violations, 0);
    free(s);
    gr_check_result_free(&res);
    gr_trace_free(&t);
    tb_cleanup(&b);
}

static void test_times(void **state)
{
    (void)state;
    tb b;
    build(&b);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    /* Side channel: 2500 ns per record, except record 3 at the same reading
     * as record 2 (spread 1 ns apart). */
    uint64_t dt[15];
    for (int i = 0; i < 15; i++)
        dt[i] = 2500;
    dt[3] = 0;
    gr_times tm;
    memset(&tm, 0, sizeof tm);
    tm.dt = dt;
    tm.n = 15;
    gr_export_stats st;
    char *s = export_str(&t, GR_EXPORT_CHROME, &tm, NULL, &st);
    assert_true(st.timed);
    /* record 1 (seed) at 5000 ns = 5 us; record 2 (call f) at 7.5 us. */
    assert_non_null(strstr(s, "{\"ph\":\"B\",\"pid\":1,\"tid\":1,\"ts\":5,"));
    assert_non_null(strstr(s, "{\"ph\":\"B\",\"pid\":1,\"tid\":1,\"ts\":7.500,"));
    assert_non_null(strstr(s, "\"ts\":7.501,\"s\":\"t\",\"cat\":\"unbalanced\""));
    assert_non_null(strstr(s, "\"time_unit\":\"ns\""));
    free(s);
    s = export_str(&t, GR_EXPORT_SPEEDSCOPE, &tm, NULL, &st);
    assert_non_null(strstr(s, "\"unit\":\"nanoseconds\",\"startValue\":5000,"));
    free(s);
    gr_trace_free(&t);
    tb_cleanup(&b);
}

static void test_speedscope(void **state)
{
    (void)state;
    tb b;
    build(&b);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    gr_export_stats st;
    char *s = export_str(&t, GR_EXPORT_SPEEDSCOPE, NULL, NULL, &st);
    json_error_t err;
    json_t *doc = json_loads(s, 0, &err);
    if (!doc)
        fail_msg("not JSON: %s: %s", err.text, s);
    json_t *frames = json_object_get(json_object_get(doc, "shared"), "frames");
    assert_int_equal(json_array_size(frames), t.ncodes);
    assert_string_equal(json_string_value(json_object_get(json_array_get(frames, 1), "name")),
                        "f");
    json_t *profiles = json_object_get(doc, "profiles");
    assert_int_equal(json_array_size(profiles), 3); /* the merged view, then 2 greenlets */
    assert_int_equal(st.tracks, 2);
    assert_int_equal(st.merged, 1);
    size_t i;
    json_t *p;
    json_array_foreach(profiles, i, p) {
        assert_string_equal(json_string_value(json_object_get(p, "type")), "evented");
        assert_string_equal(json_string_value(json_object_get(p, "unit")), "microseconds");
        json_t *evs = json_object_get(p, "events");
        int stack[16], n = 0;
        json_int_t last = json_integer_value(json_object_get(p, "startValue"));
        size_t j;
        json_t *ev;
        json_array_foreach(evs, j, ev) {
            json_int_t at = json_integer_value(json_object_get(ev, "at"));
            int fr = (int)json_integer_value(json_object_get(ev, "frame"));
            assert_true(at >= last);
            last = at;
            if (strcmp(json_string_value(json_object_get(ev, "type")), "O") == 0) {
                assert_true(n < 16);
                stack[n++] = fr;
            } else {
                assert_true(n > 0);
                assert_int_equal(stack[--n], fr);
            }
        }
        assert_int_equal(n, 0);
        assert_true(last <= json_integer_value(json_object_get(p, "endValue")));
    }
    assert_string_equal(json_string_value(json_object_get(json_array_get(profiles, 0), "name")),
                        "thread 1: all greenlets merged");
    assert_string_equal(json_string_value(json_object_get(json_array_get(profiles, 2), "name")),
                        "thread 1 greenlet 2 (run h)");
    json_decref(doc);
    free(s);
    gr_trace_free(&t);
    tb_cleanup(&b);
}

/* The merged view of build()'s trace, 1 us per record: g1 runs from its
 * first event (record 2), g2 from the switch at 6 to the one at 12; the 12
 * us go to <module> > f (2), <module> > f > len (4: also while g1 is back
 * after 12), g2 with no frame (1), h (2), h > mark (2), h > k (1).  The same
 * tree in Chrome's CPU profile and speedscope's evented profile; --view
 * merged writes nothing else, --view greenlets no merged view. */
static void test_merged(void **state)
{
    (void)state;
    tb b;
    build(&b);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    gr_export_stats st;
    char *s = export_str(&t, GR_EXPORT_SPEEDSCOPE, NULL, NULL, &st);
    json_t *doc = json_loads(s, 0, NULL);
    assert_non_null(doc);
    json_t *p = json_array_get(json_object_get(doc, "profiles"), 0);
    assert_int_equal(json_integer_value(json_object_get(p, "endValue")), 12);
    json_t *frames = json_object_get(json_object_get(doc, "shared"), "frames");
    /* events as "O name @at" / "C name @at" */
    char got[512] = "";
    size_t i;
    json_t *ev;
    json_array_foreach(json_object_get(p, "events"), i, ev) {
        char one[64];
        json_t *fr = json_array_get(frames, (size_t)json_integer_value(json_object_get(ev, "frame")));
        snprintf(one, sizeof one, "%s %s @%lld; ", json_string_value(json_object_get(ev, "type")),
                 json_string_value(json_object_get(fr, "name")),
                 json_integer_value(json_object_get(ev, "at")));
        strncat(got, one, sizeof got - strlen(got) - 1);
    }
    assert_string_equal(got, "O <module> @0; O f @0; O builtins.len @0; C builtins.len @4; "
                             "C f @6; C <module> @6; O h @6; O greenreplay._greenreplay.mark @6; "
                             "C greenreplay._greenreplay.mark @8; O k @8; C k @9; C h @11; ");
    assert_int_equal(st.nodes, 6);
    json_decref(doc);
    free(s);

    s = export_str(&t, GR_EXPORT_CHROME, NULL, NULL, &st);
    doc = json_loads(s, 0, NULL);
    assert_non_null(doc);
    json_t *chunk = NULL, *prof = NULL;
    json_array_foreach(doc, i, ev) {
        const char *name = json_string_value(json_object_get(ev, "name"));
        if (strcmp(name, "Profile") == 0)
            prof = ev;
        if (strcmp(name, "ProfileChunk") == 0)
            chunk = ev;
    }
    assert_non_null(prof);
    assert_non_null(chunk);
    json_t *data = json_object_get(json_object_get(chunk, "args"), "data");
    assert_int_equal(json_integer_value(json_object_get(data, "endTime")), 12);
    json_t *deltas = json_object_get(data, "timeDeltas");
    json_t *samples = json_object_get(json_object_get(data, "cpuProfile"), "samples");
    assert_int_equal(json_array_size(deltas), json_array_size(samples));
    json_int_t sum = 0;
    json_array_foreach(deltas, i, ev) sum += json_integer_value(ev);
    assert_int_equal(sum, 12);
    /* 6 frames and the root; samples: the root (g2 with no frame), f, len,
     * h, mark, k, then the root twice to end the last */
    assert_int_equal(json_array_size(json_object_get(json_object_get(data, "cpuProfile"), "nodes")), 7);
    assert_int_equal(json_array_size(samples), 8);
    /* the first event lets speedscope sniff the file as Chrome's */
    json_t *first = json_array_get(doc, 0);
    assert_non_null(json_object_get(first, "cat"));
    json_decref(doc);
    free(s);

    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    assert_int_equal(gr_export_view(f, GR_EXPORT_CHROME, GR_EXPORT_MERGED, &t, NULL, NULL, "t", &st), 0);
    fclose(f);
    assert_null(strstr(buf, "\"ph\":\"B\""));
    assert_null(strstr(buf, "\"ph\":\"i\""));
    assert_non_null(strstr(buf, "\"ProfileChunk\""));
    assert_int_equal(st.tracks, 0);
    free(buf);
    buf = NULL;
    f = open_memstream(&buf, &n);
    assert_int_equal(gr_export_view(f, GR_EXPORT_SPEEDSCOPE, GR_EXPORT_GREENLETS, &t, NULL, NULL, "t", &st), 0);
    fclose(f);
    assert_null(strstr(buf, "all greenlets merged"));
    assert_int_equal(st.merged, 0);
    free(buf);
    gr_trace_free(&t);
    tb_cleanup(&b);
}

/* Without greenlet (gid 0): one track per thread, named "thread N". */
static void test_no_greenlet(void **state)
{
    (void)state;
    tb b;
    tb_open(&b, 0);
    uint32_t f = tb_py(&b, "f", "m.py", 1);
    tb_thread(&b, 1);
    tb_ev(&b, GR_CALL, 1, 0, f);
    tb_thread(&b, 2);
    tb_ev(&b, GR_CALL, 2, 0, f);
    tb_ev(&b, GR_RETURN, 2, 0, f);
    tb_ev(&b, GR_RETURN, 1, 0, f);
    tb_finish(&b);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    gr_export_stats st;
    char *s = export_str(&t, GR_EXPORT_CHROME, NULL, NULL, &st);
    assert_int_equal(st.tracks, 2);
    assert_int_equal(st.unmatched, 0);
    assert_int_equal(st.closed_at_end, 0);
    assert_non_null(strstr(s, "\"args\":{\"name\":\"thread 1\"}"));
    assert_non_null(strstr(s, "\"args\":{\"name\":\"thread 2\"}"));
    free(s);
    gr_trace_free(&t);
    tb_cleanup(&b);
}

/* A trace with no records: valid, empty documents. */
static void test_empty(void **state)
{
    (void)state;
    tb b;
    tb_open(&b, 0);
    tb_finish_with(&b, 0, 0, 0, GR_STOP_CALLED);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    gr_export_stats st;
    char *s = export_str(&t, GR_EXPORT_CHROME, NULL, NULL, &st);
    json_t *doc = json_loads(s, 0, NULL);
    assert_non_null(doc);
    json_decref(doc);
    free(s);
    s = export_str(&t, GR_EXPORT_SPEEDSCOPE, NULL, NULL, &st);
    doc = json_loads(s, 0, NULL);
    assert_non_null(doc);
    assert_int_equal(json_array_size(json_object_get(doc, "profiles")), 0);
    json_decref(doc);
    free(s);
    gr_trace_free(&t);
    tb_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chrome),
        cmocka_unit_test(test_times),
        cmocka_unit_test(test_speedscope),
        cmocka_unit_test(test_merged),
        cmocka_unit_test(test_no_greenlet),
        cmocka_unit_test(test_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
