/* test_outfile.c - replay/util/outfile.c: the up-front check that a report
 * file (check --junit/--html) can be written, and that asking changes
 * nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "outfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/gr-outfile-XXXXXX";

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "chmod -R u+w '%s' && rm -rf '%s'", dir, dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void path_in(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", dir, name);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void assert_content(const char *path, const char *text)
{
    char buf[64] = "";
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    assert_string_equal(buf, text);
}

/* A new file in an existing directory: writable, and not left behind. */
static void test_new_file(void **state)
{
    (void)state;
    char p[256];
    path_in(p, sizeof p, "new.xml");
    errno = 1234;
    assert_int_equal(gr_outfile_check(p), 0);
    assert_int_equal(errno, 1234); /* errno is the caller's */
    assert_int_equal(access(p, F_OK), -1);
}

/* An existing file: writable, neither emptied nor changed. */
static void test_existing_file(void **state)
{
    (void)state;
    char p[256];
    path_in(p, sizeof p, "old.xml");
    write_file(p, "previous report\n");
    assert_int_equal(gr_outfile_check(p), 0);
    assert_content(p, "previous report\n");
}

/* A missing directory, a directory, a path through a regular file, an
 * empty or NULL path: the errno value that says why; nothing created. */
static void test_unwritable(void **state)
{
    (void)state;
    char p[512], f[256];
    path_in(p, sizeof p, "no/such/dir/r.xml");
    assert_int_equal(gr_outfile_check(p), ENOENT);
    path_in(p, sizeof p, "no");
    assert_int_equal(access(p, F_OK), -1);
    assert_int_equal(gr_outfile_check(dir), EISDIR);
    path_in(f, sizeof f, "plain");
    write_file(f, "x");
    snprintf(p, sizeof p, "%s/r.xml", f);
    assert_int_equal(gr_outfile_check(p), ENOTDIR);
    assert_int_equal(gr_outfile_check(""), EINVAL);
    assert_int_equal(gr_outfile_check(NULL), EINVAL);
    /* a device that takes writes */
    assert_int_equal(gr_outfile_check("/dev/null"), 0);
}

/* Permissions: a read-only file and a read-only directory (not for root,
 * whom permission bits do not stop: skipped there). */
static void test_read_only(void **state)
{
    (void)state;
    if (geteuid() == 0)
        skip();
    char p[512], d[256];
    path_in(p, sizeof p, "ro.xml");
    write_file(p, "keep");
    assert_int_equal(chmod(p, 0444), 0);
    assert_int_equal(gr_outfile_check(p), EACCES);
    assert_content(p, "keep");
    path_in(d, sizeof d, "rodir");
    assert_int_equal(mkdir(d, 0555), 0);
    snprintf(p, sizeof p, "%s/r.xml", d);
    assert_int_equal(gr_outfile_check(p), EACCES);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_file),
        cmocka_unit_test(test_existing_file),
        cmocka_unit_test(test_unwritable),
        cmocka_unit_test(test_read_only),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
