/* edit.c - rewrite a trace without some indexed records (edit.h). */
#include "edit.h"

#include "encode.h"
#include "writer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gr_edit_drop(const gr_trace *t, const uint64_t *drop, size_t ndrop, const char *path,
                 char *err, size_t errlen)
{
    return gr_edit_write(t, drop, ndrop, 0, path, err, errlen);
}

int gr_edit_write(const gr_trace *t, const uint64_t *drop, size_t ndrop, size_t chunk,
                  const char *path, char *err, size_t errlen)
{
    for (size_t i = 0; i < ndrop; i++) {
        if (drop[i] >= t->nrecs) {
            snprintf(err, errlen, "record %" PRIu64 " does not exist (the trace has %zu records)",
                     drop[i], t->nrecs);
            return -1;
        }
    }
    uint8_t *gone = calloc(t->nrecs ? t->nrecs : 1, 1);
    if (!gone) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < ndrop; i++)
        gone[drop[i]] = 1;
    /* A chunk must hold the longest string definition and record (a
     * record: its tag, at most 9 varint fields, its stack's code ids). */
    size_t cap = chunk ? chunk : 64u * 1024u;
    for (size_t i = 1; i <= t->nstrings; i++) {
        size_t need = (size_t)t->strings[i].len + 1 + GR_VARINT_MAX;
        if (need > cap)
            cap = need;
    }
    for (size_t i = 0; chunk && i < t->nrecs; i++) {
        size_t need = 1 + 9 * GR_VARINT_MAX + (size_t)t->recs[i].depth * GR_VARINT_MAX;
        if (need > cap)
            cap = need;
    }
    if (cap > GR_CHUNK_MAX)
        cap = GR_CHUNK_MAX;
    gr_writer *w = gr_writer_open(path, GR_STREAM_CANONICAL, cap);
    if (!w) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        free(gone);
        return -1;
    }
    /* Compressed as t was: a recording made without --no-compress stays
     * compressed (each chunk that zstd does not shrink is written as it is,
     * as the recorder does), one made with it stays plain. */
    if (t->zchunks && gr_writer_set_compress(w, 1) < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        gr_writer_abandon(w);
        free(gone);
        return -1;
    }
    for (size_t i = 1; i <= t->nstrings; i++)
        gr_emit_string(w, t->strings[i].p, t->strings[i].len);
    for (size_t i = 1; i <= t->ncodes; i++)
        gr_emit_code(w, &t->codes[i]);
    for (size_t i = 1; i <= t->nprofilers; i++)
        gr_emit_profiler(w, &t->profilers[i]);
    /* A META that followed indexed records in t (the recorder writes some
     * at stop) stays after them: dump places it by that (FORMAT §6.1). */
    size_t m = 0;
    while (m < t->nmetas && t->metas[m].at == 0) {
        gr_emit_meta(w, t->metas[m].key, t->metas[m].value);
        m++;
    }
    /* Every GAP is kept (records the ring dropped are lost whatever edit
     * leaves out): before the first remaining record that followed it in
     * t, or after the last one.  So a GAP between two kept records stays
     * between them, and one whose records around it were all dropped still
     * counts its loss. */
    size_t g = 0;
    uint64_t written = 0;
    for (size_t i = 0; i < t->nrecs; i++) {
        for (; m < t->nmetas && t->metas[m].at <= i && written; m++)
            gr_emit_meta(w, t->metas[m].key, t->metas[m].value);
        if (gone[i])
            continue;
        for (; g < t->gap_defs.n && t->gap_defs.list[g].at <= i; g++)
            gr_emit_gap(w, t->gap_defs.list[g].n);
        gr_emit_record(w, &t->recs[i], gr_record_stack(t, &t->recs[i]));
        written++;
    }
    for (; m < t->nmetas; m++)
        gr_emit_meta(w, t->metas[m].key, t->metas[m].value);
    for (; g < t->gap_defs.n; g++)
        gr_emit_gap(w, t->gap_defs.list[g].n);
    free(gone);
    int failed = w->dropped != 0 || w->error != 0;
    int e = w->error;
    int rc;
    if (t->has_trailer) {
        uint64_t tr[5] = {written, t->trailer.dropped, t->trailer.errors, t->trailer.reason,
                          t->trailer.replaced};
        rc = gr_writer_finish(w, tr, t->trailer.replaced ? 5 : 4);
    } else {
        rc = gr_writer_flush(w);
        gr_writer_abandon(w);
    }
    if (failed || rc < 0) {
        if (!e)
            e = errno ? errno : EIO;
        snprintf(err, errlen, "%s: write failed: %s", path, strerror(e));
        return -1;
    }
    return 0;
}
