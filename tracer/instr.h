/* instr.h - the instrumentation state a greenlet resumes with on CPython
 * 3.12+, where "is profiling on for this greenlet" is no longer a flag but
 * whether its frames' code objects are instrumented at the interpreter's
 * current monitoring version (docs/FORMAT.md §4, INSTR).
 */
#ifndef GR_INSTR_H
#define GR_INSTR_H

#include "compat.h"

#include <stdint.h>

/* 1 when the running CPython has sys.monitoring instrumentation (3.12+). */
int gr_instr_available(void);

/* With the GIL held: walk the calling thread's frames from the innermost
 * outwards (at most cap frames) and count those whose code object lags
 * the interpreter's instrumentation version.  Stores the version (as a
 * counter: 1 after the first profiler was set, ...), the frames walked and
 * the stale ones.  Returns 0, or -1 where not available (< 3.12). */
int gr_instr_state(uint64_t *version, uint32_t *frames, uint32_t *stale, uint32_t cap);

#endif
