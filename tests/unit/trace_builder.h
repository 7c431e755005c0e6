/* trace_builder.h - header-only helpers for unit tests: build trace files
 * with the real writer (tracer/writer.c) and encoder (replay/encode.c),
 * read them back, and patch raw bytes to make corrupt cases.
 *
 * Header-only (static inline) because the Makefile links each test as
 * tests/unit/test_X.c + the replay objects only.  Every function aborts the
 * test process (via abort()) on a setup failure such as an unwritable
 * temporary file: such failures are not what the tests check.
 */
#ifndef GR_TRACE_BUILDER_H
#define GR_TRACE_BUILDER_H

#include "encode.h"
#include "reader.h"
#include "writer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* A trace being built in a temporary file. */
typedef struct tb {
    gr_writer *w;
    char path[64];    /* temporary file, removed by tb_cleanup */
    uint32_t nstr;    /* strings defined so far */
    uint32_t ncode;   /* codes defined so far */
    uint32_t nprof;   /* profilers defined so far */
    uint64_t nrec;    /* indexed records appended so far */
} tb;

/* Start a trace in a new temporary file; chunk_cap as for gr_writer_open
 * (0: 64 KiB; small values make multi-chunk traces). */
static inline void tb_open(tb *b, size_t chunk_cap)
{
    memset(b, 0, sizeof *b);
    snprintf(b->path, sizeof b->path, "/tmp/gr-unit-XXXXXX");
    int fd = mkstemp(b->path);
    if (fd < 0)
        abort();
    close(fd);
    b->w = gr_writer_open(b->path, GR_STREAM_CANONICAL, chunk_cap);
    if (!b->w)
        abort();
}

/* Define a string; returns its id. */
static inline uint32_t tb_str(tb *b, const char *s)
{
    if (gr_emit_string(b->w, s, strlen(s)) < 0)
        abort();
    return ++b->nstr;
}

/* Define a Python code identity "qual (file:line)"; returns its id. */
static inline uint32_t tb_py(tb *b, const char *qual, const char *file, uint64_t line)
{
    gr_code c = {.kind = GR_CODE_PY, .line = line};
    c.qualname = tb_str(b, qual);
    c.file = tb_str(b, file);
    if (gr_emit_code(b->w, &c) < 0)
        abort();
    return ++b->ncode;
}

/* Define a C function identity; returns its id. */
static inline uint32_t tb_c(tb *b, const char *qual)
{
    gr_code c = {.kind = GR_CODE_C};
    c.qualname = tb_str(b, qual);
    if (gr_emit_code(b->w, &c) < 0)
        abort();
    return ++b->ncode;
}

/* Define one of the program's profilers (format 1.3): kind, type string
 * id (0 none), code id (0 none).  Returns its id (b->nprof counts them). */
static inline uint32_t tb_profiler(tb *b, uint64_t kind, uint32_t type, uint32_t code)
{
    gr_profdef pd = {.kind = (uint8_t)kind, .type = type, .code = code};
    if (gr_emit_profiler(b->w, &pd) < 0)
        abort();
    return ++b->nprof;
}

static inline void tb_meta(tb *b, const char *key, const char *value)
{
    uint32_t k = tb_str(b, key), v = tb_str(b, value);
    if (gr_emit_meta(b->w, k, v) < 0)
        abort();
}

/* Append any record; returns its index. */
static inline uint64_t tb_rec(tb *b, const gr_record *r, const uint32_t *stack)
{
    if (gr_emit_record(b->w, r, stack) < 0)
        abort();
    return b->nrec++;
}

static inline uint64_t tb_thread(tb *b, uint64_t tid)
{
    gr_record r = {.tag = GR_THREAD, .tid = tid};
    return tb_rec(b, &r, NULL);
}

/* GREENLET with a seed of n code ids given as varargs (uint32_t). */
static inline uint64_t tb_greenlet(tb *b, uint64_t tid, uint64_t gid, uint64_t parent,
                                   uint64_t flags, int n, ...)
{
    uint32_t ids[GR_STACK_CAP];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        ids[i] = va_arg(ap, uint32_t);
    va_end(ap);
    gr_record r = {.tag = GR_GREENLET, .tid = tid, .gid = gid, .parent = parent,
                   .flags = flags, .depth = (uint32_t)n};
    return tb_rec(b, &r, ids);
}

/* CALL, RETURN, C_CALL, C_RETURN or C_EXCEPTION. */
static inline uint64_t tb_ev(tb *b, int tag, uint64_t tid, uint64_t gid, uint32_t code)
{
    gr_record r = {.tag = (uint8_t)tag, .tid = tid, .gid = gid, .code = code};
    return tb_rec(b, &r, NULL);
}

/* SWITCH or THROW. */
static inline uint64_t tb_switch(tb *b, int tag, uint64_t tid, uint64_t origin, uint64_t target,
                                 uint64_t parent, uint64_t flags, uint64_t tracing,
                                 uint64_t use_tracing)
{
    gr_record r = {.tag = (uint8_t)tag, .tid = tid, .gid = origin, .target = target,
                   .parent = parent, .flags = flags, .tracing = tracing,
                   .use_tracing = use_tracing};
    return tb_rec(b, &r, NULL);
}

/* SWITCH or THROW carrying the target's real stack (format 1.1,
 * GR_SW_REAL_STACK is added): n code ids, outermost first, as varargs. */
static inline uint64_t tb_switch_stack(tb *b, int tag, uint64_t tid, uint64_t origin,
                                       uint64_t target, uint64_t parent, uint64_t flags,
                                       uint64_t tracing, uint64_t use_tracing, int n, ...)
{
    uint32_t ids[GR_STACK_CAP];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        ids[i] = va_arg(ap, uint32_t);
    va_end(ap);
    gr_record r = {.tag = (uint8_t)tag, .tid = tid, .gid = origin, .target = target,
                   .parent = parent, .flags = flags | GR_SW_REAL_STACK, .tracing = tracing,
                   .use_tracing = use_tracing, .depth = (uint32_t)n};
    return tb_rec(b, &r, ids);
}

/* INSTR (3.12+, after a SWITCH/THROW): the target gid's tracing state
 * there, the interpreter's instrumentation version, the target's Python
 * frames and how many of them are stale (at most frames). */
static inline uint64_t tb_instr(tb *b, uint64_t tid, uint64_t gid, uint64_t version,
                                uint64_t frames, uint64_t stale)
{
    gr_record r = {.tag = GR_INSTR, .tid = tid, .gid = gid, .tracing = version,
                   .parent = frames, .use_tracing = stale};
    return tb_rec(b, &r, NULL);
}

/* HOOK: slot, action, who (GR_HOOK_* bits), code of the C call in
 * progress (0 none). */
static inline uint64_t tb_hook(tb *b, uint64_t tid, uint64_t gid, uint64_t slot, uint64_t action,
                               uint64_t who, uint32_t code)
{
    gr_record r = {.tag = GR_HOOK, .tid = tid, .gid = gid, .flags = slot, .tracing = action,
                   .parent = who, .code = code};
    return tb_rec(b, &r, NULL);
}

/* HOOK of the profile slot naming the program's profiler prof and the
 * frame (code id) that made the change (format 1.3, §4.2). */
static inline uint64_t tb_hook_prof(tb *b, uint64_t tid, uint64_t gid, uint64_t action,
                                    uint64_t who, uint32_t during, uint32_t prof,
                                    uint32_t frame)
{
    gr_record r = {.tag = GR_HOOK, .tid = tid, .gid = gid, .flags = GR_HOOK_PROFILE,
                   .tracing = action, .parent = who, .code = during, .target = prof,
                   .use_tracing = frame};
    return tb_rec(b, &r, NULL);
}

/* MARK with a stack of n code ids (outermost first) as varargs. */
static inline uint64_t tb_mark(tb *b, uint64_t tid, uint64_t gid, uint32_t label, uint32_t mark,
                               uint64_t flags, int n, ...)
{
    uint32_t ids[GR_STACK_CAP];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        ids[i] = va_arg(ap, uint32_t);
    va_end(ap);
    gr_record r = {.tag = GR_MARK, .tid = tid, .gid = gid, .label = label, .code = mark,
                   .flags = flags, .depth = (uint32_t)n};
    return tb_rec(b, &r, ids);
}

/* DEAD, START or STOP. */
static inline uint64_t tb_simple(tb *b, int tag, uint64_t tid, uint64_t gid)
{
    gr_record r = {.tag = (uint8_t)tag, .tid = tid, .gid = gid};
    return tb_rec(b, &r, NULL);
}

/* STACK with n code ids as varargs. */
static inline uint64_t tb_stack(tb *b, uint64_t tid, uint64_t gid, uint64_t flags, int n, ...)
{
    uint32_t ids[GR_STACK_CAP];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        ids[i] = va_arg(ap, uint32_t);
    va_end(ap);
    gr_record r = {.tag = GR_STACK, .tid = tid, .gid = gid, .flags = flags,
                   .depth = (uint32_t)n};
    return tb_rec(b, &r, ids);
}

/* Append raw bytes as one record (for corrupt cases). */
static inline void tb_raw(tb *b, const void *bytes, size_t n)
{
    if (gr_writer_append(b->w, bytes, n) < 0)
        abort();
}

/* Write the current chunk out now (starts a new chunk). */
static inline void tb_flush(tb *b)
{
    if (gr_writer_flush(b->w) < 0)
        abort();
}

/* Finish with a trailer (events = records appended, reason = stop). */
static inline void tb_finish(tb *b)
{
    uint64_t tr[4] = {b->nrec, 0, 0, GR_STOP_CALLED};
    if (gr_writer_finish(b->w, tr, 4) < 0)
        abort();
    b->w = NULL;
}

/* Finish with the given trailer values. */
static inline void tb_finish_with(tb *b, uint64_t events, uint64_t dropped, uint64_t errors,
                                  uint64_t reason)
{
    uint64_t tr[4] = {events, dropped, errors, reason};
    if (gr_writer_finish(b->w, tr, 4) < 0)
        abort();
    b->w = NULL;
}

/* Close without trailer (a truncated trace). */
static inline void tb_abandon(tb *b)
{
    gr_writer_abandon(b->w);
    b->w = NULL;
}

/* Read the finished file into *t; returns gr_trace_load's status. */
static inline int tb_load(tb *b, gr_trace *t)
{
    return gr_trace_load(t, b->path);
}

/* The finished file's bytes (malloc'd; caller frees) and size. */
static inline uint8_t *tb_bytes(const tb *b, size_t *n)
{
    FILE *f = fopen(b->path, "rb");
    if (!f)
        abort();
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *d = malloc(len > 0 ? (size_t)len : 1);
    if (!d || (len > 0 && fread(d, 1, (size_t)len, f) != (size_t)len))
        abort();
    fclose(f);
    *n = (size_t)len;
    return d;
}

/* Remove the temporary file (and the writer if still open). */
static inline void tb_cleanup(tb *b)
{
    if (b->w)
        gr_writer_abandon(b->w);
    b->w = NULL;
    unlink(b->path);
}

/* Recompute the CRC of the chunk whose header starts at off in d (after
 * patching its payload). */
static inline void tb_fix_crc(uint8_t *d, size_t off)
{
    uint32_t len = gr_get_u32le(d + off + 1);
    gr_put_u32le(d + off + 5, (uint32_t)crc32(0L, d + off + GR_CHUNK_HEADER_LEN, (uInt)len));
}

/* Build a single-chunk file in memory: header + one chunk with the given
 * tag and payload (correct CRC) + optionally a trailer chunk.  Returns a
 * malloc'd buffer and its size in *n. */
static inline uint8_t *tb_memfile(char tag, const void *payload, size_t len, int trailer,
                                  size_t *n)
{
    uint8_t tr[8];
    size_t trl = 0;
    if (trailer) {
        tr[0] = 0; tr[1] = 0; tr[2] = 0; tr[3] = 1; /* events dropped errors reason */
        trl = 4;
    }
    size_t total = GR_HEADER_LEN + GR_CHUNK_HEADER_LEN + len +
                   (trailer ? GR_CHUNK_HEADER_LEN + trl : 0);
    uint8_t *d = calloc(1, total);
    if (!d)
        abort();
    gr_format_header(d, GR_STREAM_CANONICAL);
    size_t off = GR_HEADER_LEN;
    d[off] = (uint8_t)tag;
    gr_put_u32le(d + off + 1, (uint32_t)len);
    memcpy(d + off + GR_CHUNK_HEADER_LEN, payload, len);
    tb_fix_crc(d, off);
    off += GR_CHUNK_HEADER_LEN + len;
    if (trailer) {
        d[off] = GR_CHUNK_TRAILER;
        gr_put_u32le(d + off + 1, (uint32_t)trl);
        memcpy(d + off + GR_CHUNK_HEADER_LEN, tr, trl);
        tb_fix_crc(d, off);
    }
    *n = total;
    return d;
}

/* ---- side channel (docs/FORMAT.md §5) ---------------------------------- */

/* A side channel being built next to a trace: path is TRACE.times. */
typedef struct tside {
    gr_writer *w;
    char path[80];
    char tag;          /* chunk kind being written */
    uint64_t ndt, nw, np;
} tside;

/* Start TRACE.times for the trace being built in b (chunk_cap as for
 * gr_writer_open; small values split samples across chunks). */
static inline void ts_open(tside *s, const tb *b, size_t chunk_cap)
{
    memset(s, 0, sizeof *s);
    snprintf(s->path, sizeof s->path, "%s.times", b->path);
    s->w = gr_writer_open(s->path, GR_STREAM_SIDE, chunk_cap);
    if (!s->w)
        abort();
    s->tag = GR_CHUNK_TIMES;
}

static inline void ts_tag(tside *s, char tag)
{
    if (s->tag != tag && gr_writer_set_chunk_tag(s->w, tag) < 0)
        abort();
    s->tag = tag;
}

/* Append n varints as one entry (one gr_writer_append). */
static inline void ts_entry(tside *s, int n, const uint64_t *v)
{
    uint8_t buf[64 * GR_VARINT_MAX], *p = buf;
    if (n > 64)
        abort();
    for (int i = 0; i < n; i++)
        p = gr_put_varint(p, v[i]);
    if (gr_writer_append(s->w, buf, (size_t)(p - buf)) < 0)
        abort();
}

/* n 'T' deltas of 1000 ns. */
static inline void ts_deltas(tside *s, uint64_t n)
{
    ts_tag(s, GR_CHUNK_TIMES);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v = 1000;
        ts_entry(s, 1, &v);
    }
    s->ndt += n;
}

/* One 'W' entry. */
static inline void ts_wait(tside *s, uint64_t index, uint64_t wait_ns, uint64_t callback_ns,
                           uint64_t contended)
{
    ts_tag(s, GR_CHUNK_SWITCHES);
    uint64_t v[4] = {index, wait_ns, callback_ns, contended};
    ts_entry(s, 4, v);
    s->nw++;
}

/* A 'P' sample header; nstacks ts_stack calls must follow. */
static inline void ts_sample(tside *s, uint64_t idx_begin, uint64_t idx_end, uint64_t hold_ns,
                             uint64_t greenlets, uint64_t frames, uint64_t under,
                             uint64_t failed, uint64_t torn, uint64_t nstacks)
{
    ts_tag(s, GR_CHUNK_SAMPLES);
    uint64_t v[10] = {idx_begin, idx_end, 1000 * (s->np + 1), hold_ns, greenlets, frames,
                      under, failed, torn, nstacks};
    ts_entry(s, 10, v);
    s->np++;
}

/* One stack of the current sample: gid, then n code ids (outermost first)
 * as uint32_t varargs. */
static inline void ts_stack(tside *s, uint64_t gid, int n, ...)
{
    uint64_t v[64];
    va_list ap;
    if (n > 62)
        abort();
    v[0] = gid;
    v[1] = (uint64_t)n;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        v[2 + i] = va_arg(ap, uint32_t);
    va_end(ap);
    ts_entry(s, 2 + n, v);
}

/* Trailer with the sampler's counts (entries, switches, samples). */
static inline void ts_finish(tside *s)
{
    uint64_t tr[3] = {s->ndt, s->nw, s->np};
    if (gr_writer_finish(s->w, tr, 3) < 0)
        abort();
    s->w = NULL;
}

/* Trailer with the entry count only (no sampler). */
static inline void ts_finish_plain(tside *s)
{
    uint64_t tr[1] = {s->ndt};
    if (gr_writer_finish(s->w, tr, 1) < 0)
        abort();
    s->w = NULL;
}

/* Close without a trailer (truncated). */
static inline void ts_abandon(tside *s)
{
    gr_writer_abandon(s->w);
    s->w = NULL;
}

static inline void ts_cleanup(tside *s)
{
    if (s->w)
        gr_writer_abandon(s->w);
    s->w = NULL;
    unlink(s->path);
}

#endif
