/* dump.h - the text form of a trace (`greenreplay dump`, docs/FORMAT.md §6):
 * META lines, one line per indexed record, then the trailer or truncation
 * line.  Output is deterministic: goldens compare it byte for byte.
 */
#ifndef GR_DUMP_H
#define GR_DUMP_H

#include "reader.h"
#include "text.h"

#include <stdint.h>
#include <stdio.h>

/* Append the display form of code id `code`: "qualname (file:line)" for
 * Python code ("?" for a missing file), "qualname" for C, "?code=N" for an
 * id that is not defined.  Strings are escaped (gr_sb_escape). */
void gr_dump_code(gr_sb *sb, const gr_trace *t, uint64_t code);

/* Append n code ids (outermost first) joined by " > ", or "-" if n == 0. */
void gr_dump_stack(gr_sb *sb, const gr_trace *t, const uint32_t *ids, size_t n);

/* Append the dump line of record r, without newline (and without the
 * side-channel time). */
void gr_dump_record(gr_sb *sb, const gr_trace *t, const gr_record *r);

/* Same for a record whose stack ids are at ids (r->depth of them): a copy
 * of a record the trace no longer holds (streamed check, rules/). */
void gr_dump_record_ids(gr_sb *sb, const gr_trace *t, const gr_record *r, const uint32_t *ids);

/* Name of a trailer reason (§2): "stop", "exit", "write-error", or NULL
 * for an unknown value. */
const char *gr_reason_name(uint64_t reason);

/* Write the whole text form of t to out.  times may be NULL; otherwise each
 * record line ends with " dt=Nns" (" dt=?" when the side channel has no
 * entry for it), and a SWITCH/THROW line that has a sampler switch entry
 * ('W') further with " wait=Nns cb=Nns" and " contended" if the lock was
 * busy.  t is a loaded trace (gr_trace_load).  Returns 0, or -1 if
 * writing to out failed. */
int gr_dump(FILE *out, const gr_trace *t, const gr_times *times);

/* Same for a trace opened with gr_trace_open: decoded chunk by chunk as it
 * is written, so memory is one chunk whatever the trace's length (the side
 * channel, when given, is loaded whole by the caller: 8 bytes per record;
 * gr_dump_stream_times streams it instead).  Returns 0,
 * -1 if writing to out failed, or -2 if the trace turned out corrupt part
 * way (t->err; the lines before the bad chunk were written, and those of
 * the bad chunk's records before the batch of 4096 that holds the bad one:
 * gr_trace_set_batch). */
int gr_dump_stream(FILE *out, gr_trace *t, const gr_times *times);

/* gr_dump_stream with the side channel at path `side` streamed too (dump
 * --times): its 'T' deltas and 'W' entries are read alongside the trace
 * by two readers of one chunk each (gr_times_open), so memory is three
 * chunks whatever the length of the run.  A first pass reads the side
 * channel through once (one chunk at a time) to find whether it is
 * usable, before anything is written; if its 'W' entries are not in
 * record order (the recorder writes them in order; only a hand-made file
 * has them otherwise), it is loaded whole instead (gr_times_load), which
 * gives the same output.  The same lines as gr_dump_stream with the side
 * channel loaded.  Returns 0, -1 if writing to out failed, -2 if the trace
 * turned out corrupt part way (as gr_dump_stream), or -3 if the side
 * channel is missing or corrupt (nothing written then) or changed while it
 * was read: *err (owned, one line naming the file and offset or cause). */
int gr_dump_stream_times(FILE *out, gr_trace *t, const char *side, char **err);

#endif
