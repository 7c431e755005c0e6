/* writer.c - buffered, chunked trace writer (docs/FORMAT.md §1-2). */
#define _GNU_SOURCE 1 /* fallocate */
#include "writer.h"

#include "format.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#define DEFAULT_CAP (64u * 1024u)

/* Room kept allocated past the end of the file for the trailer chunk: its
 * header and up to 16 varints, rounded up to one 4 KiB block. */
#define TRAILER_RESERVE 4096u

/* Allocate the file's blocks for [off, off + len) without changing its size
 * (fallocate(2) FALLOC_FL_KEEP_SIZE), so that writing there cannot fail
 * with ENOSPC.  Returns 0, -1 with errno ENOSPC/EDQUOT when the disk is
 * full, or 1 when the file system cannot preallocate (w->prealloc is then
 * turned off and the writer falls back to rolling back failed writes). */
static int preallocate(gr_writer *w, uint64_t off, uint64_t len)
{
    if (!w->prealloc)
        return 1;
    for (;;) {
        if (fallocate(w->fd, FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) == 0)
            return 0;
        if (errno == EINTR)
            continue;
        if (errno == ENOSPC || errno == EDQUOT)
            return -1;
        w->prealloc = 0; /* EOPNOTSUPP, ENODEV (pipe, device), ... */
        return 1;
    }
}

/* Write all n bytes or fail; retries short writes and EINTR. */
static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* How many times this process is a fork() child of a process that had
 * writers (gr_writer_forked); a writer remembers the count it was made
 * under. */
static volatile unsigned fork_gen;

void gr_writer_forked(void)
{
    fork_gen++;
}

/* Nothing more is accepted (an error, the size cap); see open_cap. */
static void block(gr_writer *w)
{
    w->blocked = 1;
    w->open_cap = 0;
}

static gr_writer *writer_new(char stream, size_t chunk_cap)
{
    if (chunk_cap == 0)
        chunk_cap = DEFAULT_CAP;
    if (chunk_cap > GR_CHUNK_MAX) {
        errno = EINVAL;
        return NULL;
    }
    gr_writer *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->buf = malloc(GR_CHUNK_HEADER_LEN + chunk_cap);
    if (!w->buf) {
        free(w);
        return NULL;
    }
    w->fd = -1;
    w->fork_gen = fork_gen;
    w->cap = chunk_cap;
    w->open_cap = chunk_cap;
    w->stream = stream;
    w->chunk_tag = stream == GR_STREAM_SIDE ? GR_CHUNK_TIMES : GR_CHUNK_RECORDS;
    return w;
}

static void writer_free(gr_writer *w)
{
    ZSTD_freeCCtx(w->z.ctx);
    free(w->z.buf);
    for (gr_chunkbuf *c = w->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    if (w->fd >= 0)
        close(w->fd);
    free(w->buf);
    free(w);
}

gr_writer *gr_writer_open(const char *path, char stream, size_t chunk_cap)
{
    gr_writer *w = writer_new(stream, chunk_cap);
    if (!w)
        return NULL;
    w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    uint8_t hdr[GR_HEADER_LEN];
    gr_format_header(hdr, stream);
    if (w->fd < 0 || write_all(w->fd, hdr, sizeof hdr) < 0) {
        int e = errno;
        writer_free(w);
        errno = e;
        return NULL;
    }
    w->written = GR_HEADER_LEN;
    /* Reserve the trailer's room now: a disk that fills up later still
     * takes the trailer that says so (docs/FORMAT.md section 2). */
    w->prealloc = 1;
    if (preallocate(w, w->written, TRAILER_RESERVE) < 0) {
        int e = errno;
        writer_free(w);
        errno = e;
        return NULL;
    }
    return w;
}

gr_writer *gr_writer_open_memory(char stream, size_t chunk_cap, uint64_t keep)
{
    gr_writer *w = writer_new(stream, chunk_cap);
    if (w) {
        w->memory = 1;
        w->keep = keep;
    }
    return w;
}

gr_writer *gr_writer_open_sub(gr_writer *parent, char tag, size_t chunk_cap)
{
    gr_writer *w = writer_new(parent->stream, chunk_cap);
    if (w) {
        w->parent = parent;
        w->chunk_tag = tag;
    }
    return w;
}

void gr_writer_set_limit(gr_writer *w, uint64_t bytes)
{
    w->limit = bytes;
}

int gr_writer_set_compress(gr_writer *w, int on)
{
    if (on && !w->memory && !w->z.ctx) {
        size_t zcap = GR_ZHEADER_LEN + ZSTD_compressBound(w->cap);
        ZSTD_CCtx *z = ZSTD_createCCtx();
        uint8_t *b = malloc(zcap);
        if (!z || !b) {
            ZSTD_freeCCtx(z);
            free(b);
            errno = ENOMEM;
            return -1;
        }
        w->z.ctx = z;
        w->z.buf = b;
        w->z.cap = zcap;
    }
    w->z.on = on != 0;
    return 0;
}

/* A records chunk as written (docs/FORMAT.md §2.1): compressed into w->z.buf
 * when compression is on and the chunk shrinks, else as it is.  The frame
 * depends only on the payload (one frame per chunk, no dictionary, no
 * history): reruns stay byte-identical. */
static void pack(gr_writer *w, char *tag, const uint8_t **payload, size_t *len)
{
    if (!w->z.on || !w->z.ctx || *tag != GR_CHUNK_RECORDS || *len == 0 ||
        GR_ZHEADER_LEN + ZSTD_compressBound(*len) > w->z.cap)
        return;
    size_t z = ZSTD_compressCCtx(w->z.ctx, w->z.buf + GR_ZHEADER_LEN, w->z.cap - GR_ZHEADER_LEN,
                                 *payload, *len, GR_ZSTD_LEVEL);
    if (ZSTD_isError(z) || GR_ZHEADER_LEN + z >= *len)
        return;
    gr_put_u32le(w->z.buf, (uint32_t)*len);
    *tag = GR_CHUNK_RECORDS_Z;
    *payload = w->z.buf;
    *len = GR_ZHEADER_LEN + z;
}

/* Frame and write one chunk of `len` payload bytes at `payload` (which must
 * have GR_CHUNK_HEADER_LEN bytes of room before it when from w->buf; here
 * the header is written separately). */
static int write_chunk(gr_writer *w, char tag, const uint8_t *payload, size_t len)
{
    if (w->fork_gen != fork_gen) {
        /* Inherited through fork(): the file is the parent's.  Nothing
         * is written (not even a truncation), nothing more accepted. */
        block(w);
        return -1;
    }
    uint8_t h[GR_CHUNK_HEADER_LEN];
    h[0] = (uint8_t)tag;
    gr_put_u32le(h + 1, (uint32_t)len);
    gr_put_u32le(h + 5, (uint32_t)crc32(0L, payload, (uInt)len));
    /* A records chunk must leave the trailer's reserve behind it; the
     * trailer itself goes into the reserve. */
    uint64_t need = GR_CHUNK_HEADER_LEN + len + (tag == GR_CHUNK_TRAILER ? 0 : TRAILER_RESERVE);
    if (preallocate(w, w->written, need) < 0) {
        if (!w->error)
            w->error = errno;
        block(w);
        return -1;
    }
    if (write_all(w->fd, h, sizeof h) < 0 || write_all(w->fd, payload, len) < 0) {
        if (!w->error)
            w->error = errno ? errno : EIO;
        block(w);
        /* Take back a partly written chunk, so that the file ends with
         * whole chunks and the trailer can follow them. */
        if (ftruncate(w->fd, (off_t)w->written) < 0 || lseek(w->fd, (off_t)w->written, SEEK_SET) < 0)
            w->broken = 1;
        return -1;
    }
    w->written += GR_CHUNK_HEADER_LEN + len;
    return 0;
}

/* Memory mode: keep the current chunk, then trim the ring. */
static int keep_chunk(gr_writer *w)
{
    gr_chunkbuf *c = malloc(sizeof *c + w->len);
    if (!c) {
        w->dropped += w->records;
        return -1;
    }
    c->next = NULL;
    c->len = w->len;
    c->records = w->records;
    c->tag = w->chunk_tag;
    memcpy(c->payload, w->buf + GR_CHUNK_HEADER_LEN, w->len);
    if (w->tail)
        w->tail->next = c;
    else
        w->head = c;
    w->tail = c;
    w->held += c->records;
    while (w->keep && w->head != w->tail && w->held - w->head->records >= w->keep) {
        gr_chunkbuf *old = w->head;
        w->head = old->next;
        w->held -= old->records;
        w->evicted += old->records;
        free(old);
    }
    return 0;
}

int gr_writer_flush(gr_writer *w)
{
    if (w->blocked)
        return -1;
    if (w->len == 0)
        return 0;
    int rc;
    if (w->memory) {
        rc = keep_chunk(w);
    } else if (w->parent) {
        /* Into the parent's file, under the parent's rules. */
        gr_writer *p = w->parent;
        if (p->blocked) {
            rc = -1;
        } else if (p->limit && p->written + GR_CHUNK_HEADER_LEN + w->len > p->limit) {
            p->capped = 1;
            block(p);
            rc = -1;
        } else {
            rc = write_chunk(p, w->chunk_tag, w->buf + GR_CHUNK_HEADER_LEN, w->len);
        }
        if (rc < 0) {
            block(w);
            w->error = p->error;
            w->dropped += w->records;
        }
    } else {
        char tag = w->chunk_tag;
        const uint8_t *payload = w->buf + GR_CHUNK_HEADER_LEN;
        size_t len = w->len;
        pack(w, &tag, &payload, &len); /* the cap counts the bytes written */
        if (w->limit && w->written + GR_CHUNK_HEADER_LEN + len > w->limit) {
            w->capped = 1;
            block(w);
            w->dropped += w->records;
            rc = -1;
        } else {
            rc = write_chunk(w, tag, payload, len);
            if (rc < 0)
                w->dropped += w->records;
        }
    }
    if (rc == 0)
        w->indexed_written += w->indexed;
    w->len = 0;
    w->records = 0;
    w->indexed = 0;
    memset(&w->ctx, 0, sizeof w->ctx); /* every chunk decodes on its own */
    return rc;
}

int gr_writer_set_chunk_tag(gr_writer *w, char tag)
{
    int rc = gr_writer_flush(w);
    w->chunk_tag = tag;
    return rc;
}

uint8_t *gr_writer_reserve_slow(gr_writer *w, size_t n)
{
    if (w->blocked || n > w->cap)
        return NULL;
    if (w->cap - w->len < n && gr_writer_flush(w) < 0 && w->blocked)
        return NULL;
    return w->buf + GR_CHUNK_HEADER_LEN + w->len;
}

uint8_t *gr_writer_head(gr_writer *w, uint8_t *p, int tag, int n, const uint64_t *fields)
{
    if ((tag == GR_SWITCH || tag == GR_THROW) && n == 7)
        return gr_enc_switch_head(&w->ctx, p, tag, fields);
    *p++ = (uint8_t)tag;
    for (int i = 0; i < n; i++)
        p = gr_put_varint(p, fields[i]);
    return p;
}

int gr_writer_append(gr_writer *w, const void *rec, size_t n)
{
    uint8_t *p = gr_writer_reserve(w, n);
    if (!p) {
        gr_writer_drop(w);
        return -1;
    }
    memcpy(p, rec, n);
    gr_writer_commit(w, p + n);
    return 0;
}

/* Write one chunk of `to`'s file, compressed as `to` is set to. */
static int write_packed(gr_writer *to, char tag, const uint8_t *payload, size_t len)
{
    /* A memory writer's chunks may be larger than `to`'s (its own chunk
     * size): the buffer grows; without memory the chunk goes as it is. */
    size_t need = GR_ZHEADER_LEN + ZSTD_compressBound(len);
    if (to->z.on && to->z.ctx && need > to->z.cap) {
        uint8_t *b = realloc(to->z.buf, need);
        if (b) {
            to->z.buf = b;
            to->z.cap = need;
        }
    }
    pack(to, &tag, &payload, &len);
    return write_chunk(to, tag, payload, len);
}

int gr_writer_copy_chunks(gr_writer *to, const gr_writer *mem)
{
    if (gr_writer_flush(to) < 0)
        return -1;
    if (mem->z.on && !to->z.on && gr_writer_set_compress(to, 1) < 0)
        return -1;
    for (const gr_chunkbuf *c = mem->head; c; c = c->next)
        if (write_packed(to, c->tag, c->payload, c->len) < 0)
            return -1;
    if (mem->len && write_packed(to, mem->chunk_tag, mem->buf + GR_CHUNK_HEADER_LEN, mem->len) < 0)
        return -1;
    return 0;
}

int gr_writer_seal(gr_writer *w, const uint64_t *trailer, size_t n)
{
    if (w->memory || w->parent || w->sealed || w->fd < 0)
        return -1;
    int rc = gr_writer_flush(w) < 0 && !w->capped ? -1 : 0;
    if (!w->broken) {
        uint8_t t[16 * GR_VARINT_MAX], *q = t;
        for (size_t i = 0; i < n && i < 16; i++)
            q = gr_put_varint(q, trailer[i]);
        if (write_chunk(w, GR_CHUNK_TRAILER, t, (size_t)(q - t)) < 0)
            rc = -1;
    }
    w->sealed = 1;
    block(w);
    return rc;
}

int gr_writer_finish(gr_writer *w, const uint64_t *trailer, size_t n)
{
    if (!w)
        return 0;
    if (w->memory) {
        writer_free(w);
        return 0;
    }
    if (w->parent) {
        int rc = gr_writer_flush(w) < 0 ? -1 : 0;
        writer_free(w);
        return rc;
    }
    if (w->sealed) { /* its trailer is in the file already (a fatal signal) */
        writer_free(w);
        return 0;
    }
    /* A cap stops records, not the trailer that says so; neither does a
     * failed write: the trailer goes into the room reserved for it, so the
     * file says what was lost (the caller puts reason write-error and the
     * dropped count in trailer[]). */
    int rc = gr_writer_flush(w) < 0 && !w->capped ? -1 : 0;
    if (w->error)
        rc = -1;
    if (!w->broken) {
        uint8_t t[16 * GR_VARINT_MAX], *q = t;
        for (size_t i = 0; i < n && i < 16; i++)
            q = gr_put_varint(q, trailer[i]);
        if (write_chunk(w, GR_CHUNK_TRAILER, t, (size_t)(q - t)) < 0)
            rc = -1;
        else if (w->prealloc) /* give back the blocks past the end */
            fallocate(w->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)w->written,
                      TRAILER_RESERVE);
    }
    if (close(w->fd) < 0 && rc == 0)
        rc = -1;
    w->fd = -1;
    writer_free(w);
    return rc;
}

void gr_writer_abandon(gr_writer *w)
{
    if (!w)
        return;
    if (!w->memory)
        gr_writer_flush(w);
    writer_free(w);
}

void gr_writer_discard(gr_writer *w)
{
    if (w)
        writer_free(w);
}
