/* encode.h - encode definitions and indexed records (docs/FORMAT.md §3-4)
 * and append them to a chunked writer (tracer/writer.h).  Used by `edit`
 * to rewrite a trace and by the unit tests to build traces.
 */
#ifndef GR_ENCODE_H
#define GR_ENCODE_H

#include "reader.h"
#include "writer.h"

#include <stddef.h>
#include <stdint.h>

/* Upper bound, in bytes, of one encoded indexed record: tag, at most seven
 * varint fields and GR_STACK_CAP code ids. */
#define GR_RECORD_MAX (1 + 7 * GR_VARINT_MAX + GR_STACK_CAP * GR_VARINT_MAX)

/* Encode the indexed record r (its tag and the fields that kind has; see
 * gr_record) into out, which must hold GR_RECORD_MAX bytes.  stack holds
 * r->depth code ids for GREENLET, MARK and STACK (may be NULL otherwise).
 * Returns the number of bytes written, or 0 if r->tag is not an indexed
 * kind or r->depth is over GR_STACK_CAP.  No validation of ids. */
size_t gr_encode_record(uint8_t *out, const gr_record *r, const uint32_t *stack);

/* Same, in the shortest form for the chunk whose encoding state is ctx
 * (docs/FORMAT.md §4.1: CALL..C_EXCEPTION and SWITCH/THROW of the chunk's
 * context are compact), updating ctx; ctx NULL gives the full form.  The
 * result is never longer than the full form. */
size_t gr_encode_record_ctx(uint8_t *out, const gr_record *r, const uint32_t *stack,
                            gr_chunk_ctx *ctx);

/* Append a STRING definition of n bytes at s to w.  Returns 0, or -1 if the
 * writer dropped it (write error, or larger than the chunk capacity). */
int gr_emit_string(gr_writer *w, const void *s, size_t n);

/* Append a CODE definition.  Returns 0 or -1 (dropped). */
int gr_emit_code(gr_writer *w, const gr_code *c);

/* Append a META definition (string ids).  Returns 0 or -1 (dropped). */
int gr_emit_meta(gr_writer *w, uint32_t key, uint32_t value);

/* A PROFILER definition (§3, format 1.3). */
int gr_emit_profiler(gr_writer *w, const gr_profdef *pd);

/* Append a GAP definition: n indexed records left out before the ones that
 * follow (§3).  Returns 0 or -1 (dropped). */
int gr_emit_gap(gr_writer *w, uint64_t n);

/* Append one indexed record in the shortest form for w's current chunk
 * (gr_encode_record_ctx).  Returns 0, or -1 if it could not be encoded or
 * was dropped. */
int gr_emit_record(gr_writer *w, const gr_record *r, const uint32_t *stack);

#endif
