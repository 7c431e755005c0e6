/* format.h - constants and varint coding of the greenreplay trace format.
 *
 * Shared by the recorder (tracer/) and the replayer (replay/); pure C, no
 * Python.  The format itself is specified in docs/FORMAT.md; every constant
 * here names the section it comes from.
 */
#ifndef GR_FORMAT_H
#define GR_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/* §1 file header */
#define GR_MAGIC "GRRPLY\r\n"
#define GR_MAGIC_LEN 8
#define GR_HEADER_LEN 16
#define GR_VERSION_MAJOR 1
#define GR_VERSION_MINOR 4 /* 1.1: SWITCH/THROW carry a stack; HOOK.
                              1.2: compact records (§4.1).
                              1.3: PROFILER definitions, HOOK naming the
                              program's profiler (§4.2); compressed
                              records chunks (§2.1).
                              1.4: the target of a SWITCH_SAME/THROW_SAME
                              relative to the last switch's origin (§4.1) */
/* The side channel's minor (its header; a trace file keeps
 * GR_VERSION_MINOR): 1.3: 'W' and 'P' chunks are written during the run
 * and interleave with 'T' chunks (§5); a 1.2 side channel has them in the
 * order 'T'* 'W'* 'P'*. */
#define GR_SIDE_MINOR 3
#define GR_STREAM_CANONICAL 'C'
#define GR_STREAM_SIDE 'S'

/* §2 chunks */
#define GR_CHUNK_HEADER_LEN 9
#define GR_CHUNK_MAX (16u * 1024u * 1024u) /* bytes of payload */
#define GR_CHUNK_RECORDS 'E'
#define GR_CHUNK_TIMES 'T'
#define GR_CHUNK_SWITCHES 'W' /* side channel: per-switch lock waits */
#define GR_CHUNK_SAMPLES 'P'  /* side channel: sampler samples */
#define GR_CHUNK_TRAILER 'Z'
/* §2.1 compressed chunks: the tag of a records chunk with bit 7 set; the
 * payload is the u32 size of the records, then one zstd frame holding them. */
#define GR_CHUNK_COMPRESSED 0x80
#define GR_CHUNK_RECORDS_Z ((char)(GR_CHUNK_RECORDS | GR_CHUNK_COMPRESSED))
#define GR_ZHEADER_LEN 4
/* The zstd level the recorder writes (docs/FORMAT.md §2.1 says why 1). */
#define GR_ZSTD_LEVEL 1

/* §2 trailer: reason recording ended */
enum gr_stop_reason {
    GR_STOP_CALLED = 1,
    GR_STOP_EXIT = 2,
    GR_STOP_WRITE_ERROR = 3,
    GR_STOP_SIZE_CAP = 4,  /* records past the size cap were dropped */
    GR_STOP_SNAPSHOT = 5,  /* written while recording went on (flush) */
    GR_STOP_SIGNAL = 6,    /* a fatal signal (SIGSEGV, SIGABRT, ...): trailer field 6 */
};

/* §3 definitions and §4 indexed records */
enum gr_tag {
    GR_STRING = 0x01,
    GR_CODE = 0x02,
    GR_META = 0x03,
    GR_GAP = 0x04,
    GR_PROFILER = 0x05, /* format 1.3: one of the program's profilers (§3) */

    GR_FIRST_INDEXED = 0x10,
    GR_THREAD = 0x10,
    GR_GREENLET = 0x11,
    GR_CALL = 0x12,
    GR_RETURN = 0x13,
    GR_C_CALL = 0x14,
    GR_C_RETURN = 0x15,
    GR_C_EXCEPTION = 0x16,
    GR_SWITCH = 0x17,
    GR_THROW = 0x18,
    GR_MARK = 0x19,
    GR_DEAD = 0x1A,
    GR_START = 0x1B,
    GR_STOP = 0x1C,
    GR_STACK = 0x1D,
    GR_INSTR = 0x1E,
    GR_HOOK = 0x1F,
    GR_LAST_INDEXED = 0x1F,
};

/* §4.1 compact records (format 1.2).  Each one stands for a CALL, RETURN,
 * C_CALL, C_RETURN, C_EXCEPTION, SWITCH or THROW whose thread (and
 * greenlet, or switch origin) is the chunk's context: see gr_chunk_ctx. */
#define GR_CODE_SLOTS 48        /* code cache slots per chunk: slot = code % 48 */
#define GR_CACHED_BASE 0x20     /* 0x20 + k * 48 + slot: one byte, k = 0 CALL,
                                   1 RETURN, 2 C_CALL, 3 C_RETURN (0x20..0xDF) */
#define GR_CACHED_LAST (GR_CACHED_BASE + 4 * GR_CODE_SLOTS - 1)
#define GR_CTX_EVENT 0xE0       /* 0xE0 + (kind - CALL): CALL..C_EXCEPTION, `code` follows */
#define GR_CTX_SWITCH 0xE5      /* target parent state tracing use_tracing stack */
#define GR_CTX_THROW 0xE6
#define GR_CTX_SWITCH_SAME 0xE7 /* target parent stack: state, tracing, use_tracing
                                   as the chunk's last SWITCH/THROW; 1.4: the
                                   target as gr_zigzag(target, sw_origin) */
#define GR_CTX_THROW_SAME 0xE8
#define GR_CTX_LAST 0xE8
/* §4.2 (format 1.3): a HOOK of the profile slot naming the program's
 * profiler it installed or removed and the Python frame that changed it:
 * the HOOK fields, then `profiler` id and `frame` code id.  Decoded as a
 * HOOK (gr_record.target = profiler, .use_tracing = frame). */
#define GR_HOOK_PROF 0xE9

/* Per-chunk encoding state (docs/FORMAT.md §4.1), the same in the writer and
 * the reader.  All zero at the start of every chunk, so a chunk decodes
 * without the ones before it (ring mode drops old chunks).  Updated by every
 * CALL..C_EXCEPTION and SWITCH/THROW record, compact or not; other records
 * leave it alone. */
typedef struct gr_chunk_ctx {
    uint64_t tid, gid;       /* context: the thread and running greenlet of the
                                last event or switch (its target); tid 0 none */
    uint64_t sw_state, sw_tracing, sw_use_tracing; /* of the last SWITCH/THROW */
    uint64_t sw_origin;      /* the origin of the last SWITCH/THROW (1.4) */
    int sw_known;            /* a SWITCH/THROW was seen in this chunk */
    uint32_t code[GR_CODE_SLOTS]; /* code cache: last code id of each slot, 0 none */
} gr_chunk_ctx;

/* §3 CODE kind */
#define GR_CODE_PY 0
#define GR_CODE_C 1

/* §4 GREENLET flags */
#define GR_GL_MAIN 0x1u
#define GR_GL_SUSPENDED 0x2u
#define GR_GL_CUT 0x4u

/* §4 SWITCH/THROW state flags */
#define GR_SW_PROFILE_OURS 0x1u
#define GR_SW_PROFILE_SET 0x2u
#define GR_SW_USE_TRACING_KNOWN 0x4u
#define GR_SW_ORIGIN_DEAD 0x8u
#define GR_SW_INFERRED 0x10u   /* passive mode: seen, not reported by greenlet */
#define GR_SW_AT_MARK 0x20u    /* seen at a MARK (state read directly), not at a profile event */
#define GR_SW_CUT 0x40u        /* its stack was cut at the cap */
#define GR_SW_REAL_STACK 0x100u /* the stack is the target's real stack there
                                     (a ground-truth point; else depth 0) */
#define GR_SW_CONTINUED 0x200u /* passive mode: the target resumed in the frame
                                  it was seen suspended in, and nothing ran
                                  unseen on its thread since: its stack is the
                                  one its records give (depth 0, no ground
                                  truth needed; FORMAT.md §4) */
#define GR_SW_UNSEEN 0x400u    /* passive mode: the target ran with no event at
                                  all, found from the origin's C_RETURN or
                                  C_EXCEPTION of its switch()/throw(): its
                                  stack is where it is suspended now, and a
                                  SWITCH back to the origin follows */
#define GR_SW_NEW 0x80u        /* the target is a greenlet created while recording,
                                  first seen now: every frame of it should have
                                  been reported */

/* §4 HOOK slots and actions (docs/FORMAT.md §4, HOOK) */
enum gr_hook_slot {
    GR_HOOK_PROFILE = 1,  /* the thread's profile function slot */
    GR_HOOK_TRACE = 2,    /* the thread's trace function slot */
    GR_HOOK_GREENLET = 3, /* the thread's greenlet trace callback (greenlet.settrace);
                             `during` is the callback's code id (0: a C callable) */
};
enum gr_hook_action {
    GR_HOOK_SET = 1,      /* the program installed its own function there */
    GR_HOOK_CLEARED = 2,  /* the program cleared the slot */
    GR_HOOK_RESTORED = 3, /* the program put back what it saw before its own */
};
/* HOOK `who`: what the subject (the reference profiler) is after it. */
#define GR_HOOK_SUBJECT_ON 0x1u  /* the subject profiler is present on the thread */
#define GR_HOOK_CHAINED 0x2u     /* the observer chains the program's function */
#define GR_HOOK_UNANNOUNCED 0x4u /* the change came without the audit event
                                    sys.setprofile (a C extension wrote the
                                    thread state directly, as yappi does for
                                    threads); found at a MARK: the recorder's
                                    own events between the thread's previous
                                    record and this HOOK may be lost */
#define GR_HOOK_RAN 0x8u         /* the thread ran with the program's function
                                    alone between the change (announced, but
                                    on another thread, or on this one before
                                    its next event) and this HOOK: C calls it
                                    made there (c_call, c_return) may be
                                    missing; Python calls and returns are not
                                    (the recorder's trace foothold gets them
                                    first) */
#define GR_HOOK_BY_OTHER 0x10u  /* another thread made the change (3.12+
                                    threading.setprofile_all_threads,
                                    PyEval_SetProfileAllThreads): its tid is
                                    who >> GR_HOOK_BY_SHIFT, and `during` is
                                    the C call in progress there, not here */
#define GR_HOOK_BY_SHIFT 8
#define GR_HOOK_IN_TRACE 0x20u  /* made inside the program's trace function
                                    while it handled an event the
                                    interpreter does not name (not 3.11):
                                    a call or return it handled went to the
                                    profile slot after it returned, to what
                                    the change left there, not the recorder */
#define GR_HOOK_BEFORE 0x40u    /* the program's function was in the slot
                                    before start(): kept, and named at
                                    start() (or at the thread's first
                                    records), not installed then */

/* §3 PROFILER kind (format 1.3): what the program's profiler is, where the
 * recorder knows the tool. */
enum gr_profiler_kind {
    GR_PROF_UNKNOWN = 0,      /* a C profile function of another tool */
    GR_PROF_CPROFILE = 1,     /* cProfile / _lsprof.Profiler */
    GR_PROF_PROFILE = 2,      /* the pure-Python profile module */
    GR_PROF_YAPPI = 3,
    GR_PROF_COVERAGE_C = 4,   /* coverage's CTracer */
    GR_PROF_COVERAGE_PY = 5,  /* coverage's PyTracer */
    GR_PROF_LINE_PROFILER = 6,
    GR_PROF_PYINSTRUMENT = 7,
    GR_PROF_FUNCTION = 8,     /* a plain Python function (sys.setprofile(f)) */
    GR_PROF_CALLABLE = 9,     /* another Python callable (a bound method, an
                                 object with __call__) */
    GR_PROF_KINDS = 10
};

/* §4 MARK flags */
#define GR_MARK_CUT 0x1u
#define GR_MARK_PROFILE_OURS 0x2u
#define GR_MARK_STATE_KNOWN 0x4u    /* bit 3 is meaningful (3.9-3.11) */
#define GR_MARK_TRACING_OFF 0x8u    /* this greenlet runs with use_tracing 0
                                       while its thread has a profile function */
#define GR_MARK_IN_CALLBACK 0x10u   /* called inside a trace/profile callback
                                       (tstate->tracing > 0) */

/* §4 STACK flags */
#define GR_STACK_RUNNING 0x1u
#define GR_STACK_CUT 0x2u
#define GR_STACK_THREAD_ENDED 0x4u /* its thread has ended: abandoned */

/* Depth cap for every recorded stack (GREENLET seed, MARK, STACK). */
#define GR_STACK_CAP 128

/* Longest encoding of one varint, bytes. */
#define GR_VARINT_MAX 10

/* Encode v as LEB128 at p; returns the byte after the last one written.
 * The caller guarantees GR_VARINT_MAX bytes of room. */
static inline uint8_t *gr_put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Decode one varint from *p, reading no byte at or past end.
 * On success stores the value in *out, advances *p, returns 0.
 * Returns -1 if the input ends inside the varint, -2 if it is longer than
 * GR_VARINT_MAX bytes or overflows 64 bits; *p is left unchanged then. */
static inline int gr_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    const uint8_t *q = *p;
    uint64_t v = 0;
    for (unsigned shift = 0, i = 0; i < GR_VARINT_MAX; i++, shift += 7) {
        if (q >= end)
            return -1;
        uint8_t b = *q++;
        if (i == GR_VARINT_MAX - 1 && b > 1)
            return -2;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            *p = q;
            return 0;
        }
    }
    return -2;
}

/* A SWITCH_SAME/THROW_SAME's target (format 1.4), relative to the origin
 * of the chunk's last switch (base): the signed difference, zigzag coded
 * (0, -1, 1, -2 ... as 0, 1, 2, 3 ...).  A hub switching round-robin to
 * its greenlets in the order they were first seen writes 1 for each switch
 * to the next one and 0 for each switch back, whatever their ids, so its
 * records repeat with the period of one round trip (docs/FORMAT.md §4.1). */
static inline uint64_t gr_zigzag(uint64_t target, uint64_t base)
{
    uint64_t d = target - base;
    return (d << 1) ^ (uint64_t)-(int64_t)(d >> 63);
}
static inline uint64_t gr_unzigzag(uint64_t z, uint64_t base)
{
    return base + ((z >> 1) ^ (uint64_t)-(int64_t)(z & 1));
}

/* Encode the event record tag (GR_CALL..GR_C_EXCEPTION) of thread tid,
 * greenlet gid, code id `code` at p in its shortest form for context c,
 * and update c.  Writes at most 1 + 3 * GR_VARINT_MAX bytes, never more
 * than the full form; returns the byte after the record. */
static inline uint8_t *gr_enc_event_slot(gr_chunk_ctx *c, uint8_t *p, int tag, uint64_t tid,
                                         uint64_t gid, uint32_t code, unsigned slot);
static inline uint8_t *gr_enc_event(gr_chunk_ctx *c, uint8_t *p, int tag, uint64_t tid,
                                    uint64_t gid, uint32_t code)
{
    return gr_enc_event_slot(c, p, tag, tid, gid, code, code % GR_CODE_SLOTS);
}

/* gr_enc_event with the code's cache slot given (slot == code %
 * GR_CODE_SLOTS, computed once per code id by the recorder's hot path). */
static inline uint8_t *gr_enc_event_slot(gr_chunk_ctx *c, uint8_t *p, int tag, uint64_t tid,
                                         uint64_t gid, uint32_t code, unsigned slot)
{
    unsigned k = (unsigned)(tag - GR_CALL);
    if (tid == c->tid && gid == c->gid) {
        if (c->code[slot] == code && k < 4 && code) {
            *p++ = (uint8_t)(GR_CACHED_BASE + k * GR_CODE_SLOTS + slot);
            return p;
        }
        *p++ = (uint8_t)(GR_CTX_EVENT + k);
    } else {
        *p++ = (uint8_t)tag;
        p = gr_put_varint(p, tid);
        p = gr_put_varint(p, gid);
        c->tid = tid;
        c->gid = gid;
    }
    c->code[slot] = code;
    return gr_put_varint(p, code);
}

/* Encode the fields of a SWITCH or THROW (tag) before its stack: f[] =
 * tid, origin, target, parent, state flags, tracing, use_tracing; update c.
 * At most 1 + 7 * GR_VARINT_MAX bytes, never more than the full form. */
static inline uint8_t *gr_enc_switch_head(gr_chunk_ctx *c, uint8_t *p, int tag, const uint64_t *f)
{
    int thr = tag == GR_THROW;
    if (f[0] == c->tid && f[1] == c->gid) {
        int same = c->sw_known && f[4] == c->sw_state && f[5] == c->sw_tracing &&
                   f[6] == c->sw_use_tracing;
        *p++ = (uint8_t)(same ? (thr ? GR_CTX_THROW_SAME : GR_CTX_SWITCH_SAME)
                              : (thr ? GR_CTX_THROW : GR_CTX_SWITCH));
        p = gr_put_varint(p, same ? gr_zigzag(f[2], c->sw_origin) : f[2]);
        p = gr_put_varint(p, f[3]);
        if (!same)
            for (int i = 4; i < 7; i++)
                p = gr_put_varint(p, f[i]);
    } else {
        *p++ = (uint8_t)tag;
        for (int i = 0; i < 7; i++)
            p = gr_put_varint(p, f[i]);
    }
    c->tid = f[0];
    c->gid = f[2];
    c->sw_origin = f[1];
    c->sw_state = f[4];
    c->sw_tracing = f[5];
    c->sw_use_tracing = f[6];
    c->sw_known = 1;
    return p;
}

/* Little-endian fixed-width helpers for headers. */
static inline void gr_put_u32le(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline uint32_t gr_get_u32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline void gr_put_u16le(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8);
}
static inline uint16_t gr_get_u16le(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

/* Name of an indexed record kind for text output ("CALL"), or NULL. */
const char *gr_tag_name(int tag);

/* Short name of a PROFILER kind ("cprofile", ...); "?" when unknown. */
const char *gr_profiler_kind_name(uint64_t kind);

/* Fill the 16-byte file header for the given stream kind into out. */
void gr_format_header(uint8_t out[GR_HEADER_LEN], char stream);

#endif
