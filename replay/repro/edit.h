/* edit.h - rewrite a trace without some indexed records (`greenreplay
 * edit`), to build test cases and bug reports.  All definitions are kept,
 * GAP records (records a ring dropped) too: an edited trace never hides a
 * loss.
 */
#ifndef GR_EDIT_H
#define GR_EDIT_H

#include "reader.h"

#include <stddef.h>
#include <stdint.h>

/* Write t to path, leaving out the indexed records whose indices are in
 * drop[0..ndrop-1] (any order, duplicates allowed).  The output holds every
 * STRING and CODE definition first (same ids), the META definitions that
 * precede t's first indexed record, then the remaining indexed records in
 * order (so the records after a dropped one get indices one lower), each
 * later META just before the first remaining record that followed it in
 * t, or after the last one, and after the first remaining record when
 * only dropped records preceded it (so that `dump` prints it among the
 * METAs after the records, as it does for t: docs/FORMAT.md §6.1).  Each
 * GAP definition of t (t->gap_defs.list) is written with the same count just before
 * the first remaining record at or after its place in t, or after the last
 * remaining record when none follows: one between two kept records stays
 * between them, and the output's GAPs add up to t's (t->gap).  If t
 * has a trailer, the output gets one with the same
 * dropped, errors and reason and events = records written; a truncated t
 * gives an output without trailer (truncated as well).  The output's
 * records chunks are compressed (docs/FORMAT.md §2.1, each one that zstd
 * does not shrink written plain, as the recorder does) when t had a
 * compressed chunk (t->zchunks), plain otherwise.
 * Returns 0; or -1 with a message in err (errlen bytes) if an index is out
 * of range or the file could not be written. */
int gr_edit_drop(const gr_trace *t, const uint64_t *drop, size_t ndrop, const char *path,
                 char *err, size_t errlen);

/* Same, with chunks of about `chunk` payload bytes (0: 64 KiB, as the
 * recorder writes them; raised to what the longest string definition or
 * record needs, at most GR_CHUNK_MAX): small chunks make test traces for
 * `check --from/--to` (split.h) out of short recordings. */
int gr_edit_write(const gr_trace *t, const uint64_t *drop, size_t ndrop, size_t chunk,
                  const char *path, char *err, size_t errlen);

#endif
