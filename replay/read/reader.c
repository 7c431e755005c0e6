/* reader.c - decode a greenreplay trace or side-channel file (reader.h,
 * docs/FORMAT.md §1-5). */
#include "reader.h"
#include "text.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

/* ---------------------------------------------------------------- errors */

/* name escaped for a terminal into out (n bytes), as gr_sb_escape does but
 * without allocating: a file name given on the command line reaches the
 * error line. */
static const char *shown_name(const char *name, char *out, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const uint8_t *s = (const uint8_t *)name;
    size_t len = strlen(name), o = 0;
    for (size_t i = 0; i < len && o + 7 < n;) {
        size_t k = gr_utf8_len(s + i, len - i), h = gr_utf8_hidden(s + i, len - i);
        if (h) {
            uint32_t cp = h == 2 ? (uint32_t)(s[i] & 0x1F) << 6 | (s[i + 1] & 0x3F)
                                 : (uint32_t)(s[i] & 0x0F) << 12 | (uint32_t)(s[i + 1] & 0x3F) << 6 |
                                       (s[i + 2] & 0x3F);
            o += (size_t)snprintf(out + o, n - o, "\\u%04x", (unsigned)cp);
            i += h;
        } else if (k == 0 || s[i] < 0x20 || s[i] == 0x7f) {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[s[i] >> 4];
            out[o++] = hex[s[i] & 15];
            i++;
        } else {
            if (o + k + 1 >= n)
                break;
            memcpy(out + o, s + i, k);
            o += k;
            i += k;
        }
    }
    out[o] = '\0';
    return out;
}

__attribute__((format(printf, 5, 6)))
static int fail(gr_error *e, const char *name, enum gr_err_kind kind, uint64_t off,
                const char *fmt, ...)
{
    char what[240], nm[128];
    name = shown_name(name ? name : "?", nm, sizeof nm);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    e->kind = kind;
    e->offset = off;
    e->status = (kind == GR_E_IO || kind == GR_E_NOMEM) ? GR_READ_IO : GR_READ_CORRUPT;
    if (off == GR_NO_OFFSET)
        snprintf(e->msg, sizeof e->msg, "%s: %s", name, what);
    else
        snprintf(e->msg, sizeof e->msg, "%s: offset %llu: %s", name,
                 (unsigned long long)off, what);
    return e->status;
}

static int no_memory(gr_error *e, const char *name)
{
    return fail(e, name, GR_E_NOMEM, GR_NO_OFFSET, "out of memory");
}

/* Grow *p (an array of *cap elements of size bytes) to hold need elements.
 * Returns 0, or -1 on overflow / out of memory (*p unchanged). */
static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need) {
        if (c > SIZE_MAX / 2)
            return -1;
        c *= 2;
    }
    if (c > SIZE_MAX / size)
        return -1;
    void *q = realloc(*p, c * size);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* -------------------------------------------------------- header, chunks */

enum { CH_OK, CH_END, CH_TRUNC, CH_BAD };

/* Check the 16-byte header.  Returns CH_OK (header complete and valid),
 * CH_TRUNC (the file is a prefix of a valid header), or CH_BAD (e set). */
static int check_header(const uint8_t *d, size_t n, char stream, uint16_t *minor,
                        gr_error *e, const char *name)
{
    size_t k = n < GR_MAGIC_LEN ? n : GR_MAGIC_LEN;
    if (k > 0 && memcmp(d, GR_MAGIC, k) != 0)
        return fail(e, name, GR_E_MAGIC, 0, "bad magic (not a greenreplay trace)"), CH_BAD;
    if (n >= 10 && gr_get_u16le(d + 8) != GR_VERSION_MAJOR)
        return fail(e, name, GR_E_MAJOR, 8, "unknown major version %u (this reader knows %u)",
                    gr_get_u16le(d + 8), GR_VERSION_MAJOR), CH_BAD;
    if (n >= 13 && d[12] != (uint8_t)stream)
        return fail(e, name, GR_E_STREAM, 12, "stream kind 0x%02x, expected '%c' (%s)", d[12],
                    stream, stream == GR_STREAM_SIDE ? "side channel" : "canonical trace"), CH_BAD;
    if (n < GR_HEADER_LEN)
        return CH_TRUNC;
    *minor = gr_get_u16le(d + 10);
    return CH_OK;
}

/* Read a whole file whose header must be that of `stream`.  The first 16
 * bytes are read and checked (check_header) before the rest: a file that
 * is not a trace (/dev/zero, a 3 GB log) fails at once with its offset,
 * without being read whole.  Returns 0 with *data (malloc'd, caller frees)
 * and *n, or a status with e set. */
static int slurp(const char *path, char stream, uint8_t **data, size_t *n, gr_error *e)
{
    *data = NULL;
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return fail(e, path, GR_E_IO, GR_NO_OFFSET, "%s", strerror(errno));
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    int header_checked = 0;
    for (;;) {
        if (grow((void **)&buf, &cap, len + 65536, 1) < 0) {
            free(buf);
            fclose(f);
            return no_memory(e, path);
        }
        /* The header alone first, then in blocks. */
        size_t want = header_checked ? cap - len : GR_HEADER_LEN - len;
        size_t k = fread(buf + len, 1, want, f);
        len += k;
        if (!header_checked && (len == GR_HEADER_LEN || k == 0)) {
            uint16_t minor;
            if (check_header(buf, len, stream, &minor, e, path) == CH_BAD) {
                free(buf);
                fclose(f);
                return e->status;
            }
            header_checked = 1;
            if (k != 0)
                continue;
        }
        if (k == 0) {
            if (ferror(f)) {
                int err = errno;
                free(buf);
                fclose(f);
                return fail(e, path, GR_E_IO, GR_NO_OFFSET, "%s", strerror(err ? err : EIO));
            }
            break;
        }
    }
    fclose(f);
    *data = buf;
    *n = len;
    return 0;
}

struct chunk {
    char tag;
    size_t off;        /* file offset of the chunk header */
    const uint8_t *p;  /* payload */
    size_t len;
};

/* Whether tag is one of the bytes of the 0-terminated list tags, compared
 * as unsigned bytes (a compressed chunk's tag has bit 7 set: strchr's
 * conversion of it is not to be relied on). */
static int tag_in(const char *tags, uint8_t tag)
{
    for (; *tags; tags++)
        if ((uint8_t)*tags == tag)
            return 1;
    return 0;
}

/* Frame the chunk starting at pos.  tags lists the chunk tags allowed.
 * d[0] is byte `base` of the file (0, or a streamed chunk's offset). */
static int next_chunk(const uint8_t *d, size_t n, size_t pos, uint64_t base, const char *tags,
                      struct chunk *c, gr_error *e, const char *name)
{
    if (pos >= n)
        return CH_END;
    size_t avail = n - pos;
    uint8_t tag = d[pos];
    if (!tag_in(tags, tag))
        return fail(e, name, GR_E_CHUNK_TAG, base + pos, "unknown chunk tag 0x%02x%s", tag,
                    tag == (uint8_t)GR_CHUNK_RECORDS_Z ? " (a compressed records chunk, format 1.3)"
                                                       : ""), CH_BAD;
    if (avail < 5)
        return CH_TRUNC;
    uint32_t len = gr_get_u32le(d + pos + 1);
    if (len > GR_CHUNK_MAX)
        return fail(e, name, GR_E_CHUNK_LEN, base + pos, "chunk length %lu over the limit of %u bytes",
                    (unsigned long)len, GR_CHUNK_MAX), CH_BAD;
    if (avail < GR_CHUNK_HEADER_LEN || avail - GR_CHUNK_HEADER_LEN < len)
        return CH_TRUNC;
    const uint8_t *p = d + pos + GR_CHUNK_HEADER_LEN;
    uint32_t want = gr_get_u32le(d + pos + 5);
    uint32_t got = (uint32_t)crc32(0L, p, (uInt)len);
    if (want != got)
        return fail(e, name, GR_E_CRC, base + pos, "chunk checksum mismatch"), CH_BAD;
    c->tag = (char)tag;
    c->off = base + pos;
    c->p = p;
    c->len = len;
    return CH_OK;
}

/* Decode the trailer's varints into out[0..want-1]. */
static int read_trailer(const struct chunk *c, uint64_t *out, size_t want, gr_error *e,
                        const char *name)
{
    const uint8_t *p = c->p, *end = c->p + c->len;
    for (size_t i = 0; i < want; i++) {
        int rc = gr_get_varint(&p, end, &out[i]);
        if (rc == -1)
            return fail(e, name, GR_E_TRAILER, c->off, "trailer too short (%zu of %zu fields)", i,
                        want);
        if (rc < 0)
            return fail(e, name, GR_E_VARINT, c->off, "varint longer than 10 bytes in trailer");
    }
    /* Extra varints may come from a newer minor version; ignore them. */
    return 0;
}

/* The trailer's optional fields after the first `want` (format 1.x: the
 * 5th, strings replaced); 0 for each one absent or unreadable. */
static void read_trailer_more(const struct chunk *c, size_t want, uint64_t *out, size_t more)
{
    const uint8_t *p = c->p, *end = c->p + c->len;
    uint64_t v;
    for (size_t i = 0; i < more; i++)
        out[i] = 0;
    for (size_t i = 0; i < want + more; i++) {
        if (gr_get_varint(&p, end, &v) < 0)
            return;
        if (i >= want)
            out[i - want] = v;
    }
}

/* ------------------------------------------------------ record decoding */

struct dec {
    gr_trace *t;
    const uint8_t *p, *end; /* cursor in the payload */
    const uint8_t *base;    /* payload start */
    size_t chunk_data;      /* file offset of the payload */
    uint64_t roff;          /* file offset of the current record (in a
                               compressed chunk: its offset in the records) */
    uint64_t zchunk;        /* offset of the compressed chunk, or GR_NO_OFFSET */
    gr_chunk_ctx ctx;       /* per-chunk encoding state (FORMAT §4.1), zero at
                               the chunk's start */
};

static int dfail(struct dec *d, enum gr_err_kind kind, const char *what)
{
    if (d->zchunk != GR_NO_OFFSET)
        return fail(&d->t->err, d->t->name, kind, d->zchunk,
                    "%s (byte %llu of the compressed chunk's records)", what,
                    (unsigned long long)d->roff);
    return fail(&d->t->err, d->t->name, kind, d->roff, "%s", what);
}

static inline int get(struct dec *d, uint64_t *v)
{
    if (__builtin_expect(d->p < d->end && *d->p < 0x80, 1)) { /* one byte: most fields */
        *v = *d->p++;
        return 0;
    }
    int rc = gr_get_varint(&d->p, d->end, v);
    if (rc == 0)
        return 0;
    *v = 0;
    if (rc == -1)
        return dfail(d, GR_E_PAST_CHUNK, "record runs past the end of its chunk");
    return dfail(d, GR_E_VARINT, "varint longer than 10 bytes or over 64 bits");
}

static int get_tid(struct dec *d, uint64_t *v)
{
    int rc = get(d, v);
    if (rc)
        return rc;
    if (*v == 0)
        return dfail(d, GR_E_VALUE, "thread id 0");
    return 0;
}

static int get_id(struct dec *d, uint32_t *out, size_t defined, const char *what)
{
    uint64_t v;
    int rc = get(d, &v);
    if (rc)
        return rc;
    if (v == 0 || v > defined) {
        char m[96];
        if (v == 0)
            snprintf(m, sizeof m, "%s id 0", what);
        else
            snprintf(m, sizeof m, "%s id %llu used before its definition", what,
                     (unsigned long long)v);
        return dfail(d, GR_E_UNDEFINED, m);
    }
    *out = (uint32_t)v;
    return 0;
}

static int get_code(struct dec *d, uint32_t *out)
{
    return get_id(d, out, d->t->ncodes, "code");
}

static int get_string(struct dec *d, uint32_t *out)
{
    return get_id(d, out, d->t->nstrings, "string");
}

/* depth then depth code ids into the stack pool. */
static int get_stack(struct dec *d, gr_record *r)
{
    uint64_t depth;
    int rc = get(d, &depth);
    if (rc)
        return rc;
    if (depth > GR_STACK_CAP) {
        char m[80];
        snprintf(m, sizeof m, "stack depth %llu over the cap of %d", (unsigned long long)depth,
                 GR_STACK_CAP);
        return dfail(d, GR_E_VALUE, m);
    }
    gr_trace *t = d->t;
    if (grow((void **)&t->stacks, &t->cap.stacks, t->nstacks + depth, sizeof *t->stacks) < 0)
        return no_memory(&t->err, t->name);
    r->depth = (uint32_t)depth;
    r->stack = t->nstacks;
    for (uint64_t i = 0; i < depth; i++) {
        if ((rc = get_code(d, &t->stacks[t->nstacks + i])))
            return rc;
    }
    t->nstacks += depth;
    return 0;
}

#define TRY(x)                \
    do {                      \
        int rc_ = (x);        \
        if (rc_)              \
            return rc_;       \
    } while (0)

/* Copy n bytes into the string storage of a streamed trace (whose chunk
 * buffer is reused): blocks of 64 KiB, never moved.  NULL when out of
 * memory. */
static const uint8_t *keep_bytes(gr_trace *t, const uint8_t *p, size_t n)
{
    enum { BLOCK = 65536 };
    static const uint8_t empty[1];
    if (!n) /* an empty string: nothing to keep (and no block yet to point into) */
        return empty;
    if (grow((void **)&t->io.blocks, &t->io.cap_blocks, t->io.nblocks + 1, sizeof *t->io.blocks) < 0)
        return NULL;
    if (n > BLOCK / 4) { /* a long string: a block of its own */
        uint8_t *b = malloc(n ? n : 1);
        if (!b)
            return NULL;
        t->io.blocks[t->io.nblocks++] = b;
        if (n)
            memcpy(b, p, n);
        return b;
    }
    if (n > t->io.block_left) {
        uint8_t *b = malloc(BLOCK);
        if (!b)
            return NULL;
        t->io.blocks[t->io.nblocks++] = b;
        t->io.block_at = b;
        t->io.block_left = BLOCK;
    }
    uint8_t *dst = t->io.block_at;
    if (n)
        memcpy(dst, p, n);
    t->io.block_at += n;
    t->io.block_left -= n;
    return dst;
}

static int def_string(struct dec *d)
{
    gr_trace *t = d->t;
    uint64_t len;
    TRY(get(d, &len));
    if (len > (uint64_t)(d->end - d->p))
        return dfail(d, GR_E_PAST_CHUNK, "string runs past the end of its chunk");
    if (t->nstrings >= UINT32_MAX - 1)
        return dfail(d, GR_E_VALUE, "too many strings");
    if (grow((void **)&t->strings, &t->cap.strings, t->nstrings + 2, sizeof *t->strings) < 0)
        return no_memory(&t->err, t->name);
    const uint8_t *bytes = d->p;
    if (t->io.file && !(bytes = keep_bytes(t, d->p, (size_t)len)))
        return no_memory(&t->err, t->name);
    gr_str *s = &t->strings[++t->nstrings];
    s->p = bytes;
    s->len = (uint32_t)len;
    d->p += len;
    return 0;
}

static int def_code(struct dec *d)
{
    gr_trace *t = d->t;
    uint64_t kind, file, line;
    uint32_t qual;
    TRY(get(d, &kind));
    if (kind != GR_CODE_PY && kind != GR_CODE_C)
        return dfail(d, GR_E_VALUE, "unknown code kind");
    TRY(get_string(d, &qual));
    TRY(get(d, &file));
    if (file > t->nstrings)
        return dfail(d, GR_E_UNDEFINED, "string id used before its definition (code file)");
    TRY(get(d, &line));
    if (t->ncodes >= UINT32_MAX - 1)
        return dfail(d, GR_E_VALUE, "too many code identities");
    if (grow((void **)&t->codes, &t->cap.codes, t->ncodes + 2, sizeof *t->codes) < 0)
        return no_memory(&t->err, t->name);
    gr_code *c = &t->codes[++t->ncodes];
    c->kind = (uint8_t)kind;
    c->qualname = qual;
    c->file = (uint32_t)file;
    c->line = line;
    return 0;
}

static int def_profiler(struct dec *d)
{
    gr_trace *t = d->t;
    uint64_t kind, type, code;
    TRY(get(d, &kind));
    TRY(get(d, &type));
    if (type > t->nstrings)
        return dfail(d, GR_E_UNDEFINED, "string id used before its definition (profiler type)");
    TRY(get(d, &code));
    if (code > t->ncodes)
        return dfail(d, GR_E_UNDEFINED, "code id used before its definition (profiler)");
    if (t->nprofilers >= UINT32_MAX - 1)
        return dfail(d, GR_E_VALUE, "too many profilers");
    if (grow((void **)&t->profilers, &t->cap.profilers, t->nprofilers + 2,
             sizeof *t->profilers) < 0)
        return no_memory(&t->err, t->name);
    if (t->nprofilers == 0)
        memset(&t->profilers[0], 0, sizeof t->profilers[0]);
    gr_profdef *p = &t->profilers[++t->nprofilers];
    p->kind = kind < 255 ? (uint8_t)kind : 255;
    p->type = (uint32_t)type;
    p->code = (uint32_t)code;
    return 0;
}

static int def_meta(struct dec *d)
{
    gr_trace *t = d->t;
    uint32_t k, v;
    TRY(get_string(d, &k));
    TRY(get_string(d, &v));
    if (grow((void **)&t->metas, &t->cap.metas, t->nmetas + 1, sizeof *t->metas) < 0)
        return no_memory(&t->err, t->name);
    t->metas[t->nmetas].key = k;
    t->metas[t->nmetas].value = v;
    t->metas[t->nmetas].at = t->first + t->nrecs;
    t->nmetas++;
    return 0;
}

/* The chunk's context (thread, greenlet) for a compact record. */
static int ctx_ids(struct dec *d, gr_record *r)
{
    if (d->ctx.tid == 0)
        return dfail(d, GR_E_VALUE, "compact record before any event or switch in its chunk");
    r->tid = d->ctx.tid;
    r->gid = d->ctx.gid;
    return 0;
}

/* An event's code id (explicit) into r and the chunk's code cache. */
static int event_code(struct dec *d, gr_record *r)
{
    TRY(get_code(d, &r->code));
    d->ctx.code[r->code % GR_CODE_SLOTS] = r->code;
    return 0;
}

/* SWITCH/THROW fields from state flags on, then its stack; updates the
 * context.  same: state, tracing, use_tracing are the chunk's last ones. */
static int switch_rest(struct dec *d, gr_record *r, int same)
{
    if (same) {
        if (!d->ctx.sw_known)
            return dfail(d, GR_E_VALUE, "switch repeats the state of no earlier switch in its chunk");
        r->flags = d->ctx.sw_state;
        r->tracing = d->ctx.sw_tracing;
        r->use_tracing = d->ctx.sw_use_tracing;
    } else {
        TRY(get(d, &r->flags));
        TRY(get(d, &r->tracing));
        TRY(get(d, &r->use_tracing));
    }
    d->ctx.tid = r->tid;
    d->ctx.gid = r->target;
    d->ctx.sw_origin = r->gid;
    d->ctx.sw_state = r->flags;
    d->ctx.sw_tracing = r->tracing;
    d->ctx.sw_use_tracing = r->use_tracing;
    d->ctx.sw_known = 1;
    /* 1.1: the target's real Python stack where the switch was seen. */
    return d->t->minor >= 1 ? get_stack(d, r) : 0;
}

/* Decode a compact record (format 1.2, FORMAT §4.1): tag is in
 * GR_CACHED_BASE..GR_CTX_LAST.  Sets r->tag to the kind it stands for. */
static int compact(struct dec *d, uint8_t tag, gr_record *r)
{
    TRY(ctx_ids(d, r));
    if (tag <= GR_CACHED_LAST) {
        unsigned v = (unsigned)(tag - GR_CACHED_BASE);
        r->tag = (uint8_t)(GR_CALL + v / GR_CODE_SLOTS);
        r->code = d->ctx.code[v % GR_CODE_SLOTS];
        if (r->code == 0)
            return dfail(d, GR_E_VALUE, "cached code slot is empty in this chunk");
        return 0;
    }
    if (tag < GR_CTX_SWITCH) {
        r->tag = (uint8_t)(GR_CALL + (tag - GR_CTX_EVENT));
        return event_code(d, r);
    }
    int thr = tag == GR_CTX_THROW || tag == GR_CTX_THROW_SAME;
    r->tag = thr ? GR_THROW : GR_SWITCH;
    int same = tag >= GR_CTX_SWITCH_SAME;
    TRY(get(d, &r->target));
    if (same && d->t->minor >= 4) /* 1.4: relative to the last switch's origin */
        r->target = gr_unzigzag(r->target, d->ctx.sw_origin);
    TRY(get(d, &r->parent));
    return switch_rest(d, r, same);
}

/* Whether tag is an indexed record, full (§4) or compact (§4.1, 1.2). */
static int is_indexed_tag(const gr_trace *t, uint8_t tag)
{
    return (tag >= GR_FIRST_INDEXED && tag <= GR_LAST_INDEXED) ||
           (t->minor >= 2 && tag >= GR_CACHED_BASE && tag <= GR_CTX_LAST) ||
           (t->minor >= 3 && tag == GR_HOOK_PROF);
}

/* Decode the fields of an indexed record whose tag is already consumed. */
static int indexed(struct dec *d, uint8_t tag, gr_record *r)
{
    if (tag == GR_HOOK_PROF) {
        /* §4.2: a HOOK with the program's profiler and the changing frame */
        r->tag = GR_HOOK;
        TRY(indexed(d, GR_HOOK, r));
        uint64_t prof, frame;
        TRY(get(d, &prof));
        if (prof > d->t->nprofilers)
            return dfail(d, GR_E_UNDEFINED, "profiler id used before its definition (hook)");
        TRY(get(d, &frame));
        if (frame > d->t->ncodes)
            return dfail(d, GR_E_UNDEFINED, "code id used before its definition (hook frame)");
        r->target = prof;
        r->use_tracing = frame;
        return 0;
    }
    if (tag >= GR_CACHED_BASE)
        return compact(d, tag, r);
    TRY(get_tid(d, &r->tid));
    switch (tag) {
    case GR_THREAD:
        return 0;
    case GR_GREENLET:
        TRY(get(d, &r->gid));
        TRY(get(d, &r->parent));
        TRY(get(d, &r->flags));
        return get_stack(d, r);
    case GR_CALL:
    case GR_RETURN:
    case GR_C_CALL:
    case GR_C_RETURN:
    case GR_C_EXCEPTION:
        TRY(get(d, &r->gid));
        d->ctx.tid = r->tid;
        d->ctx.gid = r->gid;
        return event_code(d, r);
    case GR_SWITCH:
    case GR_THROW:
        TRY(get(d, &r->gid));
        TRY(get(d, &r->target));
        TRY(get(d, &r->parent));
        return switch_rest(d, r, 0);
    case GR_HOOK:
        TRY(get(d, &r->gid));
        TRY(get(d, &r->flags));   /* slot */
        TRY(get(d, &r->tracing)); /* action */
        TRY(get(d, &r->parent));  /* who / detail */
        {
            uint64_t code;
            TRY(get(d, &code));
            if (code > d->t->ncodes)
                return dfail(d, GR_E_UNDEFINED, "code id used before its definition (hook)");
            r->code = (uint32_t)code;
        }
        return 0;
    case GR_MARK:
        TRY(get(d, &r->gid));
        TRY(get_string(d, &r->label));
        TRY(get_code(d, &r->code));
        TRY(get(d, &r->flags));
        return get_stack(d, r);
    case GR_DEAD:
    case GR_START:
    case GR_STOP:
        return get(d, &r->gid);
    case GR_STACK:
        TRY(get(d, &r->gid));
        TRY(get(d, &r->flags));
        return get_stack(d, r);
    case GR_INSTR:
        TRY(get(d, &r->gid));
        TRY(get(d, &r->tracing));
        TRY(get(d, &r->parent));
        TRY(get(d, &r->use_tracing));
        if (r->use_tracing > r->parent)
            return dfail(d, GR_E_VALUE, "more stale frames than frames");
        return 0;
    default:
        return dfail(d, GR_E_RECORD_TAG, "unknown record tag");
    }
}

/* The fast path of read_records (format 1.2): the events of the chunk's
 * context from d->p on, the bulk of a trace (FORMAT §4.1) - a one-byte
 * cached event, or a context event whose code id is a one-byte varint -
 * until another record, the end of the payload, or `stop` records.  Each
 * record is written whole with one store of every field (no clearing
 * first, no per-field calls); the cursor, the counts and the context are
 * kept in locals (a store to a record could be to any of them, for all the
 * compiler knows).  A record that would be an error here (an empty cache
 * slot, code id 0 or undefined, the payload ending inside it) is left to
 * the general decoder, which decodes it again from its tag and reports the
 * error with its offset.  Returns 0, or a status (out of memory). */
static int fast_events(gr_trace *t, struct dec *d, size_t stop)
{
    const uint8_t *p = d->p, *end = d->end;
    const uint64_t tid = d->ctx.tid, gid = d->ctx.gid, first = t->first;
    const uint8_t *base = d->base;
    const size_t data = d->chunk_data;
    const size_t ncodes = t->ncodes;
    uint32_t *slots = d->ctx.code;
    size_t nrecs = t->nrecs, cap = t->cap.recs;
    gr_record *recs = t->recs;
    while (p < end && nrecs < stop) {
        uint8_t tag0 = *p;
        const uint8_t *q = p + 1;
        unsigned kind;
        uint32_t code;
        if (tag0 < GR_CACHED_BASE || tag0 >= GR_CTX_SWITCH)
            break;
        if (tag0 <= GR_CACHED_LAST) {
            unsigned v = (unsigned)(tag0 - GR_CACHED_BASE);
            kind = v / GR_CODE_SLOTS;
            code = slots[v % GR_CODE_SLOTS];
            if (!code)
                break;
        } else {
            kind = (unsigned)(tag0 - GR_CTX_EVENT);
            if (q >= end || *q >= 0x80 || *q == 0 || *q > ncodes)
                break;
            code = *q++;
            slots[code % GR_CODE_SLOTS] = code;
        }
        if (nrecs == cap) {
            t->nrecs = nrecs;
            if (grow((void **)&t->recs, &t->cap.recs, nrecs + 1, sizeof *t->recs) < 0)
                return no_memory(&t->err, t->name);
            recs = t->recs;
            cap = t->cap.recs;
        }
        /* (a struct literal is a `rep stos` of the whole record: a third
         * of the time) */
        gr_record *r = &recs[nrecs];
        r->index = first + nrecs;
        r->offset = data + (size_t)(p - base);
        r->tid = tid;
        r->gid = gid;
        r->target = 0;
        r->parent = 0;
        r->flags = 0;
        r->tracing = 0;
        r->use_tracing = 0;
        r->code = code;
        r->label = 0;
        r->depth = 0;
        r->len = (uint32_t)(q - p);
        r->stack = 0;
        r->tag = (uint8_t)(GR_CALL + kind);
        nrecs++;
        p = q;
    }
    t->nrecs = nrecs;
    d->p = p;
    return 0;
}

/* Decode the records of the 'E' chunk payload being read (t->rd_*) from
 * its cursor on, until its end or until `limit` more indexed records
 * (a batch, gr_trace_set_batch); the cursor and the encoding state are
 * saved for the next call.  The events of the chunk's context go through
 * fast_events; anything else, and those before the chunk has a context,
 * through the general decoder below. */
static int read_records(gr_trace *t, size_t limit)
{
    struct dec d = {
        .t = t, .p = t->partial.rd_p, .end = t->partial.rd_end, .base = t->partial.rd_base,
        .chunk_data = (size_t)t->partial.rd_data, .zchunk = t->partial.rd_zchunk, .ctx = t->partial.rd_ctx,
    };
    const int compact_ok = t->minor >= 2;
    size_t stop = limit < SIZE_MAX - t->nrecs ? t->nrecs + limit : SIZE_MAX;
    while (d.p < d.end && t->nrecs < stop) {
        if (compact_ok && d.ctx.tid) {
            TRY(fast_events(t, &d, stop));
            if (d.p == d.end || t->nrecs == stop)
                break;
        }
        const uint8_t *start = d.p;
        d.roff = d.chunk_data + (size_t)(start - d.base);
        uint8_t tag = *d.p++;
        if (tag == GR_STRING)
            TRY(def_string(&d));
        else if (tag == GR_CODE)
            TRY(def_code(&d));
        else if (tag == GR_META)
            TRY(def_meta(&d));
        else if (tag == GR_PROFILER && t->minor >= 3)
            TRY(def_profiler(&d));
        else if (tag == GR_GAP) {
            uint64_t n;
            TRY(get(&d, &n));
            /* The running total must stay a count: a crafted file whose
             * GAPs sum past 2^64-1 would wrap it to a small number. */
            if (n > UINT64_MAX - t->gap)
                return dfail(&d, GR_E_VALUE, "ring GAP total over 2^64-1 dropped records");
            /* Each GAP's place, for a loaded trace only: a streamed one
             * keeps the sums, so that a file of GAPs costs it nothing. */
            if (!t->streaming) {
                if (grow((void **)&t->gap_defs.list, &t->cap.gaps, t->gap_defs.n + 1, sizeof *t->gap_defs.list) < 0)
                    return no_memory(&t->err, t->name);
                t->gap_defs.list[t->gap_defs.n].at = t->nrecs;
                t->gap_defs.list[t->gap_defs.n].n = n;
                t->gap_defs.n++;
            }
            t->gap += n;
            if (t->first + t->nrecs == 0)
                t->gap_defs.head += n;
        }
        else if (is_indexed_tag(t, tag)) {
            if (t->nrecs == t->cap.recs &&
                grow((void **)&t->recs, &t->cap.recs, t->nrecs + 1, sizeof *t->recs) < 0)
                return no_memory(&t->err, t->name);
            gr_record *r = &t->recs[t->nrecs];
            /* Cleared by copying a zero record: the copy of a constant
             * size is done with vector moves, where memset's rep stos
             * took half the decoding time. */
            static const gr_record zero;
            memcpy(r, &zero, sizeof *r);
            r->tag = tag;
            r->index = t->first + t->nrecs;
            r->offset = d.roff;
            TRY(indexed(&d, tag, r));
            r->len = (uint32_t)(d.p - start);
            t->nrecs++;
        } else {
            char m[96];
            snprintf(m, sizeof m, "unknown record tag 0x%02x%s", tag,
                     t->minor > GR_VERSION_MINOR ? " (written by a newer minor version)" : "");
            return dfail(&d, GR_E_RECORD_TAG, m);
        }
    }
    t->partial.rd_p = d.p;
    t->partial.rd_ctx = d.ctx;
    return 0;
}

/* ------------------------------------------------------------ traces */

/* After the header: slot 0 of the id tables (unused) and the position of
 * the first chunk. */
static int begin_chunks(gr_trace *t)
{
    if (grow((void **)&t->strings, &t->cap.strings, 1, sizeof *t->strings) < 0 ||
        grow((void **)&t->codes, &t->cap.codes, 1, sizeof *t->codes) < 0)
        return no_memory(&t->err, t->name);
    memset(&t->strings[0], 0, sizeof t->strings[0]);
    memset(&t->codes[0], 0, sizeof t->codes[0]);
    t->io.pos = GR_HEADER_LEN;
    return 0;
}

/* Read `want` bytes of a streamed trace into t->io.buf at `at` (grown as
 * needed).  Returns the number read (short at end of file), or -1 on an
 * I/O error or out of memory (t->err set). */
static long read_file(gr_trace *t, size_t at, size_t want)
{
    if (grow((void **)&t->io.buf, &t->io.cap_buf, at + want, 1) < 0)
        return no_memory(&t->err, t->name), -1;
    size_t k = fread(t->io.buf + at, 1, want, (FILE *)t->io.file);
    if (k < want && ferror((FILE *)t->io.file))
        return fail(&t->err, t->name, GR_E_IO, GR_NO_OFFSET, "%s", strerror(errno ? errno : EIO)),
               -1;
    return (long)k;
}

/* Frame the chunk at t->io.pos: in the loaded file, or read from the streamed
 * one into t->io.buf (its header, then its payload when the length is within
 * the limit).  Returns CH_* like next_chunk; CH_BAD also for an I/O error. */
static int frame_chunk(gr_trace *t, const char *tags, struct chunk *c)
{
    if (!t->io.file)
        return next_chunk(t->data, t->size, t->io.pos, 0, tags, c, &t->err, t->name);
    long k = read_file(t, 0, GR_CHUNK_HEADER_LEN);
    if (k < 0)
        return CH_BAD;
    size_t n = (size_t)k;
    if (n == GR_CHUNK_HEADER_LEN) {
        uint32_t len = gr_get_u32le(t->io.buf + 1);
        if (len <= GR_CHUNK_MAX && tag_in(tags, t->io.buf[0])) {
            if ((k = read_file(t, n, len)) < 0)
                return CH_BAD;
            n += (size_t)k;
        }
    }
    t->size = t->io.pos + n > t->size ? t->io.pos + n : t->size;
    return next_chunk(t->io.buf, n, 0, t->io.pos, tags, c, &t->err, t->name);
}

/* Decompress the compressed records chunk c (FORMAT §2.1) and point c at
 * its records.  The chunk is untrusted: the size it claims is checked
 * against the chunk limit before anything is allocated, and the frame must
 * hold exactly that many bytes and nothing else.  A loaded trace keeps the
 * records (its strings point into them) as one more block; a streamed one
 * decompresses into one buffer it reuses (its strings are copied).
 * Returns 0, or a status with t->err set (the chunk's offset). */
static int unpack(gr_trace *t, struct chunk *c)
{
    gr_error *e = &t->err;
    if (c->len < GR_ZHEADER_LEN)
        return fail(e, t->name, GR_E_ZSTD, c->off,
                    "compressed chunk of %zu bytes, shorter than its size field", c->len);
    uint32_t size = gr_get_u32le(c->p);
    if (size == 0 || size > GR_CHUNK_MAX)
        return fail(e, t->name, GR_E_CHUNK_LEN, c->off,
                    "compressed chunk claims %lu bytes of records (from 1 to the limit of %u)",
                    (unsigned long)size, GR_CHUNK_MAX);
    const uint8_t *src = c->p + GR_ZHEADER_LEN;
    size_t srclen = c->len - GR_ZHEADER_LEN;
    unsigned long long fsize = ZSTD_getFrameContentSize(src, srclen);
    if (fsize != size || ZSTD_findFrameCompressedSize(src, srclen) != srclen)
        return fail(e, t->name, GR_E_ZSTD, c->off,
                    "compressed chunk: not one zstd frame of the %lu bytes it claims",
                    (unsigned long)size);
    if (!t->io.zctx && !(t->io.zctx = ZSTD_createDCtx()))
        return no_memory(e, t->name);
    uint8_t *dst;
    if (t->io.file) {
        if (grow((void **)&t->io.zbuf, &t->io.cap_zbuf, size, 1) < 0)
            return no_memory(e, t->name);
        dst = t->io.zbuf;
    } else {
        if (grow((void **)&t->io.blocks, &t->io.cap_blocks, t->io.nblocks + 1, sizeof *t->io.blocks) < 0 ||
            !(dst = malloc(size)))
            return no_memory(e, t->name);
        t->io.blocks[t->io.nblocks++] = dst;
    }
    size_t got = ZSTD_decompressDCtx(t->io.zctx, dst, size, src, srclen);
    if (ZSTD_isError(got) || got != size)
        return fail(e, t->name, GR_E_ZSTD, c->off, "compressed chunk does not decompress: %s",
                    ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short frame");
    c->p = dst;
    c->len = size;
    return 0;
}

int gr_trace_next_chunk(gr_trace *t)
{
    static const char tags[] = {GR_CHUNK_RECORDS, GR_CHUNK_RECORDS_Z, GR_CHUNK_TRAILER, 0};
    gr_error *e = &t->err;
    while (!t->done) {
        if (t->has_trailer) {
            t->done = 1;
            int more = t->io.file ? read_file(t, 0, 1) : t->io.pos < t->size;
            if (more < 0)
                return -1;
            if (more)
                return fail(e, t->name, GR_E_TRAILER, t->io.pos, "data after the trailer"), -1;
            return 0;
        }
        if (t->partial.rd_open) { /* the (rest of the) chunk being decoded */
            if (t->streaming) { /* the previous records go */
                t->first += t->nrecs;
                t->nrecs = 0;
                t->nstacks = 0;
            }
            size_t limit = t->streaming && t->io.batch ? t->io.batch : SIZE_MAX;
            if (read_records(t, limit))
                return t->partial.rd_open = 0, t->done = 1, -1;
            if (t->partial.rd_p == t->partial.rd_end)
                t->partial.rd_open = 0;
            return 1;
        }
        struct chunk c;
        int k = frame_chunk(t, tags, &c);
        if (k == CH_BAD)
            return t->done = 1, -1;
        if (k != CH_OK) { /* end without trailer, or incomplete chunk */
            t->truncated = 1;
            t->truncated_at = t->io.pos;
            t->done = 1;
            return 0;
        }
        t->io.pos += GR_CHUNK_HEADER_LEN + c.len;
        if (c.tag == GR_CHUNK_TRAILER) {
            uint64_t f[4];
            if (read_trailer(&c, f, 4, e, t->name))
                return t->done = 1, -1;
            t->trailer.events = f[0];
            t->trailer.dropped = f[1];
            t->trailer.errors = f[2];
            t->trailer.reason = f[3];
            uint64_t more[2];
            read_trailer_more(&c, 4, more, 2);
            t->trailer.replaced = more[0];
            t->trailer.signal = more[1];
            t->has_trailer = 1;
            continue;
        }
        t->partial.rd_open = 1;
        t->partial.rd_zchunk = GR_NO_OFFSET;
        t->partial.rd_data = c.off + GR_CHUNK_HEADER_LEN;
        if (c.tag == GR_CHUNK_RECORDS_Z) {
            if (unpack(t, &c))
                return t->partial.rd_open = 0, t->done = 1, -1;
            t->partial.rd_zchunk = c.off;
            t->partial.rd_data = 0;
            t->zchunks++;
        }
        t->partial.rd_p = t->partial.rd_base = c.p;
        t->partial.rd_end = c.p + c.len;
        memset(&t->partial.rd_ctx, 0, sizeof t->partial.rd_ctx);
    }
    return 0;
}

/* Decode the whole trace in t->data: the chunk loop, keeping everything. */
static int parse_owned(gr_trace *t)
{
    gr_error *e = &t->err;
    int h = check_header(t->data, t->size, GR_STREAM_CANONICAL, &t->minor, e, t->name);
    if (h == CH_BAD)
        return e->status;
    if (h == CH_TRUNC) {
        t->truncated = 1;
        t->truncated_at = 0;
        t->done = 1;
        return GR_READ_OK;
    }
    if (begin_chunks(t))
        return e->status;
    int k;
    while ((k = gr_trace_next_chunk(t)) > 0)
        ;
    return k < 0 ? e->status : GR_READ_OK;
}

static int start_trace(gr_trace *t, const char *name)
{
    memset(t, 0, sizeof *t);
    t->err.offset = GR_NO_OFFSET;
    t->name = strdup(name);
    if (!t->name)
        return no_memory(&t->err, name);
    return 0;
}

int gr_trace_load(gr_trace *t, const char *path)
{
    int rc = start_trace(t, path);
    if (rc)
        return rc;
    if ((rc = slurp(path, GR_STREAM_CANONICAL, &t->data, &t->size, &t->err)))
        return rc;
    return parse_owned(t);
}

int gr_trace_open(gr_trace *t, const char *path)
{
    int rc = start_trace(t, path);
    if (rc)
        return rc;
    t->streaming = 1;
    FILE *f = fopen(path, "rb");
    if (!f)
        return t->done = 1, fail(&t->err, path, GR_E_IO, GR_NO_OFFSET, "%s", strerror(errno));
    t->io.file = f;
    long k = read_file(t, 0, GR_HEADER_LEN);
    if (k < 0)
        return t->done = 1, t->err.status;
    t->size = (size_t)k;
    int h = check_header(t->io.buf, (size_t)k, GR_STREAM_CANONICAL, &t->minor, &t->err, t->name);
    if (h == CH_BAD)
        return t->done = 1, t->err.status;
    if (h == CH_TRUNC) {
        t->truncated = 1;
        t->truncated_at = 0;
        t->done = 1;
        return GR_READ_OK;
    }
    if (begin_chunks(t))
        return t->done = 1, t->err.status;
    return GR_READ_OK;
}

int gr_trace_parse(gr_trace *t, const char *name, const void *data, size_t n)
{
    int rc = start_trace(t, name);
    if (rc)
        return rc;
    t->data = malloc(n ? n : 1);
    if (!t->data)
        return no_memory(&t->err, name);
    if (n)
        memcpy(t->data, data, n);
    t->size = n;
    return parse_owned(t);
}

void gr_trace_free(gr_trace *t)
{
    if (t->io.file)
        fclose((FILE *)t->io.file);
    free(t->io.buf);
    for (size_t i = 0; i < t->io.nblocks; i++)
        free(t->io.blocks[i]);
    free(t->io.blocks);
    ZSTD_freeDCtx(t->io.zctx);
    free(t->io.zbuf);
    free(t->name);
    free(t->data);
    free(t->strings);
    free(t->codes);
    free(t->profilers);
    free(t->metas);
    free(t->gap_defs.list);
    free(t->recs);
    free(t->stacks);
    memset(t, 0, sizeof *t);
}

const uint8_t *gr_trace_string(const gr_trace *t, uint64_t id, size_t *len)
{
    if (id == 0 || id > t->nstrings) {
        *len = 0;
        return NULL;
    }
    *len = t->strings[id].len;
    return t->strings[id].p;
}

const gr_code *gr_trace_code(const gr_trace *t, uint64_t id)
{
    if (id == 0 || id > t->ncodes)
        return NULL;
    return &t->codes[id];
}

/* ------------------------------------------------------- side channel */

/* Cursor over one side-channel chunk payload. */
struct scur {
    gr_times *tm;
    const struct chunk *c;
    const uint8_t *p, *end;
    uint64_t at;            /* file offset of the current entry */
};

static uint64_t scur_off(const struct scur *s, const uint8_t *p)
{
    return s->c->off + GR_CHUNK_HEADER_LEN + (uint64_t)(p - s->c->p);
}

/* Next varint of the current entry. */
static int sget(struct scur *s, uint64_t *v)
{
    int rc = gr_get_varint(&s->p, s->end, v);
    if (rc == 0)
        return 0;
    if (rc == -1)
        return fail(&s->tm->err, s->tm->name, GR_E_PAST_CHUNK, s->at,
                    "entry runs past the end of its chunk");
    return fail(&s->tm->err, s->tm->name, GR_E_VARINT, s->at,
                "varint longer than 10 bytes or over 64 bits");
}

static int sbad(struct scur *s, const char *what)
{
    return fail(&s->tm->err, s->tm->name, GR_E_VALUE, s->at, "%s", what);
}

static int read_deltas(struct scur *s)
{
    gr_times *tm = s->tm;
    while (s->p < s->end) {
        s->at = scur_off(s, s->p);
        uint64_t v;
        TRY(sget(s, &v));
        if (tm->streaming) { /* counted; kept for this chunk only */
            if (grow((void **)&tm->dt, &tm->cap, tm->ndt + 1, sizeof *tm->dt) < 0)
                return no_memory(&tm->err, tm->name);
            tm->dt[tm->ndt++] = v;
            tm->n++;
            continue;
        }
        if (grow((void **)&tm->dt, &tm->cap, tm->n + 1, sizeof *tm->dt) < 0)
            return no_memory(&tm->err, tm->name);
        tm->dt[tm->n++] = v;
    }
    return 0;
}

static int read_waits(struct scur *s)
{
    gr_times *tm = s->tm;
    while (s->p < s->end) {
        s->at = scur_off(s, s->p);
        uint64_t f[4];
        for (int i = 0; i < 4; i++)
            TRY(sget(s, &f[i]));
        if (f[3] > 1)
            return sbad(s, "switch entry: contended is neither 0 nor 1");
        if (grow((void **)&tm->waits, &tm->cap_waits, tm->nwaits + 1, sizeof *tm->waits) < 0)
            return no_memory(&tm->err, tm->name);
        gr_switch_wait *w = &tm->waits[tm->nwaits++];
        w->index = f[0];
        w->wait_ns = f[1];
        w->callback_ns = f[2];
        w->contended = (uint8_t)f[3];
        w->offset = s->at;
    }
    return 0;
}

/* One stack of the last sample. */
static int read_stack(struct scur *s)
{
    gr_times *tm = s->tm;
    uint64_t gid, depth;
    TRY(sget(s, &gid));
    TRY(sget(s, &depth));
    if (gid == 0)
        return sbad(s, "sample stack of greenlet id 0");
    if (depth > (uint64_t)(s->end - s->p)) /* each code id takes a byte at least */
        return fail(&tm->err, tm->name, GR_E_PAST_CHUNK, s->at,
                    "sample stack runs past the end of its chunk");
    if (grow((void **)&tm->codes, &tm->cap_codes, tm->ncodes + (size_t)depth,
             sizeof *tm->codes) < 0 ||
        grow((void **)&tm->stacks, &tm->cap_stacks, tm->nstacks + 1, sizeof *tm->stacks) < 0)
        return no_memory(&tm->err, tm->name);
    for (uint64_t i = 0; i < depth; i++) {
        uint64_t v;
        TRY(sget(s, &v));
        if (v > UINT32_MAX)
            return sbad(s, "sample stack: code id over 2^32-1");
        tm->codes[tm->ncodes + i] = (uint32_t)v;
    }
    gr_sample_stack *st = &tm->stacks[tm->nstacks++];
    st->gid = gid;
    st->depth = (uint32_t)depth;
    st->codes = tm->ncodes;
    st->offset = s->at;
    tm->ncodes += (size_t)depth;
    tm->samples[tm->nsamples - 1].got++;
    return 0;
}

/* Whether the last sample still waits for stacks. */
static int sample_pending(const gr_times *tm)
{
    return tm->nsamples && tm->samples[tm->nsamples - 1].got < tm->samples[tm->nsamples - 1].nstacks;
}

static int read_samples(struct scur *s)
{
    gr_times *tm = s->tm;
    while (s->p < s->end) {
        s->at = scur_off(s, s->p);
        if (sample_pending(tm)) {
            TRY(read_stack(s));
            continue;
        }
        uint64_t f[10];
        for (int i = 0; i < 10; i++)
            TRY(sget(s, &f[i]));
        if (f[0] > f[1])
            return sbad(s, "sample: idx_begin above idx_end");
        if (f[6] > f[5])
            return sbad(s, "sample: frames_under_lock above frames");
        if (f[9] > f[4])
            return sbad(s, "sample: more stacks than greenlets");
        if (grow((void **)&tm->samples, &tm->cap_samples, tm->nsamples + 1,
                 sizeof *tm->samples) < 0)
            return no_memory(&tm->err, tm->name);
        gr_sample *sm = &tm->samples[tm->nsamples++];
        sm->idx_begin = f[0];
        sm->idx_end = f[1];
        sm->t_ns = f[2];
        sm->hold_ns = f[3];
        sm->greenlets = f[4];
        sm->frames = f[5];
        sm->frames_under_lock = f[6];
        sm->failed = f[7];
        sm->torn = f[8];
        sm->nstacks = f[9];
        sm->got = 0;
        sm->stack = tm->nstacks;
        sm->offset = s->at;
    }
    return 0;
}

/* The side channel's trailer: entries [switches samples]. */
static int read_side_trailer(gr_times *tm, const struct chunk *c)
{
    const uint8_t *p = c->p, *end = c->p + c->len;
    uint64_t f[3];
    size_t n = 0;
    while (n < 3 && p < end) {
        if (gr_get_varint(&p, end, &f[n]) < 0)
            return fail(&tm->err, tm->name, GR_E_VARINT, c->off,
                        "varint longer than 10 bytes in trailer");
        n++;
    }
    if (n == 0)
        return fail(&tm->err, tm->name, GR_E_TRAILER, c->off, "trailer too short (0 of 1 fields)");
    if (n == 2)
        return fail(&tm->err, tm->name, GR_E_TRAILER, c->off,
                    "trailer has the sampler's switch count but not its sample count");
    /* Extra varints may come from a newer minor version; ignore them. */
    tm->count = f[0];
    if (n == 3) {
        tm->has_sampler_trailer = 1;
        tm->trailer_switches = f[1];
        tm->trailer_samples = f[2];
    }
    return 0;
}

/* Streamed side channel: before chunk tag's entries are read, release the
 * previous chunk's entries ('T': its deltas; 'W': its waits; 'P': its complete samples and
 * their stacks, a sample still waiting for stacks moves to the front). */
static void times_release(gr_times *tm, char tag)
{
    if (tag == GR_CHUNK_TIMES) {
        tm->first_dt = tm->n;
        tm->ndt = 0;
    } else if (tag == GR_CHUNK_SWITCHES) {
        tm->first_wait += tm->nwaits;
        tm->nwaits = 0;
    } else if (tag == GR_CHUNK_SAMPLES && tm->nsamples) {
        if (!sample_pending(tm)) {
            tm->first_sample += tm->nsamples;
            tm->nsamples = tm->nstacks = tm->ncodes = 0;
            return;
        }
        gr_sample sm = tm->samples[tm->nsamples - 1];
        size_t cbase = sm.got ? tm->stacks[sm.stack].codes : tm->ncodes;
        memmove(tm->stacks, tm->stacks + sm.stack, (tm->nstacks - sm.stack) * sizeof *tm->stacks);
        tm->nstacks -= sm.stack;
        memmove(tm->codes, tm->codes + cbase, (tm->ncodes - cbase) * sizeof *tm->codes);
        tm->ncodes -= cbase;
        for (size_t k = 0; k < tm->nstacks; k++)
            tm->stacks[k].codes -= cbase;
        sm.stack = 0;
        tm->first_sample += tm->nsamples - 1;
        tm->samples[0] = sm;
        tm->nsamples = 1;
    }
}

/* One framed side-channel chunk at file offset pos: order checks, then its
 * entries (released first when streamed: times_release). */
static int times_chunk(gr_times *tm, const struct chunk *c, size_t pos)
{
    gr_error *e = &tm->err;
    if (sample_pending(tm) && c->tag != GR_CHUNK_SAMPLES) {
        const gr_sample *sm = &tm->samples[tm->nsamples - 1];
        return fail(e, tm->name, c->tag == GR_CHUNK_TRAILER ? GR_E_TRAILER : GR_E_VALUE, pos,
                    "%s before the last %llu of the %llu stacks of the sample at offset "
                    "%llu",
                    c->tag == GR_CHUNK_TRAILER ? "trailer" : "chunk",
                    (unsigned long long)(sm->nstacks - sm->got),
                    (unsigned long long)sm->nstacks, (unsigned long long)sm->offset);
    }
    struct scur s = {.tm = tm, .c = c, .p = c->p, .end = c->p + c->len};
    int phase = c->tag == GR_CHUNK_TIMES ? 0 : c->tag == GR_CHUNK_SWITCHES ? 1 : 2;
    if (c->tag != GR_CHUNK_TRAILER && tm->minor < GR_SIDE_MINOR) {
        if (phase < tm->phase)
            return fail(e, tm->name, GR_E_VALUE, pos,
                        "'%c' chunk after %s chunks (the order is 'T', 'W', 'P')", c->tag,
                        tm->phase == 2 ? "sample ('P')" : "switch ('W')");
        tm->phase = phase;
    }
    if (tm->streaming)
        times_release(tm, c->tag);
    int rc = 0;
    switch (c->tag) {
    case GR_CHUNK_TRAILER:
        rc = read_side_trailer(tm, c);
        if (!rc)
            tm->has_trailer = 1;
        break;
    case GR_CHUNK_TIMES:
        rc = read_deltas(&s);
        break;
    case GR_CHUNK_SWITCHES:
        tm->sampler_chunks++;
        rc = read_waits(&s);
        break;
    default:
        tm->sampler_chunks++;
        rc = read_samples(&s);
        break;
    }
    return rc;
}

static const char side_tags[] = {GR_CHUNK_TIMES, GR_CHUNK_SWITCHES, GR_CHUNK_SAMPLES,
                                 GR_CHUNK_TRAILER, 0};

static int times_decode(gr_times *tm, const uint8_t *data, size_t size)
{
    gr_error *e = &tm->err;
    int h = check_header(data, size, GR_STREAM_SIDE, &tm->minor, e, tm->name);
    if (h == CH_BAD)
        return e->status;
    if (h == CH_TRUNC) {
        tm->truncated = 1;
        return GR_READ_OK;
    }
    size_t pos = GR_HEADER_LEN;
    for (;;) {
        if (tm->has_trailer) {
            if (pos < size)
                return fail(e, tm->name, GR_E_TRAILER, pos, "data after the trailer");
            return GR_READ_OK;
        }
        struct chunk c;
        int k = next_chunk(data, size, pos, 0, side_tags, &c, e, tm->name);
        if (k == CH_BAD)
            return e->status;
        if (k != CH_OK) {
            tm->truncated = 1;
            tm->truncated_at = pos;
            return GR_READ_OK;
        }
        int rc = times_chunk(tm, &c, pos);
        if (rc)
            return rc;
        pos += GR_CHUNK_HEADER_LEN + c.len;
    }
}

static int start_times(gr_times *tm, const char *name)
{
    memset(tm, 0, sizeof *tm);
    tm->err.offset = GR_NO_OFFSET;
    tm->name = strdup(name);
    if (!tm->name)
        return no_memory(&tm->err, name);
    return 0;
}

int gr_times_load(gr_times *tm, const char *path)
{
    int rc = start_times(tm, path);
    if (rc)
        return rc;
    uint8_t *data;
    size_t n;
    if ((rc = slurp(path, GR_STREAM_SIDE, &data, &n, &tm->err)))
        return rc;
    rc = times_decode(tm, data, n);
    free(data);
    return rc;
}

int gr_times_parse(gr_times *tm, const char *name, const void *data, size_t n)
{
    int rc = start_times(tm, name);
    if (rc)
        return rc;
    return times_decode(tm, data, n);
}

/* Read want bytes of a streamed side channel into tm->buf at `at`.  Returns
 * the number read (short at end of file), or -1 (tm->err set). */
static long times_read(gr_times *tm, size_t at, size_t want)
{
    if (grow((void **)&tm->io.buf, &tm->io.cap_buf, at + want, 1) < 0)
        return no_memory(&tm->err, tm->name), -1;
    size_t k = fread(tm->io.buf + at, 1, want, (FILE *)tm->io.file);
    if (k < want && ferror((FILE *)tm->io.file))
        return fail(&tm->err, tm->name, GR_E_IO, GR_NO_OFFSET, "%s",
                    strerror(errno ? errno : EIO)), -1;
    return (long)k;
}

int gr_times_open(gr_times *tm, const char *path)
{
    int rc = start_times(tm, path);
    if (rc)
        return tm->done = 1, rc;
    tm->streaming = 1;
    FILE *f = fopen(path, "rb");
    if (!f)
        return tm->done = 1, fail(&tm->err, path, GR_E_IO, GR_NO_OFFSET, "%s", strerror(errno));
    tm->io.file = f;
    long k = times_read(tm, 0, GR_HEADER_LEN);
    if (k < 0)
        return tm->done = 1, tm->err.status;
    int h = check_header(tm->io.buf, (size_t)k, GR_STREAM_SIDE, &tm->minor, &tm->err, tm->name);
    if (h == CH_BAD)
        return tm->done = 1, tm->err.status;
    if (h == CH_TRUNC) {
        tm->truncated = 1;
        tm->done = 1;
        return GR_READ_OK;
    }
    tm->io.pos = GR_HEADER_LEN;
    return GR_READ_OK;
}

int gr_times_next_chunk(gr_times *tm)
{
    gr_error *e = &tm->err;
    while (!tm->done) {
        if (tm->has_trailer) {
            tm->done = 1;
            long more = times_read(tm, 0, 1);
            if (more < 0)
                return -1;
            if (more)
                return fail(e, tm->name, GR_E_TRAILER, tm->io.pos, "data after the trailer"), -1;
            return 0;
        }
        /* Frame the chunk at tm->pos: its header, then its payload when the
         * length is within the limit (next_chunk judges both). */
        long k = times_read(tm, 0, GR_CHUNK_HEADER_LEN);
        if (k < 0)
            return tm->done = 1, -1;
        size_t n = (size_t)k;
        if (n == GR_CHUNK_HEADER_LEN) {
            uint32_t len = gr_get_u32le(tm->io.buf + 1);
            if (len <= GR_CHUNK_MAX && tm->io.buf[0] && strchr(side_tags, tm->io.buf[0])) {
                if ((k = times_read(tm, n, len)) < 0)
                    return tm->done = 1, -1;
                n += (size_t)k;
            }
        }
        struct chunk c;
        int f = next_chunk(tm->io.buf, n, 0, tm->io.pos, side_tags, &c, e, tm->name);
        if (f == CH_BAD)
            return tm->done = 1, -1;
        if (f != CH_OK) {
            tm->truncated = 1;
            tm->truncated_at = tm->io.pos;
            tm->done = 1;
            return 0;
        }
        if (times_chunk(tm, &c, tm->io.pos))
            return tm->done = 1, -1;
        tm->io.pos += GR_CHUNK_HEADER_LEN + c.len;
        tm->last_tag = c.tag;
        if (c.tag != GR_CHUNK_TRAILER)
            return 1;
    }
    return 0;
}

void gr_times_free(gr_times *tm)
{
    if (tm->io.file)
        fclose((FILE *)tm->io.file);
    free(tm->io.buf);
    free(tm->name);
    free(tm->dt);
    free(tm->waits);
    free(tm->samples);
    free(tm->stacks);
    free(tm->codes);
    memset(tm, 0, sizeof *tm);
}

const char *gr_trace_meta(const gr_trace *t, const char *key, char *buf, size_t n)
{
    size_t kn = strlen(key);
    for (size_t i = 0; i < t->nmetas; i++) {
        size_t kl, vl;
        const uint8_t *k = gr_trace_string(t, t->metas[i].key, &kl);
        const uint8_t *v = gr_trace_string(t, t->metas[i].value, &vl);
        if (!k || !v || kl != kn || memcmp(k, key, kn) != 0)
            continue;
        if (vl >= n)
            vl = n - 1;
        memcpy(buf, v, vl);
        buf[vl] = '\0';
        return buf;
    }
    return NULL;
}
