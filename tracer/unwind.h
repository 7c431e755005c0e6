/* unwind.h - read a suspended greenlet's Python stack without the GIL.
 *
 * Used by the sampler thread.  Every read of interpreter memory goes
 * through process_vm_readv(2) on the process's own pid, which fails with
 * EFAULT instead of faulting when a stale frame pointer leads to unmapped
 * memory; a pointer to memory that was freed and reused reads garbage,
 * which the type checks below reject (counted as a failed read).  Nothing
 * here takes a lock or allocates.
 */
#ifndef GR_UNWIND_H
#define GR_UNWIND_H

#include <stddef.h>
#include <stdint.h>

/* Counters of one unwind, added to by gr_unwind. */
typedef struct {
    uint64_t reads;   /* process_vm_readv calls */
    uint64_t failed;  /* stacks ended by a read that failed or found no
                         frame or code object (stale pointers) */
} gr_unwind_stats;

/* Prepare (once, with the GIL held): record the frame layout of the
 * running CPython and the addresses of PyFrame_Type and PyCode_Type. */
void gr_unwind_init(void);

/* One stack to read: set `frame` (address of the top PyFrameObject) and
 * `codes`/`max` (where to store code object addresses, innermost first;
 * codes may be NULL to only count); gr_unwind_many fills the rest. */
typedef struct {
    uintptr_t frame;  /* in: top PyFrameObject address */
    uintptr_t *codes; /* in: room for `max` addresses, or NULL */
    int max;          /* in: depth limit */
    int depth;        /* out: frames read; -1 if the first read failed */
    /* internal */
    uintptr_t next;   /* address to read next */
    int stage;        /* 0 frame object, 1 interpreter frame, 2 done */
    uintptr_t code;   /* code address waiting for its type check */
    uintptr_t win_lo; /* 3.11+: address of the window read last */
    size_t win_len;   /* its length, 0 while none */
    int narrow;       /* 0 wide window, 1 from the frame's page, 2 the frame only */
    int shims;        /* C-stack entry frames passed (at most max) */
} gr_unwind_job;

/* Read the n stacks of jobs[] in lock step: each round reads, for every
 * stack still going, its next frame or (3.11+) a 4 KiB window of the
 * data stack ending at its next frame, which usually holds the frames
 * below it too, with one process_vm_readv per 1024 stacks; then checks the
 * code objects' types the same way, each distinct code object once per
 * call.  So the number of system calls grows with depth / frames per
 * window, not with n x depth, and the elements read with n x (1 + depth /
 * frames per window).  A failed or implausible read ends that stack
 * (counted in st->failed).  Returns the total number of frames read
 * ("frames" in the sample records: the same count as before windows). */
uint64_t gr_unwind_many(gr_unwind_job *jobs, size_t n, gr_unwind_stats *st);

/* Copy n bytes at address `addr` of this process into dst without
 * faulting.  Returns 0, or -1 if any byte is unreadable. */
int gr_safe_read(void *dst, uintptr_t addr, size_t n);

#endif
