/* encode_cost.c - benchmark: the writer's cost per event record, format 1.1
 * against format 1.2 (docs/FORMAT.md §4.1) and 1.3 (1.2's records in
 * compressed chunks, §2.1), without Python.
 *
 * usage: encode_cost TRACE [REPEAT]
 *
 * Reads TRACE, keeps its CALL, RETURN, C_CALL, C_RETURN and C_EXCEPTION
 * records (the recorder's hot path, tracer/recorder.h gr_emit3) and its
 * SWITCH/THROW records (with their stacks), and writes them REPEAT times
 * (default 20, the best run is kept) into a trace on /dev/null with a
 * 64 KiB chunk writer, the way the recorder does: once in the full form of
 * format 1.1 (tag and varints), once with gr_writer_event and
 * gr_writer_head (the compact forms of 1.2), once so with each chunk
 * compressed (zstd level 1, gr_writer_set_compress: what the recorder
 * writes).  Chunk framing, compression, CRC-32 and write(2) are included.  Prints ns per event (thread CPU time, so that a
 * loaded machine's waits do not count) and bytes per event of each.
 * Prints figures; asserts nothing.  Exit status 0, 2 on bad usage or an
 * unreadable trace.
 */
#define _GNU_SOURCE 1
#include "reader.h"
#include "writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ev {
    uint8_t tag;
    uint32_t code;
    uint64_t tid, gid;
    uint64_t sw[7];        /* SWITCH/THROW: tid origin target parent state tracing use_tracing */
    const uint32_t *stack; /* SWITCH/THROW: depth code ids */
    uint32_t depth;
};

/* A SWITCH/THROW: its fields (the full form, or gr_writer_head's compact
 * one), then its stack. */
static inline void put_switch(gr_writer *w, const struct ev *e, int compact)
{
    uint8_t *p = gr_writer_reserve(w, (size_t)(1 + 8 + e->depth) * GR_VARINT_MAX);
    if (!p) {
        gr_writer_drop(w);
        return;
    }
    if (compact) {
        p = gr_writer_head(w, p, e->tag, 7, e->sw);
    } else {
        *p++ = e->tag;
        for (int i = 0; i < 7; i++)
            p = gr_put_varint(p, e->sw[i]);
    }
    p = gr_put_varint(p, e->depth);
    for (uint32_t i = 0; i < e->depth; i++)
        p = gr_put_varint(p, e->stack[i]);
    gr_writer_commit(w, p);
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The 1.1 hot path: tag, tid, gid, code as varints. */
static inline void put_full(gr_writer *w, const struct ev *e)
{
    uint8_t *p = gr_writer_reserve(w, 1 + 3 * GR_VARINT_MAX);
    if (!p) {
        gr_writer_drop(w);
        return;
    }
    *p++ = e->tag;
    p = gr_put_varint(p, e->tid);
    p = gr_put_varint(p, e->gid);
    p = gr_put_varint(p, e->code);
    gr_writer_commit(w, p);
}

/* One pass over the events (mode 0: format 1.1, 1: 1.2, 2: 1.2 in
 * compressed chunks); returns thread CPU ns, *bytes the file size. */
static double run(const struct ev *ev, size_t n, int mode, uint64_t *bytes)
{
    gr_writer *w = gr_writer_open("/dev/null", GR_STREAM_CANONICAL, 0);
    if (!w || gr_writer_set_compress(w, mode == 2) < 0) {
        perror("encode_cost: /dev/null");
        exit(2);
    }
    int compact = mode > 0;
    double t0 = now_ns();
    if (compact) {
        for (size_t i = 0; i < n; i++) {
            if (ev[i].tag <= GR_C_EXCEPTION)
                gr_writer_event(w, ev[i].tag, ev[i].tid, ev[i].gid, ev[i].code);
            else
                put_switch(w, &ev[i], 1);
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            if (ev[i].tag <= GR_C_EXCEPTION)
                put_full(w, &ev[i]);
            else
                put_switch(w, &ev[i], 0);
        }
    }
    gr_writer_flush(w);
    double t = now_ns() - t0;
    *bytes = w->written;
    uint64_t tr[4] = {n, 0, 0, GR_STOP_CALLED};
    gr_writer_finish(w, tr, 4);
    return t;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: encode_cost TRACE [REPEAT [NAME]]\n");
        return 2;
    }
    int repeat = argc >= 3 ? atoi(argv[2]) : 20;
    if (repeat < 1)
        repeat = 1;
    gr_trace t;
    if (gr_trace_load(&t, argv[1]) != GR_READ_OK) {
        fprintf(stderr, "encode_cost: %s\n", t.err.msg);
        gr_trace_free(&t);
        return 2;
    }
    struct ev *ev = calloc(t.nrecs ? t.nrecs : 1, sizeof *ev);
    size_t n = 0, nsw = 0;
    for (size_t i = 0; i < t.nrecs; i++) {
        const gr_record *r = &t.recs[i];
        struct ev *e = &ev[n];
        if (r->tag >= GR_CALL && r->tag <= GR_C_EXCEPTION) {
            e->tag = r->tag;
            e->code = r->code;
            e->tid = r->tid;
            e->gid = r->gid;
            n++;
        } else if (r->tag == GR_SWITCH || r->tag == GR_THROW) {
            e->tag = r->tag;
            uint64_t f[7] = {r->tid, r->gid, r->target, r->parent, r->flags, r->tracing,
                             r->use_tracing};
            memcpy(e->sw, f, sizeof f);
            e->stack = gr_record_stack(&t, r); /* t is kept until the end */
            e->depth = r->depth;
            n++;
            nsw++;
        }
    }
    if (n == 0) {
        fprintf(stderr, "encode_cost: %s has no events\n", argv[1]);
        free(ev);
        gr_trace_free(&t);
        return 2;
    }
    double best[3] = {1e300, 1e300, 1e300};
    uint64_t bytes[3] = {0, 0, 0};
    for (int k = 0; k < repeat; k++)
        for (int c = 0; c < 3; c++) { /* interleaved: load hits both alike */
            double v = run(ev, n, c, &bytes[c]);
            if (v < best[c])
                best[c] = v;
        }
    printf("writer cost per event record (%zu events, %zu of them switches, of %s; best of %d, "
           "thread CPU time):\n\n", n, nsw, argv[1], repeat);
    printf("| encoding | ns per event | bytes per event |\n|---|---:|---:|\n");
    printf("| format 1.1 (full form) | %.2f | %.2f |\n", best[0] / (double)n,
           (double)bytes[0] / (double)n);
    printf("| format 1.2 (compact: gr_writer_event, gr_writer_head) | %.2f | %.2f |\n",
           best[1] / (double)n, (double)bytes[1] / (double)n);
    printf("| format 1.3 (compact, chunks compressed with zstd level 1) | %.2f | %.4f |\n",
           best[2] / (double)n, (double)bytes[2] / (double)n);
    printf("\ncompression's own cost: %.2f ns per event (1.3 less 1.2)\n",
           (best[2] - best[1]) / (double)n);
    if (argc == 4) /* the GOAL line of tests/bench/goal.py */
        printf("GOAL\tcompress-cpu-%s\t%.2f ns per event\tmeasured and printed\tmet\t"
               "format 1.3 at %.2f against 1.2 at %.2f ns per event, %zu events; best of %d, "
               "thread CPU time\n", argv[3], (best[2] - best[1]) / (double)n, best[2] / (double)n,
               best[1] / (double)n, n, repeat);
    free(ev);
    gr_trace_free(&t);
    return 0;
}
