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
    uint64_t failed;  /* reads that failed or found no frame/code object */
} gr_unwind_stats;

/* Prepare (once, with the GIL held): record the frame layout of the
 * running CPython and the addresses of PyFrame_Type and PyCode_Type. */
void gr_unwind_init(void);

/* Read the stack whose top PyFrameObject is at address `frame`.  Stores up
 * to `max` code object addresses, innermost first, in codes[] and returns
 * how many; returns -1 if the first read fails (stale pointer), and stops
 * early at a failed read further down (counted in st->failed). */
int gr_unwind(uintptr_t frame, uintptr_t *codes, int max, gr_unwind_stats *st);

/* Copy n bytes at address `addr` of this process into dst without
 * faulting.  Returns 0, or -1 if any byte is unreadable. */
int gr_safe_read(void *dst, uintptr_t addr, size_t n);

#endif
