/* seek.h - find the end of a streamed trace without decoding the chunks
 * before it: `check --from A --to B` (split.h) stops replaying after its
 * range and still reports what ended the recording (trailer, or where the
 * trace was cut short) and how many chunks the trace has.
 */
#ifndef GR_SEEK_H
#define GR_SEEK_H

#include "reader.h"

#include <stdint.h>

/* From t->pos (the next chunk of a trace opened with gr_trace_open and
 * read with gr_trace_next_chunk), walk the remaining chunk headers,
 * skipping their payloads: *chunks (may be NULL) receives the number of
 * records chunks ('E') skipped.  Then, as the reader would: a 'Z' chunk
 * (its CRC and fields checked) sets t->has_trailer and t->trailer; a file
 * that ends inside a chunk, or without a trailer, sets t->truncated and
 * t->truncated_at (the offset of the incomplete chunk, or of the end).
 * t->done is set: no record is decoded after this.  The payloads skipped
 * are not checked (their CRC, their records): the worker whose range holds
 * them does that.  Returns 0; or -1 with t->err set (one line with the
 * file and offset, as the reader's) on an unknown chunk tag, a length over
 * GR_CHUNK_MAX, a bad trailer, data after it, or a read error.  A loaded
 * trace (t->streaming 0) is left alone: returns 0 with *chunks 0. */
int gr_trace_skip_rest(gr_trace *t, uint64_t *chunks);

#endif
