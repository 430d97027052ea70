/* probe.c: the kernels `parity reveal` probes: a command on files, a served
 * command on a pipe, a C function in process, a simulated point. */
#define _GNU_SOURCE
#include "reveal.h"

#include "nx_engine.h"
#include "nx_program.h"
#include "parity_probe.h"
#include "point_toml.h"
#include "nx_sbuf.h"
#include "rows.h"
#include "safetensors.h"

#include <dlfcn.h>
#include <elf.h>
#include <ftw.h>
#include <link.h>
#include <stdint.h>
#include <sys/stat.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void rv_kernel_free(rv_kernel *k)
{
    if (!k)
        return;
    if (k->destroy)
        k->destroy(k);
    free(k);
}

/* A kernel with one b for every row of a call (k->shared_b): rows whose b
 * differs from the first row's are sent as (a·b, 1), which is the same
 * term when a·b is exact in the input format (the order's probes: powers
 * of two); the arithmetic's rows are drawn with one b (arith.c).  *ca and
 * *cb are then the rows to send (malloc'd), else NULL. */
size_t rv_inexact_product(nx_fmt in, const double *a, const double *b, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        double p = a[i] * b[i];
        if (!nx_is_member(in, p) || fma(a[i], b[i], -p) != 0)
            return i;
    }
    return count;
}

void rv_as_products(const double *a, const double *b, size_t count, double *ca, double *cb)
{
    for (size_t i = 0; i < count; i++) {
        ca[i] = a[i] * b[i];
        cb[i] = 1;
    }
}

static nx_status share_b(const rv_kernel *k, size_t rows, size_t n, const double *a, const double *b, double **ca,
                         double **cb, nx_err *err)
{
    *ca = *cb = NULL;
    int same = 1;
    for (size_t r = 1; r < rows && same; r++)
        same = !memcmp(b, b + r * n, n * sizeof *b);
    if (same)
        return NX_OK;
    if (!(*ca = malloc(rows * n * sizeof **ca)) || !(*cb = malloc(rows * n * sizeof **cb))) {
        free(*ca);
        *ca = NULL;
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    size_t i = rv_inexact_product(k->in_fmt, a, b, rows * n);
    if (i < rows * n) {
        free(*ca);
        free(*cb);
        *ca = *cb = NULL;
        return nx_err_set(err, NX_EINVAL,
                          "--shared-b: row %zu's b differs from row 0's and its product at term %zu is not exact in %s",
                          i / n, i % n, nx_format(k->in_fmt)->name);
    }
    rv_as_products(a, b, rows * n, *ca, *cb);
    return NX_OK;
}

/* One call of m rows through the kernel, its output format held to the
 * first call's; `counted` of the rows are the caller's probes. */
static nx_status call_once(rv_kernel *k, size_t m, size_t n, const double *a, const double *b, double *y,
                           size_t counted, nx_err *err)
{
    int of = -1;
    nx_status st = k->eval(k, m, n, a, b, y, &of, err);
    if (st)
        return st;
    if (k->out_fmt >= 0 && of != k->out_fmt)
        return nx_err_set(err, NX_EINVAL, "the kernel changed its output dtype from %s to %s between calls",
                          nx_format(k->out_fmt)->st_dtype, of >= 0 ? nx_format(of)->st_dtype : "?");
    k->out_fmt = of;
    k->calls++;
    k->probes += counted;
    return NX_OK;
}

/* --- a grid kernel (k->grid_m, grid_n): every call one M x N output ------- */

/* Whether the M * N rows are one gemm's: row i * N + j holds row i * N's
 * a and row j's b. */
static int grid_factorable(size_t M, size_t N, size_t n, const double *a, const double *b)
{
    for (size_t r = 0; r < M * N; r++)
        if (memcmp(a + r * n, a + (r / N) * N * n, n * sizeof *a) || memcmp(b + r * n, b + (r % N) * n, n * sizeof *b))
            return 0;
    return 1;
}

static uint64_t vec_hash(const double *x, size_t n)
{
    const unsigned char *p = (const unsigned char *)x;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n * sizeof *x; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

#define GRID_SCAN 64 /* rows of one grid row's queue looked at per call */

/* The caller's rows through a grid kernel.  Row r goes to cell r mod M *
 * N = (i, j), so that a caller whose batches are M * N rows sees the
 * kernel's cells.  Batches that already are gemms (rows replicated at
 * every cell, random rows drawn as one) go as they are, one call each.
 * Other rows are packed: a row whose every product is exact in the input
 * format is sent as (a*b, 1), the same terms (the order's probes), so that
 * it needs A's row i alone and B's column j of ones; each call takes, for
 * each grid row i, the first waiting rows of cell row i whose a (and b)
 * agree with what the call holds there, up to one distinct a per i and one
 * distinct b per j.  The cells no row uses hold zeros; their answers are
 * dropped. */
static nx_status grid_call(rv_kernel *k, size_t rows, size_t n, const double *a, const double *b, double *y,
                           nx_err *err)
{
    const size_t M = k->grid_m, N = k->grid_n, MN = M * N;
    nx_status st = NX_OK;
    if (k->max_elems && MN * n > k->max_elems)
        return nx_err_set(err, NX_EINVAL, "--grid: one call of %zu x %zu outputs of %zu terms is more than %zu elements",
                          M, N, n, k->max_elems);
    if (rows % MN == 0) {
        int all = 1;
        for (size_t c = 0; c < rows && all; c += MN)
            all = grid_factorable(M, N, n, a + c * n, b + c * n);
        if (all) {
            for (size_t c = 0; c < rows && !st; c += MN)
                st = call_once(k, MN, n, a + c * n, b + c * n, y + c, MN, err);
            return st;
        }
    }
    double *ca = malloc(rows * n * sizeof *ca), *cb = malloc(rows * n * sizeof *cb);
    double *A = malloc(MN * n * sizeof *A), *B = malloc(MN * n * sizeof *B), *Y = malloc(MN * sizeof *Y);
    double *zero = calloc(n ? n : 1, sizeof *zero);
    uint64_t *ha = malloc(rows * sizeof *ha), *hb = malloc(rows * sizeof *hb);
    size_t *order = malloc(rows * sizeof *order), *start = calloc(M + 1, sizeof *start), *cur = malloc(M * sizeof *cur);
    size_t *placed = malloc(rows * sizeof *placed);
    long *aset = malloc(M * sizeof *aset), *bset = malloc(N * sizeof *bset);
    unsigned char *done = calloc(rows ? rows : 1, 1);
    if (!ca || !cb || !A || !B || !Y || !zero || !ha || !hb || !order || !start || !cur || !placed || !aset || !bset ||
        !done) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t r = 0; r < rows; r++) {
        int exact = 1;
        for (size_t i = 0; i < n && exact; i++) {
            double p = a[r * n + i] * b[r * n + i];
            exact = nx_is_member(k->in_fmt, p) && fma(a[r * n + i], b[r * n + i], -p) == 0;
        }
        for (size_t i = 0; i < n; i++) {
            ca[r * n + i] = exact ? a[r * n + i] * b[r * n + i] : a[r * n + i];
            cb[r * n + i] = exact ? 1 : b[r * n + i];
        }
        ha[r] = vec_hash(ca + r * n, n);
        hb[r] = vec_hash(cb + r * n, n);
    }
    /* the rows of each grid row i, in order */
    for (size_t r = 0; r < rows; r++)
        start[(r % MN) / N + 1]++;
    for (size_t i = 0; i < M; i++)
        start[i + 1] += start[i];
    memcpy(cur, start, M * sizeof *cur);
    for (size_t r = 0; r < rows; r++)
        order[cur[(r % MN) / N]++] = r;
    memcpy(cur, start, M * sizeof *cur);
    for (size_t left = rows; left && !st;) {
        size_t np = 0;
        for (size_t i = 0; i < M; i++)
            aset[i] = -1;
        for (size_t j = 0; j < N; j++)
            bset[j] = -1;
        for (size_t i = 0; i < M; i++) {
            size_t q = cur[i];
            while (q < start[i + 1] && done[order[q]])
                q++;
            cur[i] = q;
            for (size_t seen = 0; q < start[i + 1] && seen < GRID_SCAN; q++) {
                size_t p = order[q], j = (p % MN) % N;
                if (done[p])
                    continue;
                seen++;
                if (aset[i] >= 0 && (ha[aset[i]] != ha[p] || memcmp(ca + aset[i] * n, ca + p * n, n * sizeof *ca)))
                    continue;
                if (bset[j] >= 0 && (hb[bset[j]] != hb[p] || memcmp(cb + bset[j] * n, cb + p * n, n * sizeof *cb)))
                    continue;
                if (aset[i] < 0)
                    aset[i] = (long)p;
                if (bset[j] < 0)
                    bset[j] = (long)p;
                done[p] = 1;
                placed[np++] = p;
            }
        }
        for (size_t c = 0; c < MN; c++) {
            long pa = aset[c / N], pb = bset[c % N];
            memcpy(A + c * n, pa >= 0 ? ca + (size_t)pa * n : zero, n * sizeof *A);
            memcpy(B + c * n, pb >= 0 ? cb + (size_t)pb * n : zero, n * sizeof *B);
        }
        if ((st = call_once(k, MN, n, A, B, Y, np, err)))
            break;
        for (size_t q = 0; q < np; q++)
            y[placed[q]] = Y[placed[q] % MN];
        left -= np;
    }
out:
    free(ca);
    free(cb);
    free(A);
    free(B);
    free(Y);
    free(zero);
    free(ha);
    free(hb);
    free(order);
    free(start);
    free(cur);
    free(placed);
    free(aset);
    free(bset);
    free(done);
    return st;
}

nx_status rv_grid_check(size_t m, size_t gn, size_t n, int shared_b, nx_err *err)
{
    if (m < 1 || gn < 1 || m > RV_GRID_MAX_SIDE || gn > RV_GRID_MAX_SIDE || m * gn < 2 || m * gn > RV_GRID_MAX_CELLS)
        return nx_err_set(err, NX_EINVAL, "%zu x %zu is not a grid: M and N at least 1, M x N from 2 to %zu outputs",
                          m, gn, (size_t)RV_GRID_MAX_CELLS);
    if (shared_b)
        return nx_err_set(err, NX_EINVAL, "a grid and one b for every row (shared b) together: give one (a gemv is a "
                                          "grid of M x 1)");
    if (m * gn * n > RV_GRID_MAX_TERMS)
        return nx_err_set(err, NX_EINVAL, "%zu x %zu outputs of n = %zu terms: one call would hold %zu terms, more "
                                          "than 2^24", m, gn, n, m * gn * n);
    return NX_OK;
}

nx_status rv_call(rv_kernel *k, size_t rows, size_t n, const double *a, const double *b, double *y, nx_err *err)
{
    if (k->grid_m && k->grid_n)
        return grid_call(k, rows, n, a, b, y, err);
    double *ca = NULL, *cb = NULL;
    if (k->shared_b && rows > 1) {
        nx_status st = share_b(k, rows, n, a, b, &ca, &cb, err);
        if (st)
            return st;
        if (ca) {
            a = ca;
            b = cb;
        }
    }
    nx_status st = NX_OK;
    size_t per = rows;
    if (k->max_elems && n && per * n > k->max_elems)
        per = k->max_elems / n ? k->max_elems / n : 1;
    if (k->max_rows && per > k->max_rows)
        per = k->max_rows;
    for (size_t r0 = 0; r0 < rows && !st; r0 += per) {
        size_t m = rows - r0 < per ? rows - r0 : per;
        if (k->exact_rows && k->max_rows && m < k->max_rows) {
            /* a short last call padded to the kernel's R with copies of its
             * first row (the same b: a shared b stays shared) */
            size_t R = k->max_rows;
            double *pa = malloc(R * n * sizeof *pa), *pb = malloc(R * n * sizeof *pb), *py = malloc(R * sizeof *py);
            if (!pa || !pb || !py) {
                st = nx_err_set(err, NX_ENOMEM, "out of memory");
            } else {
                for (size_t q = 0; q < R; q++) {
                    memcpy(pa + q * n, a + (r0 + (q < m ? q : 0)) * n, n * sizeof *pa);
                    memcpy(pb + q * n, b + (r0 + (q < m ? q : 0)) * n, n * sizeof *pb);
                }
                if (!(st = call_once(k, R, n, pa, pb, py, R, err)))
                    memcpy(y + r0, py, m * sizeof *py);
            }
            free(pa);
            free(pb);
            free(py);
            continue;
        }
        st = call_once(k, m, n, a + r0 * n, b + r0 * n, y + r0, m, err);
    }
    free(ca);
    free(cb);
    return st;
}

/* --- files: the exec and serve kernels ------------------------------------ */

typedef struct file_impl {
    char *cmd;
    char *dir, *in, *out; /* the temporary folder and the two files in it */
    pid_t pid;            /* serve: the child, leader of its own process group */
    FILE *to;             /* serve: its stdin */
    int from;             /* serve: its stdout, read without stdio (poll) */
} file_impl;

static nx_status write_probes(const char *path, nx_fmt in, size_t rows, size_t n, const double *a, const double *b,
                              nx_err *err)
{
    st_file f;
    st_init(&f);
    int64_t shape[2] = {(int64_t)rows, (int64_t)n};
    st_tensor *t;
    nx_status st = NX_OK;
    const double *src[2] = {a, b};
    const char *name[2] = {"a", "b"};
    for (int i = 0; i < 2 && !st; i++) {
        if (!(st = st_add_tensor(&f, name[i], rows_dtype_of_fmt(in), 2, shape, &t, err)))
            st = rows_encode(in, src[i], rows * n, t, t->data, err);
    }
    if (!st)
        st = st_write_scratch(path, &f, err);
    st_free(&f);
    return st;
}

static nx_status read_y(const char *path, size_t rows, double *y, int *of, nx_err *err)
{
    st_file f;
    nx_status st = st_read(path, &f, err); /* a FIFO at {out}: refused, not waited on */
    if (st)
        return st;
    const st_tensor *t = st_find(&f, "y");
    int fmt = t ? rows_fmt_of_dtype(t->dtype) : -1;
    if (!t)
        st = nx_err_set(err, NX_EINVAL, "%s: the kernel wrote no tensor 'y'", path);
    else if (t->ndim != 1 || t->shape[0] != (int64_t)rows)
        st = nx_err_set(err, NX_EINVAL, "%s: 'y' must have shape [%zu]", path, rows);
    else if (fmt < 0)
        st = nx_err_set(err, NX_EINVAL, "%s: 'y' has dtype %s, not one of the formats", path, st_dtype_name(t->dtype));
    else {
        st = rows_decode(t, y, err);
        *of = fmt;
    }
    st_free(&f);
    return st;
}

/* s in single quotes for /bin/sh, each ' written '\'': no character of a
 * file name (a quote or $ in TMPDIR) is interpreted. */
static void put_quoted(nx_sbuf *b, const char *s)
{
    nx_sbuf_put(b, "'", 1);
    for (; *s; s++)
        if (*s == '\'')
            nx_sbuf_put(b, "'\\''", 4);
        else
            nx_sbuf_put(b, s, 1);
    nx_sbuf_put(b, "'", 1);
}

static char *subst(const char *cmd, const char *in, const char *out)
{
    nx_sbuf b = {0};
    nx_sbuf_printf(&b, "%s", "");
    for (const char *p = cmd; *p;) {
        if (!strncmp(p, "{in}", 4)) {
            put_quoted(&b, in);
            p += 4;
        } else if (!strncmp(p, "{out}", 5)) {
            put_quoted(&b, out);
            p += 5;
        } else
            nx_sbuf_put(&b, p++, 1);
    }
    return nx_sbuf_take(&b);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Kills pid's process group (the shell and whatever it started) and reaps pid. */
static void kill_group(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

/* Waits for pid until the deadline (monotonic seconds); 1 and *status when
 * it ended, 0 when the deadline passed (pid is left running). */
static int wait_until(pid_t pid, double deadline, int *status)
{
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return 1;
        if (r < 0 && errno != EINTR) {
            *status = -1;
            return 1;
        }
        if (now_s() >= deadline)
            return 0;
        nanosleep(&(struct timespec){0, 5000000}, NULL);
    }
}

/* /bin/sh -c c in a process group of its own, so that a timeout kills
 * everything it started. */
static pid_t spawn_sh(const char *c, int in_fd, int out_fd, int close1, int close2)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        if (in_fd >= 0)
            dup2(in_fd, 0);
        if (out_fd >= 0)
            dup2(out_fd, 1);
        int fds[4] = {in_fd, out_fd, close1, close2};
        for (int i = 0; i < 4; i++)
            if (fds[i] > 2)
                close(fds[i]);
        execl("/bin/sh", "sh", "-c", c, (char *)NULL);
        _exit(127);
    }
    if (pid > 0)
        setpgid(pid, pid); /* also here: the child may not have run yet when the parent kills the group */
    return pid;
}
static int rm_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb, (void)ftw;
    if (type == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0; /* best effort: go on */
}

static nx_status exec_eval(rv_kernel *k, size_t rows, size_t n, const double *a, const double *b, double *y, int *of,
                           nx_err *err)
{
    file_impl *im = k->impl;
    nx_status st = write_probes(im->in, k->in_fmt, rows, n, a, b, err);
    if (st)
        return st;
    unlink(im->out);
    char *c = subst(im->cmd, im->in, im->out);
    if (!c)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    pid_t pid = spawn_sh(c, -1, -1, -1, -1);
    free(c);
    if (pid < 0)
        return nx_err_set(err, NX_EIO, "--exec: fork: %s", strerror(errno));
    int rc = 0;
    if (!wait_until(pid, now_s() + k->timeout_s, &rc)) {
        kill_group(pid);
        k->killed = 1;
        return nx_err_set(err, NX_EINTERNAL,
                          "--exec: the command did not finish within %g s on a file of %zu probes (--timeout); "
                          "killed with its process group", k->timeout_s, rows);
    }
    if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) != 0)
        return nx_err_set(err, NX_EINTERNAL, "--exec: the command failed (%s %d) on a file of %zu probes",
                          rc != -1 && WIFEXITED(rc) ? "exit status" : "signal or status",
                          rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : rc, rows);
    return read_y(im->out, rows, y, of, err);
}

/* One line from fd into line (cap bytes, NUL-terminated, without the
 * newline) before the deadline: 0, or -1 at EOF or an error, -2 past the
 * deadline. */
static int read_line(int fd, char *line, size_t cap, double deadline)
{
    size_t len = 0;
    for (;;) {
        double left = deadline - now_s();
        if (left <= 0)
            return -2;
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, left > 1e6 ? 1000000000 : (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            continue;
        char ch;
        ssize_t got = read(fd, &ch, 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -1;
        if (ch == '\n') {
            line[len] = 0;
            return 0;
        }
        if (len + 1 < cap)
            line[len++] = ch;
    }
}

static nx_status serve_eval(rv_kernel *k, size_t rows, size_t n, const double *a, const double *b, double *y, int *of,
                            nx_err *err)
{
    file_impl *im = k->impl;
    if (im->pid <= 0)
        return nx_err_set(err, NX_EINTERNAL, "--serve: the command was stopped after an earlier failure");
    nx_status st = write_probes(im->in, k->in_fmt, rows, n, a, b, err);
    if (st)
        return st;
    unlink(im->out);
    char line[512];
    int r = -1;
    if (fprintf(im->to, "%s %s\n", im->in, im->out) >= 0 && !fflush(im->to))
        r = read_line(im->from, line, sizeof line, now_s() + k->timeout_s);
    /* the answer is the line "ok" and nothing else: "okay-but-failed" or
     * "ok, with errors" is not a success (a CR before the newline, as a
     * program writing text on Windows conventions ends its lines, is) */
    if (r == 0) {
        size_t len = strlen(line);
        if (len && line[len - 1] == '\r')
            line[--len] = 0;
    }
    if (r == 0 && !strcmp(line, "ok"))
        return read_y(im->out, rows, y, of, err);
    /* no answer, a late one or a wrong one: the child is killed, not waited on */
    kill_group(im->pid);
    im->pid = 0;
    k->killed = 1;
    if (r == -2)
        return nx_err_set(err, NX_EINTERNAL,
                          "--serve: no answer within %g s to a file of %zu probes (--timeout); killed with its "
                          "process group", k->timeout_s, rows);
    if (r < 0)
        return nx_err_set(err, NX_EINTERNAL, "--serve: the command stopped answering");
    return nx_err_set(err, NX_EINTERNAL, "--serve: the command answered: %.200s", line);
}

static void file_destroy(rv_kernel *k)
{
    file_impl *im = k->impl;
    if (!im)
        return;
    if (im->to)
        fclose(im->to); /* EOF on its stdin: a served loop ends */
    if (im->from >= 0)
        close(im->from);
    if (im->pid > 0) {
        int status;
        double grace = k->timeout_s < 5 ? k->timeout_s : 5;
        if (!wait_until(im->pid, now_s() + grace, &status))
            kill_group(im->pid);
    }
    if (im->in)
        unlink(im->in);
    if (im->out)
        unlink(im->out);
    if (im->in && im->out) {
        st_cleanup_untrack(im->in);
        st_cleanup_untrack(im->out);
        st_cleanup_untrack(im->dir);
    }
    /* the folder is ours: whatever the kernel left in it goes too (an
     * {out} it made a directory, files beside the probes) */
    if (im->dir && rmdir(im->dir) != 0)
        nftw(im->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(im->in);
    free(im->out);
    free(im->dir);
    free(im->cmd);
    free(im);
}

static nx_status file_new(const char *cmd, nx_fmt in, rv_kernel **out, nx_err *err)
{
    rv_kernel *k = calloc(1, sizeof *k);
    file_impl *im = calloc(1, sizeof *im);
    if (!k || !im || !(im->cmd = strdup(cmd))) {
        free(k);
        free(im);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    im->from = -1;
    k->impl = im;
    k->in_fmt = in;
    k->out_fmt = -1;
    k->destroy = file_destroy;
    k->max_elems = (size_t)1 << 24;
    k->timeout_s = RV_TIMEOUT_DEFAULT_S;
    /* $TMPDIR where set; else /dev/shm, a memory file system where there
     * is one (a kernel with row classes takes tens of thousands of calls,
     * each a file written and read once: on a disk's file system their
     * creation and truncation cost more than the probes), else /tmp */
    const char *tmp = getenv("TMPDIR");
    struct stat shm;
    if (!tmp || !*tmp)
        tmp = !stat("/dev/shm", &shm) && S_ISDIR(shm.st_mode) && !access("/dev/shm", W_OK | X_OK) ? "/dev/shm" : "/tmp";
    nx_sbuf b = {0};
    nx_sbuf_printf(&b, "%s/parity-reveal.XXXXXX", tmp);
    im->dir = nx_sbuf_take(&b);
    if (!im->dir || !mkdtemp(im->dir)) {
        nx_status st = im->dir ? nx_err_set(err, NX_EIO, "cannot create a temporary directory in %s: %s", tmp,
                                            strerror(errno))
                               : nx_err_set(err, NX_ENOMEM, "out of memory");
        free(im->dir);
        im->dir = NULL;
        rv_kernel_free(k);
        return st;
    }
    nx_sbuf_printf(&b, "%s/in.safetensors", im->dir);
    im->in = nx_sbuf_take(&b);
    nx_sbuf_printf(&b, "%s/out.safetensors", im->dir);
    im->out = nx_sbuf_take(&b);
    if (!im->in || !im->out) {
        rv_kernel_free(k);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    /* removed if a signal ends reveal (in /dev/shm they would hold memory
     * until the machine restarts) */
    st_cleanup_track(im->in);
    st_cleanup_track(im->out);
    st_cleanup_track(im->dir);
    *out = k;
    return NX_OK;
}

nx_status rv_kernel_exec(const char *cmd, nx_fmt in, rv_kernel **out, nx_err *err)
{
    if (!strstr(cmd, "{in}") || !strstr(cmd, "{out}"))
        return nx_err_set(err, NX_EINVAL, "--exec: the command must name {in} and {out}");
    nx_status st = file_new(cmd, in, out, err);
    if (!st)
        (*out)->eval = exec_eval;
    return st;
}

nx_status rv_kernel_serve(const char *cmd, nx_fmt in, rv_kernel **out, nx_err *err)
{
    nx_status st = file_new(cmd, in, out, err);
    if (st)
        return st;
    file_impl *im = (*out)->impl;
    /* the protocol's line is "IN OUT": a name with a blank or a line break cannot be said in it */
    if (strpbrk(im->dir, " \t\n\r")) {
        st = nx_err_set(err, NX_EINVAL,
                        "--serve: the temporary folder '%s' (from TMPDIR) holds a blank or a line break, which the "
                        "line \"IN OUT\" cannot carry; set TMPDIR to a folder without one",
                        im->dir);
        rv_kernel_free(*out);
        *out = NULL;
        return st;
    }
    int p_in[2], p_out[2];
    if (pipe(p_in))
        goto pipe_fail;
    if (pipe(p_out)) {
        close(p_in[0]);
        close(p_in[1]);
        goto pipe_fail;
    }
    pid_t pid = spawn_sh(cmd, p_in[0], p_out[1], p_in[1], p_out[0]);
    close(p_in[0]);
    close(p_out[1]);
    if (pid < 0) {
        close(p_in[1]);
        close(p_out[0]);
        rv_kernel_free(*out);
        *out = NULL;
        return nx_err_set(err, NX_EIO, "--serve: fork: %s", strerror(errno));
    }
    signal(SIGPIPE, SIG_IGN);
    im->pid = pid;
    im->to = fdopen(p_in[1], "w");
    im->from = p_out[0];
    if (!im->to) {
        close(p_in[1]);
        rv_kernel_free(*out);
        *out = NULL;
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    (*out)->eval = serve_eval;
    return NX_OK;
pipe_fail:
    st = nx_err_set(err, NX_EIO, "--serve: pipe: %s", strerror(errno));
    rv_kernel_free(*out);
    *out = NULL;
    return st;
}

/* --- a C function in process ----------------------------------------------- */

typedef struct dl_impl {
    void *lib;
    parity_probe_fn fn;
    uint8_t *buf;
    size_t cap;
} dl_impl;

static void put_bits(uint8_t *p, unsigned bytes, uint64_t v)
{
    memcpy(p, &v, bytes); /* little-endian hosts, as safetensors */
}

static nx_status dl_eval(rv_kernel *k, size_t rows, size_t n, const double *a, const double *b, double *y, int *of,
                         nx_err *err)
{
    dl_impl *im = k->impl;
    const nx_format_info *fi = nx_format(k->in_fmt);
    unsigned w = (unsigned)fi->storage_bits / 8;
    size_t need = 2 * rows * n * w + rows * 8;
    if (need > im->cap) {
        uint8_t *nb = realloc(im->buf, need);
        if (!nb)
            return nx_err_set(err, NX_ENOMEM, "out of memory");
        im->buf = nb;
        im->cap = need;
    }
    uint8_t *pa = im->buf, *pb = pa + rows * n * w, *py = pb + rows * n * w;
    for (size_t i = 0; i < rows * n; i++) {
        uint64_t ba, bb;
        nx_status st;
        if ((st = nx_encode(k->in_fmt, a[i], &ba, err)) || (st = nx_encode(k->in_fmt, b[i], &bb, err)))
            return st;
        put_bits(pa + i * w, w, ba);
        put_bits(pb + i * w, w, bb);
    }
    memset(py, 0, rows * 8);
    parity_probe p = {PARITY_PROBE_ABI, fi->st_dtype, rows, n, pa, pb, py, NULL};
    int rc = im->fn(&p);
    if (rc != 0)
        return nx_err_set(err, NX_EINTERNAL, "--dlopen: the kernel returned %d on %zu probes", rc, rows);
    const char *yd = p.y_dtype ? p.y_dtype : fi->st_dtype;
    st_dtype dt;
    int f;
    if (!st_dtype_from_name(yd, &dt) || (f = rows_fmt_of_dtype(dt)) < 0 || nx_format(f)->storage_bits % 8)
        return nx_err_set(err, NX_EINVAL, "--dlopen: the kernel set y_dtype \"%.40s\", not a dtype of F32, F64, BF16, F16", yd);
    unsigned wy = (unsigned)nx_format(f)->storage_bits / 8;
    for (size_t r = 0; r < rows; r++) {
        uint64_t bits = 0;
        int valid;
        memcpy(&bits, py + r * wy, wy);
        y[r] = nx_decode(f, bits, &valid);
    }
    *of = f;
    return NX_OK;
}

static void dl_destroy(rv_kernel *k)
{
    dl_impl *im = k->impl;
    if (!im)
        return;
    free(im->buf);
    if (im->lib)
        dlclose(im->lib);
    free(im);
}

/* Whether addr lies in a loaded segment that is executable (PF_X). */
typedef struct exec_seg {
    uintptr_t addr;
    int found, exec;
} exec_seg;

static int exec_seg_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    exec_seg *q = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t lo = (uintptr_t)info->dlpi_addr + (uintptr_t)ph->p_vaddr;
        if (q->addr >= lo && q->addr - lo < (uintptr_t)ph->p_memsz) {
            q->found = 1;
            q->exec = (ph->p_flags & PF_X) != 0;
            return 1;
        }
    }
    return 0;
}

/* Whether the address dlsym gave is a function's: the ELF type of its
 * symbol entry (dladdr1, RTLD_DL_SYMENT) is STT_FUNC or STT_GNU_IFUNC.
 * Where the loader has no entry at that exact address (an indirect
 * function's dlsym is the implementation it resolved to, often a local
 * symbol), the segment holding it must be executable.  Otherwise why says
 * what the symbol is. */
static int dl_symbol_is_code(void *sym, char *why, size_t cap)
{
    Dl_info info;
    const ElfW(Sym) *ent = NULL;
    if (dladdr1(sym, &info, (void **)&ent, RTLD_DL_SYMENT) && ent && info.dli_saddr == sym) {
        int type = ELF64_ST_TYPE(ent->st_info);
        if (type == STT_FUNC || type == STT_GNU_IFUNC)
            return 1;
        static const char *const names[] = {"STT_NOTYPE", "STT_OBJECT", "STT_FUNC", "STT_SECTION",
                                            "STT_FILE",   "STT_COMMON", "STT_TLS"};
        if (type < (int)(sizeof names / sizeof *names))
            snprintf(why, cap, "ELF symbol type %s: %s", names[type],
                     type == STT_OBJECT || type == STT_COMMON ? "data"
                     : type == STT_TLS                        ? "thread-local data"
                                                              : "not code");
        else
            snprintf(why, cap, "ELF symbol type %d, not STT_FUNC or STT_GNU_IFUNC", type);
        return 0;
    }
    exec_seg q = {(uintptr_t)sym, 0, 0};
    dl_iterate_phdr(exec_seg_cb, &q);
    if (q.found && q.exec)
        return 1;
    snprintf(why, cap, "no function symbol at its address, which lies in %s",
             q.found ? "a segment that is not executable" : "no loaded segment");
    return 0;
}

nx_status rv_kernel_dlopen(const char *spec, nx_fmt in, rv_kernel **out, nx_err *err)
{
    const char *colon = strrchr(spec, ':');
    if (!colon || colon == spec || !colon[1])
        return nx_err_set(err, NX_EINVAL, "--dlopen: expected LIB.so:SYMBOL, got \"%s\"", spec);
    char *path = strndup(spec, (size_t)(colon - spec));
    if (!path)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    /* a path must be a regular file: dlopen of a FIFO waits for a writer
     * forever (a bare name is looked up by the loader's search path) */
    struct stat sb;
    if (strchr(path, '/') && stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        nx_status st = nx_err_set(err, NX_EINVAL, "--dlopen: %s: not a regular file", path);
        free(path);
        return st;
    }
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    free(path);
    if (!lib)
        return nx_err_set(err, NX_EINVAL, "--dlopen: %s", dlerror());
    void *sym = dlsym(lib, colon + 1);
    if (!sym) {
        dlclose(lib);
        return nx_err_set(err, NX_EINVAL, "--dlopen: no symbol %s in the library", colon + 1);
    }
    /* the symbol must be code: an exported array or variable called as a
     * function jumps into data (SIGSEGV, or worse).  The loader's symbol
     * table says which (dl_symbol_is_code) */
    char why[160];
    if (!dl_symbol_is_code(sym, why, sizeof why)) {
        dlclose(lib);
        return nx_err_set(err, NX_EINVAL, "--dlopen: symbol %s is not a function (%s); a kernel must be a function",
                          colon + 1, why);
    }
    rv_kernel *k = calloc(1, sizeof *k);
    dl_impl *im = calloc(1, sizeof *im);
    if (!k || !im) {
        free(k);
        free(im);
        dlclose(lib);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    im->lib = lib;
    *(void **)&im->fn = sym;
    k->impl = im;
    k->in_fmt = in;
    k->out_fmt = -1;
    k->eval = dl_eval;
    k->destroy = dl_destroy;
    k->max_elems = (size_t)1 << 24;
    *out = k;
    return NX_OK;
}

/* --- a simulated point --------------------------------------------------- */

typedef struct pt_impl {
    nx_point pt;
    nx_program *prog;
    size_t n;
} pt_impl;

static nx_status pt_eval(rv_kernel *k, size_t rows, size_t n, const double *a, const double *b, double *y, int *of,
                         nx_err *err)
{
    pt_impl *im = k->impl;
    nx_status st;
    if (im->pt.nclasses) {
        /* row classes: each row by its own point (slow, for tests) */
        *of = (int)nx_point_out(&im->pt);
        for (size_t r = 0; r < rows; r++) {
            const nx_point *pr;
            nx_program *p = NULL;
            if ((st = nx_point_for_row(&im->pt, r, rows, n, &pr, err)) || (st = nx_program_build(pr, n, 1, &p, err)))
                return st;
            nx_rows one = {1, k->in_fmt, a + r * n, k->in_fmt, b + r * n, NX_FP64, NULL};
            st = nx_fast_reduce(p, &one, y + r, 1, err);
            nx_program_free(p);
            if (st)
                return st;
        }
        return NX_OK;
    }
    if (!im->prog || im->n != n) {
        nx_program_free(im->prog);
        im->prog = NULL;
        if ((st = nx_program_build(&im->pt, n, 1, &im->prog, err)))
            return st;
        im->n = n;
    }
    nx_rows in = {rows, k->in_fmt, a, k->in_fmt, b, NX_FP64, NULL};
    *of = (int)im->prog->out;
    return nx_fast_reduce(im->prog, &in, y, 1, err);
}

static void pt_destroy(rv_kernel *k)
{
    pt_impl *im = k->impl;
    if (!im)
        return;
    nx_program_free(im->prog);
    nx_point_free(&im->pt);
    free(im);
}

nx_status rv_kernel_point(const char *toml, nx_fmt in, rv_kernel **out, nx_err *err)
{
    rv_kernel *k = calloc(1, sizeof *k);
    pt_impl *im = calloc(1, sizeof *im);
    if (!k || !im) {
        free(k);
        free(im);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    nx_status st = pt_from_text(toml, "--simulate", &im->pt, err);
    if (st) {
        free(k);
        free(im);
        return st;
    }
    k->impl = im;
    k->in_fmt = in;
    k->out_fmt = -1;
    k->eval = pt_eval;
    k->destroy = pt_destroy;
    *out = k;
    return NX_OK;
}
