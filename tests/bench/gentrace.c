/* gentrace.c - write a large synthetic trace for the replayer benchmark
 * (tests/bench/replay_cost.sh): a hub greenlet on one thread switches
 * round-robin to a pool of worker greenlets; each worker runs bursts of
 * nested Python calls and C calls, marks now and then (a ground-truth
 * point), yields back to the hub, and after some bursts returns and dies,
 * to be replaced by a new one.  The trace is what the recorder writes in
 * passive mode for such a program (docs/FORMAT.md), and it is clean:
 * `check` finds no violation in it.
 *
 * usage: gentrace OUT EVENTS [WORKERS [MAXDEPTH [INSTR]]]
 *   OUT       trace file to write
 *   EVENTS    indexed records to write (approximately: the last burst and
 *             the drain at the end are finished)
 *   WORKERS   live worker greenlets (default 1000)
 *   MAXDEPTH  deepest Python call nesting in a burst (default 40)
 *   INSTR     0 (default): a CPython 3.11 trace.  N >= 1: a 3.12+ trace
 *             (python META 3.12.1, switches without use_tracing): an INSTR
 *             record after every SWITCH, the instrumentation version going
 *             up by one every N switches (the program sets a profile
 *             function again; the running greenlet's frames are
 *             re-instrumented).  A greenlet resumed at a newer version
 *             than it last ran at has its one frame stale (INSTR stale 1),
 *             a predicted blind spot that the C_RETURN of its switch()
 *             refutes: the trace stays free of violations, and `check`
 *             gives one warning per such resume.
 * Prints "records N bytes B greenlets G" on stdout.  Exit 0, or 2 on bad
 * usage or a write error.  Deterministic: the same arguments give the same
 * bytes.  Uses the replayer's encoder (replay/read/encode.h) and the
 * recorder's chunked writer (tracer/writer.h), so it follows the format as
 * they do. */
#include "encode.h"
#include "format.h"
#include "writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static gr_writer *w;
static uint32_t nstr, ncode;
static uint64_t nrec;

static void die(const char *what)
{
    fprintf(stderr, "gentrace: %s\n", what);
    exit(2);
}

static uint32_t str(const char *s)
{
    if (gr_emit_string(w, s, strlen(s)) < 0)
        die("write failed");
    return ++nstr;
}

static uint32_t code(int kind, const char *qual, const char *file, uint64_t line)
{
    gr_code c = {.kind = (uint8_t)kind, .line = line};
    c.qualname = str(qual);
    c.file = file ? str(file) : 0;
    if (gr_emit_code(w, &c) < 0)
        die("write failed");
    return ++ncode;
}

static void rec(const gr_record *r, const uint32_t *stack)
{
    if (gr_emit_record(w, r, stack) < 0)
        die("write failed");
    nrec++;
}

static void ev(int tag, uint64_t gid, uint32_t c)
{
    gr_record r = {.tag = (uint8_t)tag, .tid = 1, .gid = gid, .code = c};
    rec(&r, NULL);
}

/* INSTR mode (0: off): the version goes up every `instr` switches; the
 * switches so far. */
static uint64_t instr, nsw;

/* A switch from `from` to `to`.  In INSTR mode, *from_ver and *to_ver are
 * the versions the greenlets' frames were last instrumented at (updated),
 * to_frames the target's Python frames. */
static void sw(uint64_t from, uint64_t to, uint64_t flags, uint64_t *from_ver, uint64_t *to_ver,
               uint64_t to_frames)
{
    gr_record r = {.tag = GR_SWITCH, .tid = 1, .gid = from, .target = to, .parent = 1,
                   .flags = GR_SW_PROFILE_OURS | GR_SW_PROFILE_SET | GR_SW_USE_TRACING_KNOWN |
                            GR_SW_INFERRED | flags,
                   .use_tracing = 1};
    if (instr) { /* 3.12+: no use_tracing */
        r.flags &= ~(uint64_t)GR_SW_USE_TRACING_KNOWN;
        r.use_tracing = 0;
    }
    rec(&r, NULL);
    if (!instr)
        return;
    uint64_t v = 1 + nsw++ / instr;
    *from_ver = v; /* running when the version went up: re-instrumented */
    gr_record in = {.tag = GR_INSTR, .tid = 1, .gid = to, .tracing = v, .parent = to_frames,
                    .use_tracing = to_frames && *to_ver != v ? to_frames : 0};
    *to_ver = v;
    rec(&in, NULL);
}

static uint64_t rng = 0x9E3779B97F4A7C15u;
static uint64_t rnd(uint64_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng % n;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 6)
        die("usage: gentrace OUT EVENTS [WORKERS [MAXDEPTH [INSTR]]]");
    uint64_t events = strtoull(argv[2], NULL, 10);
    size_t workers = argc > 3 ? strtoul(argv[3], NULL, 10) : 1000;
    size_t maxdepth = argc > 4 ? strtoul(argv[4], NULL, 10) : 40;
    instr = argc > 5 ? strtoull(argv[5], NULL, 10) : 0;
    if (!events || !workers || !maxdepth || maxdepth > 100)
        die("EVENTS, WORKERS >= 1 and 1 <= MAXDEPTH <= 100");
    w = gr_writer_open(argv[1], GR_STREAM_CANONICAL, 0);
    if (!w)
        die("cannot open the output");
    uint32_t k = str("python"), v = str(instr ? "3.12.1" : "3.11.2");
    gr_emit_meta(w, k, v);
    k = str("switches"), v = str("passive");
    gr_emit_meta(w, k, v);
    uint32_t mod = code(GR_CODE_PY, "<module>", "bench.py", 1);
    uint32_t run = code(GR_CODE_PY, "worker", "bench.py", 10);
    uint32_t fn[16];
    char name[32];
    for (int i = 0; i < 16; i++) {
        snprintf(name, sizeof name, "f%d", i);
        fn[i] = code(GR_CODE_PY, name, "bench.py", 20 + 3 * (uint64_t)i);
    }
    uint32_t swc = code(GR_CODE_C, "greenlet.switch", NULL, 0);
    uint32_t len = code(GR_CODE_C, "builtins.len", NULL, 0);
    uint32_t mk = code(GR_CODE_C, "greenreplay.mark", NULL, 0);
    uint32_t stop = code(GR_CODE_C, "greenreplay.stop", NULL, 0);
    uint32_t label = str("tick");

    gr_record r = {.tag = GR_THREAD, .tid = 1};
    rec(&r, NULL);
    r = (gr_record){.tag = GR_GREENLET, .tid = 1, .gid = 1, .flags = GR_GL_MAIN, .depth = 1};
    rec(&r, &mod);
    ev(GR_START, 1, 0);

    /* Workers: gid, bursts left, and their shadow (Python frames). */
    typedef struct wk {
        uint64_t gid;
        int bursts;
        int started;
        uint64_t ver; /* INSTR mode: the version its frames have */
    } wk;
    wk *pool = calloc(workers, sizeof *pool);
    if (!pool)
        die("out of memory");
    uint64_t next_gid = 2, greenlets = 1, hub_ver = 1;
    uint32_t stack[128];
    int draining = 0;
    size_t live = workers;
    for (size_t i = 0; i < workers; i++) {
        pool[i].gid = next_gid++;
        pool[i].bursts = 1 + (int)rnd(8);
        greenlets++;
    }
    for (size_t turn = 0; live; turn = (turn + 1) % workers) {
        wk *g = &pool[turn];
        if (!g->gid)
            continue;
        /* the hub switches to g */
        ev(GR_C_CALL, 1, swc);
        if (!g->started) {
            r = (gr_record){.tag = GR_GREENLET, .tid = 1, .gid = g->gid, .parent = 1};
            rec(&r, NULL);
            sw(1, g->gid, GR_SW_NEW, &hub_ver, &g->ver, 0);
            ev(GR_CALL, g->gid, run);
            g->started = 1;
        } else {
            sw(1, g->gid, 0, &hub_ver, &g->ver, 1);
            ev(GR_C_RETURN, g->gid, swc);
        }
        /* a burst: nested calls, C calls, sometimes a MARK */
        size_t depth = 1 + rnd(maxdepth), n = 0;
        stack[n++] = run;
        for (size_t d = 0; d < depth; d++) {
            uint32_t f = fn[rnd(16)];
            ev(GR_CALL, g->gid, f);
            stack[n++] = f;
            if (rnd(4) == 0) {
                ev(GR_C_CALL, g->gid, len);
                ev(GR_C_RETURN, g->gid, len);
            }
        }
        if (rnd(64) == 0) {
            ev(GR_C_CALL, g->gid, mk);
            r = (gr_record){.tag = GR_MARK, .tid = 1, .gid = g->gid, .label = label, .code = mk,
                            .flags = GR_MARK_PROFILE_OURS | GR_MARK_STATE_KNOWN,
                            .depth = (uint32_t)n};
            rec(&r, stack);
            ev(GR_C_RETURN, g->gid, mk);
        }
        while (n > 1)
            ev(GR_RETURN, g->gid, stack[--n]);
        if (--g->bursts > 0) { /* yield to the hub */
            ev(GR_C_CALL, g->gid, swc);
            sw(g->gid, 1, 0, &g->ver, &hub_ver, 1);
            ev(GR_C_RETURN, 1, swc);
            continue;
        }
        /* done: return, die, and be replaced unless draining */
        ev(GR_RETURN, g->gid, run);
        sw(g->gid, 1, GR_SW_ORIGIN_DEAD, &g->ver, &hub_ver, 1);
        ev(GR_DEAD, g->gid, 0);
        ev(GR_C_RETURN, 1, swc);
        if (!draining && nrec >= events)
            draining = 1;
        if (draining) {
            g->gid = 0;
            live--;
        } else {
            g->gid = next_gid++;
            g->bursts = 1 + (int)rnd(8);
            g->started = 0;
            greenlets++;
        }
    }
    ev(GR_C_CALL, 1, stop);
    ev(GR_STOP, 1, 0);
    uint32_t hub[2] = {mod, stop};
    r = (gr_record){.tag = GR_STACK, .tid = 1, .gid = 1, .flags = GR_STACK_RUNNING, .depth = 2};
    rec(&r, hub);
    uint64_t tr[4] = {nrec, 0, 0, GR_STOP_CALLED};
    if (gr_writer_finish(w, tr, 4) < 0)
        die("write failed");
    FILE *f = fopen(argv[1], "rb");
    long bytes = -1;
    if (f && fseek(f, 0, SEEK_END) == 0)
        bytes = ftell(f);
    if (f)
        fclose(f);
    printf("records %llu bytes %ld greenlets %llu\n", (unsigned long long)nrec, bytes,
           (unsigned long long)greenlets);
    free(pool);
    return 0;
}
