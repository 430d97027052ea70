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
    fit_pair pair = {{rows, NX_FP32, a, NX_FP32, NULL, NX_FP64, NULL}, N, 0, y};
    fit_opts o = {1, max, 0, NX_ENGINE_FAST, classes, 1};
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_tree_is_found_alone),
        cmocka_unit_test(test_no_candidate_names_the_closest),
        cmocka_unit_test(test_row_classes_only_when_asked),
        cmocka_unit_test(test_residue_classes),
        cmocka_unit_test(test_max_bounds_the_search),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
