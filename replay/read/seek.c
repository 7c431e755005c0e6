/* seek.c - find the end of a streamed trace without decoding (seek.h). */
#define _FILE_OFFSET_BITS 64
#include "seek.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <zlib.h>

static int bad(gr_trace *t, enum gr_err_kind kind, uint64_t off, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    t->err.kind = kind;
    t->err.offset = off;
    t->err.status = kind == GR_E_IO ? GR_READ_IO : GR_READ_CORRUPT;
    snprintf(t->err.msg, sizeof t->err.msg, "%s: offset %" PRIu64 ": %s", t->name, off, what);
    t->done = 1;
    return -1;
}

/* Check and decode a trailer payload of len bytes at buf. */
static int trailer_fields(gr_trace *t, const uint8_t *buf, uint32_t len, uint32_t want,
                          uint64_t off)
{
    if ((uint32_t)crc32(0L, buf, (uInt)len) != want)
        return bad(t, GR_E_CRC, off, "chunk checksum mismatch");
    const uint8_t *p = buf, *end = buf + len;
    uint64_t v[4];
    for (int i = 0; i < 4; i++) {
        int rc = gr_get_varint(&p, end, &v[i]);
        if (rc == -1)
            return bad(t, GR_E_TRAILER, off, "trailer too short (%d of 4 fields)", i);
        if (rc < 0)
            return bad(t, GR_E_VARINT, off, "varint longer than 10 bytes in trailer");
    }
    t->trailer.events = v[0];
    t->trailer.dropped = v[1];
    t->trailer.errors = v[2];
    t->trailer.reason = v[3];
    /* Optional 5th and 6th fields: strings replaced, the fatal signal. */
    uint64_t more = 0;
    t->trailer.replaced = t->trailer.signal = 0;
    if (gr_get_varint(&p, end, &more) == 0) {
        t->trailer.replaced = more;
        if (gr_get_varint(&p, end, &more) == 0)
            t->trailer.signal = more;
    }
    return 0;
}

/* The 'Z' chunk at off, payload len bytes with CRC want. */
static int trailer(gr_trace *t, FILE *f, uint64_t off, uint32_t len, uint32_t want)
{
    uint8_t *buf = malloc(len ? len : 1); /* extra varints of a newer minor may follow */
    if (!buf)
        return bad(t, GR_E_NOMEM, off, "out of memory");
    if (fread(buf, 1, len, f) != len) { /* cut inside the trailer */
        free(buf);
        t->truncated = 1;
        t->truncated_at = off;
        t->done = 1;
        return 0;
    }
    int rc = trailer_fields(t, buf, len, want, off);
    free(buf);
    if (rc < 0)
        return rc;
    if (fgetc(f) != EOF)
        return bad(t, GR_E_TRAILER, off + GR_CHUNK_HEADER_LEN + len, "data after the trailer");
    t->has_trailer = 1;
    t->done = 1;
    return 0;
}

int gr_trace_skip_rest(gr_trace *t, uint64_t *chunks)
{
    uint64_t n = 0;
    if (chunks)
        *chunks = 0;
    if (!t->streaming || t->done)
        return 0;
    FILE *f = fopen(t->name, "rb");
    if (!f)
        return bad(t, GR_E_IO, t->io.pos, "%s", strerror(errno));
    uint64_t off = t->io.pos;
    int rc = 0;
    for (;;) {
        uint8_t h[GR_CHUNK_HEADER_LEN];
        if (fseeko(f, (off_t)off, SEEK_SET) != 0) {
            rc = bad(t, GR_E_IO, off, "%s", strerror(errno));
            break;
        }
        size_t got = fread(h, 1, sizeof h, f);
        if (got == 0 && feof(f)) { /* ends at a chunk boundary, no trailer */
            t->truncated = 1;
            t->truncated_at = off;
            t->done = 1;
            break;
        }
        if (got && h[0] != GR_CHUNK_RECORDS && h[0] != (uint8_t)GR_CHUNK_RECORDS_Z &&
            h[0] != GR_CHUNK_TRAILER) {
            rc = bad(t, GR_E_CHUNK_TAG, off, "unknown chunk tag 0x%02x", h[0]);
            break;
        }
        uint32_t len = got >= 5 ? gr_get_u32le(h + 1) : 0;
        if (got >= 5 && len > GR_CHUNK_MAX) {
            rc = bad(t, GR_E_CHUNK_LEN, off, "chunk length %" PRIu32 " over the limit of %u bytes",
                     len, GR_CHUNK_MAX);
            break;
        }
        if (got < sizeof h) { /* cut inside a chunk header */
            t->truncated = 1;
            t->truncated_at = off;
            t->done = 1;
            break;
        }
        if (h[0] == GR_CHUNK_TRAILER) {
            rc = trailer(t, f, off, len, gr_get_u32le(h + 5));
            break;
        }
        /* A records chunk: whole only if the file holds its payload. */
        if (fseeko(f, (off_t)(off + GR_CHUNK_HEADER_LEN + len - (len ? 1 : 0)), SEEK_SET) != 0 ||
            (len && fgetc(f) == EOF)) {
            t->truncated = 1;
            t->truncated_at = off;
            t->done = 1;
            break;
        }
        n++;
        off += GR_CHUNK_HEADER_LEN + len;
    }
    fclose(f);
    if (chunks)
        *chunks = n;
    return rc;
}
