/* buildid.c - the build marker of the recorder, kept in the extension
 * module so that `greenreplay --version` can say which build each
 * installed recorder is (replay/version.h):
 *   "greenreplay-build:" GR_BUILD_ID " sources " GR_RECORDER_SRC
 * GR_BUILD_ID: `git describe --always --dirty` of the tree when the
 * recorder was built; GR_RECORDER_SRC: hash of the recorder's sources (both
 * from the Makefile; "unknown" when built otherwise). */
#ifndef GR_BUILD_ID
#define GR_BUILD_ID "unknown"
#endif
#ifndef GR_RECORDER_SRC
#define GR_RECORDER_SRC "unknown"
#endif

__attribute__((used, visibility("hidden"))) const char gr_build_marker[] =
    "greenreplay-build:" GR_BUILD_ID " sources " GR_RECORDER_SRC;
