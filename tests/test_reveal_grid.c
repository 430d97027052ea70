/* test_reveal_grid.c: `reveal --grid` (docs/reveal.md "Grid classes"):
 * rv_call's packing of rows into gemm calls, and the grid selectors that
 * name a class of cells (fit_grid_select).
 *
 * The kernel here checks the contract of every call it gets (M * N rows,
 * row i * N + j holding the a of row i * N and the b of row j) and answers
 * each cell with its dot product plus 1000 times the cell's index, so that
 * an answer read from the wrong cell, or a row sent at the wrong cell, is
 * off by a multiple of 1000.  The expected answers are computed here from
 * the caller's own rows: terms are integers (or integers times a power of
 * two) small enough that every sum is exact in double, in any order. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fit.h"
#include "nx_select.h"
#include "reveal.h"

typedef struct gk {
    size_t M, N;
    size_t broken; /* calls that were not one gemm's */
} gk;

static nx_status gk_eval(rv_kernel *k, size_t rows, size_t n, const double *a, const double *b, double *y, int *of,
                         nx_err *err)
{
    gk *g = k->impl;
    (void)err;
    if (rows != g->M * g->N) {
        g->broken++;
        return NX_OK;
    }
    for (size_t r = 0; r < rows; r++) {
        if (memcmp(a + r * n, a + (r / g->N) * g->N * n, n * sizeof *a) ||
            memcmp(b + r * n, b + (r % g->N) * n, n * sizeof *b))
            g->broken++;
        double s = 0;
        for (size_t i = 0; i < n; i++)
            s += a[r * n + i] * b[r * n + i];
        y[r] = s + 1000.0 * (double)r;
    }
    *of = NX_FP64;
    return NX_OK;
}

static rv_kernel *gk_new(gk *g, size_t M, size_t N)
{
    rv_kernel *k = calloc(1, sizeof *k);
    assert_non_null(k);
    g->M = M;
    g->N = N;
    g->broken = 0;
    k->eval = gk_eval;
    k->impl = g;
    k->in_fmt = NX_FP32;
    k->out_fmt = -1;
    k->grid_m = M;
    k->grid_n = N;
    return k;
}

static uint64_t rng(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

/* exact: every product a power of two times a small integer (exact in
 * fp32); else 20-bit odd integers, whose products are not */
static void fill(double *a, double *b, size_t rows, size_t n, int exact, uint64_t *s)
{
    for (size_t i = 0; i < rows * n; i++) {
        if (exact) {
            a[i] = ldexp((double)(int)(rng(s) % 15) - 7, (int)(rng(s) % 9) - 4);
            b[i] = ldexp(1, (int)(rng(s) % 5) - 2);
        } else {
            a[i] = (double)((rng(s) % (1u << 19)) * 2 + 1) * (rng(s) & 1 ? -1 : 1);
            b[i] = (double)((rng(s) % (1u << 19)) * 2 + 1);
        }
    }
}

static void expect(const double *a, const double *b, const double *y, size_t rows, size_t n, size_t MN)
{
    for (size_t r = 0; r < rows; r++) {
        double s = 0;
        for (size_t i = 0; i < n; i++)
            s += a[r * n + i] * b[r * n + i];
        s += 1000.0 * (double)(r % MN);
        if (y[r] != s)
            fail_msg("row %zu: %.17g, expected %.17g (cell %zu)", r, y[r], s, r % MN);
    }
}

/* rows of every kind, counts that are and are not multiples of M * N,
 * repeated rows: every call a gemm's, every answer the caller's row's at
 * its own cell */
static void test_packing(void **state)
{
    (void)state;
    const size_t n = 5;
    static const size_t grids[][2] = {{3, 4}, {4, 3}, {1, 5}, {6, 1}, {2, 2}};
    static const size_t counts[] = {1, 7, 12, 13, 30, 61};
    uint64_t s = 42;
    for (size_t g = 0; g < sizeof grids / sizeof *grids; g++)
        for (size_t c = 0; c < sizeof counts / sizeof *counts; c++)
            for (int mode = 0; mode < 3; mode++) {
                size_t rows = counts[c];
                double *a = malloc(rows * n * sizeof *a), *b = malloc(rows * n * sizeof *b),
                       *y = malloc(rows * sizeof *y);
                assert_true(a && b && y);
                if (mode < 2)
                    fill(a, b, rows, n, mode, &s);
                else /* a mix, some rows repeated */
                    for (size_t r = 0; r < rows; r++) {
                        fill(a + r * n, b + r * n, 1, n, (int)(r % 2), &s);
                        if (r >= 3 && r % 3 == 0) {
                            memcpy(a + r * n, a + (r - 3) * n, n * sizeof *a);
                            memcpy(b + r * n, b + (r - 3) * n, n * sizeof *b);
                        }
                    }
                gk st;
                rv_kernel *k = gk_new(&st, grids[g][0], grids[g][1]);
                nx_err e = {0};
                assert_int_equal(rv_call(k, rows, n, a, b, y, &e), NX_OK);
                if (st.broken)
                    fail_msg("grid %zu x %zu, %zu rows, mode %d: %zu calls not a gemm's", grids[g][0], grids[g][1],
                             rows, mode, st.broken);
                expect(a, b, y, rows, n, grids[g][0] * grids[g][1]);
                assert_int_equal(k->probes, rows);
                free(k);
                free(a);
                free(b);
                free(y);
            }
}

/* The calls: a batch that already is a gemm's is one call; exact rows go
 * as (a*b, 1), one per grid row i a call, so the calls are the most rows
 * any one grid row i holds */
static void test_calls(void **state)
{
    (void)state;
    const size_t M = 3, N = 4, n = 6, MN = 12;
    uint64_t s = 7;
    double a[2 * 12 * 6], b[2 * 12 * 6], y[2 * 12];
    /* two gemms' batches */
    double A[3 * 6], B[4 * 6];
    fill(A, B, 3, n, 0, &s);
    for (size_t i = 0; i < 4 * n; i++)
        B[i] = (double)(rng(&s) % 1000) + 1;
    for (size_t c = 0; c < 2; c++)
        for (size_t r = 0; r < MN; r++) {
            memcpy(a + (c * MN + r) * n, A + (r / N) * n, n * sizeof *a);
            memcpy(b + (c * MN + r) * n, B + (r % N) * n, n * sizeof *b);
        }
    gk st;
    rv_kernel *k = gk_new(&st, M, N);
    nx_err e = {0};
    assert_int_equal(rv_call(k, 2 * MN, n, a, b, y, &e), NX_OK);
    assert_int_equal(st.broken, 0);
    assert_int_equal(k->calls, 2);
    expect(a, b, y, 2 * MN, n, MN);
    free(k);
    /* 10 exact rows at cells 0 .. 9: grid rows 0, 1, 2 hold 4, 4, 2 of
     * them, so 4 calls */
    fill(a, b, 10, n, 1, &s);
    k = gk_new(&st, M, N);
    assert_int_equal(rv_call(k, 10, n, a, b, y, &e), NX_OK);
    assert_int_equal(st.broken, 0);
    assert_int_equal(k->calls, 4);
    expect(a, b, y, 10, n, MN);
    free(k);
}

/* fit_grid_select on hand-drawn classes of a 6 x 10 grid */
static void mark(unsigned char *c, long M, long N, int (*in)(long, long))
{
    for (long i = 0; i < M; i++)
        for (long j = 0; j < N; j++)
            c[i * N + j] = (unsigned char)in(i, j);
}
static int cols89(long i, long j) { (void)i; return j >= 8; }
static int rows45(long i, long j) { (void)j; return i >= 4; }
static int edge(long i, long j) { return i >= 4 || j >= 8; }
static int corner(long i, long j) { return i >= 4 && j >= 8; }
static int cols_not_corner(long i, long j) { return j >= 8 && i < 4; }
static int odd_cols(long i, long j) { (void)i; return j % 2 == 1; }
static int one_cell(long i, long j) { return i == 2 && j == 3; }
static int none(long i, long j) { (void)i; (void)j; return 0; }

/* The selector for the class want (cells claimed by classes before it
 * may go either way) on an M x N grid: the text exp, and, read back by the
 * selector parser, true at every wanted cell and false at every cell
 * neither wanted nor claimed. */
static void check_sel_grid(long M, long N, int (*want)(long, long), int (*claimed)(long, long), const char *exp)
{
    unsigned char *w = malloc((size_t)(M * N)), *c = malloc((size_t)(M * N));
    assert_non_null(w);
    assert_non_null(c);
    mark(w, M, N, want);
    mark(c, M, N, claimed);
    char *got = fit_grid_select(w, c, M, N);
    if (!exp) {
        if (got)
            fail_msg("expected no selector, got '%s'", got);
        free(w);
        free(c);
        return;
    }
    if (!got || strcmp(got, exp))
        fail_msg("selector '%s', expected '%s'", got ? got : "(none)", exp);
    nx_select *sel = NULL;
    nx_err e = {0};
    assert_int_equal(nx_select_parse(got, "select", &sel, &e), NX_OK);
    for (long r = 0; r < M * N; r++) {
        int t = -1;
        assert_int_equal(nx_select_eval(sel, r, M * N, M, N, 16, &t, &e), NX_OK);
        if (w[r] ? !t : t && !c[r])
            fail_msg("'%s' is %s at cell (%ld, %ld)", got, t ? "true" : "false", r / N, r % N);
    }
    nx_select_free(sel);
    free(got);
    free(w);
    free(c);
}

static void check_sel(int (*want)(long, long), int (*claimed)(long, long), const char *exp)
{
    check_sel_grid(6, 10, want, claimed, exp);
}

/* OpenBLAS 0.3.21's Haswell sgemm at 36 x 40 (one thread): the outputs
 * its kernel sums as two lanes over rounds of 8 terms, the others as one
 * running sum: rows 0-7 and 24-31 at the columns j % 12 < 6, and rows 0-31
 * at the last 4 columns (36-39) */
static int ob_lanes(long i, long j) { return (i % 24 < 8 && j % 12 < 6) || (i < 32 && j >= 36); }
static int ob_seq(long i, long j) { return !ob_lanes(i, j); }
/* the same kernel at 48 x 48: rows 0-7 and 40-47 at the columns j % 12 < 6 */
static int ob48_lanes(long i, long j) { return (i < 8 || i >= 40) && j % 12 < 6; }
/* 100 x 4: the first 10 rows, or all but the last 3, at columns 0-1 */
static int first10(long i, long j) { return i < 10 && j < 2; }
static int but_last3(long i, long j) { return i < 97 && j < 2; }
/* two blocks of a 12 x 12 grid: rows 0-3 at columns 0-3, rows 8-11 at columns 8-11 */
static int two_blocks(long i, long j) { return (i < 4 && j < 4) || (i >= 8 && j >= 8); }
static int diagonal(long i, long j) { return i == j; }

static void test_selectors(void **state)
{
    (void)state;
    /* N = 10: 10 % 2 and 10 % 3 leave 0 and 1 columns; 10 % 4 = 2 is the first that gives 8, 9 */
    check_sel(cols89, none, "j >= N - N % 4");
    /* M = 6: 6 % 4 = 2 gives rows 4, 5 */
    check_sel(rows45, none, "i >= M - M % 4");
    check_sel(edge, none, "i >= M - M % 4 || j >= N - N % 4");
    check_sel(corner, none, "i >= M - M % 4 && j >= N - N % 4");
    /* the corner taken by a class listed before: the columns may hold it */
    check_sel(cols_not_corner, rows45, "j >= N - N % 4");
    /* ... where no class took it, the columns and the rows before the
     * edge ones (the complement of `i >= M - M % 4`) */
    check_sel(cols_not_corner, none, "i < M - M % 4 && j >= N - N % 4");
    check_sel(odd_cols, none, "j % 2 >= 1");
    check_sel(one_cell, none, NULL);
    /* two rectangles: no set of rows or columns alone, nor one of each,
     * holds these cells; rows 0-7 and 24-31 are `i % 24 < 8` (the only
     * spelling), columns 36-39 are the first spelling `j >= N - N % 6`
     * (40 % 6 = 4), rows 0-31 `i < M - M % 8` (36 % 8 = 4; the least P
     * of the sets that fit, where `i % 28 >= 8` also would) */
    check_sel_grid(36, 40, ob_lanes, none, "(i % 24 < 8 && j % 12 < 6) || (i < M - M % 8 && j >= N - N % 6)");
    /* the other cells: three rectangles, so the complement of the two */
    check_sel_grid(36, 40, ob_seq, none, "!((i % 24 < 8 && j % 12 < 6) || (i < M - M % 8 && j >= N - N % 6))");
    /* rows 0-7 of 48 are no tile's (48 % P is never 40, and `i % P < k`
     * holds row P and its multiples, one of them in 8-39 for every P up
     * to 32): the first lines
     * by number, `i < 8`, weighed after every tile size; rows 40-47 are
     * `i >= M - M % 10` (48 % 10 = 8), before `i >= M - 8` */
    check_sel_grid(48, 48, ob48_lanes, none, "(i < 8 && j % 12 < 6) || (i >= M - M % 10 && j % 12 < 6)");
    /* lines by number: no tile gives rows 0-9 of 100 (100 % P is never
     * 90, `i % P < 10` holds row P) nor rows 0-96 (100 % P is 3 for no P
     * up to 32); a run at the start is printed by its length, all but a
     * run at the end by the run's (`i < M - 3`); columns 0-1 of 4 are `j
     * % 4 < 2` */
    check_sel_grid(100, 4, first10, none, "i < 10 && j % 4 < 2");
    check_sel_grid(100, 4, but_last3, none, "i < M - 3 && j % 4 < 2");
    /* rows (and columns) 0-3 of 12 have one spelling, `i % 12 < 4` (`i %
     * 8 < 4` holds 8-11 too, and 12 % P is never 8); 8-11 are `i >= M - M
     * % 8` (12 % 8 = 4, P = 8 before `i % 12 >= 8`'s 12) */
    check_sel_grid(12, 12, two_blocks, none, "(i % 12 < 4 && j % 12 < 4) || (i >= M - M % 8 && j >= N - N % 8)");
    /* a diagonal is no union of two rectangles, nor the complement of one */
    check_sel_grid(12, 12, diagonal, none, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_packing),
        cmocka_unit_test(test_calls),
        cmocka_unit_test(test_selectors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
