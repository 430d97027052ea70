/* test_outfile.c: output files (traces/safetensors.h st_tmp_*): a temporary
 * file is removed when the process gets SIGINT or SIGTERM while writing,
 * its name stays legal for the longest legal output name, and a symbolic
 * link or FIFO is refused as an output. */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "safetensors.h"

static char dir[] = "/tmp/parity-outfile-XXXXXX";

/* A child creates the temporary of dir/out, tells its name through a pipe
 * and gets sig; the parent checks that it died of sig and left nothing. */
static void signal_removes(int sig)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    char path[256];
    snprintf(path, sizeof path, "%s/out", dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        char *tmp;
        nx_err err = {0};
        int fd = st_tmp_create(path, &tmp, &err);
        if (fd < 0)
            _exit(3);
        if (write(fd, "partial", 7) != 7)
            _exit(4);
        size_t n = strlen(tmp) + 1;
        if (write(fds[1], tmp, n) != (ssize_t)n)
            _exit(5);
        close(fds[1]);
        pause(); /* the parent sends sig */
        _exit(6);
    }
    close(fds[1]);
    char tmp[512] = "";
    ssize_t got = 0, r;
    while ((r = read(fds[0], tmp + got, sizeof tmp - 1 - (size_t)got)) > 0)
        got += r;
    close(fds[0]);
    assert_true(got > 0);
    struct stat st;
    assert_int_equal(stat(tmp, &st), 0); /* it exists while the child writes */
    kill(pid, sig);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), sig);
    assert_int_not_equal(stat(tmp, &st), 0); /* and is gone after the signal */
    assert_int_not_equal(stat(path, &st), 0);
}

static void test_sigterm(void **state)
{
    (void)state;
    signal_removes(SIGTERM);
}

static void test_sigint(void **state)
{
    (void)state;
    signal_removes(SIGINT);
}

/* A 255-byte name (NAME_MAX) has a temporary name that can be created. */
static void test_long_name(void **state)
{
    (void)state;
    char path[512];
    int n = snprintf(path, sizeof path, "%s/", dir);
    for (int i = 0; i < 255; i++)
        path[n++] = 'x';
    path[n] = 0;
    char *tmp;
    nx_err err = {0};
    int fd = st_tmp_create(path, &tmp, &err);
    if (fd < 0)
        fail_msg("%s", err.msg);
    close(fd);
    assert_int_equal(st_tmp_commit(&tmp, path, &err), NX_OK);
    assert_null(tmp);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    unlink(path);
}

static void test_special_outputs(void **state)
{
    (void)state;
    char link[256], fifo[256];
    snprintf(link, sizeof link, "%s/link", dir);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    assert_int_equal(symlink("elsewhere", link), 0);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    nx_err err = {0};
    assert_int_equal(st_output_check(link, &err), NX_EINVAL);
    assert_non_null(strstr(err.msg, "is a symbolic link"));
    char *tmp;
    assert_int_equal(st_tmp_create(fifo, &tmp, &err), -1);
    assert_non_null(strstr(err.msg, "is not a regular file (a FIFO)"));
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(lstat(fifo, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    unlink(link);
    unlink(fifo);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sigterm),
        cmocka_unit_test(test_sigint),
        cmocka_unit_test(test_long_name),
        cmocka_unit_test(test_special_outputs),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(dir);
    return rc;
}
