/* unwind.c - GIL-free reader of suspended greenlets' stacks (see unwind.h). */
#define GR_COMPAT_FRAMES 1
#define _GNU_SOURCE 1
#include "compat.h"
#include "unwind.h"

#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* Elements per process_vm_readv call (Linux's UIO_MAXIOV). */
#define BATCH 1024
/* Bytes read per region: enough for the frame layouts and an object head. */
#define REGION 128

static gr_frame_layout layout;
static uintptr_t frame_type, code_type;
static pid_t self_pid;

void gr_unwind_init(void)
{
    gr_frame_layout_get(&layout);
    frame_type = (uintptr_t)&PyFrame_Type;
    code_type = (uintptr_t)&PyCode_Type;
    self_pid = getpid();
}

int gr_safe_read(void *dst, uintptr_t addr, size_t n)
{
    if (!addr)
        return -1;
    struct iovec local = {dst, n}, remote = {(void *)addr, n};
    ssize_t k = process_vm_readv(self_pid, &local, 1, &remote, 1, 0);
    return k == (ssize_t)n ? 0 : -1;
}

static uintptr_t field(const unsigned char *buf, size_t off)
{
    uintptr_t v;
    memcpy(&v, buf + off, sizeof v);
    return v;
}

/* Read regions remote[i] (len[i] bytes each) into bufs[i]; ok[i] tells
 * which were read.  process_vm_readv stops at the first element it cannot
 * read (partial transfers are whole elements), so the rest is retried. */
static void read_batch(struct iovec *local, struct iovec *remote, size_t n, unsigned char *ok,
                       gr_unwind_stats *st)
{
    size_t i = 0;
    while (i < n) {
        size_t m = n - i < BATCH ? n - i : BATCH;
        st->reads++;
        ssize_t got = process_vm_readv(self_pid, local + i, m, remote + i, m, 0);
        size_t done = 0, acc = 0;
        while (got > 0 && done < m && acc + local[i + done].iov_len <= (size_t)got) {
            acc += local[i + done].iov_len;
            ok[i + done] = 1;
            done++;
        }
        if (done < m)
            ok[i + done++] = 0; /* the element that failed */
        i += done;
    }
}

/* Scratch for one round, static: only the sampler thread unwinds.
 * loc/rem/buf/ok/who [0, BATCH): frame object reads; [BATCH*2, BATCH*3):
 * code object reads. */
static struct iovec loc[BATCH * 4], rem[BATCH * 4];
static unsigned char buf[BATCH * 4][REGION];
static unsigned char ok[BATCH * 4];
static size_t who[BATCH * 4];

/* 3.11+: one window of interpreter memory per stack of a batch.  A
 * suspended greenlet's interpreter frames sit next to each other in its
 * data-stack chunk, each `previous` below the one that called it, so one
 * read of WINDOW bytes ending at a frame usually covers the frames under it
 * too: a 50-frame stack costs 2 or 3 reads instead of 50.  A window that
 * reaches into unmapped memory fails as a whole; the stack then retries
 * with a window starting at its frame's own page, then with the frame
 * alone (the old one-read-per-frame path).  4 MiB of .bss, touched only
 * as far as stacks are unwound. */
#define WINDOW 4096
#define PAGE 4096
static unsigned char win[BATCH][WINDOW];

/* Code addresses found to be code objects during this call: each distinct
 * code object is checked once per gr_unwind_many call instead of once per
 * frame (the frames of a recursion share one).  Open addressing; an entry
 * is valid when its generation is the current one. */
#define CCACHE 4096
static uintptr_t ccode[CCACHE];
static uint32_t cgen[CCACHE], gen;

static size_t chash(uintptr_t a)
{
    return (size_t)((a >> 4) * 0x9E3779B97F4A7C15ull >> 52) & (CCACHE - 1);
}

static int code_known(uintptr_t a)
{
    for (size_t h = chash(a), n = 0; n < 16; n++, h = (h + 1) & (CCACHE - 1)) {
        if (cgen[h] != gen)
            return 0;
        if (ccode[h] == a)
            return 1;
    }
    return 0;
}

static void code_add(uintptr_t a)
{
    for (size_t h = chash(a), n = 0; n < 16; n++, h = (h + 1) & (CCACHE - 1)) {
        if (cgen[h] != gen || ccode[h] == a) {
            cgen[h] = gen;
            ccode[h] = a;
            return;
        }
    }
}

static void end_job(gr_unwind_job *j, gr_unwind_stats *st, int failed)
{
    if (failed) {
        st->failed++;
        if (j->depth == 0 && j->stage == 0)
            j->depth = -1;
    }
    j->stage = 2;
}

/* A frame whose code object checked out. */
static void take_frame(gr_unwind_job *j, uintptr_t code, uint64_t *frames)
{
    if (j->codes)
        j->codes[j->depth] = code;
    j->depth++;
    (*frames)++;
}

/* Queue the type check of j's pending code object (slot BATCH*2 + c). */
static void queue_code(gr_unwind_job *j, size_t i, size_t *c)
{
    size_t x = BATCH * 2 + (*c)++;
    loc[x] = (struct iovec){buf[x], sizeof(PyObject)};
    rem[x] = (struct iovec){(void *)j->code, sizeof(PyObject)};
    who[x] = i;
}

uint64_t gr_unwind_many(gr_unwind_job *jobs, size_t n, gr_unwind_stats *st)
{
    uint64_t frames = 0;
    size_t fo_len = layout.fo_size < REGION ? layout.fo_size : REGION;
    size_t if_len = layout.if_size < REGION ? layout.if_size : REGION;
    if (++gen == 0) {
        memset(cgen, 0, sizeof cgen);
        gen = 1;
    }
    for (size_t i = 0; i < n; i++) {
        jobs[i].depth = 0;
        jobs[i].next = jobs[i].frame;
        jobs[i].stage = jobs[i].frame ? 0 : 2;
        jobs[i].code = 0;
        jobs[i].win_lo = 0;
        jobs[i].win_len = 0;
        jobs[i].narrow = 0;
        jobs[i].shims = 0;
        if (!jobs[i].frame)
            jobs[i].depth = -1;
    }
    for (size_t base = 0; base < n; base += BATCH) {
        size_t end = base + BATCH < n ? base + BATCH : n;
        for (;;) {
            /* Part 1: walk every stack still going as far as its window
             * and the known code objects allow; then queue the one read
             * it needs (next frame or window, or a code object check). */
            size_t k = 0, c = 0;
            for (size_t i = base; i < end; i++) {
                gr_unwind_job *j = &jobs[i];
                while (j->stage != 2) {
                    if (j->depth >= j->max || !j->next) {
                        end_job(j, st, 0);
                        break;
                    }
                    if (j->stage == 0) {
                        loc[k] = (struct iovec){buf[k], fo_len};
                        rem[k] = (struct iovec){(void *)j->next, fo_len};
                        who[k++] = i;
                        break;
                    }
                    uintptr_t at = j->next;
                    if (at < j->win_lo || at - j->win_lo + if_len > j->win_len) {
                        /* Outside the window: read a new one ending at
                         * this frame (see WINDOW). */
                        uintptr_t hi = at + if_len, lo;
                        if (j->narrow == 0 && hi > WINDOW)
                            lo = hi - WINDOW;
                        else if (j->narrow <= 1)
                            lo = at & ~(uintptr_t)(PAGE - 1);
                        else
                            lo = at;
                        if (hi - lo > WINDOW)
                            lo = at;
                        j->win_lo = lo;
                        j->win_len = 0; /* until read */
                        loc[k] = (struct iovec){win[i - base], (size_t)(hi - lo)};
                        rem[k] = (struct iovec){(void *)lo, (size_t)(hi - lo)};
                        who[k++] = i;
                        break;
                    }
                    const unsigned char *b = win[i - base] + (at - j->win_lo);
                    unsigned char owner = b[layout.if_owner];
                    j->next = field(b, layout.if_previous);
                    if (layout.shim_owner && owner >= layout.shim_owner) {
                        /* A C-stack entry frame, not Python.  Bounded: a
                         * stale chain could loop through such frames. */
                        if (++j->shims > j->max)
                            end_job(j, st, 1);
                        continue;
                    }
                    j->code = field(b, layout.if_code) & layout.code_mask;
                    if (code_known(j->code)) {
                        take_frame(j, j->code, &frames);
                        continue;
                    }
                    queue_code(j, i, &c);
                    break;
                }
            }
            if (!k && !c)
                break;
            /* Part 2: the reads of frames and windows. */
            read_batch(loc, rem, k, ok, st);
            for (size_t x = 0; x < k; x++) {
                size_t i = who[x];
                gr_unwind_job *j = &jobs[i];
                if (j->stage == 1) {
                    if (ok[x]) {
                        j->win_len = loc[x].iov_len;
                    } else if (j->narrow < 2 && loc[x].iov_len > if_len) {
                        j->narrow++; /* retry with a smaller window */
                        j->win_lo = j->win_len = 0;
                    } else {
                        end_job(j, st, 1);
                    }
                    continue;
                }
                if (!ok[x]) {
                    end_job(j, st, 1);
                    continue;
                }
                const unsigned char *b = buf[x];
                if (field(b, offsetof(PyObject, ob_type)) != frame_type) {
                    end_job(j, st, 1);
                    continue;
                }
                if (layout.interp_frames) {
                    /* 3.11+: continue in the interpreter frame. */
                    j->next = field(b, layout.fo_frame);
                    j->stage = 1;
                    continue;
                }
                j->code = field(b, layout.fo_code);
                j->next = field(b, layout.fo_back);
                if (code_known(j->code))
                    take_frame(j, j->code, &frames);
                else
                    queue_code(j, i, &c);
            }
            if (!c)
                continue;
            /* Part 3: the code objects must be code objects. */
            read_batch(loc + BATCH * 2, rem + BATCH * 2, c, ok + BATCH * 2, st);
            for (size_t x = 0; x < c; x++) {
                gr_unwind_job *j = &jobs[who[BATCH * 2 + x]];
                if (!ok[BATCH * 2 + x] ||
                    field(buf[BATCH * 2 + x], offsetof(PyObject, ob_type)) != code_type) {
                    end_job(j, st, 1);
                    continue;
                }
                code_add(j->code);
                take_frame(j, j->code, &frames);
            }
        }
    }
    return frames;
}
