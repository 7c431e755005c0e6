/* outfile.c - the up-front writability check of report files (outfile.h). */
#include "outfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static int probe(const char *path)
{
    struct stat st;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (stat(path, &st) != 0) {
            if (errno != ENOENT)
                return errno;
            /* Missing: create it exclusively (so nothing of anyone else's
             * is touched), then remove what this call created. */
            int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
            if (fd >= 0) {
                close(fd);
                unlink(path);
                return 0;
            }
            if (errno == EEXIST)
                continue; /* created meanwhile: look again */
            return errno;
        }
        if (S_ISDIR(st.st_mode))
            return EISDIR;
        if (!S_ISREG(st.st_mode)) /* /dev/null, a FIFO: opening could block */
            return access(path, W_OK) == 0 ? 0 : errno;
        int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC); /* no O_TRUNC */
        if (fd < 0)
            return errno;
        close(fd);
        return 0;
    }
    return EEXIST;
}

int gr_outfile_check(const char *path)
{
    if (!path || !*path)
        return EINVAL;
    int saved = errno;
    int e = probe(path);
    errno = saved;
    return e;
}

FILE *gr_tmpfile(void)
{
    const char *dir = getenv("TMPDIR");
    if (dir && *dir && strlen(dir) < 4000) {
        char path[4096];
        snprintf(path, sizeof path, "%s/greenreplay-XXXXXX", dir);
        int fd = mkstemp(path);
        if (fd >= 0) {
            unlink(path);
            FILE *f = fdopen(fd, "w+b");
            if (f)
                return f;
            close(fd);
        }
    }
    return tmpfile();
}
