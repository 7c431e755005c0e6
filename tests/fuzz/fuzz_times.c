/* fuzz_times.c - libFuzzer harness over the side channel (`*.grt.times`,
 * docs/FORMAT.md §5): its reader, `dump --times` and `export` (Chrome and
 * speedscope, timed by it) of a trace with it, and
 * `check --stall` (gr_stall_run) of that trace against it, with the
 * report's text and JSON; `dump --times` with the side channel streamed
 * from a file (gr_dump_stream_times) must print what it prints with the
 * side channel loaded.
 *
 * The input is a side-channel file; CRCs are recomputed first
 * (fuzz_common.h).  The trace it is checked against is the file named by
 * the environment variable GR_FUZZ_TRACE (tests/fuzz/run.sh sets it to
 * the recording the side-channel seeds belong to), or, without it, a
 * small built-in trace with two greenlets and switches.
 */
#include "check.h"
#include "dump.h"
#include "export.h"
#include "fuzz_common.h"
#include "reader.h"
#include "report.h"
#include "stall.h"

#include "encode.h"
#include "writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static FILE *devnull;
static gr_trace trace;

#define MUST(cond)                                                                          \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "fuzz_times: invariant failed: %s (%s:%d)\n", #cond, __FILE__,  \
                    __LINE__);                                                              \
            abort();                                                                        \
        }                                                                                   \
    } while (0)

/* The built-in trace: g1 switches to g2 and back, g2 dies; a sampler META. */
static void builtin_trace(void)
{
    char path[] = "/tmp/gr-fuzz-times-XXXXXX";
    int fd = mkstemp(path);
    MUST(fd >= 0);
    close(fd);
    gr_writer *w = gr_writer_open(path, GR_STREAM_CANONICAL, 0);
    MUST(w != NULL);
    const char *s[] = {"<module>", "a.py", "x", "greenlet.switch", "sampler", "hold-lock"};
    for (int i = 0; i < 6; i++)
        MUST(gr_emit_string(w, s[i], strlen(s[i])) == 0);
    gr_code mod = {.kind = GR_CODE_PY, .qualname = 1, .file = 2, .line = 1};
    gr_code x = {.kind = GR_CODE_PY, .qualname = 3, .file = 2, .line = 3};
    gr_code sw = {.kind = GR_CODE_C, .qualname = 4};
    MUST(gr_emit_code(w, &mod) == 0 && gr_emit_code(w, &x) == 0 && gr_emit_code(w, &sw) == 0);
    MUST(gr_emit_meta(w, 5, 6) == 0);
    uint32_t st[1] = {1};
    gr_record rs[] = {
        {.tag = GR_THREAD, .tid = 1},
        {.tag = GR_GREENLET, .tid = 1, .gid = 1, .flags = GR_GL_MAIN, .depth = 1},
        {.tag = GR_START, .tid = 1, .gid = 1},
        {.tag = GR_C_CALL, .tid = 1, .gid = 1, .code = 3},
        {.tag = GR_GREENLET, .tid = 1, .gid = 2, .parent = 1},
        {.tag = GR_SWITCH, .tid = 1, .gid = 1, .target = 2, .parent = 1, .flags = 1},
        {.tag = GR_CALL, .tid = 1, .gid = 2, .code = 2},
        {.tag = GR_C_CALL, .tid = 1, .gid = 2, .code = 3},
        {.tag = GR_SWITCH, .tid = 1, .gid = 2, .target = 1, .flags = 1},
        {.tag = GR_C_RETURN, .tid = 1, .gid = 1, .code = 3},
        {.tag = GR_C_CALL, .tid = 1, .gid = 1, .code = 3},
        {.tag = GR_SWITCH, .tid = 1, .gid = 1, .target = 2, .parent = 1, .flags = 1},
        {.tag = GR_C_RETURN, .tid = 1, .gid = 2, .code = 3},
        {.tag = GR_RETURN, .tid = 1, .gid = 2, .code = 2},
        {.tag = GR_SWITCH, .tid = 1, .gid = 2, .target = 1, .flags = 9},
        {.tag = GR_DEAD, .tid = 1, .gid = 2},
        {.tag = GR_C_RETURN, .tid = 1, .gid = 1, .code = 3},
    };
    size_t n = sizeof rs / sizeof rs[0];
    for (size_t i = 0; i < n; i++)
        MUST(gr_emit_record(w, &rs[i], st) == 0);
    uint64_t tr[4] = {n, 0, 0, GR_STOP_CALLED};
    MUST(gr_writer_finish(w, tr, 4) == 0);
    MUST(gr_trace_load(&trace, path) == GR_READ_OK);
    unlink(path);
}

static void setup(void)
{
    devnull = fopen("/dev/null", "w");
    MUST(devnull != NULL);
    const char *p = getenv("GR_FUZZ_TRACE");
    if (p && *p) {
        if (gr_trace_load(&trace, p) != GR_READ_OK) {
            fprintf(stderr, "fuzz_times: GR_FUZZ_TRACE: %s\n", trace.err.msg);
            abort();
        }
    } else {
        builtin_trace();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!devnull)
        setup();
    uint8_t *d = gr_fuzz_fix_crcs(data, size);
    if (!d)
        return 0;
    gr_times tm;
    int rc = gr_times_parse(&tm, "fuzz.grt.times", d, size);
    if (rc != GR_READ_OK) {
        MUST(tm.err.msg[0] != 0);
        gr_times_free(&tm);
        free(d);
        return 0;
    }
    /* dump --times: loaded and streamed from a file, the same text. */
    char path[] = "/tmp/gr-fuzz-side-XXXXXX";
    int fd = mkstemp(path);
    MUST(fd >= 0);
    MUST(write(fd, d, size) == (ssize_t)size);
    close(fd);
    free(d);
    char *a = NULL, *b = NULL, *err = NULL;
    size_t al = 0, bl = 0;
    FILE *fa = open_memstream(&a, &al), *fb = open_memstream(&b, &bl);
    MUST(fa && fb);
    MUST(gr_dump(fa, &trace, &tm) == 0);
    int k = gr_dump_stream_times(fb, &trace, path, &err);
    fclose(fa);
    fclose(fb);
    unlink(path);
    if (k != 0)
        fprintf(stderr, "fuzz_times: dump --times streamed: %d %s\n", k, err ? err : "");
    MUST(k == 0 && al == bl && memcmp(a, b, al) == 0);
    free(a);
    free(b);
    free(err);
    MUST(gr_export(devnull, size && (data[0] & 1) ? GR_EXPORT_SPEEDSCOPE : GR_EXPORT_CHROME, &trace,
                   &tm, NULL, NULL, NULL) == 0);
    if (gr_times_has_sampler(&tm)) {
        gr_stall st;
        gr_check_result res;
        size_t nv = gr_stall_run(&trace, &tm, (size ? data[0] : 1) * 1000u, &st, &res);
        MUST(nv == res.nv);
        gr_report_text(devnull, &trace, &res);
        json_t *j = gr_report_json_trace(&trace, &res);
        MUST(j != NULL);
        json_object_set_new(j, "stall", gr_stall_json(&st));
        char *text = json_dumps(j, 0);
        MUST(text != NULL);
        free(text);
        json_decref(j);
        gr_stall_free(&st);
        gr_check_result_free(&res);
    }
    gr_times_free(&tm);
    return 0;
}
