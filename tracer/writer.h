/* writer.h - buffered, chunked writer of a greenreplay trace file.
 *
 * Pure C (no Python), used by the recorder's hot path and by the replayer's
 * `edit` command and tests.  Records are appended to an in-memory chunk; a
 * full chunk is framed (docs/FORMAT.md §2: tag, length, CRC-32) and written
 * with a single write(2), so a killed process leaves only whole chunks
 * behind, except perhaps the last.
 *
 * Errors never propagate as exceptions: a failed write sets a sticky error
 * (gr_writer_failed) and later records are counted as dropped.
 */
#ifndef GR_WRITER_H
#define GR_WRITER_H

#include "format.h"

#include <stddef.h>
#include <stdint.h>

typedef struct gr_writer {
    int fd;               /* owned; -1 after close */
    char stream;          /* GR_STREAM_CANONICAL or GR_STREAM_SIDE */
    char chunk_tag;       /* GR_CHUNK_RECORDS or GR_CHUNK_TIMES */
    uint8_t *buf;         /* owned; GR_CHUNK_HEADER_LEN + cap bytes */
    size_t cap;           /* payload capacity of one chunk, bytes */
    size_t len;           /* payload bytes used in the current chunk */
    uint64_t dropped;     /* records lost after a write error */
    int error;            /* errno of the first failed write, 0 if none */
} gr_writer;

/* Open path for writing (created or truncated, mode 0644) and write the
 * file header for `stream` ('C' canonical trace, 'S' side channel).
 * chunk_cap is the payload size of one chunk in bytes (0: 64 KiB; at most
 * GR_CHUNK_MAX).  Returns a new writer owned by the caller, or NULL with
 * errno set (open/write failure or no memory). */
gr_writer *gr_writer_open(const char *path, char stream, size_t chunk_cap);

/* Return a pointer to at least n free bytes in the current chunk, flushing
 * it first if needed.  n must be <= the chunk capacity.  Returns NULL if n is
 * too large or the writer has failed; the caller then drops the record and
 * calls gr_writer_drop().  The memory belongs to the writer. */
uint8_t *gr_writer_reserve(gr_writer *w, size_t n);

/* Mark the bytes up to `end` (a pointer into the last reserved area) as one
 * complete record. */
static inline void gr_writer_commit(gr_writer *w, uint8_t *end)
{
    w->len = (size_t)(end - (w->buf + GR_CHUNK_HEADER_LEN));
}

/* Flush the current chunk and frame the following ones with `tag` (side
 * channel: GR_CHUNK_TIMES, GR_CHUNK_SWITCHES, GR_CHUNK_SAMPLES).  Returns
 * 0, or -1 if the flush failed. */
int gr_writer_set_chunk_tag(gr_writer *w, char tag);

/* Count one record lost (see gr_writer_reserve). */
static inline void gr_writer_drop(gr_writer *w) { w->dropped++; }

/* Append one already-encoded record of n bytes.  Returns 0, or -1 if it was
 * dropped. */
int gr_writer_append(gr_writer *w, const void *rec, size_t n);

/* Write out the current chunk, if it holds anything.  Returns 0, or -1 with
 * the error kept in w->error. */
int gr_writer_flush(gr_writer *w);

/* Flush, write a trailer chunk holding the n varints in trailer[], close the
 * file and free the writer.  Returns 0, or -1 if any write failed (the file
 * is closed and the writer freed either way).  w may be NULL. */
int gr_writer_finish(gr_writer *w, const uint64_t *trailer, size_t n);

/* Close and free without writing a trailer (the file then reads as
 * truncated).  w may be NULL. */
void gr_writer_abandon(gr_writer *w);

/* Close and free without writing anything more: for a forked child, whose
 * buffered records belong to the parent.  w may be NULL. */
void gr_writer_discard(gr_writer *w);

#endif
