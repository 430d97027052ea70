/* test_fit.c: fit's search (parity/fit/fit.c) on rows written by hand.
 *
 * Two fp32 sum rows of four terms whose results tell seq, reverse(seq),
 * pairwise and halving apart, each result worked out by hand (below) and
 * written as a hex-float literal: nothing here is computed by the code
 * under test or by the engines it uses.
 *
 *   R1 = [1, 2^-24, 2^-24, 2^-24], R2 = [2^-24, 2^-24, 1, 0]
 *
 *   seq:          R1 ((1 + u) + u) + u, each + u a tie to even: 1
 *                 R2 ((u + u) + 1) + 0 = 1 + 2^-23
 *   reverse(seq): R1 ((u + u) + u) + 1 = 1 + 3u, a tie between 1 + 2u
 *                 (odd) and 1 + 4u (even): 1 + 2^-22
 *                 R2 ((0 + 1) + u) + u: 1
 *   pairwise:     R1 (1 + u) + (u + u) = 1 + 2^-23
 *                 R2 (u + u) + (1 + 0) = 1 + 2^-23
 *   halving:      R1 (t0 + t2) + (t1 + t3) = 1 + 2^-23
 *                 R2 (u + 1) + (u + 0) = 1
 *
 * with u = 2^-24.  The search must name the one candidate that reproduces
 * a set of rows, name none (and the closest) when none does, and fit row
 * classes only when asked to. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fit.h"

#define N 4

static const double R1[N] = {0x1p0, 0x1p-24, 0x1p-24, 0x1p-24};
static const double R2[N] = {0x1p-24, 0x1p-24, 0x1p0, 0.0};

/* seq, reverse(seq), pairwise, halving: their results on R1 and R2 */
static const double want[4][2] = {
    {0x1p0, 0x1.000002p0},
    {0x1.000004p0, 0x1p0},
    {0x1.000002p0, 0x1.000002p0},
    {0x1.000002p0, 0x1p0},
};
static const char *const trees[4] = {"seq", "reverse(seq)", "pairwise", "halving"};

/* rows copies of R1, R2, R1, R2, ...; y[r] from the tree cls[r] */
static void rows_of(size_t rows, const int *cls, double *a, double *y)
{
    for (size_t r = 0; r < rows; r++) {
        memcpy(a + r * N, r % 2 ? R2 : R1, sizeof R1);
        y[r] = want[cls[r]][r % 2];
    }
}

static void space_of(fit_space *sp)
{
    nx_err e = {0};
    fit_ctx ctx = {NX_FP32, NX_FP32, 0};
    fit_space_init(sp, NX_FP32);
    /* whole points: a bare tree would also be tried with acc = fp64 */
    const char *text = "{ acc = \"fp32\", tree = \"seq\" }\n{ acc = \"fp32\", tree = \"reverse(seq)\" }\n"
                       "{ acc = \"fp32\", tree = \"pairwise\" }\n{ acc = \"fp32\", tree = \"halving\" }\n";
    if (fit_space_parse(sp, &ctx, text, "test", &e) != NX_OK)
        fail_msg("space: %s", e.msg);
    assert_int_equal(sp->count, 4);
}

/* fit_run over rows [rows, N] of a with results y, the four trees as the
 * space, the first max candidates (0: all), row classes when asked. */
static void fit_rows(const double *a, const double *y, size_t rows, size_t max, int classes, fit_result *res)
{
    fit_space sp;
    space_of(&sp);
    fit_pair pair = {{rows, NX_FP32, a, NX_FP32, NULL, NX_FP64, NULL}, N, 0, y, 0, 0};
    fit_opts o = {1, max, 0, NX_ENGINE_FAST, classes, 1, 0};
    nx_err e = {0};
    memset(res, 0, sizeof *res);
    assert_int_equal(fit_run(&pair, 1, &sp, &o, res, &e), NX_OK);
    fit_space_free(&sp);
}

static void run(size_t rows, const int *cls, int classes, fit_result *res)
{
    double *a = malloc(rows * N * sizeof *a), *y = malloc(rows * sizeof *y);
    rows_of(rows, cls, a, y);
    fit_rows(a, y, rows, 0, classes, res);
    free(a);
    free(y);
}

static int names(const fit_result *r, const char *tree)
{
    char want_s[64];
    snprintf(want_s, sizeof want_s, "tree = \"%s\"", tree);
    return r->point && strstr(r->point, want_s) != NULL;
}

/* Each tree's rows are reproduced by that tree alone. */
static void test_each_tree_is_found_alone(void **state)
{
    (void)state;
    for (int t = 0; t < 4; t++) {
        int cls[2] = {t, t};
        fit_result r;
        run(2, cls, 0, &r);
        if (!r.found || !names(&r, trees[t]))
            fail_msg("rows of %s: found %d, point %s", trees[t], r.found, r.point ? r.point : "(none)");
        assert_int_equal(r.nfit, 1);
        assert_int_equal(r.nalt, 0);
        fit_result_free(&r);
    }
}

/* R1 of seq and R2 of reverse(seq): no single candidate; the closest are
 * named, each one row off. */
static void test_no_candidate_names_the_closest(void **state)
{
    (void)state;
    int cls[2] = {0, 1};
    fit_result r;
    run(2, cls, 0, &r);
    assert_int_equal(r.found, 0);
    assert_null(r.point);
    assert_true(r.nnear >= 2);
    assert_int_equal(r.near[0].mismatches, 1);
    fit_result_free(&r);
}

/* Rows 0-1 pairwise, rows 2-3 seq: one point with a row class when classes
 * are asked for, none otherwise. */
static void test_row_classes_only_when_asked(void **state)
{
    (void)state;
    int cls[4] = {2, 2, 0, 0};
    fit_result r;
    run(4, cls, 0, &r);
    assert_int_equal(r.found, 0);
    fit_result_free(&r);
    run(4, cls, 1, &r);
    if (!r.found)
        fail_msg("row classes: nothing found");
    assert_true(r.nclasses > 0);
    assert_non_null(strstr(r.point, "rows = ["));
    fit_result_free(&r);
}

/* Every 4th row from the 4th (a micro-tile's edge rows) takes another
 * path: eight copies of R1, seq's result (1) at rows 3 and 7, pairwise's
 * (1 + 2^-23) elsewhere.  No prefix or suffix class holds it; the residue
 * class r % 4 == 3 does, found from the rows pairwise gets wrong. */
static void test_residue_classes(void **state)
{
    (void)state;
    double a[8 * N], y[8];
    for (size_t r = 0; r < 8; r++) {
        memcpy(a + r * N, R1, sizeof R1);
        y[r] = r % 4 == 3 ? 0x1p0 : 0x1.000002p0;
    }
    fit_result r;
    fit_rows(a, y, 8, 0, 1, &r);
    if (!r.found)
        fail_msg("residue class: nothing found");
    assert_true(names(&r, "pairwise"));
    if (!strstr(r.point, "rows = [{ select = \"r % 4 == 3\"") || !strstr(r.point, "tree = \"seq\""))
        fail_msg("residue class: %s", r.point);
    fit_result_free(&r);
}

/* --max: only the first candidates are searched (space order): pairwise is
 * the third, so --max 2 finds nothing for its rows. */
static void test_max_bounds_the_search(void **state)
{
    (void)state;
    double a[2 * N], y[2];
    int cls[2] = {2, 2};
    rows_of(2, cls, a, y);
    fit_result r;
    fit_rows(a, y, 2, 2, 0, &r);
    assert_int_equal(r.found, 0);
    assert_int_equal(r.evaluated, 2);
    fit_result_free(&r);
    fit_rows(a, y, 2, 3, 0, &r);
    assert_true(r.found && names(&r, "pairwise"));
    fit_result_free(&r);
}

/* Row classes over a grid (docs/fit.md "Row classes over a grid").  Every
 * row is G = [M, 2, -M, 1] with M = 2^25 (fp32 spacing 2 on [2^24, 2^25),
 * 4 on [2^25, 2^26)):
 *
 *   seq:          ((M + 2) + -M) + 1: M + 2 is a tie between 2^25 (even)
 *                 and 2^25 + 4 (odd): 2^25; then 0, then 1
 *   reverse(seq): ((1 + -M) + 2) + M: 1 - 2^25 is a tie between -(2^25 - 2)
 *                 (odd) and -2^25 (even): -2^25; + 2 = -(2^25 - 2) exactly;
 *                 + M = 2
 *   pairwise:     (M + 2) + (-M + 1) = 2^25 + -2^25 = +0
 *   halving:      (M + -M) + (2 + 1) = 3
 *
 * The rows are a grid of M x N = 6 x 10 (row r = 10 i + j); the rows of a
 * class take seq's result (1), the others pairwise's (+0). */
static const double G[N] = {0x1p25, 0x1p1, -0x1p25, 0x1p0};

static void run_grid(long gm, long gn, int (*edge)(long i, long j), fit_result *res)
{
    size_t rows = (size_t)(gm * gn);
    double *a = malloc(rows * N * sizeof *a), *y = malloc(rows * sizeof *y);
    for (size_t r = 0; r < rows; r++) {
        memcpy(a + r * N, G, sizeof G);
        y[r] = edge((long)r / gn, (long)r % gn) ? 0x1p0 : 0.0;
    }
    fit_space sp;
    space_of(&sp);
    fit_pair pair = {{rows, NX_FP32, a, NX_FP32, NULL, NX_FP64, NULL}, N, 0, y, gm, gn};
    fit_opts o = {1, 0, 0, NX_ENGINE_FAST, 1, 1, 0};
    nx_err e = {0};
    memset(res, 0, sizeof *res);
    if (fit_run(&pair, 1, &sp, &o, res, &e) != NX_OK)
        fail_msg("fit_run: %s", e.msg);
    fit_space_free(&sp);
    free(a);
    free(y);
}

/* the last two columns, j = 8, 9: N % 4 = 2, the edge of a 4-wide tile */
static int edge_cols(long i, long j)
{
    (void)i;
    return j >= 8;
}

/* edge rows i = 4, 5 (M % 4 = 2) or edge columns j = 8, 9 */
static int edge_rows_or_cols(long i, long j)
{
    return i >= 4 || j >= 8;
}

/* Fits the 6 x 10 grid whose class pred picks; the point must be the
 * canonical text (nx_point_print: every key, the grid) of pairwise with the
 * one class `seq` under the selector want_sel. */
static void expect_grid_class(const char *what, int (*pred)(long, long), const char *want_sel)
{
    fit_result r;
    run_grid(6, 10, pred, &r);
    if (!r.found)
        fail_msg("%s: nothing found", what);
    char want[1024];
    snprintf(want, sizeof want,
             "{ acc = \"fp32\", rounding = \"rne\", fma = true, product = \"exact\", tree = \"pairwise\", out = "
             "\"fp32\", out_rounding = \"rne\", saturate = false, grid = [6, 10], rows = [{ select = \"%s\", acc = "
             "\"fp32\", rounding = \"rne\", fma = true, product = \"exact\", tree = \"seq\", out = \"fp32\", "
             "out_rounding = \"rne\", saturate = false }] }",
             want_sel);
    if (strcmp(r.point, want) != 0)
        fail_msg("%s: %s", what, r.point);
    if (strstr(r.point, "\"r %"))
        fail_msg("%s: a residue of r, not a class of the grid: %s", what, r.point);
    assert_int_equal(r.nclasses, 1);
    fit_result_free(&r);
}

/* j >= 8 on a 6 x 10 grid: the rows r % 10 >= 8 too, but on a grid the
 * selector is over j, and the point holds the grid. */
static void test_grid_edge_columns(void **state)
{
    (void)state;
    expect_grid_class("grid columns", edge_cols, "j >= N - N % 4");
}

/* i >= 4 || j >= 8: neither a prefix or suffix of r nor one residue class;
 * two edge classes joined. */
static void test_grid_edge_rows_or_columns(void **state)
{
    (void)state;
    expect_grid_class("grid rows or columns", edge_rows_or_cols, "i >= M - M % 4 || j >= N - N % 4");
}

/* A grid that does not lay out the rows is refused, naming the pair. */
static void test_grid_must_lay_out_the_rows(void **state)
{
    (void)state;
    double a[6 * N], y[6] = {0};
    for (size_t r = 0; r < 6; r++)
        memcpy(a + r * N, G, sizeof G);
    fit_space sp;
    space_of(&sp);
    fit_pair pair = {{6, NX_FP32, a, NX_FP32, NULL, NX_FP64, NULL}, N, 0, y, 2, 4};
    fit_opts o = {1, 0, 0, NX_ENGINE_FAST, 1, 1, 0};
    nx_err e = {0};
    fit_result r;
    assert_int_equal(fit_run(&pair, 1, &sp, &o, &r, &e), NX_EINVAL);
    if (!strstr(e.msg, "pair 1: grid [2, 4] does not lay out its 6 rows"))
        fail_msg("bad grid: %s", e.msg);
    fit_result_free(&r);
    fit_space_free(&sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_tree_is_found_alone),
        cmocka_unit_test(test_no_candidate_names_the_closest),
        cmocka_unit_test(test_row_classes_only_when_asked),
        cmocka_unit_test(test_residue_classes),
        cmocka_unit_test(test_max_bounds_the_search),
        cmocka_unit_test(test_grid_edge_columns),
        cmocka_unit_test(test_grid_edge_rows_or_columns),
        cmocka_unit_test(test_grid_must_lay_out_the_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
