/* buildid.c - the build marker of the recorder: "greenreplay-build:" and
 * the build id (git describe of the tree, GR_BUILD_ID from the Makefile),
 * kept in the extension module so that `greenreplay --version` can say
 * which build each installed recorder is (replay/version.h). */
#ifndef GR_BUILD_ID
#define GR_BUILD_ID "unknown"
#endif

__attribute__((used, visibility("hidden"))) const char gr_build_marker[] =
    "greenreplay-build:" GR_BUILD_ID;
