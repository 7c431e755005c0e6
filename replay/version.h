/* version.h - the greenreplay release, the build it was made from, and
 * `greenreplay --version`. */
#ifndef GR_VERSION_H
#define GR_VERSION_H

#include <stdio.h>

/* The release of the tool (CLI and recorder). */
#define GR_TOOL_VERSION "0.1.0"

/* The build of this executable: `git describe --always --dirty` of the
 * tree it was compiled from ("unknown" outside a git checkout), set by the
 * Makefile (GR_BUILD_ID; GR_RECORDER_SRC is the hash of the recorder's
 * sources at that time).  Static string. */
const char *gr_build_id(void);

/* Print what `greenreplay --version` prints: the release and build of the
 * CLI (with the hash of the recorder sources it was built beside), the
 * trace format version it writes and the major it reads (docs/FORMAT.md
 * §1), and the recorders found where `record` looks for them
 * ($GREENREPLAY_PYTHONPATH, else BUILD/python beside the executable): one
 * line per extension module (_greenreplay.*.so, one per interpreter ABI)
 * with the build marker compiled into it (tracer/buildid.c: git describe
 * and sources hash), or "build unknown", flagged when its sources hash
 * differs from the CLI's.  Returns 0, or -1 if writing failed. */
int gr_version_print(FILE *out);

#endif
