/* reader.h - read a greenreplay trace file (docs/FORMAT.md), whole into
 * memory or one chunk at a time (streaming), and decode it: header, chunks (CRC-checked), definitions, indexed records and
 * trailer; and the optional side channel (`X.grt.times`).
 *
 * Two kinds of bad input are distinguished:
 *   - corrupt (bad magic, unknown major, CRC mismatch, unknown chunk or
 *     record tag, oversize chunk, varint over 10 bytes, undefined id, tid 0,
 *     depth over the cap, record past its chunk end, data after the
 *     trailer): reading fails with GR_READ_CORRUPT and a one-line message
 *     naming the file and the byte offset of the offending chunk or record;
 *   - truncated (the file ends inside a chunk, or there is no 'Z' trailer):
 *     not an error; every record of the complete chunks is returned and
 *     `truncated_at` is the byte offset where the valid part ends.
 * The reader never reads out of bounds and frees everything in
 * gr_trace_free whatever the outcome.
 */
#ifndef GR_READER_H
#define GR_READER_H

#include "format.h"

#include <stddef.h>
#include <stdint.h>

/* Outcome of reading a file. */
enum gr_read_status {
    GR_READ_OK = 0,      /* complete or truncated */
    GR_READ_CORRUPT = 1, /* the file is not a valid trace */
    GR_READ_IO = 2,      /* could not read the file, or out of memory */
};

/* What exactly was wrong (err.kind), for callers and tests. */
enum gr_err_kind {
    GR_E_NONE = 0,
    GR_E_IO,          /* open/read failed (errno text in the message) */
    GR_E_NOMEM,       /* out of memory while decoding */
    GR_E_MAGIC,       /* bad magic (offset 0) */
    GR_E_MAJOR,       /* unknown major version (offset 8) */
    GR_E_STREAM,      /* wrong stream kind for this reader (offset 12) */
    GR_E_CHUNK_TAG,   /* unknown chunk tag (offset of the chunk) */
    GR_E_CHUNK_LEN,   /* payload length over GR_CHUNK_MAX (chunk) */
    GR_E_CRC,         /* checksum mismatch (chunk) */
    GR_E_RECORD_TAG,  /* unknown record tag (record) */
    GR_E_VARINT,      /* varint longer than 10 bytes or over 64 bits (record) */
    GR_E_PAST_CHUNK,  /* record or string runs past the end of its chunk (record) */
    GR_E_UNDEFINED,   /* string/code id 0, or not defined yet (record) */
    GR_E_VALUE,       /* impossible value: tid 0, depth over the cap, code kind (record) */
    GR_E_TRAILER,     /* malformed trailer, or data after it (chunk / offset) */
    GR_E_ZSTD,        /* compressed chunk that is not one zstd frame of the
                         size it claims (chunk; FORMAT §2.1) */
};

/* Error of a failed read.  offset is GR_NO_OFFSET when not applicable. */
#define GR_NO_OFFSET UINT64_MAX
typedef struct gr_error {
    int status;            /* enum gr_read_status */
    enum gr_err_kind kind;
    uint64_t offset;       /* byte offset in the file */
    char msg[400];         /* one line, no newline: "NAME: offset N: what" */
} gr_error;

/* A STRING definition: bytes inside the trace's file buffer, or (streamed
 * trace) in the trace's string storage (not NUL-terminated, may contain
 * any byte). */
typedef struct gr_str {
    const uint8_t *p;
    uint32_t len;
} gr_str;

/* A CODE definition (§3). */
typedef struct gr_code {
    uint8_t kind;      /* GR_CODE_PY or GR_CODE_C */
    uint32_t qualname; /* string id, >= 1 */
    uint32_t file;     /* string id, 0 none */
    uint64_t line;     /* firstlineno, 0 for C */
} gr_code;

/* A PROFILER definition (§3, format 1.3): one of the program's own
 * profilers, named by HOOK records of the profile slot (gr_record.target). */
typedef struct gr_profdef {
    uint8_t kind;      /* enum gr_profiler_kind (GR_PROF_KINDS and up: unknown) */
    uint32_t type;     /* string id of its type's name, 0 none */
    uint32_t code;     /* code id of its Python function, 0 none */
} gr_profdef;

/* A META definition (§3): string ids, and where it is in the file: the
 * number of indexed records before it (the index the next record gets),
 * the same whether the trace is loaded or streamed (dump uses it to place
 * META lines written after the first record, docs/FORMAT.md §6.1). */
typedef struct gr_meta {
    uint32_t key, value;
    uint64_t at;
} gr_meta;

/* One GAP definition (§3): n indexed records left out (ring mode) before
 * the record with index `at` (the number of indexed records before it in
 * the file, as for gr_meta). */
typedef struct gr_gap {
    uint64_t at, n;
} gr_gap;

/* One decoded indexed record (§4).  Fields a kind does not have are 0. */
typedef struct gr_record {
    uint64_t index;       /* 0-based index among indexed records */
    uint64_t offset;      /* file offset of its tag byte; in a compressed
                             chunk (FORMAT §2.1), its offset in the chunk's
                             decompressed records */
    uint64_t tid;         /* thread id, >= 1 */
    uint64_t gid;         /* greenlet id; SWITCH/THROW: origin */
    uint64_t target;      /* SWITCH/THROW: target gid */
    uint64_t parent;      /* GREENLET: parent; SWITCH/THROW: parent of target;
                             INSTR: frames walked */
    uint64_t flags;       /* GREENLET, SWITCH/THROW state, MARK, STACK */
    uint64_t tracing;     /* SWITCH/THROW; INSTR: instrumentation version */
    uint64_t use_tracing; /* SWITCH/THROW; INSTR: stale frames */
    uint32_t code;        /* CALL..C_EXCEPTION; MARK: the `mark` code id;
                             HOOK: `during`.  A HOOK of the profile slot
                             (1.3, §4.2) has its profiler id in `target` and
                             its frame's code id in `use_tracing` */
    uint32_t label;       /* MARK: string id */
    uint32_t depth;       /* GREENLET, MARK, STACK: number of code ids */
    uint32_t len;         /* encoded size in bytes */
    size_t stack;         /* index of the first code id in gr_trace.stacks */
    uint8_t tag;          /* enum gr_tag, GR_THREAD..GR_STACK */
} gr_record;

/* The trailer (§2). */
typedef struct gr_trailer {
    uint64_t events, dropped, errors, reason;
    uint64_t replaced; /* optional 5th field: strings cut or re-encoded (0 when absent) */
    uint64_t signal;   /* optional 6th field: the fatal signal (reason crash), else 0 */
} gr_trailer;

/* A decoded trace.  Everything is owned by the struct and released by
 * gr_trace_free.  Ids index the tables directly: strings[id] for id in
 * 1..nstrings (entry 0 is unused), likewise codes. */
typedef struct gr_trace {
    char *name;           /* file name used in messages */
    uint8_t *data;        /* the whole file */
    size_t size;          /* its size in bytes */
    uint16_t minor;       /* minor version from the header */
    gr_str *strings;      /* [nstrings + 1] */
    size_t nstrings;
    gr_code *codes;       /* [ncodes + 1] */
    size_t ncodes;
    gr_profdef *profilers; /* [nprofilers + 1] (format 1.3) */
    size_t nprofilers;
    gr_meta *metas;       /* in file order */
    size_t nmetas;
    uint64_t gap;         /* records dropped before these by ring mode
                             (sum of GAP definitions, §3; a GAP taking
                             it over UINT64_MAX is GR_E_VALUE) */
    struct {              /* the GAP definitions (ring mode) */
        uint64_t head;    /* the part of gap defined before the first
                             indexed record (all of it as the recorder
                             writes them; dump's header, FORMAT §6.1) */
        gr_gap *list;     /* each GAP definition, in file order (edit
                             writes them back where they were); loaded
                             traces only, none when streamed */
        size_t n;
    } gap_defs;
    gr_record *recs;      /* indexed records, recs[i].index == i */
    size_t nrecs;
    uint32_t *stacks;     /* pool of code ids referenced by records */
    size_t nstacks;
    int has_trailer;      /* a 'Z' chunk was read */
    uint64_t zchunks;     /* compressed records chunks read (FORMAT §2.1):
                             edit compresses its output when there are any */
    gr_trailer trailer;
    int truncated;        /* file ends inside a chunk or lacks a trailer */
    uint64_t truncated_at; /* byte offset where the valid part ends */
    gr_error err;         /* set when a read fails */
    struct {              /* capacities of the arrays above (internal) */
        size_t profilers, strings, codes, metas, gaps, recs, stacks;
    } cap;
    /* Iteration (gr_trace_open / gr_trace_next_chunk).  A loaded trace
     * (gr_trace_load, gr_trace_parse) holds every record: first is 0.  A
     * streamed one holds the records of the last chunk decoded: recs[0] is
     * record `first`, and stacks only theirs. */
    uint64_t first;       /* index of recs[0] */
    int streaming;        /* each chunk replaces the previous one's records */
    int done;             /* no chunk left: trailer, truncation or error */
    struct {              /* reading a streamed trace (internal) */
        size_t pos;       /* file offset of the next chunk */
        void *file;       /* FILE * */
        uint8_t *buf;     /* chunk buffer */
        size_t cap_buf;
        uint8_t **blocks; /* string storage */
        size_t nblocks, cap_blocks, block_left;
        uint8_t *block_at; /* free part of the last block */
        size_t batch;     /* at most this many records per
                             gr_trace_next_chunk call, 0 a whole chunk
                             (gr_trace_set_batch) */
        void *zctx;       /* ZSTD_DCtx, made at the first compressed chunk */
        uint8_t *zbuf;    /* a streamed trace's decompressed chunk */
        size_t cap_zbuf;
    } io;
    struct {              /* the chunk being decoded when a batch stopped
                             inside it (internal) */
        int rd_open;      /* records of it remain */
        const uint8_t *rd_p, *rd_end, *rd_base; /* cursor, end, payload start */
        uint64_t rd_data; /* file offset of its payload (0 when compressed) */
        uint64_t rd_zchunk; /* compressed (FORMAT §2.1): file offset of the
                               chunk, else GR_NO_OFFSET */
        gr_chunk_ctx rd_ctx; /* its encoding state at the cursor (FORMAT §4.1) */
    } partial;
} gr_trace;

/* Read and decode the trace file at path into *t (which need not be
 * initialised).  Returns GR_READ_OK (t->truncated tells whether the file
 * was cut short), GR_READ_CORRUPT or GR_READ_IO; on failure t->err holds
 * the message and the records decoded before the problem stay in t.  The
 * caller must call gr_trace_free(t) in every case. */
int gr_trace_load(gr_trace *t, const char *path);

/* Same, decoding n bytes at data (copied; the caller keeps its buffer);
 * name is used in messages. */
int gr_trace_parse(gr_trace *t, const char *name, const void *data, size_t n);

/* Release everything *t owns and zero it.  Safe on a zeroed struct. */
void gr_trace_free(gr_trace *t);

/* ---- streaming ------------------------------------------------------
 * A trace read one chunk at a time (docs/ARCHITECTURE.md): memory is the
 * definitions (strings, code identities, metas: they grow with the
 * program's code, not with its run) plus one chunk (at most 16 MiB of
 * payload, 64 KiB as the recorder writes them) and its decoded records.
 *
 *     gr_trace t;
 *     if (gr_trace_open(&t, path) == GR_READ_OK)
 *         while (gr_trace_next_chunk(&t) > 0)
 *             for (size_t i = 0; i < t.nrecs; i++) use(&t.recs[i]);
 *     if (t.err.status) report(t.err.msg);
 *     gr_trace_free(&t);
 *
 * gr_trace_load and gr_trace_parse are this loop over a file read whole,
 * keeping every chunk's records. */

/* Open the trace at path for streaming into *t (need not be initialised):
 * reads and checks its header only.  Returns GR_READ_OK (a file cut inside
 * its header is truncated: t->truncated, no chunk follows), or
 * GR_READ_CORRUPT / GR_READ_IO with t->err set.  gr_trace_free(t) in every
 * case. */
int gr_trace_open(gr_trace *t, const char *path);

/* Decode the next chunk.  Streaming: the previous chunk's records and
 * stacks are released first, then t->recs[0..nrecs) are the new chunk's
 * (record indices t->first...).  Loaded: records accumulate.  Definitions
 * always accumulate.  Returns 1 when a records chunk was decoded (it may
 * hold no indexed record), 0 at the end (trailer read, or the trace is
 * truncated: t->truncated, t->truncated_at), -1 on an error (t->err; the
 * records of the chunk decoded before the bad one stay). */
int gr_trace_next_chunk(gr_trace *t);

/* Decode a streamed trace in batches of at most n records (0: a whole
 * chunk per call, the default): each gr_trace_next_chunk call then holds
 * n records or fewer of one chunk, the rest of that chunk coming with the
 * next calls (returning 1), so that a consumer's records stay in the CPU's
 * cache (a 64 KiB chunk of one-byte records is about 60,000 records of
 * about 100 bytes each).  Record indices, definitions and errors are the
 * same; an error inside a chunk ends the reading at the batch that holds
 * the bad record (the batches before it were returned).  A definition
 * that follows records in its chunk comes with the batch it is in (not
 * before the chunk's first record).  Takes effect from the next
 * gr_trace_next_chunk call; no effect on a loaded trace. */
static inline void gr_trace_set_batch(gr_trace *t, size_t n)
{
    t->io.batch = n;
}

/* Number of indexed records read so far (all of them after the end). */
static inline uint64_t gr_trace_count(const gr_trace *t)
{
    return t->first + t->nrecs;
}

/* Record number i if *t still holds it (always for a loaded trace; for a
 * streamed one, only the current chunk's), else NULL. */
static inline const gr_record *gr_trace_record(const gr_trace *t, uint64_t i)
{
    return i >= t->first && i - t->first < t->nrecs ? &t->recs[i - t->first] : NULL;
}

/* The code ids of r's stack (r->depth of them, outermost first); NULL
 * when r has none (the pool may be empty). */
static inline const uint32_t *gr_record_stack(const gr_trace *t, const gr_record *r)
{
    return r->depth ? t->stacks + r->stack : NULL;
}

/* String id -> bytes and length; NULL (and *len = 0) for an id out of range. */
const uint8_t *gr_trace_string(const gr_trace *t, uint64_t id, size_t *len);

/* The value of the first META `key` as a NUL-terminated copy in buf (at
 * most n - 1 bytes kept), or NULL without one. */
const char *gr_trace_meta(const gr_trace *t, const char *key, char *buf, size_t n);

/* Code id -> definition; NULL for an id out of range. */
const gr_code *gr_trace_code(const gr_trace *t, uint64_t id);

/* The side channel (§5).  'T': one nanosecond delta per indexed record.
 * With the reference sampler (§5, 'W' and 'P' chunks, written at stop()):
 * one gr_switch_wait per SWITCH/THROW record and one gr_sample per
 * sample, each sample owning `got` consecutive gr_sample_stack entries in
 * `stacks`, each stack owning `depth` consecutive code ids in `codes`.
 *
 * Corrupt (GR_READ_CORRUPT, offset of the entry): an entry that runs past
 * the end of its chunk (a 'W' entry, a sample header and each sample stack
 * are written whole into one chunk; a sample's stacks may continue in the
 * next 'P' chunk), a varint over 10 bytes, in a side channel of minor
 * version 2 or less chunks out of the order 'T'* 'W'* 'P'* (from 1.3 on,
 * the recorder writes 'W' and 'P' chunks during the run, between 'T'
 * chunks), a sample's stacks interrupted by another chunk kind or
 * by the trailer, and impossible values: contended above 1, idx_begin
 * above idx_end, frames_under_lock above frames, nstacks above greenlets,
 * a stack's gid 0, a code id above 2^32-1, a trailer with exactly two
 * fields.  Truncated (file cut inside a chunk, no trailer): everything
 * before is kept; the last sample may have fewer stacks than announced
 * (got < nstacks).  Ids are not checked against the trace here (the
 * reader of the side channel does not know it): see stall.h. */

/* One 'W' entry: the sampler registry update of a SWITCH/THROW record. */
typedef struct gr_switch_wait {
    uint64_t index;       /* index of the SWITCH/THROW record */
    uint64_t wait_ns;     /* time the callback waited for the registry lock */
    uint64_t callback_ns; /* the switch callback's total time */
    uint64_t offset;      /* file offset of the entry */
    uint8_t contended;    /* 1 if the lock was busy */
} gr_switch_wait;

/* One stack of a sample: a suspended greenlet as the sampler read it. */
typedef struct gr_sample_stack {
    uint64_t gid;
    uint32_t depth;       /* code ids, outermost first; 0 = code never seen */
    size_t codes;         /* index of the first one in gr_times.codes */
    uint64_t offset;      /* file offset of the stack */
} gr_sample_stack;

/* One 'P' entry (the ten header fields of §5, then its stacks). */
typedef struct gr_sample {
    uint64_t idx_begin;   /* records written when phase 1 began */
    uint64_t idx_end;     /* records written when unwinding ended */
    uint64_t t_ns;        /* ns since start() */
    uint64_t hold_ns;     /* registry lock hold (seqlock: the copy) */
    uint64_t greenlets;   /* registry slots copied */
    uint64_t frames;      /* frames read */
    uint64_t frames_under_lock; /* frames read while holding the lock */
    uint64_t failed;      /* failed reads (stale pointers) */
    uint64_t torn;        /* seqlock copies retried */
    uint64_t nstacks;     /* stacks announced */
    uint64_t got;         /* stacks present (< nstacks only when truncated) */
    size_t stack;         /* index of the first one in gr_times.stacks */
    uint64_t offset;      /* file offset of the sample header */
} gr_sample;

typedef struct gr_times {
    char *name;
    uint64_t *dt;         /* [n] ns since the previous indexed record */
    size_t n;
    size_t cap;           /* internal */
    gr_switch_wait *waits; /* [nwaits] 'W' entries in file order */
    size_t nwaits;
    gr_sample *samples;   /* [nsamples] 'P' entries in file order */
    size_t nsamples;
    gr_sample_stack *stacks; /* [nstacks] pool of the samples' stacks */
    size_t nstacks;
    uint32_t *codes;      /* [ncodes] pool of the stacks' code ids */
    size_t ncodes;
    size_t sampler_chunks; /* 'W' and 'P' chunks read */
    int has_trailer;
    uint64_t count;       /* trailer's first field: number of 'T' entries */
    int has_sampler_trailer; /* the trailer has the two sampler fields */
    uint64_t trailer_switches, trailer_samples; /* and their values */
    int truncated;
    uint64_t truncated_at;
    gr_error err;
    /* capacities (internal) */
    size_t cap_waits, cap_samples, cap_stacks, cap_codes;
    int phase;            /* internal: last chunk kind ('T' 0, 'W' 1, 'P' 2) */
    uint16_t minor;       /* minor version from the header: below 3, the
                             chunk kinds come in the order 'T' 'W' 'P';
                             from 3 on (GR_SIDE_MINOR) they may interleave */
    /* Streaming (gr_times_open / gr_times_next_chunk): 'T' entries are
     * counted in n, and dt[0..ndt) holds those of the last 'T' chunk,
     * dt[0] being entry number first_dt; waits[] holds the last
     * 'W' chunk's entries, waits[0] being entry number first_wait of the
     * file; samples[] the samples of the last 'P' chunk, samples[0] being
     * sample number first_sample (a sample whose stacks continue in the
     * next chunk is carried over with the stacks read so far). */
    int streaming;
    int done;             /* no chunk left: trailer, truncation or error */
    char last_tag;        /* tag of the chunk the last next_chunk decoded */
    uint64_t first_wait, first_sample, first_dt;
    size_t ndt;
    struct {              /* internal */
        size_t pos;       /* file offset of the next chunk */
        void *file;       /* FILE * */
        uint8_t *buf;     /* chunk buffer */
        size_t cap_buf;
    } io;
} gr_times;

/* Whether tm holds data of the sampler: 'W'/'P' chunks or a trailer with
 * the sampler's counts. */
static inline int gr_times_has_sampler(const gr_times *tm)
{
    return tm->sampler_chunks > 0 || tm->has_sampler_trailer;
}

/* The code ids of stack s (s->depth of them, outermost first; NULL for
 * an empty stack when the file holds no code id at all). */
static inline const uint32_t *gr_sample_codes(const gr_times *tm, const gr_sample_stack *s)
{
    return tm->codes ? tm->codes + s->codes : NULL;
}

/* Read a side-channel file (stream 'S'; 'T', 'W', 'P' chunks; trailer
 * with the entry count and, with the sampler, the switch and sample
 * counts) into *tm.  Same status and truncation rules as gr_trace_load; the
 * caller must call gr_times_free(tm) in every case. */
int gr_times_load(gr_times *tm, const char *path);

/* Open the side channel at path for streaming into *tm (need not be
 * initialised): reads and checks its header only (a file cut inside it is
 * truncated: no chunk follows).  Returns like gr_trace_open;
 * gr_times_free(tm) in every case.  Memory: one chunk (at most
 * GR_CHUNK_MAX bytes of payload) and its decoded entries. */
int gr_times_open(gr_times *tm, const char *path);

/* Decode the next chunk of a streamed side channel, releasing the previous
 * chunk's entries (see gr_times.streaming).  Returns 1 when a 'T', 'W' or
 * 'P' chunk was decoded (tm->last_tag), 0 at the end (trailer read, or
 * truncated: tm->truncated, tm->truncated_at), -1 on an error (tm->err).
 * Same corruption rules as gr_times_load. */
int gr_times_next_chunk(gr_times *tm);

/* Same from n bytes at data (not kept). */
int gr_times_parse(gr_times *tm, const char *name, const void *data, size_t n);

/* Release everything *tm owns and zero it. */
void gr_times_free(gr_times *tm);

#endif
