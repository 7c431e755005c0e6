/* test_reader.c - replay/read/reader.c: write-then-read round trip of every
 * record kind, hand-made bytes, every corrupt case with its byte offset,
 * truncation at every offset, the side channel, and random mutations
 * (must never crash or leak; run under valgrind by tests/valgrind.sh). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "trace_builder.h"

#include <stdio.h>
#include <string.h>
#include <zstd.h>

/* ------------------------------------------------------------ helpers */

static int str_is(const gr_trace *t, uint64_t id, const char *want)
{
    size_t n;
    const uint8_t *s = gr_trace_string(t, id, &n);
    return s && n == strlen(want) && memcmp(s, want, n) == 0;
}

/* Parse n bytes; assert corrupt with the given kind and offset, and that the
 * message is "NAME: offset OFF: ..." containing `phrase`. */
static void expect_corrupt(const uint8_t *d, size_t n, enum gr_err_kind kind, uint64_t off,
                           const char *phrase)
{
    gr_trace t;
    int rc = gr_trace_parse(&t, "x.grt", d, n);
    if (rc != GR_READ_CORRUPT)
        fail_msg("expected corrupt (%s), got status %d: %s", phrase, rc, t.err.msg);
    assert_int_equal(t.err.kind, kind);
    assert_true(t.err.offset == off);
    char head[64];
    snprintf(head, sizeof head, "x.grt: offset %llu: ", (unsigned long long)off);
    if (strncmp(t.err.msg, head, strlen(head)) != 0 || !strstr(t.err.msg, phrase))
        fail_msg("message '%s' lacks '%s' / '%s'", t.err.msg, head, phrase);
    assert_null(strchr(t.err.msg, '\n'));
    gr_trace_free(&t);
}

/* Payload of one 'E' chunk from a list of bytes. */
#define BYTES(...) ((const uint8_t[]){__VA_ARGS__}), sizeof((const uint8_t[]){__VA_ARGS__})

static void corrupt_payload(const uint8_t *payload, size_t len, enum gr_err_kind kind,
                            uint64_t off, const char *phrase)
{
    size_t n;
    uint8_t *d = tb_memfile(GR_CHUNK_RECORDS, payload, len, 1, &n);
    expect_corrupt(d, n, kind, off, phrase);
    free(d);
}

/* file offset of byte i of the first chunk's payload */
#define P0 (GR_HEADER_LEN + GR_CHUNK_HEADER_LEN)

/* ------------------------------------------------------- round trips */

/* A trace with every record kind; fills ids for the checks. */
struct ids {
    uint32_t f, g, sw, mk, label;
};

static void build_all_kinds(tb *b, struct ids *id, size_t chunk_cap, int finish)
{
    tb_open(b, chunk_cap);
    tb_meta(b, "python", "3.11.7");
    id->f = tb_py(b, "f", "seed.py", 14);
    id->g = tb_py(b, "Cls.g", "<stdlib>/x.py", 200);
    id->sw = tb_c(b, "greenlet.switch");
    id->mk = tb_c(b, "greenreplay.mark");
    id->label = tb_str(b, "in f");
    tb_thread(b, 1);
    tb_greenlet(b, 1, 1, 0, GR_GL_MAIN, 1, id->f);
    tb_simple(b, GR_START, 1, 1);
    tb_ev(b, GR_CALL, 1, 1, id->g);
    tb_ev(b, GR_C_CALL, 1, 1, id->sw);
    tb_switch(b, GR_SWITCH, 1, 1, 2, 1, GR_SW_PROFILE_OURS | GR_SW_USE_TRACING_KNOWN, 0, 255);
    tb_greenlet(b, 1, 2, 1, GR_GL_SUSPENDED | GR_GL_CUT, 2, id->f, id->g);
    tb_ev(b, GR_C_RETURN, 1, 2, id->sw);
    tb_mark(b, 1, 2, id->label, id->mk, GR_MARK_PROFILE_OURS, 2, id->f, id->g);
    tb_ev(b, GR_C_EXCEPTION, 1, 2, id->mk);
    tb_ev(b, GR_RETURN, 1, 2, id->g);
    tb_switch(b, GR_THROW, 1, 2, 1, 0, GR_SW_ORIGIN_DEAD, 3, UINT64_MAX);
    tb_simple(b, GR_DEAD, 1, 2);
    tb_simple(b, GR_STOP, 1, 1);
    tb_stack(b, 1, 1, GR_STACK_RUNNING, 2, id->f, id->g);
    if (finish)
        tb_finish(b);
}

static void check_all_kinds(const gr_trace *t, const struct ids *id)
{
    assert_int_equal(t->nrecs, 16);
    assert_int_equal(t->nmetas, 1);
    assert_true(str_is(t, t->metas[0].key, "python"));
    assert_true(str_is(t, t->metas[0].value, "3.11.7"));
    const gr_code *f = gr_trace_code(t, id->f);
    assert_non_null(f);
    assert_int_equal(f->kind, GR_CODE_PY);
    assert_true(str_is(t, f->qualname, "f"));
    assert_true(str_is(t, f->file, "seed.py"));
    assert_int_equal(f->line, 14);
    const gr_code *sw = gr_trace_code(t, id->sw);
    assert_int_equal(sw->kind, GR_CODE_C);
    assert_int_equal(sw->file, 0);
    assert_null(gr_trace_code(t, 0));
    assert_null(gr_trace_code(t, 99));

    const gr_record *r = t->recs;
    for (size_t i = 0; i < t->nrecs; i++) {
        assert_int_equal(r[i].index, i);
        assert_true(r[i].offset >= GR_HEADER_LEN + GR_CHUNK_HEADER_LEN);
        assert_true(r[i].offset < t->size);
        assert_int_equal(r[i].tid, 1);
    }
    assert_int_equal(r[0].tag, GR_THREAD);
    assert_int_equal(r[1].tag, GR_GREENLET);
    assert_int_equal(r[1].gid, 1);
    assert_int_equal(r[1].parent, 0);
    assert_int_equal(r[1].flags, GR_GL_MAIN);
    assert_int_equal(r[1].depth, 1);
    assert_int_equal(gr_record_stack(t, &r[1])[0], id->f);
    assert_int_equal(r[2].tag, GR_START);
    assert_int_equal(r[2].gid, 1);
    assert_int_equal(r[3].tag, GR_CALL);
    assert_int_equal(r[3].code, id->g);
    assert_int_equal(r[4].tag, GR_C_CALL);
    assert_int_equal(r[4].code, id->sw);
    assert_int_equal(r[5].tag, GR_SWITCH);
    assert_int_equal(r[5].gid, 1);
    assert_int_equal(r[5].target, 2);
    assert_int_equal(r[5].parent, 1);
    assert_int_equal(r[5].flags, GR_SW_PROFILE_OURS | GR_SW_USE_TRACING_KNOWN);
    assert_int_equal(r[5].tracing, 0);
    assert_int_equal(r[5].use_tracing, 255);
    assert_int_equal(r[6].tag, GR_GREENLET);
    assert_int_equal(r[6].flags, GR_GL_SUSPENDED | GR_GL_CUT);
    assert_int_equal(r[6].depth, 2);
    assert_int_equal(gr_record_stack(t, &r[6])[0], id->f);
    assert_int_equal(gr_record_stack(t, &r[6])[1], id->g);
    assert_int_equal(r[7].tag, GR_C_RETURN);
    assert_int_equal(r[7].gid, 2);
    assert_int_equal(r[8].tag, GR_MARK);
    assert_int_equal(r[8].label, id->label);
    assert_int_equal(r[8].code, id->mk);
    assert_int_equal(r[8].flags, GR_MARK_PROFILE_OURS);
    assert_int_equal(r[8].depth, 2);
    assert_int_equal(gr_record_stack(t, &r[8])[1], id->g);
    assert_int_equal(r[9].tag, GR_C_EXCEPTION);
    assert_int_equal(r[10].tag, GR_RETURN);
    assert_int_equal(r[11].tag, GR_THROW);
    assert_int_equal(r[11].gid, 2);
    assert_int_equal(r[11].target, 1);
    assert_int_equal(r[11].flags, GR_SW_ORIGIN_DEAD);
    assert_int_equal(r[11].tracing, 3);
    assert_true(r[11].use_tracing == UINT64_MAX);
    assert_int_equal(r[12].tag, GR_DEAD);
    assert_int_equal(r[12].gid, 2);
    assert_int_equal(r[13].tag, GR_STOP);
    assert_int_equal(r[14].tag, GR_STACK);
    assert_int_equal(r[14].flags, GR_STACK_RUNNING);
    assert_int_equal(r[14].depth, 2);
    assert_int_equal(r[15].tag, GR_STACK);
}

static void test_round_trip_every_kind(void **state)
{
    (void)state;
    tb b;
    struct ids id;
    build_all_kinds(&b, &id, 0, 0);
    tb_stack(&b, 1, 3, 0, 0); /* empty stack */
    tb_finish(&b);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    check_all_kinds(&t, &id);
    assert_int_equal(t.recs[15].depth, 0);
    assert_int_equal(t.recs[15].gid, 3);
    assert_true(t.has_trailer);
    assert_false(t.truncated);
    assert_int_equal(t.trailer.events, 16);
    assert_int_equal(t.trailer.dropped, 0);
    assert_int_equal(t.trailer.reason, GR_STOP_CALLED);
    assert_int_equal(t.err.kind, GR_E_NONE);
    /* the first record starts right after the definitions of chunk 1 */
    assert_int_equal(t.recs[0].tag, GR_THREAD);
    assert_int_equal(t.data[t.recs[0].offset], GR_THREAD);
    /* format 1.2: the SWITCH follows an event of its origin: compact */
    assert_int_equal(t.data[t.recs[5].offset], GR_CTX_SWITCH);
    gr_trace_free(&t);
    tb_cleanup(&b);
}

static void test_round_trip_small_chunks(void **state)
{
    (void)state;
    tb b;
    struct ids id;
    /* 48-byte chunks: definitions and records spread over many chunks */
    build_all_kinds(&b, &id, 48, 0);
    tb_stack(&b, 1, 3, 0, 0);
    tb_finish(&b);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    check_all_kinds(&t, &id);
    /* Each record is in its full form or a compact one (FORMAT §4.1),
     * never compact as the first event or switch of its chunk. */
    size_t compact = 0;
    for (size_t i = 0; i < t.nrecs; i++) {
        uint8_t byte = t.data[t.recs[i].offset];
        if (byte >= GR_CACHED_BASE && byte <= GR_CTX_LAST) {
            compact++;
            assert_true(i > 0);
            int seen = 0; /* an event or switch earlier in the same chunk */
            for (size_t j = i; j-- > 0 && !seen;) {
                const gr_record *q = &t.recs[j];
                if (q->offset < t.recs[i].offset - 48) /* 48-byte chunks */
                    break;
                seen = (q->tag >= GR_CALL && q->tag <= GR_THROW);
            }
            assert_true(seen);
        } else {
            assert_int_equal(byte, t.recs[i].tag);
        }
    }
    assert_true(compact > 0);
    gr_trace_free(&t);
    tb_cleanup(&b);
}

/* A file assembled byte by byte, independent of the encoder. */
static void test_hand_made_bytes(void **state)
{
    (void)state;
    const uint8_t payload[] = {
        GR_STRING, 1, 'x',                 /* string 1 "x" */
        GR_STRING, 7, 's', 'e', 'e', 'd', '.', 'p', 'y', /* string 2 */
        GR_CODE, 0, 1, 2, 14,              /* code 1: x (seed.py:14) */
        GR_THREAD, 1,                      /* index 0 at payload offset 17 */
        GR_GREENLET, 1, 1, 0, 1, 0,        /* index 1 */
        GR_CALL, 1, 1, 1,                  /* index 2 */
        GR_SWITCH, 1, 0x80, 0x01, 2, 0, 0x05, 0, 0xff, 0x01, /* g128->g2, use_tracing 255 */
        1, 1,                              /* 1.1: its stack, x */
    };
    size_t n;
    uint8_t *d = tb_memfile(GR_CHUNK_RECORDS, payload, sizeof payload, 1, &n);
    gr_trace t;
    assert_int_equal(gr_trace_parse(&t, "hand.grt", d, n), GR_READ_OK);
    assert_int_equal(t.nrecs, 4);
    assert_int_equal(t.recs[0].offset, P0 + 17);
    assert_int_equal(t.recs[1].offset, P0 + 19);
    assert_int_equal(t.recs[2].offset, P0 + 25);
    assert_int_equal(t.recs[2].code, 1);
    assert_int_equal(t.recs[3].gid, 128);
    assert_int_equal(t.recs[3].target, 2);
    assert_int_equal(t.recs[3].flags, 5);
    assert_int_equal(t.recs[3].use_tracing, 255);
    assert_int_equal(t.recs[3].len, 12);
    assert_int_equal(t.recs[3].depth, 1);
    assert_int_equal(gr_record_stack(&t, &t.recs[3])[0], 1);
    assert_true(t.has_trailer);
    assert_true(str_is(&t, 2, "seed.py"));
    gr_trace_free(&t);
    free(d);

    /* format 1.0: a SWITCH has no stack */
    const uint8_t old[] = {
        GR_THREAD, 1, GR_GREENLET, 1, 1, 0, 1, 0,
        GR_SWITCH, 1, 1, 2, 0, 0x05, 0, 0x01, GR_DEAD, 1, 1,
    };
    d = tb_memfile(GR_CHUNK_RECORDS, old, sizeof old, 1, &n);
    gr_put_u16le(d + 10, 0);
    assert_int_equal(gr_trace_parse(&t, "old.grt", d, n), GR_READ_OK);
    assert_int_equal(t.nrecs, 4);
    assert_int_equal(t.recs[2].depth, 0);
    assert_int_equal(t.recs[3].tag, GR_DEAD);
    gr_trace_free(&t);
    free(d);
}

/* ------------------------------------------------------------ corrupt */

static void test_bad_magic(void **state)
{
    (void)state;
    size_t n;
    uint8_t *d = tb_memfile(GR_CHUNK_RECORDS, BYTES(GR_THREAD, 1), 1, &n);
    d[3] ^= 0x20;
    expect_corrupt(d, n, GR_E_MAGIC, 0, "bad magic");
    /* a short file that is not a header prefix is corrupt too */
    expect_corrupt((const uint8_t *)"PK\x03\x04", 4, GR_E_MAGIC, 0, "bad magic");
    free(d);
}

static void test_bad_major(void **state)
{
    (void)state;
    size_t n;
    uint8_t *d = tb_memfile(GR_CHUNK_RECORDS, BYTES(GR_THREAD, 1), 1, &n);
    gr_put_u16le(d + 8, 2);
    expect_corrupt(d, n, GR_E_MAJOR, 8, "unknown major version 2");
    /* any minor is accepted */
    gr_put_u16le(d + 8, 1);
    gr_put_u16le(d + 10, 7);
    gr_trace t;
    assert_int_equal(gr_trace_parse(&t, "x.grt", d, n), GR_READ_OK);
    assert_int_equal(t.minor, 7);
    gr_trace_free(&t);
    free(d);
}

static void test_wrong_stream(void **state)
{
    (void)state;
    size_t n;
    uint8_t *d = tb_memfile(GR_CHUNK_RECORDS, BYTES(GR_THREAD, 1), 1, &n);
    d[12] = GR_STREAM_SIDE;
    expect_corrupt(d, n, GR_E_STREAM, 12, "expected 'C'");
    free(d);
}

static void test_bad_crc(void **state)
{
    (void)state;
    tb b;
    struct ids id;
    build_all_kinds(&b, &id, 64, 1);
    size_t n;
    uint8_t *d = tb_bytes(&b, &n);
    /* find the third chunk and flip a payload byte */
    size_t off = GR_HEADER_LEN;
    for (int k = 0; k < 2; k++)
        off += GR_CHUNK_HEADER_LEN + gr_get_u32le(d + off + 1);
    assert_int_equal(d[off], GR_CHUNK_RECORDS);
    d[off + GR_CHUNK_HEADER_LEN + 1] ^= 0x01;
    expect_corrupt(d, n, GR_E_CRC, off, "chunk checksum mismatch");
    /* a bad stored CRC in the first chunk */
    d[off + GR_CHUNK_HEADER_LEN + 1] ^= 0x01;
    d[GR_HEADER_LEN + 5] ^= 0xff;
    expect_corrupt(d, n, GR_E_CRC, GR_HEADER_LEN, "chunk checksum mismatch");
    free(d);
    tb_cleanup(&b);
}

static void test_unknown_chunk_tag(void **state)
{
    (void)state;
    size_t n;
    uint8_t *d = tb_memfile(GR_CHUNK_RECORDS, BYTES(GR_THREAD, 1), 1, &n);
    size_t second = GR_HEADER_LEN + GR_CHUNK_HEADER_LEN + 2;
    assert_int_equal(d[second], GR_CHUNK_TRAILER);
    d[second] = 'Q';
    expect_corrupt(d, n, GR_E_CHUNK_TAG, second, "unknown chunk tag 0x51");
    /* 'T' (side channel) is not valid in a canonical trace */
    d[second] = GR_CHUNK_TIMES;
    expect_corrupt(d, n, GR_E_CHUNK_TAG, second, "unknown chunk tag");
    free(d);
}

static void test_oversize_chunk(void **state)
{
    (void)state;
    size_t n;
    uint8_t *d = tb_memfile(GR_CHUNK_RECORDS, BYTES(GR_THREAD, 1), 1, &n);
    gr_put_u32le(d + GR_HEADER_LEN + 1, GR_CHUNK_MAX + 1);
    expect_corrupt(d, n, GR_E_CHUNK_LEN, GR_HEADER_LEN, "over the limit");
    gr_put_u32le(d + GR_HEADER_LEN + 1, UINT32_MAX);
    expect_corrupt(d, n, GR_E_CHUNK_LEN, GR_HEADER_LEN, "over the limit");
    free(d);
}

static void test_unknown_record_tag(void **state)
{
    (void)state;
    corrupt_payload(BYTES(GR_THREAD, 1, 0xea, 1), GR_E_RECORD_TAG, P0 + 2,
                    "unknown record tag 0xea");
    corrupt_payload(BYTES(GR_THREAD, 1, 0xff, 1), GR_E_RECORD_TAG, P0 + 2,
                    "unknown record tag 0xff");
    corrupt_payload(BYTES(0x00), GR_E_RECORD_TAG, P0, "unknown record tag 0x00");
    corrupt_payload(BYTES(GR_THREAD, 1, 0x1f + 1, 1), GR_E_VALUE, P0 + 2,
                    "compact record before any event");
    corrupt_payload(BYTES(0x06, 1), GR_E_RECORD_TAG, P0, "unknown record tag 0x06");
    corrupt_payload(BYTES(0x1f + 1), GR_E_VALUE, P0, "compact record before any event");
    /* compact tags are unknown in a format 1.1 trace */
    size_t n;
    uint8_t *d = tb_memfile(GR_CHUNK_RECORDS, BYTES(GR_THREAD, 1, GR_CACHED_BASE, 1), 1, &n);
    gr_put_u16le(d + 10, 1);
    tb_fix_crc(d, GR_HEADER_LEN);
    expect_corrupt(d, n, GR_E_RECORD_TAG, P0 + 2, "unknown record tag 0x20");
    free(d);
}

/* Format 1.3: PROFILER definitions and the HOOK naming one (§3, §4.2):
 * a round trip, ids checked, and both unknown to a 1.2 trace. */
static void test_profiler_hooks(void **state)
{
    (void)state;
    tb b;
    tb_open(&b, 0);
    uint32_t f = tb_py(&b, "handle", "app.py", 40);
    uint32_t en = tb_c(&b, "_lsprof.Profiler.enable");
    uint32_t ty = tb_str(&b, "cProfile.Profile");
    uint32_t p1 = tb_profiler(&b, GR_PROF_CPROFILE, ty, 0);
    uint32_t p2 = tb_profiler(&b, GR_PROF_FUNCTION, 0, f);
    tb_thread(&b, 1);
    tb_greenlet(&b, 1, 1, 0, GR_GL_MAIN, 0);
    tb_hook_prof(&b, 1, 1, GR_HOOK_SET, GR_HOOK_CHAINED, en, p1, f);
    tb_hook_prof(&b, 1, 1, GR_HOOK_SET, GR_HOOK_CHAINED, 0, p2, 0);
    tb_hook(&b, 1, 1, GR_HOOK_PROFILE, GR_HOOK_CLEARED, 0, 0);
    tb_finish(&b);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    assert_int_equal(t.nprofilers, 2);
    assert_int_equal(t.profilers[1].kind, GR_PROF_CPROFILE);
    assert_int_equal(t.profilers[1].type, ty);
    assert_int_equal(t.profilers[2].code, f);
    assert_int_equal(t.nrecs, 5);
    assert_int_equal(t.recs[2].tag, GR_HOOK);
    assert_int_equal(t.recs[2].target, p1);
    assert_int_equal(t.recs[2].use_tracing, f);
    assert_int_equal(t.recs[2].code, en);
    assert_int_equal(t.recs[3].target, p2);
    assert_int_equal(t.recs[4].target, 0);
    assert_int_equal(t.recs[4].tracing, GR_HOOK_CLEARED);
    gr_trace_free(&t);
    tb_cleanup(&b);
    /* a HOOK naming profiler 2 when one is defined; a profiler of an
     * undefined type string */
    corrupt_payload(BYTES(GR_PROFILER, 1, 0, 0, GR_THREAD, 1,
                          GR_HOOK_PROF, 1, 1, 1, 1, 0, 0, 2, 0),
                    GR_E_UNDEFINED, P0 + 6, "profiler id used before its definition");
    corrupt_payload(BYTES(GR_PROFILER, 1, 4, 0), GR_E_UNDEFINED, P0, "profiler type");
    /* both are unknown tags in a format 1.2 trace */
    size_t n;
    uint8_t *d = tb_memfile(GR_CHUNK_RECORDS, BYTES(GR_PROFILER, 1, 0, 0), 1, &n);
    gr_put_u16le(d + 10, 2);
    tb_fix_crc(d, GR_HEADER_LEN);
    expect_corrupt(d, n, GR_E_RECORD_TAG, P0, "unknown record tag 0x05");
    free(d);
    d = tb_memfile(GR_CHUNK_RECORDS, BYTES(GR_THREAD, 1, GR_HOOK_PROF, 1, 1, 1, 1, 0, 0, 0, 0),
                   1, &n);
    gr_put_u16le(d + 10, 2);
    tb_fix_crc(d, GR_HEADER_LEN);
    expect_corrupt(d, n, GR_E_RECORD_TAG, P0 + 2, "unknown record tag 0xe9");
    free(d);
}

/* Format 1.2 compact records (FORMAT §4.1), bytes made by hand: the
 * context, the code cache, the switch state, and their reset per chunk. */
static void test_compact_records(void **state)
{
    (void)state;
    const uint8_t defs[] = {
        GR_STRING, 1, 'x',
        GR_CODE, 0, 1, 0, 0,       /* code 1 */
        GR_CODE, 0, 1, 0, 0,       /* code 2 */
        GR_THREAD, 1,              /* index 0 */
        GR_CALL, 1, 5, 1,          /* 1: full form: context t1 g5, slot 1 = 1 */
        GR_CACHED_BASE + 48 + 1,   /* 2: RETURN t1 g5 code 1 (one byte) */
        GR_CTX_EVENT + 2, 2,       /* 3: C_CALL t1 g5 code 2 (slot 2) */
        GR_CACHED_BASE + 3 * 48 + 2, /* 4: C_RETURN t1 g5 code 2 */
        GR_CTX_SWITCH, 7, 0, 0x05, 0, 0x01, 1, 1, /* 5: SWITCH t1 g5->g7, state 5, stack x */
        GR_CACHED_BASE + 1,        /* 6: CALL t1 g7 code 1 */
        GR_CTX_EVENT + 4, 2,       /* 7: C_EXCEPTION t1 g7 code 2 */
        GR_CTX_THROW_SAME, 1, 0, 0, /* 8: THROW t1 g7->g4, state as before; the
                                       target (1.4) 1: -1 from the last switch's
                                       origin g5 (zigzag); 1.3 reads it as g1 */
        GR_CALL, 2, 9, 2,          /* 9: full form: another thread: context t2 g9 */
        GR_CACHED_BASE + 48 + 2,   /* 10: RETURN t2 g9 code 2 */
    };
    size_t n;
    uint8_t *d = tb_memfile(GR_CHUNK_RECORDS, defs, sizeof defs, 1, &n);
    gr_trace t;
    assert_int_equal(gr_trace_parse(&t, "compact.grt", d, n), GR_READ_OK);
    assert_int_equal(t.nrecs, 11);
    static const struct { uint8_t tag; uint64_t tid, gid; uint32_t code; } want[] = {
        {GR_THREAD, 1, 0, 0}, {GR_CALL, 1, 5, 1}, {GR_RETURN, 1, 5, 1},
        {GR_C_CALL, 1, 5, 2}, {GR_C_RETURN, 1, 5, 2}, {GR_SWITCH, 1, 5, 0},
        {GR_CALL, 1, 7, 1}, {GR_C_EXCEPTION, 1, 7, 2}, {GR_THROW, 1, 7, 0},
        {GR_CALL, 2, 9, 2}, {GR_RETURN, 2, 9, 2},
    };
    for (size_t i = 0; i < 11; i++) {
        assert_int_equal(t.recs[i].tag, want[i].tag);
        assert_int_equal(t.recs[i].tid, want[i].tid);
        assert_int_equal(t.recs[i].gid, want[i].gid);
        assert_int_equal(t.recs[i].code, want[i].code);
    }
    assert_int_equal(t.recs[2].len, 1);
    assert_int_equal(t.recs[5].target, 7);
    assert_int_equal(t.recs[5].flags, 5);
    assert_int_equal(t.recs[5].use_tracing, 1);
    assert_int_equal(t.recs[5].depth, 1);
    assert_int_equal(t.recs[8].target, 4);
    assert_int_equal(t.recs[8].flags, 5);
    assert_int_equal(t.recs[8].use_tracing, 1);
    assert_int_equal(t.recs[8].depth, 0);
    gr_trace_free(&t);
    /* A trace of format 1.3 (minor at offset 10, outside every CRC): the
     * same bytes, the target as written. */
    d[10] = 3;
    assert_int_equal(gr_trace_parse(&t, "compact13.grt", d, n), GR_READ_OK);
    assert_int_equal(t.nrecs, 11);
    assert_int_equal(t.recs[5].target, 7);
    assert_int_equal(t.recs[8].target, 1);
    gr_trace_free(&t);
    free(d);

    /* corrupt: an empty cache slot; a switch repeating no state */
    corrupt_payload(BYTES(GR_STRING, 1, 'x', GR_CODE, 0, 1, 0, 0, GR_THREAD, 1,
                          GR_CALL, 1, 1, 1, GR_CACHED_BASE + 48 + 3),
                    GR_E_VALUE, P0 + 14, "cached code slot is empty");
    corrupt_payload(BYTES(GR_STRING, 1, 'x', GR_CODE, 0, 1, 0, 0, GR_THREAD, 1,
                          GR_CALL, 1, 1, 1, GR_CTX_SWITCH_SAME, 2, 0, 0),
                    GR_E_VALUE, P0 + 14, "repeats the state of no earlier switch");
    /* a cached code id is checked like any other: defined codes only
     * (slot 1 of a chunk with one code cannot hold more) */
    corrupt_payload(BYTES(GR_STRING, 1, 'x', GR_CODE, 0, 1, 0, 0, GR_THREAD, 1,
                          GR_CALL, 1, 1, 1, GR_CTX_EVENT, 3),
                    GR_E_UNDEFINED, P0 + 14, "code id 3 used before its definition");

    /* the context does not cross chunks: the second chunk starts afresh */
    tb b;
    tb_open(&b, 0);
    uint32_t f = tb_py(&b, "f", "f.py", 1);
    tb_thread(&b, 1);
    tb_ev(&b, GR_CALL, 1, 1, f);
    tb_ev(&b, GR_RETURN, 1, 1, f);
    tb_flush(&b);
    tb_ev(&b, GR_CALL, 1, 1, f);
    tb_ev(&b, GR_RETURN, 1, 1, f);
    tb_finish(&b);
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    assert_int_equal(t.nrecs, 5);
    assert_int_equal(t.data[t.recs[1].offset], GR_CALL);
    assert_int_equal(t.data[t.recs[2].offset], GR_CACHED_BASE + 48 + f % 48);
    assert_int_equal(t.data[t.recs[3].offset], GR_CALL); /* new chunk: full form */
    assert_int_equal(t.data[t.recs[4].offset], GR_CACHED_BASE + 48 + f % 48);
    for (size_t i = 1; i < 5; i++) {
        assert_int_equal(t.recs[i].tid, 1);
        assert_int_equal(t.recs[i].gid, 1);
        assert_int_equal(t.recs[i].code, f);
    }
    gr_trace_free(&t);
    tb_cleanup(&b);
}

/* INSTR (3.12+ instrumentation state): more stale frames than frames. */
static void test_instr_values(void **state)
{
    (void)state;
    corrupt_payload(BYTES(GR_INSTR, 1, 2, 1, 3, 4), GR_E_VALUE, P0, "more stale frames than frames");
}

static void test_id_before_definition(void **state)
{
    (void)state;
    /* CALL of code 2 when only code 1 exists */
    corrupt_payload(BYTES(GR_STRING, 1, 'f', GR_CODE, 1, 1, 0, 0, GR_THREAD, 1,
                          GR_CALL, 1, 1, 2),
                    GR_E_UNDEFINED, P0 + 10, "code id 2 used before its definition");
    /* a code naming string 3 when one string exists */
    corrupt_payload(BYTES(GR_STRING, 1, 'f', GR_CODE, 0, 3, 0, 0), GR_E_UNDEFINED, P0 + 3,
                    "string id 3 used before its definition");
    /* code id 0 in a stack */
    corrupt_payload(BYTES(GR_STRING, 1, 'f', GR_CODE, 1, 1, 0, 0,
                          GR_STACK, 1, 1, 0, 2, 1, 0),
                    GR_E_UNDEFINED, P0 + 8, "code id 0");
    /* META of undefined strings */
    corrupt_payload(BYTES(GR_META, 1, 1), GR_E_UNDEFINED, P0, "string id 1");
    /* MARK label undefined */
    corrupt_payload(BYTES(GR_STRING, 1, 'm', GR_CODE, 1, 1, 0, 0, GR_MARK, 1, 1, 9, 1, 0, 0),
                    GR_E_UNDEFINED, P0 + 8, "string id 9");
}

static void test_string_past_chunk(void **state)
{
    (void)state;
    corrupt_payload(BYTES(GR_THREAD, 1, GR_STRING, 100, 'a', 'b', 'c'), GR_E_PAST_CHUNK,
                    P0 + 2, "string runs past the end of its chunk");
    /* huge length varint */
    corrupt_payload(BYTES(GR_STRING, 0xff, 0xff, 0xff, 0xff, 0x0f, 'a'), GR_E_PAST_CHUNK, P0,
                    "string runs past");
}

static void test_overlong_varint(void **state)
{
    (void)state;
    corrupt_payload(BYTES(GR_THREAD, 1, GR_THREAD, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                          0x80, 0x80, 0x80, 0x01),
                    GR_E_VARINT, P0 + 2, "varint longer than 10 bytes");
    /* 10 bytes but over 64 bits */
    corrupt_payload(BYTES(GR_THREAD, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                          0x7f),
                    GR_E_VARINT, P0, "varint");
}

static void test_impossible_values(void **state)
{
    (void)state;
    corrupt_payload(BYTES(GR_THREAD, 0), GR_E_VALUE, P0, "thread id 0");
    corrupt_payload(BYTES(GR_THREAD, 1, GR_DEAD, 0, 1), GR_E_VALUE, P0 + 2, "thread id 0");
    /* depth over the cap of 128 */
    corrupt_payload(BYTES(GR_STACK, 1, 1, 0, 0x81, 0x01), GR_E_VALUE, P0, "stack depth 129");
    corrupt_payload(BYTES(GR_STACK, 1, 1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f), GR_E_VALUE, P0,
                    "over the cap");
    /* code kind 2 */
    corrupt_payload(BYTES(GR_STRING, 1, 'f', GR_CODE, 2, 1, 0, 0), GR_E_VALUE, P0 + 3,
                    "unknown code kind");
}

static void test_record_past_chunk(void **state)
{
    (void)state;
    /* a CALL cut by the end of its chunk, though the file goes on */
    corrupt_payload(BYTES(GR_STRING, 1, 'f', GR_CODE, 1, 1, 0, 0, GR_CALL, 1, 1),
                    GR_E_PAST_CHUNK, P0 + 8, "record runs past the end of its chunk");
    corrupt_payload(BYTES(GR_THREAD), GR_E_PAST_CHUNK, P0, "record runs past");
    /* a stack longer than the chunk */
    corrupt_payload(BYTES(GR_STRING, 1, 'f', GR_CODE, 1, 1, 0, 0, GR_STACK, 1, 1, 0, 3, 1),
                    GR_E_PAST_CHUNK, P0 + 8, "record runs past");
}

static void test_trailer_problems(void **state)
{
    (void)state;
    size_t n;
    uint8_t *d = tb_memfile(GR_CHUNK_RECORDS, BYTES(GR_THREAD, 1), 1, &n);
    /* data after the trailer */
    uint8_t *e = malloc(n + 3);
    memcpy(e, d, n);
    memcpy(e + n, "abc", 3);
    expect_corrupt(e, n + 3, GR_E_TRAILER, n, "data after the trailer");
    free(e);
    /* a trailer with 3 fields */
    size_t toff = GR_HEADER_LEN + GR_CHUNK_HEADER_LEN + 2;
    gr_put_u32le(d + toff + 1, 3);
    tb_fix_crc(d, toff);
    expect_corrupt(d, n - 1, GR_E_TRAILER, toff, "trailer too short");
    free(d);
}

/* --------------------------------------------------------- truncation */

/* Build a multi-chunk trace; return its bytes and the chunk ends. */
static uint8_t *multi_chunk(size_t *n, size_t *ends, size_t *nends, int trailer)
{
    tb b;
    struct ids id;
    build_all_kinds(&b, &id, 40, 0);
    if (trailer)
        tb_finish(&b);
    else
        tb_abandon(&b);
    uint8_t *d = tb_bytes(&b, n);
    tb_cleanup(&b);
    *nends = 0;
    for (size_t off = GR_HEADER_LEN; off < *n;) {
        off += GR_CHUNK_HEADER_LEN + gr_get_u32le(d + off + 1);
        ends[(*nends)++] = off;
    }
    assert_true(*nends > 4);
    return d;
}

static void test_truncated_everywhere(void **state)
{
    (void)state;
    size_t n, ends[256], nends;
    uint8_t *d = multi_chunk(&n, ends, &nends, 1);
    gr_trace full;
    assert_int_equal(gr_trace_parse(&full, "full.grt", d, n), GR_READ_OK);
    assert_int_equal(full.nrecs, 15);
    for (size_t cut = 0; cut < n; cut++) {
        gr_trace t;
        int rc = gr_trace_parse(&t, "cut.grt", d, cut);
        if (rc != GR_READ_OK)
            fail_msg("cut at %zu: %s", cut, t.err.msg);
        assert_true(t.truncated);
        assert_false(t.has_trailer);
        /* valid part: the last chunk end <= cut (or 0 / the header) */
        uint64_t want = cut < GR_HEADER_LEN ? 0 : GR_HEADER_LEN;
        for (size_t k = 0; k < nends; k++)
            if (ends[k] <= cut)
                want = ends[k];
        assert_true(t.truncated_at == want);
        /* every record of the complete chunks, and no other */
        size_t nrec = 0;
        for (size_t i = 0; i < full.nrecs; i++)
            if (full.recs[i].offset + full.recs[i].len <= want)
                nrec++;
        assert_int_equal(t.nrecs, nrec);
        for (size_t i = 0; i < t.nrecs; i++) {
            assert_int_equal(t.recs[i].tag, full.recs[i].tag);
            assert_true(t.recs[i].offset == full.recs[i].offset);
        }
        gr_trace_free(&t);
    }
    gr_trace_free(&full);
    free(d);
}

/* Stream d[0..n) from a file, in batches of `batch` records (0: whole
 * chunks; gr_trace_set_batch), and compare with gr_trace_parse of the same
 * bytes: status, message, records (tag, index, offset, fields, stack),
 * definitions, trailer and truncation. */
static void stream_equals_parse_batch(const uint8_t *d, size_t n, size_t batch)
{
    char path[] = "/tmp/gr-unit-stream-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_true(n == 0 || write(fd, d, n) == (ssize_t)n);
    close(fd);
    gr_trace want, got;
    int rw = gr_trace_parse(&want, path, d, n);
    int rg = gr_trace_open(&got, path);
    gr_trace_set_batch(&got, batch);
    uint64_t seen = 0;
    if (rg == GR_READ_OK) {
        int k;
        while ((k = gr_trace_next_chunk(&got)) > 0) {
            assert_true(got.first == seen);
            assert_true(batch == 0 || got.nrecs <= batch);
            for (size_t i = 0; i < got.nrecs; i++, seen++) {
                const gr_record *a = &want.recs[seen], *b = &got.recs[i];
                assert_true(seen < want.nrecs);
                assert_true(a->index == b->index && a->offset == b->offset);
                assert_int_equal(a->tag, b->tag);
                assert_true(a->tid == b->tid && a->gid == b->gid && a->code == b->code);
                assert_true(a->target == b->target && a->parent == b->parent &&
                            a->flags == b->flags && a->tracing == b->tracing &&
                            a->use_tracing == b->use_tracing && a->label == b->label &&
                            a->len == b->len);
                assert_int_equal(a->depth, b->depth);
                for (uint32_t j = 0; j < a->depth; j++)
                    assert_int_equal(gr_record_stack(&want, a)[j], gr_record_stack(&got, b)[j]);
            }
        }
        rg = k < 0 ? got.err.status : GR_READ_OK;
        if (rg == GR_READ_OK)
            assert_true(seen == want.nrecs);
    }
    assert_int_equal(rw, rg);
    assert_string_equal(want.err.msg, got.err.msg);
    if (rw == GR_READ_OK) {
        assert_int_equal(want.truncated, got.truncated);
        assert_true(want.truncated_at == got.truncated_at);
        assert_int_equal(want.has_trailer, got.has_trailer);
        assert_true(want.trailer.events == got.trailer.events);
        assert_true(want.nstrings == got.nstrings && want.ncodes == got.ncodes);
        for (size_t i = 1; i <= want.nstrings; i++) {
            assert_int_equal(want.strings[i].len, got.strings[i].len);
            assert_memory_equal(want.strings[i].p, got.strings[i].p, want.strings[i].len);
        }
        assert_true(gr_trace_count(&got) == want.nrecs);
    }
    gr_trace_free(&want);
    gr_trace_free(&got);
    unlink(path);
}

/* Same, in whole chunks and in batches of 1 and 3 records (a batch ends
 * inside chunks, between definitions and records). */
static void stream_equals_parse(const uint8_t *d, size_t n)
{
    stream_equals_parse_batch(d, n, 0);
    stream_equals_parse_batch(d, n, 1);
    stream_equals_parse_batch(d, n, 3);
}

/* The streamed reader (gr_trace_open, one chunk at a time) decodes exactly
 * what the whole-file reader does: every prefix, every flipped byte. */
static void test_stream_matches_parse(void **state)
{
    (void)state;
    size_t n, ends[256], nends;
    uint8_t *d = multi_chunk(&n, ends, &nends, 1);
    for (size_t cut = 0; cut <= n; cut++)
        stream_equals_parse(d, cut);
    for (size_t at = 0; at < n; at++) {
        d[at] ^= 0x5a;
        stream_equals_parse(d, n);
        d[at] ^= 0x5a;
    }
    free(d);
}

/* ------------------------------------------------- compressed chunks */

/* The records of build_all_kinds and `pairs` CALL/RETURN pairs of f, in
 * chunk_cap chunks, the chunks written after build_all_kinds compressed or
 * not (FORMAT §2.1): a file may mix both. */
static uint8_t *pairs_trace(size_t chunk_cap, int compress, int pairs, size_t *n)
{
    tb b;
    struct ids id;
    build_all_kinds(&b, &id, chunk_cap, 0); /* its first chunks uncompressed */
    assert_int_equal(gr_writer_set_compress(b.w, compress), 0);
    for (int i = 0; i < pairs; i++) {
        tb_ev(&b, GR_CALL, 1, 1, id.f);
        tb_ev(&b, GR_RETURN, 1, 1, id.f);
    }
    tb_finish(&b);
    uint8_t *d = tb_bytes(&b, n);
    tb_cleanup(&b);
    return d;
}

/* How many chunks of each kind: [0] records, [1] compressed records. */
static void count_chunks(const uint8_t *d, size_t n, size_t count[2])
{
    count[0] = count[1] = 0;
    for (size_t off = GR_HEADER_LEN; off + GR_CHUNK_HEADER_LEN <= n;) {
        if (d[off] == GR_CHUNK_RECORDS)
            count[0]++;
        else if (d[off] == (uint8_t)GR_CHUNK_RECORDS_Z)
            count[1]++;
        off += GR_CHUNK_HEADER_LEN + gr_get_u32le(d + off + 1);
    }
}

/* A compressed trace decodes to exactly the records of the same trace
 * written uncompressed; every chunk is compressed on its own, so the
 * streamed reader agrees on every prefix and every flipped byte. */
static void test_compressed_round_trip(void **state)
{
    (void)state;
    size_t nz, nr, count[2];
    uint8_t *z = pairs_trace(128, 1, 500, &nz);
    uint8_t *r = pairs_trace(128, 0, 500, &nr);
    count_chunks(z, nz, count);
    assert_true(count[1] >= 4); /* compressed, each chunk on its own */
    assert_true(count[0] >= 1); /* and some not */
    count_chunks(r, nr, count);
    assert_int_equal(count[1], 0);
    assert_true(nz < nr);
    gr_trace a, b;
    assert_int_equal(gr_trace_parse(&a, "z.grt", z, nz), GR_READ_OK);
    assert_int_equal(gr_trace_parse(&b, "r.grt", r, nr), GR_READ_OK);
    assert_true(a.has_trailer && !a.truncated);
    assert_int_equal(a.nrecs, b.nrecs);
    assert_int_equal(a.nrecs, 15 + 1000);
    for (size_t i = 0; i < a.nrecs; i++) {
        const gr_record *x = &a.recs[i], *y = &b.recs[i];
        assert_int_equal(x->tag, y->tag);
        assert_true(x->index == y->index && x->tid == y->tid && x->gid == y->gid &&
                    x->code == y->code && x->target == y->target && x->parent == y->parent &&
                    x->flags == y->flags && x->label == y->label && x->len == y->len);
        assert_int_equal(x->depth, y->depth);
        for (uint32_t j = 0; j < x->depth; j++)
            assert_int_equal(gr_record_stack(&a, x)[j], gr_record_stack(&b, y)[j]);
    }
    /* strings of a loaded trace point into its decompressed chunks */
    assert_true(str_is(&a, a.metas[0].value, "3.11.7"));
    gr_trace_free(&a);
    gr_trace_free(&b);
    for (size_t cut = 0; cut <= nz; cut++)
        stream_equals_parse(z, cut);
    for (size_t at = 0; at < nz; at++) {
        z[at] ^= 0x5a;
        stream_equals_parse(z, nz);
        z[at] ^= 0x5a;
    }
    free(z);
    free(r);
}

/* A chunk that would not shrink is written as it is, in the same file. */
static void test_compressed_only_when_smaller(void **state)
{
    (void)state;
    size_t n, count[2];
    tb b;
    tb_open(&b, 0);
    assert_int_equal(gr_writer_set_compress(b.w, 1), 0);
    tb_thread(&b, 1); /* two bytes: a frame is longer */
    tb_flush(&b);
    uint32_t f = tb_py(&b, "f", "x.py", 1);
    for (int i = 0; i < 2000; i++)
        tb_ev(&b, i % 2 ? GR_RETURN : GR_CALL, 1, 1, f);
    tb_finish(&b);
    uint8_t *d = tb_bytes(&b, &n);
    tb_cleanup(&b);
    count_chunks(d, n, count);
    assert_int_equal(count[0], 1);
    assert_int_equal(count[1], 1);
    assert_int_equal(d[GR_HEADER_LEN], GR_CHUNK_RECORDS);
    gr_trace t;
    assert_int_equal(gr_trace_parse(&t, "x.grt", d, n), GR_READ_OK);
    assert_int_equal(t.nrecs, 2001);
    gr_trace_free(&t);
    free(d);
}

/* The size cap counts the bytes written: compressed chunks fit many times
 * the records of uncompressed ones under the same cap. */
static void test_compressed_size_cap(void **state)
{
    (void)state;
    uint64_t dropped[2];
    for (int z = 0; z < 2; z++) {
        tb b;
        tb_open(&b, 1024);
        assert_int_equal(gr_writer_set_compress(b.w, z), 0);
        gr_writer_set_limit(b.w, 4096);
        uint32_t f = tb_py(&b, "f", "x.py", 1);
        tb_thread(&b, 1);
        for (int i = 0; i < 400000; i++) {
            gr_record r = {.tag = i % 2 ? GR_RETURN : GR_CALL, .tid = 1, .gid = 1, .code = f};
            gr_emit_record(b.w, &r, NULL); /* dropped past the cap */
        }
        gr_writer_flush(b.w);
        assert_true(b.w->capped);
        assert_true(b.w->written <= 4096);
        dropped[z] = b.w->dropped;
        tb_abandon(&b);
        tb_cleanup(&b);
    }
    /* 400,001 records and the definitions: the ones kept under the cap */
    assert_true(400001 - dropped[1] > 10 * (400001 - dropped[0]));
    assert_true(dropped[1] < dropped[0]);
}

/* A memory writer set to compress (ring mode) has the file writer it is
 * copied into compress its chunks, whatever their size. */
static void test_compressed_copy_chunks(void **state)
{
    (void)state;
    tb b;
    tb_open(&b, 1024);
    gr_writer *mem = gr_writer_open_memory(GR_STREAM_CANONICAL, 8192, 0);
    assert_non_null(mem);
    assert_int_equal(gr_writer_set_compress(mem, 1), 0);
    gr_writer *keep = b.w;
    b.w = mem;
    uint32_t f = tb_py(&b, "f", "x.py", 1);
    tb_thread(&b, 1);
    for (int i = 0; i < 10000; i++)
        tb_ev(&b, i % 2 ? GR_RETURN : GR_CALL, 1, 1, f);
    assert_int_equal(gr_writer_flush(mem), 0);
    b.w = keep;
    assert_int_equal(gr_writer_copy_chunks(b.w, mem), 0);
    gr_writer_finish(mem, NULL, 0);
    tb_finish(&b);
    size_t n, count[2];
    uint8_t *d = tb_bytes(&b, &n);
    tb_cleanup(&b);
    count_chunks(d, n, count);
    assert_int_equal(count[0], 0);
    assert_true(count[1] >= 2);
    gr_trace t;
    assert_int_equal(gr_trace_parse(&t, "x.grt", d, n), GR_READ_OK);
    assert_int_equal(t.nrecs, 10001);
    gr_trace_free(&t);
    free(d);
}

/* A file of one compressed chunk: the size field `size`, then `frame`. */
static uint8_t *zfile(uint32_t size, const void *frame, size_t flen, size_t *n)
{
    uint8_t *payload = malloc(GR_ZHEADER_LEN + flen + 1);
    assert_non_null(payload);
    gr_put_u32le(payload, size);
    memcpy(payload + GR_ZHEADER_LEN, frame, flen);
    uint8_t *d = tb_memfile(GR_CHUNK_RECORDS_Z, payload, GR_ZHEADER_LEN + flen, 1, n);
    free(payload);
    return d;
}

/* A compressed chunk is untrusted: the size it claims is bounded by the
 * chunk limit before anything is allocated, the frame must hold exactly
 * that many bytes and nothing after it, and an error inside its records
 * names the chunk's offset and the record's place in the records. */
static void test_compressed_untrusted(void **state)
{
    (void)state;
    const uint8_t recs[] = {GR_THREAD, 1, GR_THREAD, 0}; /* tid 0: impossible */
    uint8_t frame[256];
    size_t fl = ZSTD_compress(frame, sizeof frame, recs, 2, 1);
    assert_false(ZSTD_isError(fl));
    size_t n;
    uint8_t *d = zfile(2, frame, fl, &n);
    gr_trace t;
    assert_int_equal(gr_trace_parse(&t, "x.grt", d, n), GR_READ_OK);
    assert_int_equal(t.nrecs, 1);
    assert_int_equal(t.recs[0].tag, GR_THREAD);
    gr_trace_free(&t);
    free(d);
    d = zfile(GR_CHUNK_MAX + 1, frame, fl, &n);
    expect_corrupt(d, n, GR_E_CHUNK_LEN, GR_HEADER_LEN, "claims 16777217 bytes");
    free(d);
    d = zfile(0, frame, fl, &n);
    expect_corrupt(d, n, GR_E_CHUNK_LEN, GR_HEADER_LEN, "claims 0 bytes");
    free(d);
    d = zfile(3, frame, fl, &n); /* the frame holds 2 */
    expect_corrupt(d, n, GR_E_ZSTD, GR_HEADER_LEN, "not one zstd frame of the 3 bytes");
    free(d);
    uint8_t longer[260];
    memcpy(longer, frame, fl);
    longer[fl] = 0;
    d = zfile(2, longer, fl + 1, &n); /* a byte after the frame */
    expect_corrupt(d, n, GR_E_ZSTD, GR_HEADER_LEN, "not one zstd frame");
    free(d);
    d = zfile(2, "garbage!", 8, &n);
    expect_corrupt(d, n, GR_E_ZSTD, GR_HEADER_LEN, "not one zstd frame");
    free(d);
    d = tb_memfile(GR_CHUNK_RECORDS_Z, "\x02\x00", 2, 1, &n); /* no room for the size */
    expect_corrupt(d, n, GR_E_ZSTD, GR_HEADER_LEN, "shorter than its size field");
    free(d);
    /* A frame whose blocks are damaged but whose header is intact. */
    uint8_t big[4096], bigf[4096];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 7 + i / 13);
    size_t bl = ZSTD_compress(bigf, sizeof bigf, big, sizeof big, 1);
    assert_false(ZSTD_isError(bl));
    bigf[bl - 3] ^= 0xff;
    d = zfile(sizeof big, bigf, bl, &n);
    gr_trace u;
    assert_int_equal(gr_trace_parse(&u, "x.grt", d, n), GR_READ_CORRUPT);
    assert_true(u.err.offset == GR_HEADER_LEN);
    assert_null(strchr(u.err.msg, '\n'));
    gr_trace_free(&u);
    free(d);
    /* A bad record inside: the chunk's offset, the record's byte. */
    fl = ZSTD_compress(frame, sizeof frame, recs, sizeof recs, 1);
    d = zfile(sizeof recs, frame, fl, &n);
    expect_corrupt(d, n, GR_E_VALUE, GR_HEADER_LEN, "(byte 2 of the compressed chunk's records)");
    free(d);
    /* An older reader's view: the tag is named as compressed. */
    d = zfile(2, frame, fl, &n);
    d[GR_HEADER_LEN] = 0xC6;
    expect_corrupt(d, n, GR_E_CHUNK_TAG, GR_HEADER_LEN, "unknown chunk tag 0xc6");
    free(d);
}

/* The running sum of a file's GAPs (FORMAT §3) cannot wrap: the GAP that
 * takes it over UINT64_MAX is corrupt at its own offset, loaded or streamed;
 * a sum of exactly UINT64_MAX is read. */
static void test_gap_total_overflow(void **state)
{
    (void)state;
    uint8_t p[64], *q = p;
    *q++ = GR_GAP;
    q = gr_put_varint(q, UINT64_MAX);
    size_t second = (size_t)(q - p);
    *q++ = GR_GAP;
    *q++ = 1;
    size_t n;
    uint8_t *d = tb_memfile(GR_CHUNK_RECORDS, p, (size_t)(q - p), 1, &n);
    expect_corrupt(d, n, GR_E_VALUE, P0 + second, "ring GAP total over 2^64-1");
    stream_equals_parse(d, n);
    free(d);
    /* 2^63 + 2^63 wraps to exactly 0 */
    q = p;
    *q++ = GR_GAP;
    q = gr_put_varint(q, UINT64_C(1) << 63);
    second = (size_t)(q - p);
    *q++ = GR_GAP;
    q = gr_put_varint(q, UINT64_C(1) << 63);
    d = tb_memfile(GR_CHUNK_RECORDS, p, (size_t)(q - p), 1, &n);
    expect_corrupt(d, n, GR_E_VALUE, P0 + second, "ring GAP total");
    free(d);
    /* 2^63 + (2^63 - 1): the largest sum, read */
    q = p + second + 1;
    q = gr_put_varint(q, (UINT64_C(1) << 63) - 1);
    d = tb_memfile(GR_CHUNK_RECORDS, p, (size_t)(q - p), 1, &n);
    gr_trace t;
    assert_int_equal(gr_trace_parse(&t, "x.grt", d, n), GR_READ_OK);
    assert_true(t.gap == UINT64_MAX && t.gap_defs.head == UINT64_MAX);
    gr_trace_free(&t);
    stream_equals_parse(d, n);
    free(d);
}

static void test_truncated_specific(void **state)
{
    (void)state;
    size_t n, ends[256], nends;
    uint8_t *d = multi_chunk(&n, ends, &nends, 1);
    gr_trace t;
    /* mid chunk header: 4 bytes into the 3rd chunk */
    assert_int_equal(gr_trace_parse(&t, "x", d, ends[1] + 4), GR_READ_OK);
    assert_true(t.truncated);
    assert_true(t.truncated_at == ends[1]);
    gr_trace_free(&t);
    /* mid payload */
    assert_int_equal(gr_trace_parse(&t, "x", d, ends[2] + GR_CHUNK_HEADER_LEN + 2), GR_READ_OK);
    assert_true(t.truncated_at == ends[2]);
    gr_trace_free(&t);
    /* inside the file header, and an empty file */
    assert_int_equal(gr_trace_parse(&t, "x", d, 10), GR_READ_OK);
    assert_true(t.truncated);
    assert_int_equal(t.nrecs, 0);
    assert_true(t.truncated_at == 0);
    gr_trace_free(&t);
    assert_int_equal(gr_trace_parse(&t, "x", d, 0), GR_READ_OK);
    assert_true(t.truncated);
    gr_trace_free(&t);
    /* just the header */
    assert_int_equal(gr_trace_parse(&t, "x", d, GR_HEADER_LEN), GR_READ_OK);
    assert_true(t.truncated_at == GR_HEADER_LEN);
    gr_trace_free(&t);
    free(d);
}

static void test_missing_trailer(void **state)
{
    (void)state;
    size_t n, ends[256], nends;
    uint8_t *d = multi_chunk(&n, ends, &nends, 0);
    gr_trace t;
    assert_int_equal(gr_trace_parse(&t, "x", d, n), GR_READ_OK);
    assert_true(t.truncated);
    assert_false(t.has_trailer);
    assert_true(t.truncated_at == n);
    assert_int_equal(t.nrecs, 15);
    gr_trace_free(&t);
    free(d);
}

static void test_missing_file(void **state)
{
    (void)state;
    gr_trace t;
    assert_int_equal(gr_trace_load(&t, "/nonexistent/dir/x.grt"), GR_READ_IO);
    assert_int_equal(t.err.kind, GR_E_IO);
    assert_non_null(strstr(t.err.msg, "/nonexistent/dir/x.grt: "));
    gr_trace_free(&t);
}

/* ------------------------------------------------------- side channel */

static void test_side_channel(void **state)
{
    (void)state;
    char path[] = "/tmp/gr-unit-times-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    gr_writer *w = gr_writer_open(path, GR_STREAM_SIDE, 16);
    assert_non_null(w);
    uint64_t vals[6] = {0, 1, 127, 128, 1000000000, UINT64_MAX};
    for (int i = 0; i < 6; i++) {
        uint8_t buf[GR_VARINT_MAX];
        uint8_t *e = gr_put_varint(buf, vals[i]);
        assert_int_equal(gr_writer_append(w, buf, (size_t)(e - buf)), 0);
    }
    /* sampler chunks follow the 'T' ones; they are checked and skipped */
    assert_int_equal(gr_writer_set_chunk_tag(w, GR_CHUNK_SWITCHES), 0);
    assert_int_equal(gr_writer_append(w, "\x05\x00\x07\x00", 4), 0);
    assert_int_equal(gr_writer_set_chunk_tag(w, GR_CHUNK_SAMPLES), 0);
    assert_int_equal(gr_writer_append(w, "\x01\x02\x03\x04\x01\x00\x00\x00\x00\x00", 10), 0);
    uint64_t count[3] = {6, 1, 1};
    assert_int_equal(gr_writer_finish(w, count, 3), 0);
    gr_times tm;
    assert_int_equal(gr_times_load(&tm, path), GR_READ_OK);
    assert_int_equal(tm.n, 6);
    for (int i = 0; i < 6; i++)
        assert_true(tm.dt[i] == vals[i]);
    assert_true(tm.has_trailer);
    assert_int_equal(tm.count, 6);
    assert_int_equal(tm.sampler_chunks, 2);
    assert_true(gr_times_has_sampler(&tm));
    assert_int_equal(tm.nwaits, 1);
    assert_int_equal(tm.nsamples, 1);
    assert_true(tm.has_sampler_trailer);
    assert_true(tm.trailer_switches == 1 && tm.trailer_samples == 1);
    gr_times_free(&tm);
    /* an 'E' chunk has no place in a side channel */
    size_t sn;
    uint8_t *sd = tb_memfile(GR_CHUNK_RECORDS, BYTES(1, 2), 0, &sn);
    sd[12] = GR_STREAM_SIDE;
    assert_int_equal(gr_times_parse(&tm, "s", sd, sn), GR_READ_CORRUPT);
    assert_int_equal(tm.err.kind, GR_E_CHUNK_TAG);
    assert_true(tm.err.offset == GR_HEADER_LEN);
    gr_times_free(&tm);
    /* a 'T' chunk cut inside a varint is corrupt; a cut file is truncated */
    sd[GR_HEADER_LEN] = GR_CHUNK_TIMES;
    sd[GR_HEADER_LEN + GR_CHUNK_HEADER_LEN + 1] = 0x80;
    tb_fix_crc(sd, GR_HEADER_LEN);
    assert_int_equal(gr_times_parse(&tm, "s", sd, sn), GR_READ_CORRUPT);
    assert_int_equal(tm.err.kind, GR_E_PAST_CHUNK);
    gr_times_free(&tm);
    assert_int_equal(gr_times_parse(&tm, "s", sd, sn - 1), GR_READ_OK);
    assert_true(tm.truncated);
    assert_true(tm.truncated_at == GR_HEADER_LEN);
    gr_times_free(&tm);
    free(sd);
    /* a canonical trace is refused as a side channel and vice versa */
    gr_trace t;
    assert_int_equal(gr_trace_load(&t, path), GR_READ_CORRUPT);
    assert_int_equal(t.err.kind, GR_E_STREAM);
    gr_trace_free(&t);
    size_t n;
    uint8_t *d = tb_memfile(GR_CHUNK_RECORDS, BYTES(GR_THREAD, 1), 1, &n);
    assert_int_equal(gr_times_parse(&tm, "c", d, n), GR_READ_CORRUPT);
    assert_int_equal(tm.err.kind, GR_E_STREAM);
    gr_times_free(&tm);
    free(d);
    unlink(path);
}

/* Sub-writers (gr_writer_open_sub), as the recorder writes the sampler's
 * 'W' and 'P' chunks during the run: their chunks go into the parent's
 * file between its 'T' chunks (format 1.3), every entry is read back in
 * order; the parent's size cap stops a sub-writer too (its records are
 * counted as dropped) and the file still reads. */
static void test_side_subwriters(void **state)
{
    (void)state;
    char path[] = "/tmp/gr-unit-sub-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    gr_writer *w = gr_writer_open(path, GR_STREAM_SIDE, 16);
    assert_non_null(w);
    gr_writer *ww = gr_writer_open_sub(w, GR_CHUNK_SWITCHES, 16);
    gr_writer *pw = gr_writer_open_sub(w, GR_CHUNK_SAMPLES, 16);
    assert_non_null(ww);
    assert_non_null(pw);
    for (uint8_t i = 0; i < 30; i++) {
        uint8_t t = (uint8_t)(50 + i), e[4] = {i, 1, 2, (uint8_t)(i & 1)};
        uint8_t s[10] = {i, i, 0, 0, 0, 0, 0, 0, 0, 0};
        assert_int_equal(gr_writer_append(w, &t, 1), 0);
        assert_int_equal(gr_writer_append(ww, e, 4), 0);
        if (i % 3 == 0)
            assert_int_equal(gr_writer_append(pw, s, 10), 0);
    }
    assert_int_equal(gr_writer_finish(ww, NULL, 0), 0);
    assert_int_equal(gr_writer_finish(pw, NULL, 0), 0);
    uint64_t tr[3] = {30, 30, 10};
    assert_int_equal(gr_writer_finish(w, tr, 3), 0);
    gr_times tm;
    if (gr_times_load(&tm, path) != GR_READ_OK)
        fail_msg("%s", tm.err.msg);
    assert_int_equal(tm.minor, GR_SIDE_MINOR);
    assert_true(tm.n == 30 && tm.nwaits == 30 && tm.nsamples == 10 && tm.has_trailer);
    for (size_t i = 0; i < 30; i++) {
        assert_true(tm.dt[i] == 50 + i);
        assert_true(tm.waits[i].index == i && tm.waits[i].contended == (i & 1));
    }
    for (size_t i = 0; i < 10; i++)
        assert_true(tm.samples[i].idx_begin == 3 * i);
    /* interleaved: 'W' chunks after 'P' ones (corrupt in format 1.2) */
    assert_true(tm.waits[29].offset > tm.samples[0].offset);
    gr_times_free(&tm);

    /* the parent's size cap stops the sub-writer */
    w = gr_writer_open(path, GR_STREAM_SIDE, 16);
    assert_non_null(w);
    gr_writer_set_limit(w, 60);
    ww = gr_writer_open_sub(w, GR_CHUNK_SWITCHES, 16);
    assert_non_null(ww);
    int refused = 0;
    for (uint8_t i = 0; i < 30; i++) {
        uint8_t e[4] = {i, 1, 2, 0};
        refused += gr_writer_append(ww, e, 4) < 0;
    }
    assert_true(refused > 0 && w->capped && ww->blocked && ww->dropped > 0);
    assert_int_equal(gr_writer_finish(ww, NULL, 0), -1);
    tr[1] = 0;
    gr_writer_finish(w, tr, 3);
    assert_int_equal(gr_times_load(&tm, path), GR_READ_OK);
    assert_true(tm.nwaits > 0 && tm.nwaits < 30 && tm.has_trailer);
    gr_times_free(&tm);
    unlink(path);
}

/* Every field of 'W' and 'P' entries, with samples whose stacks continue
 * in the next chunk (chunks of 24 bytes). */
/* The side channel's bytes d[0..n) read with gr_times_parse and streamed
 * (gr_times_open, gr_times_next_chunk) from a file: same status, error
 * kind and offset, truncation, trailer, and the same entries in the same
 * order ('T' kept one chunk at a time when streamed; each sample with its stacks once
 * it is complete, carried over a chunk boundary). */
static void side_stream_equals_parse(const uint8_t *d, size_t n)
{
    char path[] = "/tmp/gr-unit-sstream-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_true(n == 0 || write(fd, d, n) == (ssize_t)n);
    close(fd);
    gr_times want, got;
    int rw = gr_times_parse(&want, path, d, n);
    int rg = gr_times_open(&got, path);
    size_t nw = 0, np = 0;
    if (rg == GR_READ_OK) {
        int k;
        while ((k = gr_times_next_chunk(&got)) >= 0) {
            if (got.last_tag == GR_CHUNK_TIMES && k > 0) { /* this chunk's deltas only */
                assert_true(got.first_dt + got.ndt == got.n && got.n <= want.n);
                for (size_t i = 0; i < got.ndt; i++)
                    assert_true(got.dt[i] == want.dt[got.first_dt + i]);
            }
            if (got.last_tag == GR_CHUNK_SWITCHES && k > 0) {
                assert_true(got.first_wait == nw);
                for (size_t i = 0; i < got.nwaits; i++, nw++) {
                    const gr_switch_wait *a = &want.waits[nw], *b = &got.waits[i];
                    assert_true(nw < want.nwaits);
                    assert_true(a->index == b->index && a->wait_ns == b->wait_ns &&
                                a->callback_ns == b->callback_ns && a->offset == b->offset);
                    assert_int_equal(a->contended, b->contended);
                }
            }
            /* Complete samples (at the end, the last one however far it got). */
            for (; np < got.first_sample + got.nsamples; np++) {
                const gr_sample *b = &got.samples[np - got.first_sample];
                if (b->got < b->nstacks && k > 0)
                    break;
                assert_true(np < want.nsamples);
                const gr_sample *a = &want.samples[np];
                assert_true(a->idx_begin == b->idx_begin && a->idx_end == b->idx_end &&
                            a->hold_ns == b->hold_ns && a->nstacks == b->nstacks &&
                            a->got == b->got && a->offset == b->offset);
                for (uint64_t j = 0; j < a->got; j++) {
                    const gr_sample_stack *x = &want.stacks[a->stack + j],
                                          *y = &got.stacks[b->stack + j];
                    assert_true(x->gid == y->gid && x->offset == y->offset);
                    assert_int_equal(x->depth, y->depth);
                    assert_true(y->codes + y->depth <= got.ncodes); /* in this chunk's pool */
                    if (x->depth)
                        assert_memory_equal(gr_sample_codes(&want, x), gr_sample_codes(&got, y),
                                            x->depth * sizeof(uint32_t));
                }
            }
            if (k == 0)
                break;
        }
        rg = k < 0 ? got.err.status : GR_READ_OK;
        if (rg == GR_READ_OK) {
            assert_true(nw == want.nwaits && np == want.nsamples);
            assert_true(got.n == want.n);
            assert_int_equal(got.truncated, want.truncated);
            assert_true(got.truncated_at == want.truncated_at);
            assert_int_equal(got.has_trailer, want.has_trailer);
            assert_int_equal(got.has_sampler_trailer, want.has_sampler_trailer);
            assert_true(got.count == want.count && got.sampler_chunks == want.sampler_chunks);
        }
    }
    assert_int_equal(rw, rg);
    if (rw != GR_READ_OK) {
        assert_int_equal(want.err.kind, got.err.kind);
        assert_true(want.err.offset == got.err.offset);
        assert_string_equal(want.err.msg, got.err.msg);
    }
    gr_times_free(&want);
    gr_times_free(&got);
    unlink(path);
}

static void test_side_stream_matches_parse(void **state)
{
    (void)state;
    tb b;
    tb_open(&b, 0);
    tside sd;
    ts_open(&sd, &b, 40); /* a few entries per chunk; samples straddle chunks */
    ts_deltas(&sd, 30);
    for (uint64_t i = 0; i < 7; i++)
        ts_wait(&sd, 5 + 4 * i, i * 1000, i * 1000 + 300, i & 1);
    ts_sample(&sd, 6, 8, 4000, 3, 5, 0, 1, 2, 3);
    ts_stack(&sd, 2, 3, 1u, 2u, 3u);
    ts_stack(&sd, 3, 2, 4u, 0u);
    ts_stack(&sd, 4, 4, 1u, 2u, 3u, 4u);
    ts_sample(&sd, 8, 8, 5000, 1, 0, 0, 0, 0, 0);
    ts_sample(&sd, 9, 12, 6000, 2, 7, 7, 0, 0, 1);
    ts_stack(&sd, 200, 7, 1u, 2u, 3u, 4u, 5u, 6u, 300u);
    ts_sample(&sd, 12, 12, 7000, 2, 2, 0, 0, 0, 2);
    ts_stack(&sd, 5, 1, 9u);
    ts_stack(&sd, 6, 1, 8u);
    for (uint64_t i = 0; i < 8; i++) { /* a complete sample and the start of
                                           the next in one chunk */
        ts_sample(&sd, 13 + i, 13 + i, 10, 2, 2, 0, 0, 0, 2);
        ts_stack(&sd, 7 + i, 1, (uint32_t)(10 + i));
        ts_stack(&sd, 8 + i, 2, (uint32_t)(20 + i), 1u);
    }
    ts_finish(&sd);
    FILE *f = fopen(sd.path, "rb");
    assert_non_null(f);
    uint8_t d[4096];
    size_t n = fread(d, 1, sizeof d, f);
    fclose(f);
    assert_true(n > 100 && n < sizeof d);
    for (size_t cut = 0; cut <= n; cut++)
        side_stream_equals_parse(d, cut);
    for (size_t at = 0; at < n; at++) {
        d[at] ^= 0x5a;
        side_stream_equals_parse(d, n);
        d[at] ^= 0x5a;
    }
    ts_cleanup(&sd);

    /* Format 1.3: 'T', 'W' and 'P' chunks interleaved, as the recorder
     * writes them during the run. */
    ts_open(&sd, &b, 40);
    for (uint64_t round = 0; round < 4; round++) {
        ts_deltas(&sd, 12);
        for (uint64_t i = 0; i < 3; i++)
            ts_wait(&sd, 12 * round + 2 + 3 * i, i * 100, i * 100 + 30, i & 1);
        ts_sample(&sd, 12 * round + 1, 12 * round + 3, 4000, 3, 5, 0, 1, 2, 2);
        ts_stack(&sd, 2 + round, 3, 1u, 2u, 3u);
        ts_stack(&sd, 9, 2, 4u, 0u);
        ts_deltas(&sd, 3);
        ts_wait(&sd, 12 * round + 11, 5, 6, 0);
    }
    ts_finish(&sd);
    f = fopen(sd.path, "rb");
    assert_non_null(f);
    n = fread(d, 1, sizeof d, f);
    fclose(f);
    assert_true(n > 100 && n < sizeof d && d[10] == GR_SIDE_MINOR);
    for (size_t cut = 0; cut <= n; cut++)
        side_stream_equals_parse(d, cut);
    for (size_t at = 0; at < n; at++) {
        d[at] ^= 0x5a;
        side_stream_equals_parse(d, n);
        d[at] ^= 0x5a;
    }
    ts_cleanup(&sd);
    tb_cleanup(&b);
}

static void test_side_channel_sampler(void **state)
{
    (void)state;
    tb b;
    tb_open(&b, 0);
    tside sd;
    ts_open(&sd, &b, 24);
    ts_deltas(&sd, 3);
    ts_wait(&sd, 5, 0, 300, 0);
    ts_wait(&sd, 9, 1500000, 1600000, 1);
    ts_sample(&sd, 6, 8, 4000, 3, 5, 0, 1, 2, 2);
    ts_stack(&sd, 2, 3, 1u, 2u, 3u);
    ts_stack(&sd, 3, 2, 4u, 0u);
    ts_sample(&sd, 8, 8, 5000, 1, 0, 0, 0, 0, 0);
    ts_sample(&sd, 9, 12, 6000, 2, 7, 7, 0, 0, 1);
    ts_stack(&sd, 200, 7, 1u, 2u, 3u, 4u, 5u, 6u, 300u);
    ts_finish(&sd);
    gr_times tm;
    assert_int_equal(gr_times_load(&tm, sd.path), GR_READ_OK);
    assert_false(tm.truncated);
    assert_true(tm.sampler_chunks > 3); /* 24-byte chunks: several of each kind */
    assert_int_equal(tm.n, 3);
    assert_int_equal(tm.count, 3);
    assert_true(tm.has_sampler_trailer && tm.trailer_switches == 2 && tm.trailer_samples == 3);
    assert_int_equal(tm.nwaits, 2);
    assert_true(tm.waits[0].index == 5 && tm.waits[0].wait_ns == 0 &&
                tm.waits[0].callback_ns == 300 && tm.waits[0].contended == 0);
    assert_true(tm.waits[1].index == 9 && tm.waits[1].wait_ns == 1500000 &&
                tm.waits[1].callback_ns == 1600000 && tm.waits[1].contended == 1);
    assert_int_equal(tm.nsamples, 3);
    const gr_sample *s0 = &tm.samples[0], *s2 = &tm.samples[2];
    assert_true(s0->idx_begin == 6 && s0->idx_end == 8 && s0->t_ns == 1000 &&
                s0->hold_ns == 4000 && s0->greenlets == 3 && s0->frames == 5 &&
                s0->frames_under_lock == 0 && s0->failed == 1 && s0->torn == 2 &&
                s0->nstacks == 2 && s0->got == 2);
    assert_true(tm.samples[1].nstacks == 0 && tm.samples[1].got == 0);
    assert_true(s2->frames_under_lock == 7 && s2->got == 1);
    assert_int_equal(tm.nstacks, 3);
    const gr_sample_stack *a = &tm.stacks[s0->stack], *c = &tm.stacks[s2->stack];
    assert_true(a[0].gid == 2 && a[0].depth == 3 && a[1].gid == 3 && a[1].depth == 2);
    assert_int_equal(gr_sample_codes(&tm, &a[0])[2], 3);
    assert_int_equal(gr_sample_codes(&tm, &a[1])[1], 0);
    assert_true(c->gid == 200 && c->depth == 7 && gr_sample_codes(&tm, c)[6] == 300);
    /* entry offsets point into the file */
    assert_true(tm.waits[0].offset >= GR_HEADER_LEN + GR_CHUNK_HEADER_LEN);
    assert_true(a[1].offset > a[0].offset && s2->offset > a[1].offset);
    gr_times_free(&tm);

    /* cut anywhere: never corrupt, and what is there is kept */
    size_t n;
    FILE *f = fopen(sd.path, "rb");
    assert_non_null(f);
    uint8_t buf[4096];
    n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    for (size_t cut = 0; cut < n; cut++) {
        assert_int_equal(gr_times_parse(&tm, "cut", buf, cut), GR_READ_OK);
        assert_true(tm.truncated);
        for (size_t k = 0; k < tm.nsamples; k++)
            assert_true(tm.samples[k].got <= tm.samples[k].nstacks);
        gr_times_free(&tm);
    }
    ts_cleanup(&sd);
    tb_cleanup(&b);
}

/* A side channel in memory: header, then chunks given as (tag, bytes,
 * length) triples ending with tag 0. */
static uint8_t *side_file(size_t *n, ...)
{
    uint8_t *d = malloc(GR_HEADER_LEN);
    assert_non_null(d);
    gr_format_header(d, GR_STREAM_SIDE);
    size_t len = GR_HEADER_LEN;
    va_list ap;
    va_start(ap, n);
    for (;;) {
        int tag = va_arg(ap, int);
        if (!tag)
            break;
        const uint8_t *p = va_arg(ap, const uint8_t *);
        size_t pl = va_arg(ap, size_t);
        d = realloc(d, len + GR_CHUNK_HEADER_LEN + pl);
        assert_non_null(d);
        d[len] = (uint8_t)tag;
        gr_put_u32le(d + len + 1, (uint32_t)pl);
        memcpy(d + len + GR_CHUNK_HEADER_LEN, p, pl);
        tb_fix_crc(d, len);
        len += GR_CHUNK_HEADER_LEN + pl;
    }
    va_end(ap);
    *n = len;
    return d;
}

#define C1 (GR_HEADER_LEN)                      /* first chunk */
#define E1 (GR_HEADER_LEN + GR_CHUNK_HEADER_LEN) /* its first entry */

static void side_corrupt(uint8_t *d, size_t n, enum gr_err_kind kind, uint64_t off,
                         const char *what)
{
    gr_times tm;
    assert_int_equal(gr_times_parse(&tm, "s.times", d, n), GR_READ_CORRUPT);
    assert_int_equal(tm.err.kind, kind);
    if (off != GR_NO_OFFSET)
        assert_true(tm.err.offset == off);
    if (!strstr(tm.err.msg, what))
        fail_msg("message '%s' lacks '%s'", tm.err.msg, what);
    gr_times_free(&tm);
    free(d);
}

#define TR1 BYTES(0)          /* trailer: entries only */
#define TR3 BYTES(0, 0, 0)    /* trailer with the sampler's counts */

static void test_side_channel_corrupt(void **state)
{
    (void)state;
    size_t n;
    /* 'W': cut entry, contended 2, overlong varint */
    uint8_t *d = side_file(&n, 'W', BYTES(5, 0, 7), 'Z', TR3, 0);
    side_corrupt(d, n, GR_E_PAST_CHUNK, E1, "past the end of its chunk");
    d = side_file(&n, 'W', BYTES(5, 0, 7, 0, 6, 0, 7, 2), 'Z', TR3, 0);
    side_corrupt(d, n, GR_E_VALUE, E1 + 4, "contended");
    d = side_file(&n, 'W', BYTES(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 1,
                                 0, 0, 0), 'Z', TR3, 0);
    side_corrupt(d, n, GR_E_VARINT, E1, "varint");
    /* 'P': impossible header values */
    d = side_file(&n, 'P', BYTES(5, 4, 0, 0, 0, 0, 0, 0, 0, 0), 'Z', TR3, 0);
    side_corrupt(d, n, GR_E_VALUE, E1, "idx_begin above idx_end");
    d = side_file(&n, 'P', BYTES(1, 2, 0, 0, 1, 1, 2, 0, 0, 0), 'Z', TR3, 0);
    side_corrupt(d, n, GR_E_VALUE, E1, "frames_under_lock above frames");
    d = side_file(&n, 'P', BYTES(1, 2, 0, 0, 1, 0, 0, 0, 0, 2), 'Z', TR3, 0);
    side_corrupt(d, n, GR_E_VALUE, E1, "more stacks than greenlets");
    d = side_file(&n, 'P', BYTES(1, 2, 0, 0, 1, 0, 0, 0, 0), 'Z', TR3, 0);
    side_corrupt(d, n, GR_E_PAST_CHUNK, E1, "past the end");
    /* stacks: gid 0, depth past the chunk, code id over 32 bits */
    d = side_file(&n, 'P', BYTES(1, 2, 0, 0, 1, 1, 0, 0, 0, 1, 0, 1, 5), 'Z', TR3, 0);
    side_corrupt(d, n, GR_E_VALUE, E1 + 10, "greenlet id 0");
    d = side_file(&n, 'P', BYTES(1, 2, 0, 0, 1, 1, 0, 0, 0, 1, 1, 5, 1), 'Z', TR3, 0);
    side_corrupt(d, n, GR_E_PAST_CHUNK, E1 + 10, "sample stack runs past");
    d = side_file(&n, 'P', BYTES(1, 2, 0, 0, 1, 1, 0, 0, 0, 1, 1, 1, 0x80, 0x80, 0x80, 0x80,
                                 0x10), 'Z', TR3, 0);
    side_corrupt(d, n, GR_E_VALUE, E1 + 10, "code id over 2^32-1");
    /* order of chunk kinds: fixed in a side channel of format 1.2 (minor
     * at offset 10) ... */
    d = side_file(&n, 'W', BYTES(5, 0, 7, 0), 'T', BYTES(1), 'Z', TR3, 0);
    d[10] = 2;
    side_corrupt(d, n, GR_E_VALUE, E1 + 4, "'T' chunk after switch ('W') chunks");
    d = side_file(&n, 'P', BYTES(1, 2, 0, 0, 0, 0, 0, 0, 0, 0), 'W', BYTES(5, 0, 7, 0), 'Z',
                  TR3, 0);
    d[10] = 2;
    side_corrupt(d, n, GR_E_VALUE, E1 + 10, "'W' chunk after sample ('P') chunks");
    /* ... free from 1.3 on (the recorder writes 'W' and 'P' chunks during
     * the run) */
    {
        gr_times tm3;
        d = side_file(&n, 'P', BYTES(1, 2, 0, 0, 0, 0, 0, 0, 0, 0), 'W', BYTES(5, 0, 7, 0), 'T',
                      BYTES(1), 'W', BYTES(6, 0, 7, 1), 'Z', TR3, 0);
        assert_int_equal(d[10], GR_SIDE_MINOR);
        assert_int_equal(gr_times_parse(&tm3, "s", d, n), GR_READ_OK);
        assert_true(tm3.nwaits == 2 && tm3.nsamples == 1 && tm3.n == 1 && tm3.minor == 3);
        assert_true(tm3.waits[1].index == 6 && tm3.waits[1].contended == 1);
        gr_times_free(&tm3);
        free(d);
    }
    /* a sample's stacks cut by the trailer or by another kind of chunk */
    d = side_file(&n, 'P', BYTES(1, 2, 0, 0, 2, 1, 0, 0, 0, 2, 1, 1, 7), 'Z', TR3, 0);
    side_corrupt(d, n, GR_E_TRAILER, E1 + 13, "trailer before the last 1 of the 2 stacks");
    d = side_file(&n, 'P', BYTES(1, 2, 0, 0, 2, 1, 0, 0, 0, 2, 1, 1, 7), 'W', BYTES(5, 0, 7, 0),
                  'Z', TR3, 0);
    side_corrupt(d, n, GR_E_VALUE, E1 + 13, "chunk before the last 1 of the 2 stacks");
    /* trailer with two fields; data after the trailer */
    d = side_file(&n, 'T', BYTES(1), 'Z', BYTES(1, 0), 0);
    side_corrupt(d, n, GR_E_TRAILER, GR_NO_OFFSET, "switch count but not its sample count");
    d = side_file(&n, 'Z', TR1, 'P', BYTES(1, 2, 0, 0, 0, 0, 0, 0, 0, 0), 0);
    side_corrupt(d, n, GR_E_TRAILER, GR_NO_OFFSET, "data after the trailer");

    /* valid: a sample's stacks continue in the next 'P' chunk */
    gr_times tm;
    d = side_file(&n, 'P', BYTES(1, 2, 0, 0, 2, 1, 0, 0, 0, 2, 1, 1, 7), 'P', BYTES(2, 0), 'Z',
                  TR3, 0);
    assert_int_equal(gr_times_parse(&tm, "s", d, n), GR_READ_OK);
    assert_true(tm.nsamples == 1 && tm.samples[0].got == 2 && tm.nstacks == 2);
    assert_true(tm.stacks[1].gid == 2 && tm.stacks[1].depth == 0);
    gr_times_free(&tm);
    /* truncated inside the second chunk: the sample keeps one stack */
    assert_int_equal(gr_times_parse(&tm, "s", d, n - 14), GR_READ_OK);
    assert_true(tm.truncated && tm.nsamples == 1 && tm.samples[0].got == 1 &&
                tm.samples[0].nstacks == 2);
    gr_times_free(&tm);
    free(d);
    /* a side channel without the sampler */
    d = side_file(&n, 'T', BYTES(1, 2), 'Z', BYTES(2), 0);
    assert_int_equal(gr_times_parse(&tm, "s", d, n), GR_READ_OK);
    assert_false(gr_times_has_sampler(&tm));
    assert_int_equal(tm.n, 2);
    gr_times_free(&tm);
    free(d);
}

/* ------------------------------------------------------------- fuzzing */

static uint64_t rng = 0x9E3779B97F4A7C15u;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void test_random_mutations(void **state)
{
    (void)state;
    tb b;
    struct ids id;
    build_all_kinds(&b, &id, 60, 1);
    size_t n;
    uint8_t *orig = tb_bytes(&b, &n);
    tb_cleanup(&b);
    uint8_t *d = malloc(n);
    size_t corrupt = 0, ok = 0;
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(d, orig, n);
        int flips = 1 + (int)(next_rand() % 4);
        for (int k = 0; k < flips; k++) {
            size_t at = (size_t)(next_rand() % n);
            d[at] = (uint8_t)next_rand();
        }
        size_t len = (iter % 3 == 0) ? (size_t)(next_rand() % (n + 1)) : n;
        if (iter % 2 == 0) { /* fix every CRC so record decoding is exercised */
            for (size_t off = GR_HEADER_LEN; off + GR_CHUNK_HEADER_LEN <= len;) {
                uint32_t cl = gr_get_u32le(d + off + 1);
                if (cl > len - off - GR_CHUNK_HEADER_LEN)
                    break;
                tb_fix_crc(d, off);
                off += GR_CHUNK_HEADER_LEN + cl;
            }
        }
        gr_trace t;
        int rc = gr_trace_parse(&t, "fuzz", d, len);
        assert_true(rc == GR_READ_OK || rc == GR_READ_CORRUPT);
        if (rc == GR_READ_OK) {
            ok++;
            for (size_t i = 0; i < t.nrecs; i++) {
                assert_true(t.recs[i].tid != 0);
                assert_true(t.recs[i].depth <= GR_STACK_CAP);
                const uint32_t *s = gr_record_stack(&t, &t.recs[i]);
                for (uint32_t k = 0; k < t.recs[i].depth; k++)
                    assert_true(s[k] >= 1 && s[k] <= t.ncodes);
            }
        } else {
            corrupt++;
            assert_true(t.err.offset < len || t.err.offset == 0);
        }
        gr_trace_free(&t);
    }
    assert_true(corrupt > 100);
    assert_true(ok > 10);
    /* pure garbage after a valid header */
    for (int iter = 0; iter < 500; iter++) {
        size_t len = GR_HEADER_LEN + (size_t)(next_rand() % 200);
        uint8_t *g = malloc(len);
        gr_format_header(g, GR_STREAM_CANONICAL);
        for (size_t k = GR_HEADER_LEN; k < len; k++)
            g[k] = (uint8_t)next_rand();
        gr_trace t;
        int rc = gr_trace_parse(&t, "garbage", g, len);
        assert_true(rc == GR_READ_OK || rc == GR_READ_CORRUPT);
        gr_trace_free(&t);
        free(g);
    }
    free(d);
    free(orig);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_every_kind),
        cmocka_unit_test(test_side_channel_sampler),
        cmocka_unit_test(test_side_stream_matches_parse),
        cmocka_unit_test(test_side_channel_corrupt),
        cmocka_unit_test(test_round_trip_small_chunks),
        cmocka_unit_test(test_stream_matches_parse),
        cmocka_unit_test(test_hand_made_bytes),
        cmocka_unit_test(test_bad_magic),
        cmocka_unit_test(test_bad_major),
        cmocka_unit_test(test_wrong_stream),
        cmocka_unit_test(test_bad_crc),
        cmocka_unit_test(test_unknown_chunk_tag),
        cmocka_unit_test(test_oversize_chunk),
        cmocka_unit_test(test_unknown_record_tag),
        cmocka_unit_test(test_profiler_hooks),
        cmocka_unit_test(test_compact_records),
        cmocka_unit_test(test_gap_total_overflow),
        cmocka_unit_test(test_instr_values),
        cmocka_unit_test(test_id_before_definition),
        cmocka_unit_test(test_string_past_chunk),
        cmocka_unit_test(test_overlong_varint),
        cmocka_unit_test(test_impossible_values),
        cmocka_unit_test(test_record_past_chunk),
        cmocka_unit_test(test_trailer_problems),
        cmocka_unit_test(test_truncated_everywhere),
        cmocka_unit_test(test_truncated_specific),
        cmocka_unit_test(test_missing_trailer),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_side_channel),
        cmocka_unit_test(test_side_subwriters),
        cmocka_unit_test(test_random_mutations),
        cmocka_unit_test(test_compressed_round_trip),
        cmocka_unit_test(test_compressed_only_when_smaller),
        cmocka_unit_test(test_compressed_size_cap),
        cmocka_unit_test(test_compressed_copy_chunks),
        cmocka_unit_test(test_compressed_untrusted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
