/* writer.c - buffered, chunked trace writer (docs/FORMAT.md §1-2). */
#include "writer.h"

#include "format.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define DEFAULT_CAP (64u * 1024u)

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

gr_writer *gr_writer_open(const char *path, char stream, size_t chunk_cap)
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
    w->cap = chunk_cap;
    w->stream = stream;
    w->chunk_tag = stream == GR_STREAM_SIDE ? GR_CHUNK_TIMES : GR_CHUNK_RECORDS;
    w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w->fd < 0)
        goto fail;
    uint8_t hdr[GR_HEADER_LEN];
    gr_format_header(hdr, stream);
    if (write_all(w->fd, hdr, sizeof hdr) < 0)
        goto fail;
    return w;
fail: {
        int e = errno;
        if (w->fd >= 0)
            close(w->fd);
        free(w->buf);
        free(w);
        errno = e;
        return NULL;
    }
}

static int emit_chunk(gr_writer *w, char tag, size_t len)
{
    uint8_t *h = w->buf;
    h[0] = (uint8_t)tag;
    gr_put_u32le(h + 1, (uint32_t)len);
    gr_put_u32le(h + 5, (uint32_t)crc32(0L, h + GR_CHUNK_HEADER_LEN, (uInt)len));
    if (write_all(w->fd, h, GR_CHUNK_HEADER_LEN + len) < 0) {
        if (!w->error)
            w->error = errno ? errno : EIO;
        return -1;
    }
    return 0;
}

int gr_writer_flush(gr_writer *w)
{
    if (w->error)
        return -1;
    if (w->len == 0)
        return 0;
    int rc = emit_chunk(w, w->chunk_tag, w->len);
    w->len = 0;
    return rc;
}

int gr_writer_set_chunk_tag(gr_writer *w, char tag)
{
    int rc = gr_writer_flush(w);
    w->chunk_tag = tag;
    return rc;
}

uint8_t *gr_writer_reserve(gr_writer *w, size_t n)
{
    if (w->error || n > w->cap)
        return NULL;
    if (w->cap - w->len < n && gr_writer_flush(w) < 0)
        return NULL;
    return w->buf + GR_CHUNK_HEADER_LEN + w->len;
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

int gr_writer_finish(gr_writer *w, const uint64_t *trailer, size_t n)
{
    if (!w)
        return 0;
    int rc = gr_writer_flush(w);
    if (rc == 0) {
        uint8_t *p = w->buf + GR_CHUNK_HEADER_LEN, *q = p;
        for (size_t i = 0; i < n && (size_t)(q - p) + GR_VARINT_MAX <= w->cap; i++)
            q = gr_put_varint(q, trailer[i]);
        rc = emit_chunk(w, GR_CHUNK_TRAILER, (size_t)(q - p));
    }
    if (close(w->fd) < 0 && rc == 0)
        rc = -1;
    free(w->buf);
    free(w);
    return rc;
}

void gr_writer_abandon(gr_writer *w)
{
    if (!w)
        return;
    gr_writer_flush(w);
    close(w->fd);
    free(w->buf);
    free(w);
}

void gr_writer_discard(gr_writer *w)
{
    if (!w)
        return;
    close(w->fd);
    free(w->buf);
    free(w);
}
