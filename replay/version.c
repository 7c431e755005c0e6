/* version.c - build identity and `greenreplay --version` (version.h). */
#include "version.h"

#include "format.h"
#include "record.h"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef GR_BUILD_ID
#define GR_BUILD_ID "unknown"
#endif
#ifndef GR_RECORDER_SRC
#define GR_RECORDER_SRC "unknown"
#endif

/* The marker tracer/buildid.c compiles into the recorder. */
#define MARKER "greenreplay-build:"

const char *gr_build_id(void)
{
    return GR_BUILD_ID;
}

/* The package directory where `record` finds the recorder (record.h). */
static int package_dir(char *buf, size_t n)
{
    if (gr_record_package_dir(buf, n) < 0)
        return -1;
    size_t len = strlen(buf);
    if (len + sizeof "/greenreplay" > n)
        return -1;
    memcpy(buf + len, "/greenreplay", sizeof "/greenreplay");
    return 0;
}

/* The build marker inside file path, into out ("" when none). */
static void marker_of(const char *path, char *out, size_t n)
{
    out[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    static char buf[1 << 16];
    size_t keep = 0, ml = strlen(MARKER);
    for (;;) {
        size_t got = fread(buf + keep, 1, sizeof buf - keep - 1, f);
        if (got == 0)
            break;
        size_t len = keep + got;
        buf[len] = '\0';
        for (size_t i = 0; i + ml <= len; i++) {
            if (memcmp(buf + i, MARKER, ml) != 0)
                continue;
            const char *s = buf + i + ml;
            size_t m = strnlen(s, len - i - ml);
            if (i + ml + m >= len && got > 0 && !feof(f))
                break; /* cut by the buffer: read on */
            snprintf(out, n, "%.*s", (int)(m < 200 ? m : 200), s);
            fclose(f);
            return;
        }
        keep = len < 256 ? len : 256; /* overlap for a marker across reads */
        memmove(buf, buf + len - keep, keep);
    }
    fclose(f);
}

int gr_version_print(FILE *out)
{
    fprintf(out, "greenreplay %s (build %s, recorder sources %s)\n", GR_TOOL_VERSION,
            gr_build_id(), GR_RECORDER_SRC);
    fprintf(out, "trace format %d.%d (reads major %d, any minor)\n", GR_VERSION_MAJOR,
            GR_VERSION_MINOR, GR_VERSION_MAJOR);
    char dir[PATH_MAX];
    if (package_dir(dir, sizeof dir) < 0) {
        fputs("recorder: not found (cannot resolve /proc/self/exe)\n", out);
        return ferror(out) ? -1 : 0;
    }
    DIR *d = opendir(dir);
    int found = 0;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            size_t l = strlen(e->d_name);
            if (strncmp(e->d_name, "_greenreplay", 12) != 0 || l < 3 ||
                strcmp(e->d_name + l - 3, ".so") != 0)
                continue;
            char path[PATH_MAX + 256], mark[256];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            marker_of(path, mark, sizeof mark);
            if (!found)
                fprintf(out, "recorder: %s\n", dir);
            found = 1;
            const char *src = strstr(mark, " sources ");
            int differs = src && strcmp(src + 9, GR_RECORDER_SRC) != 0;
            fprintf(out, "  %s: build %s%s\n", e->d_name, mark[0] ? mark : "unknown",
                    differs ? " (other recorder sources than this CLI's: rebuild with make)"
                            : "");
        }
        closedir(d);
    }
    if (!found)
        fprintf(out, "recorder: none built in %s (run make, or set GREENREPLAY_PYTHONPATH)\n",
                dir);
    return ferror(out) ? -1 : 0;
}
