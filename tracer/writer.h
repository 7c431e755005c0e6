/* writer.h - buffered, chunked writer of a greenreplay trace file.
 *
 * Pure C (no Python), used by the recorder's hot path and by the replayer's
 * `edit` command and tests.  Records are appended to an in-memory chunk; a
 * full chunk is framed (docs/FORMAT.md §2: tag, length, CRC-32) and written
 * with a single write(2), so a killed process leaves only whole chunks
 * behind, except perhaps the last.
 *
 * A writer can also keep its chunks in memory instead (gr_writer_open_memory):
 * all of them, or, as a ring, only enough of the newest to hold the last N
 * records.  gr_writer_copy_chunks writes them out into a file writer.
 *
 * Errors never propagate as exceptions: a failed write sets a sticky error
 * (w->error) and later records are counted as dropped; so are the records
 * past a size cap (w->capped).
 *
 * Disk full: a file writer keeps 4 KiB allocated past the end of the file
 * (fallocate(2) FALLOC_FL_KEEP_SIZE) and allocates each chunk's room before
 * writing it; a chunk that does not fit is dropped (ENOSPC) and the trailer
 * still goes into the reserve.  Where the file system cannot preallocate, a
 * partly written chunk is truncated away so that the trailer can follow the
 * last whole chunk.
 */
#ifndef GR_WRITER_H
#define GR_WRITER_H

#include "format.h"

#include <stddef.h>
#include <stdint.h>

/* One chunk kept in memory: its payload and how many records it holds. */
typedef struct gr_chunkbuf {
    struct gr_chunkbuf *next;
    size_t len;
    uint64_t records;
    char tag;
    uint8_t payload[];
} gr_chunkbuf;

typedef struct gr_writer {
    int fd;               /* owned; -1 in memory mode or after close */
    char stream;          /* GR_STREAM_CANONICAL or GR_STREAM_SIDE */
    char chunk_tag;       /* GR_CHUNK_RECORDS or GR_CHUNK_TIMES, ... */
    uint8_t *buf;         /* owned; GR_CHUNK_HEADER_LEN + cap bytes */
    size_t cap;           /* payload capacity of one chunk, bytes */
    size_t len;           /* payload bytes used in the current chunk */
    uint64_t records;     /* records committed to the current chunk */
    uint64_t indexed;     /* of which indexed (counted by the recorder) */
    uint64_t indexed_written; /* indexed records in chunks written or kept */
    int blocked;          /* error or capped: nothing more is accepted */
    size_t open_cap;      /* cap, or 0 once blocked: gr_writer_reserve's
                             fast test is one compare */
    uint64_t dropped;     /* records lost (write error, size cap) */
    int error;            /* errno of the first failed write, 0 if none */
    int prealloc;         /* the file system takes fallocate (trailer reserve) */
    unsigned fork_gen;    /* gr_writer_forked() count when opened: a writer
                             inherited through fork() writes nothing */
    int broken;           /* a failed write could not be taken back: no trailer */
    int sealed;           /* gr_writer_seal wrote the trailer already */
    /* File mode. */
    uint64_t limit;       /* size cap in bytes (0: none) */
    uint64_t written;     /* bytes written so far, header included */
    int capped;           /* the size cap was reached */
    /* Sub-writer mode (gr_writer_open_sub): chunks go into parent's file. */
    struct gr_writer *parent;
    /* Memory mode. */
    int memory;
    uint64_t keep;        /* ring: keep at least the last `keep` records (0: all) */
    gr_chunkbuf *head, *tail; /* owned, oldest first */
    uint64_t held;        /* records in the kept chunks */
    uint64_t evicted;     /* records dropped from the ring's old end */
    /* Encoding state of the current chunk (docs/FORMAT.md §4.1), zeroed
     * whenever a chunk is written out or kept. */
    gr_chunk_ctx ctx;
    /* Compression of records chunks (docs/FORMAT.md §2.1), off unless
     * gr_writer_set_compress turned it on.  A memory writer only carries
     * the setting to the file writer gr_writer_copy_chunks writes into. */
    struct {
        int on;
        void *ctx;        /* owned ZSTD_CCtx, file mode */
        uint8_t *buf;     /* owned: GR_ZHEADER_LEN + ZSTD_compressBound(cap) */
        size_t cap;
    } z;
} gr_writer;

/* Open path for writing (created or truncated, mode 0644) and write the
 * file header for `stream` ('C' canonical trace, 'S' side channel).
 * chunk_cap is the payload size of one chunk in bytes (0: 64 KiB; at most
 * GR_CHUNK_MAX).  Returns a new writer owned by the caller, or NULL with
 * errno set (open/write failure or no memory). */
gr_writer *gr_writer_open(const char *path, char stream, size_t chunk_cap);

/* A writer that keeps its chunks in memory, writes no file and no header.
 * keep = 0 keeps every chunk; keep > 0 makes it a ring that drops its
 * oldest chunks while the rest still hold at least `keep` records (so it
 * holds between keep and keep + one chunk of records).  NULL if memory
 * runs out. */
gr_writer *gr_writer_open_memory(char stream, size_t chunk_cap, uint64_t keep);

/* A writer of its own chunks of kind `tag` (side channel: GR_CHUNK_SWITCHES,
 * GR_CHUNK_SAMPLES) into the file of `parent`, a file writer (borrowed; it
 * must outlive the sub-writer, and the sub-writer is flushed before the
 * parent's trailer).  Records gather in the sub-writer's own chunk buffer
 * (chunk_cap as for gr_writer_open) and each full chunk is written into the
 * parent's file with one write(2), between the parent's chunks, so chunks
 * of several kinds interleave in one file (docs/FORMAT.md §5, format 1.3).
 * Write errors, the trailer reserve and the size cap are the parent's: a
 * failed write blocks both.  Free with gr_writer_finish (flushes; writes no
 * trailer) or gr_writer_discard.  NULL if memory runs out. */
gr_writer *gr_writer_open_sub(gr_writer *parent, char tag, size_t chunk_cap);

/* Stop accepting records once the file would exceed `bytes` (0: no cap).
 * The records past it are counted in w->dropped and w->capped is set; the
 * trailer is still written at finish. */
void gr_writer_set_limit(gr_writer *w, uint64_t bytes);

/* Slow path of gr_writer_reserve. */
uint8_t *gr_writer_reserve_slow(gr_writer *w, size_t n);

/* Return a pointer to at least n free bytes in the current chunk, flushing
 * it first if needed.  n must be <= the chunk capacity.  Returns NULL if n is
 * too large or the writer is blocked (error, size cap); the caller then
 * drops the record and calls gr_writer_drop().  The memory belongs to the
 * writer. */
static inline __attribute__((always_inline)) uint8_t *gr_writer_reserve(gr_writer *w, size_t n)
{
    if (w->len + n <= w->open_cap) /* not blocked, and room in this chunk */
        return w->buf + GR_CHUNK_HEADER_LEN + w->len;
    return gr_writer_reserve_slow(w, n);
}

/* Mark the bytes up to `end` (a pointer into the last reserved area) as one
 * complete record. */
static inline void gr_writer_commit(gr_writer *w, uint8_t *end)
{
    w->len = (size_t)(end - (w->buf + GR_CHUNK_HEADER_LEN));
    w->records++;
}

/* Flush the current chunk and frame the following ones with `tag` (side
 * channel: GR_CHUNK_TIMES, GR_CHUNK_SWITCHES, GR_CHUNK_SAMPLES).  Returns
 * 0, or -1 if the flush failed. */
int gr_writer_set_chunk_tag(gr_writer *w, char tag);

/* Count one record lost (see gr_writer_reserve). */
static inline void gr_writer_drop(gr_writer *w) { w->dropped++; }

/* Append the event record tag (GR_CALL..GR_C_EXCEPTION) of thread tid,
 * greenlet gid, code id `code`, in its shortest form for the current chunk
 * (docs/FORMAT.md §4.1: one byte when tid and gid are the chunk's context
 * and the code is in its cache).  The hot path of the recorder.  Returns
 * 0, or -1 if the record was dropped (and counted in w->dropped). */
static inline __attribute__((always_inline)) int gr_writer_event(gr_writer *w, int tag, uint64_t tid, uint64_t gid, uint32_t code)
{
    /* Reserve first: a flush here starts a new chunk with a fresh context. */
    uint8_t *p = gr_writer_reserve(w, 1 + 3 * GR_VARINT_MAX);
    if (!p) {
        gr_writer_drop(w);
        return -1;
    }
    gr_writer_commit(w, gr_enc_event(&w->ctx, p, tag, tid, gid, code));
    return 0;
}

/* gr_writer_event with the code's cache slot given (code % GR_CODE_SLOTS). */
static inline __attribute__((always_inline)) int gr_writer_event_slot(gr_writer *w, int tag, uint64_t tid,
                                                                      uint64_t gid, uint32_t code, unsigned slot)
{
    uint8_t *p;
    /* gr_writer_reserve, its fast path apart (no NULL test there). */
    if (__builtin_expect(w->len + 1 + 3 * GR_VARINT_MAX <= w->open_cap, 1)) {
        p = w->buf + GR_CHUNK_HEADER_LEN + w->len;
    } else {
        p = gr_writer_reserve_slow(w, 1 + 3 * GR_VARINT_MAX);
        if (!p) {
            gr_writer_drop(w);
            return -1;
        }
    }
    gr_writer_commit(w, gr_enc_event_slot(&w->ctx, p, tag, tid, gid, code, slot));
    return 0;
}

/* Encode the tag and the n varint fields of a record at p (reserved in w):
 * SWITCH/THROW (n = 7: tid, origin, target, parent, state, tracing,
 * use_tracing) in their shortest form for the current chunk (§4.1), any
 * other record as it is.  Returns the byte after them; at most
 * 1 + n * GR_VARINT_MAX bytes.  The caller reserves before calling (a flush
 * starts a new chunk with a fresh context) and commits after. */
uint8_t *gr_writer_head(gr_writer *w, uint8_t *p, int tag, int n, const uint64_t *fields);

/* Append one already-encoded record of n bytes.  Returns 0, or -1 if it was
 * dropped. */
int gr_writer_append(gr_writer *w, const void *rec, size_t n);

/* Write each records chunk ('E') from now on compressed (on != 0: one zstd
 * frame per chunk, docs/FORMAT.md §2.1; a chunk that would not shrink is
 * written as it is) or not.  The compression context and its buffer are
 * allocated here, so that writing a chunk allocates nothing more.  A memory
 * writer only keeps the setting, for gr_writer_copy_chunks.  Returns 0, or
 * -1 with errno ENOMEM (the setting is then unchanged). */
int gr_writer_set_compress(gr_writer *w, int on);

/* Write out (file) or keep (memory) the current chunk, if it holds
 * anything.  Returns 0, or -1 with the error kept in w->error. */
int gr_writer_flush(gr_writer *w);

/* Write the chunks a memory writer holds, then its current chunk, into the
 * file writer `to` (flushing `to` first), without changing `mem`; `to`
 * compresses them when `mem` was set to (gr_writer_set_compress).
 * Returns 0, or -1 if a write failed. */
int gr_writer_copy_chunks(gr_writer *to, const gr_writer *mem);

/* On a fatal signal: flush, write a trailer chunk of the n varints in
 * trailer[] and accept nothing more (a later gr_writer_finish writes no
 * second trailer).  Async-signal-safe: no allocation, only write(2),
 * fallocate(2) and zlib's crc32; the chunk flushed here is written
 * uncompressed (zstd is not async-signal-safe: the caller turns
 * w->compress off first, crash.c).  Returns 0, or -1 if a write failed. */
int gr_writer_seal(gr_writer *w, const uint64_t *trailer, size_t n);

/* Flush, write a trailer chunk holding the n varints in trailer[], close the
 * file and free the writer.  The trailer is written after a failed write
 * too (into the reserve; the caller says write-error in trailer[] when
 * w->error is set after gr_writer_flush).  Returns 0, or -1 if any write
 * failed (the file is closed and the writer freed either way).  w may be
 * NULL.  A memory writer is only freed; a sub-writer (gr_writer_open_sub)
 * is flushed into its parent's file and freed, with no trailer. */
int gr_writer_finish(gr_writer *w, const uint64_t *trailer, size_t n);

/* Close and free without writing a trailer (the file then reads as
 * truncated).  w may be NULL. */
void gr_writer_abandon(gr_writer *w);

/* Close and free without writing anything more: for a forked child, whose
 * buffered records belong to the parent.  w may be NULL. */
void gr_writer_discard(gr_writer *w);

/* In the child of fork(), before any other code runs there (a
 * pthread_atfork child handler, module.c): every writer that exists now
 * belongs to the parent's trace and writes nothing more to its file, in
 * any mode; its buffered records are dropped.  Writers opened later (a
 * recording the child starts itself) write as usual.
 * Async-signal-safe. */
void gr_writer_forked(void);

#endif
