/* test_record.c - `greenreplay record`'s option parsing (replay/record.c)
 * and the trace writer under a failed write (tracer/writer.c): the trailer
 * still follows the last whole chunk and the lost records are counted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "reader.h"
#include "record.h"
#include "trace_builder.h"
#include "writer.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_parse_size(void **state)
{
    (void)state;
    assert_int_equal(gr_record_parse_size("100"), 100);
    assert_int_equal(gr_record_parse_size("64k"), 64 * 1024);
    assert_int_equal(gr_record_parse_size("64K"), 64 * 1024);
    assert_int_equal(gr_record_parse_size("10M"), 10u << 20);
    assert_int_equal(gr_record_parse_size("2G"), 2ull << 30);
    assert_int_equal(gr_record_parse_size("1.5M"), 3u << 19);
    const char *bad[] = {"", "abc", "10X", "-5", "0", "0k", "k", "1 k", "1k2", ".", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(gr_record_parse_size(bad[i]), 0);
}

static void test_parse_count(void **state)
{
    (void)state;
    assert_int_equal(gr_record_parse_count("1000"), 1000);
    const char *bad[] = {"", "abc", "-3", "0", "+3", "3x", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(gr_record_parse_count(bad[i]), 0);
}

static void test_parse_signal(void **state)
{
    (void)state;
    assert_int_equal(gr_record_parse_signal("USR1"), SIGUSR1);
    assert_int_equal(gr_record_parse_signal("SIGUSR2"), SIGUSR2);
    assert_int_equal(gr_record_parse_signal("usr1"), SIGUSR1);
    assert_int_equal(gr_record_parse_signal("HUP"), SIGHUP);
    assert_int_equal(gr_record_parse_signal("10"), 10);
    const char *bad[] = {"", "FOO", "KILL", "SIGSTOP", "CHLD", "SEGV", "0", "-1", "999", "USR1x"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(gr_record_parse_signal(bad[i]), 0);
}

/* In a child with RLIMIT_FSIZE just past two chunks, write records until a
 * write fails (EFBIG, partly written), then finish with the trailer the
 * recorder writes after a write error.  The file must end with the two
 * whole chunks and the trailer: reason write-error, the dropped records. */
static void test_trailer_after_failed_write(void **state)
{
    (void)state;
    char path[] = "/tmp/gr-unit-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    const size_t cap = 1024;
    const rlim_t limit = GR_HEADER_LEN + 2 * (GR_CHUNK_HEADER_LEN + cap) + 200;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {limit, limit};
        if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
            _exit(3);
        gr_writer *w = gr_writer_open(path, GR_STREAM_CANONICAL, cap);
        if (!w)
            _exit(4);
        uint8_t rec[2] = {GR_THREAD, 1};
        uint64_t n = 0;
        while (!w->error && n < 100000) {
            gr_writer_append(w, rec, sizeof rec);
            w->indexed++;
            n++;
        }
        if (!w->error)
            _exit(5);
        for (int i = 0; i < 10; i++) /* later records are counted, not written */
            gr_writer_append(w, rec, sizeof rec);
        gr_writer_flush(w);
        uint64_t trailer[4] = {w->indexed_written, w->dropped, 0, GR_STOP_WRITE_ERROR};
        int rc = gr_writer_finish(w, trailer, 4);
        _exit(rc < 0 ? 0 : 6); /* finish reports the failure */
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true((rlim_t)st.st_size <= limit);

    gr_trace t;
    assert_int_equal(gr_trace_load(&t, path), GR_READ_OK);
    assert_true(t.has_trailer);
    assert_false(t.truncated);
    assert_int_equal(t.trailer.reason, GR_STOP_WRITE_ERROR);
    /* Two chunks of 512 two-byte records each made it. */
    assert_int_equal(t.nrecs, 2 * cap / 2);
    assert_int_equal(t.trailer.events, t.nrecs);
    assert_true(t.trailer.dropped >= 10 + 1);
    gr_trace_free(&t);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_size),
        cmocka_unit_test(test_parse_count),
        cmocka_unit_test(test_parse_signal),
        cmocka_unit_test(test_trailer_after_failed_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
