/* test_rowclass.c: row classes (docs/numerics.md §4.3): selectors, their
 * errors, points with rows/grid, and rows reduced by their class's point in
 * both engines.  Expected values are worked by hand in the comments. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nx_rowclass.h"
#include "nx_select.h"
#include "oracle/oracle.h"
#include "randpoint.h"
#include "point_toml.h"
#include "testutil.h"

/* Which of R rows of n terms a selector picks, as a string of 0/1. */
static void picks_n(const char *sel, long long R, long long M, long long N, long long n, const char *want)
{
    nx_select *s;
    nx_err err = {0};
    if (nx_select_parse(sel, "select", &s, &err) != NX_OK) {
        print_error("%s: %s\n", sel, err.msg);
        fail();
    }
    char got[64] = "";
    for (long long r = 0; r < R; r++) {
        int hit = -1;
        assert_int_equal(nx_select_eval(s, r, R, M, N, n, &hit, &err), NX_OK);
        got[r] = hit ? '1' : '0';
    }
    nx_select_free(s);
    if (strcmp(got, want) != 0) {
        print_error("%s over %lld rows of %lld terms: got %s, want %s\n", sel, R, n, got, want);
        fail();
    }
}

static void picks(const char *sel, long long R, long long M, long long N, const char *want)
{
    picks_n(sel, R, M, N, 0, want);
}

static void test_selectors(void **state)
{
    (void)state;
    /* R = 10: R % 4 = 2, so r >= 8: the last two rows */
    picks("r >= R - R % 4", 10, 0, 0, "0000000011");
    picks("r < 4", 6, 0, 0, "111100");
    picks("r % 3 == 1 || r == 0", 7, 0, 0, "1100100");
    picks("!(r % 2) && r != 4", 7, 0, 0, "1010001");
    picks("1 + 2 * 3 == 7 && r / 2 == 1", 5, 0, 0, "00110"); /* * before +, / floors */
    picks("r - 1 - 1 == 0", 4, 0, 0, "0010");                  /* left associative */
    /* grid 2 x 3: i = r / 3, j = r % 3: the last column and the last row */
    picks("j == N - 1", 6, 2, 3, "001001");
    picks("i == M - 1", 6, 2, 3, "000111");

    nx_select *s;
    nx_err err = {0};
    assert_int_equal(nx_select_parse("r >= ", "select", &s, &err), NX_EINVAL);
    assert_string_equal(err.msg, "select: column 6: expected a number, a name or '(' at the end");
    assert_int_equal(nx_select_parse("r >= q", "select", &s, &err), NX_EINVAL);
    assert_string_equal(err.msg, "select: column 6: unknown name 'q' (expected r, R, n, i, j, M, N or a number)");
    assert_int_equal(nx_select_parse("(r < 2", "select", &s, &err), NX_EINVAL);
    assert_string_equal(err.msg, "select: column 7: expected ')'");
    assert_int_equal(nx_select_parse("r 2", "select", &s, &err), NX_EINVAL);
    assert_string_equal(err.msg, "select: column 3: unexpected '2' after the selector");
    /* division by zero is found when a row makes it happen */
    assert_int_equal(nx_select_parse("r / (R - 4) == 0", "select", &s, &err), NX_OK);
    int hit;
    assert_int_equal(nx_select_eval(s, 1, 5, 0, 0, 0, &hit, &err), NX_OK);
    assert_int_equal(nx_select_eval(s, 1, 4, 0, 0, 0, &hit, &err), NX_EINVAL);
    assert_string_equal(err.msg, "column 3: division by zero at row 1");
    nx_select_free(s);
    /* && and || skip the side they do not need, as in C: no division there */
    picks("r == 0 || r / (R - 1) == 0", 1, 0, 0, "1");
    picks("r > 0 && 1 / r == 1", 3, 0, 0, "010");
    assert_int_equal(nx_select_parse("r == 0 || 1 / (R - 4) == 0", "select", &s, &err), NX_OK);
    assert_int_equal(nx_select_eval(s, 1, 4, 0, 0, 0, &hit, &err), NX_EINVAL);
    assert_string_equal(err.msg, "column 13: division by zero at row 1");
    nx_select_free(s);
    /* the contract has no unary minus */
    assert_int_equal(nx_select_parse("-1 < r", "select", &s, &err), NX_EINVAL);
}

static void point_fails(const char *toml, const char *want_part)
{
    nx_point pt;
    nx_err err = {0};
    assert_int_equal(pt_from_text(toml, "point", &pt, &err), NX_EINVAL);
    if (!strstr(err.msg, want_part)) {
        print_error("%s\n  got:  %s\n  want: ...%s...\n", toml, err.msg, want_part);
        fail();
    }
}

static void test_point_keys(void **state)
{
    (void)state;
    point_fails("{ rows = [{ tree = \"seq\" }] }", "select");
    point_fails("{ rows = [{ select = \"r <\" }] }", "rows[0].select");
    point_fails("{ rows = [{ select = \"r < 1\", rows = [] }] }", "cannot hold 'rows' or 'grid'");
    point_fails("{ rows = [{ select = \"r < 1\", grid = [1, 1] }] }", "cannot hold 'rows' or 'grid'");
    point_fails("{ rows = [{ select = \"j == 0\" }] }", "has no 'grid'");
    point_fails("{ grid = [2] }", "key 'grid' must be [M, N]");
    point_fails("{ rows = [{ select = \"r < 1\", tree = \"sek\" }] }", "unknown tree 'sek'");
    point_fails("{ rows = [{ select = \"r < 1\", speed = 1 }] }", "speed");

    /* the canonical text carries every class in full */
    nx_point pt;
    nx_err err = {0};
    assert_int_equal(pt_from_text("{ acc = \"bf16\", rows = [{ select = \"r >= R - R % 4\", fma = false }] }", "p",
                                  &pt, &err),
                     NX_OK);
    assert_int_equal(pt.nclasses, 1);
    assert_int_equal(pt.classes[0].pt->acc, NX_BF16); /* inherited */
    assert_int_equal(pt.classes[0].pt->fma, 0);
    char *s = nx_point_print(&pt);
    assert_non_null(strstr(s, ", rows = [{ select = \"r >= R - R % 4\", acc = \"bf16\", rounding = \"rne\", fma = false"));
    nx_point p2;
    assert_int_equal(pt_from_text(s, "p", &p2, &err), NX_OK); /* the print parses back */
    char *s2 = nx_point_print(&p2);
    assert_string_equal(s, s2);
    free(s);
    free(s2);
    nx_point_free(&p2);
    nx_point_free(&pt);
}

/* docs/numerics.md §4.3's example of a selector over R: fp32 row 2^24, 1, 1
 * under `R == 1` reverse(seq) (1 + 1, then 2 + 2^24 exact: 0x1.000002p24)
 * when sent alone; in an input of two rows, seq (two ties to 2^24). */
static void test_one_row_class(void **state)
{
    (void)state;
    const double row[3] = {0x1p24, 1, 1};
    double a[6];
    for (size_t r = 0; r < 2; r++)
        memcpy(a + 3 * r, row, sizeof row);
    nx_point pt;
    nx_err err = {0};
    assert_int_equal(
        pt_from_text("{ tree = \"seq\", rows = [{ select = \"R == 1\", tree = \"reverse(seq)\" }] }", "p", &pt, &err),
        NX_OK);
    for (int e = 0; e < 2; e++) {
        double y[2] = {0};
        nx_rows one = {.rows = 1, .a_fmt = NX_FP32, .a = a, .b_fmt = NX_FP32};
        assert_int_equal(nx_point_reduce(&pt, &one, 3, 0, e ? NX_ENGINE_FAST : NX_ENGINE_MPFR, 1, y, &err), NX_OK);
        assert_double_bits_eq_ctx(y[0], 0x1.000002p24, e ? "fast" : "mpfr");
        nx_rows two = {.rows = 2, .a_fmt = NX_FP32, .a = a, .b_fmt = NX_FP32};
        assert_int_equal(nx_point_reduce(&pt, &two, 3, 0, e ? NX_ENGINE_FAST : NX_ENGINE_MPFR, 1, y, &err), NX_OK);
        assert_double_bits_eq_ctx(y[0], 0x1p24, e ? "fast" : "mpfr");
        assert_double_bits_eq_ctx(y[1], 0x1p24, e ? "fast" : "mpfr");
    }
    nx_point_free(&pt);
}

/* fp32 rows 1, 1, 2^24: seq gives 2 + 2^24 = 0x1.000002p24; reverse(seq)
 * adds 2^24 + 1 twice, each a tie that stays 2^24. */
static void test_reduce(void **state)
{
    (void)state;
    const size_t R = 4, n = 3;
    double a[12];
    for (size_t r = 0; r < R; r++) {
        a[r * n] = 1;
        a[r * n + 1] = 1;
        a[r * n + 2] = 0x1p24;
    }
    nx_rows in = {.rows = R, .a_fmt = NX_FP32, .a = a, .b_fmt = NX_FP32};
    nx_point pt;
    nx_err err = {0};
    assert_int_equal(pt_from_text("{ rows = [{ select = \"r % 2 == 1\", tree = \"reverse(seq)\" }] }", "p", &pt, &err),
                     NX_OK);
    const double want[4] = {0x1.000002p24, 0x1p24, 0x1.000002p24, 0x1p24};
    for (int e = 0; e < 2; e++) {
        double y[4] = {0};
        assert_int_equal(nx_point_reduce(&pt, &in, n, 0, e ? NX_ENGINE_FAST : NX_ENGINE_MPFR, 1, y, &err), NX_OK);
        for (size_t r = 0; r < R; r++)
            assert_double_bits_eq_ctx(y[r], want[r], e ? "fast" : "mpfr");
    }
    /* the hash sees the classes */
    char h1[65], h2[65];
    assert_int_equal(nx_point_hash(&pt, n, 0, 0, h1, &err), NX_OK);
    nx_point plain;
    assert_int_equal(pt_from_text("{ }", "p", &plain, &err), NX_OK);
    assert_int_equal(nx_point_hash(&plain, n, 0, 0, h2, &err), NX_OK);
    assert_string_not_equal(h1, h2);
    nx_point_free(&plain);
    nx_point_free(&pt);

    /* a grid that does not lay out the rows, and a division by zero */
    assert_int_equal(pt_from_text("{ grid = [3, 2], rows = [{ select = \"j == 1\", tree = \"pairwise\" }] }", "p", &pt,
                                  &err),
                     NX_OK);
    double y[4];
    assert_int_equal(nx_point_reduce(&pt, &in, n, 0, NX_ENGINE_FAST, 1, y, &err), NX_EINVAL);
    assert_non_null(strstr(err.msg, "lays out 6 rows, but there are 4"));
    nx_point_free(&pt);
    assert_int_equal(pt_from_text("{ rows = [{ select = \"r / (R - 4) == 0\" }] }", "p", &pt, &err), NX_OK);
    assert_int_equal(nx_point_reduce(&pt, &in, n, 0, NX_ENGINE_MPFR, 1, y, &err), NX_EINVAL);
    assert_non_null(strstr(err.msg, "division by zero at row 0"));
    nx_point_free(&pt);
}

/* Size classes (fourth edition): `n` is the reduction length.  Terms 2^24
 * then n - 1 ones.  n = 7 < 48 takes reverse(seq): 1 + ... + 1 = 6 exactly,
 * 6 + 2^24 exact: 0x1.000006p24 (0x4b800003).  n = 48 takes seq: each + 1
 * is a tie that stays 2^24 (0x4b800000); reverse(seq) would give 2^24 + 47,
 * a tie between 2^24 + 46 and 2^24 + 48, to even: 0x1.00003p24. */
static void test_size_classes(void **state)
{
    (void)state;
    nx_point pt;
    nx_err err = {0};
    assert_int_equal(pt_from_text("{ tree = \"seq\", rows = [{ select = \"n < 48\", tree = \"reverse(seq)\" }] }", "p",
                                  &pt, &err),
                     NX_OK);
    const size_t lens[2] = {7, 48};
    const double want[2] = {0x1.000006p24, 0x1p24};
    double a[2 * 48];
    for (int k = 0; k < 2; k++) {
        size_t n = lens[k];
        for (size_t r = 0; r < 2; r++)
            for (size_t i = 0; i < n; i++)
                a[r * n + i] = i == 0 ? 0x1p24 : 1;
        nx_rows in = {.rows = 2, .a_fmt = NX_FP32, .a = a, .b_fmt = NX_FP32};
        for (int e = 0; e < 2; e++) {
            double y[2] = {0};
            assert_int_equal(nx_point_reduce(&pt, &in, n, 0, e ? NX_ENGINE_FAST : NX_ENGINE_MPFR, 1, y, &err), NX_OK);
            for (size_t r = 0; r < 2; r++)
                assert_double_bits_eq_ctx(y[r], want[k], e ? "fast" : "mpfr");
        }
    }
    /* the control: without the class, n = 7 gives 2^24 (the size class is
     * what changes the result) */
    nx_point plain;
    assert_int_equal(pt_from_text("{ tree = \"seq\" }", "p", &plain, &err), NX_OK);
    {
        nx_rows in = {.rows = 1, .a_fmt = NX_FP32, .a = a, .b_fmt = NX_FP32};
        for (size_t i = 0; i < 7; i++)
            a[i] = i == 0 ? 0x1p24 : 1;
        double y[1];
        assert_int_equal(nx_point_reduce(&plain, &in, 7, 0, NX_ENGINE_MPFR, 1, y, &err), NX_OK);
        assert_double_bits_eq(y[0], 0x1p24);
    }
    /* the canonical text keeps the selector as written and parses back */
    char *s = nx_point_print(&pt);
    assert_non_null(strstr(s, "rows = [{ select = \"n < 48\""));
    free(s);
    /* the hash at one n differs from the plain point's only where the class
     * is taken; at n = 48 the programs agree but the selector is hashed */
    char h1[65], h2[65];
    assert_int_equal(nx_point_hash(&pt, 48, 0, 0, h1, &err), NX_OK);
    assert_int_equal(nx_point_hash(&plain, 48, 0, 0, h2, &err), NX_OK);
    assert_string_not_equal(h1, h2);
    nx_point_free(&plain);
    nx_point_free(&pt);

    /* selectors over n alone and with r */
    picks_n("n < 48", 3, 0, 0, 7, "111");
    picks_n("n < 48", 3, 0, 0, 48, "000");
    picks_n("n % 32 != 0 && r == 0", 2, 0, 0, 1000, "10");
    picks_n("n % 32 != 0 && r == 0", 2, 0, 0, 4096, "00");
    /* malformed: n is an integer; there is no non-integer to compare it with,
     * and n needs no grid (N is the grid's column count, not n) */
    point_fails("{ rows = [{ select = \"n < 4.5\" }] }", "unexpected '.'");
    point_fails("{ rows = [{ select = \"N < 48\" }] }", "has no 'grid'");
    point_fails("{ rows = [{ select = \"len < 48\" }] }", "unknown name 'len'");
    nx_select *sl;
    assert_int_equal(nx_select_parse("n < 48", "select", &sl, &err), NX_OK);
    assert_int_equal(nx_select_uses_grid(sl), 0);
    nx_select_free(sl);
    /* a division by n at n = 0 is a division by zero, as any other */
    assert_int_equal(nx_select_parse("r / n == 0", "select", &sl, &err), NX_OK);
    int hit;
    assert_int_equal(nx_select_eval(sl, 0, 1, 0, 0, 0, &hit, &err), NX_EINVAL);
    assert_int_equal(nx_select_eval(sl, 0, 1, 0, 0, 3, &hit, &err), NX_OK);
    assert_int_equal(hit, 1);
    nx_select_free(sl);
    /* the oracle's own evaluator agrees */
    int64_t v = -1;
    char oerr[256];
    assert_int_equal(orc_select_eval_n("n < 48", 0, 1, 7, NULL, &v, oerr, sizeof oerr), 0);
    assert_int_equal(v, 1);
    assert_int_equal(orc_select_eval_n("n < 48", 0, 1, 48, NULL, &v, oerr, sizeof oerr), 0);
    assert_int_equal(v, 0);
    assert_int_not_equal(orc_select_eval("n < 48", 0, 1, NULL, &v, oerr, sizeof oerr), 0);
}

/* Random third-edition points (lanes included: rp_edition 4) with random
 * row classes: both engines against the independent oracle's
 * orc_reduce_rows, row by row. */
static void test_random_classes(void **state)
{
    (void)state;
    /* the first six name no grid; n (fourth edition) splits cases by length */
    static const char *const sels[] = {"r >= R - R % 4", "r < 2", "r % 3 == 1", "r == R - 1 || r == 0",
                                       "n < 8", "n % 4 != 0 && r < 3", "j == N - 1", "i == 0 && j > 0 && n > 2"};
    static const char *const modes[] = {"rne", "rna", "rz", "ru", "rd"};
    rp_seed(tu_seed(20261206));
    rp_edition = 4;
    long rows_cmp = 0, both_err = 0, cases = 0, classed = 0;
    for (int idx = 0; idx < 400; idx++) {
        rp_case c;
        rp_case_make(&c);
        size_t R = 1 + (size_t)rp_below(12);
        long long gm = 0, gn = 0;
        if (rp_below(2)) { /* a grid that lays the rows out */
            gn = 1 + rp_below((int)R);
            while (R % (size_t)gn)
                gn--;
            gm = (long long)R / gn;
        }
        int ncls = 1 + rp_below(2);
        orc_rowclass cls[2];
        memset(cls, 0, sizeof cls);
        char rows_toml[1200] = "", trees[2][1100];
        size_t l = 0;
        for (int k = 0; k < ncls; k++) {
            const char *sel = sels[rp_below(gm ? 8 : 6)];
            cls[k].select = sel;
            cls[k].keys = c.op;
            l += (size_t)snprintf(rows_toml + l, sizeof rows_toml - l, "%s{ select = \"%s\"", k ? ", " : "", sel);
            if (rp_below(2)) {
                snprintf(trees[k], sizeof trees[k], "reverse(%s)", c.tree);
                cls[k].keys.tree = trees[k];
                cls[k].set |= ORC_K_TREE;
                l += (size_t)snprintf(rows_toml + l, sizeof rows_toml - l, ", tree = \"%s\"", trees[k]);
            }
            if (rp_below(2)) {
                cls[k].keys.fma = !c.op.fma;
                cls[k].set |= ORC_K_FMA;
                l += (size_t)snprintf(rows_toml + l, sizeof rows_toml - l, ", fma = %s", cls[k].keys.fma ? "true" : "false");
            }
            if (rp_below(2)) {
                cls[k].keys.rounding = modes[rp_below(5)];
                cls[k].set |= ORC_K_ROUNDING;
                l += (size_t)snprintf(rows_toml + l, sizeof rows_toml - l, ", rounding = \"%s\"", cls[k].keys.rounding);
            }
            l += (size_t)snprintf(rows_toml + l, sizeof rows_toml - l, " }");
        }
        char toml[4096];
        size_t tl = strlen(c.toml);
        assert_true(tl > 2 && c.toml[tl - 1] == '}');
        char grid[64] = "";
        if (gm)
            snprintf(grid, sizeof grid, ", grid = [%lld, %lld]", gm, gn);
        snprintf(toml, sizeof toml, "%.*s%s, rows = [%s] }", (int)(tl - 1), c.toml, grid, rows_toml);
        /* R rows: the case's row, then fresh ones */
        size_t n = c.n;
        uint64_t *ab = calloc(R * n + 1, 8), *bb = calloc(R * n + 1, 8), *cb = calloc(R, 8), *ob = calloc(R, 8);
        double *a = calloc(R * n + 1, 8), *b = calloc(R * n + 1, 8), *cv = calloc(R, 8), *y = calloc(R, 8);
        assert_true(ab && bb && cb && ob && a && b && cv && y);
        nx_fmt fa = (nx_fmt)nx_fmt_from_name(c.in_fmt), fb = (nx_fmt)nx_fmt_from_name(c.b_fmt);
        nx_fmt fc = c.has_c ? (nx_fmt)nx_fmt_from_name(c.c_fmt) : NX_FP64;
        for (size_t r = 0; r < R; r++) {
            for (size_t i = 0; i < n; i++) {
                ab[r * n + i] = r == 0 ? c.a[i] : rp_gen_bits(c.in_fmt, ab + r * n, i, 0);
                bb[r * n + i] = r == 0 ? c.b[i] : rp_gen_bits(c.b_fmt, bb + r * n, i, 0);
                a[r * n + i] = nx_decode(fa, ab[r * n + i], NULL);
                b[r * n + i] = nx_decode(fb, bb[r * n + i], NULL);
            }
            cb[r] = c.has_c ? (r == 0 ? c.c : rp_gen_c_bits(c.c_fmt, c.c_scale)) : 0;
            cv[r] = c.has_c ? nx_decode(fc, cb[r], NULL) : 0;
        }
        int64_t g2[2] = {gm, gn};
        char oerr[512] = "";
        int orc = orc_reduce_rows(&c.op, cls, (size_t)ncls, gm ? g2 : NULL, R, c.in_fmt, c.dot ? c.b_fmt : NULL, ab,
                                  c.dot ? bb : NULL, n, c.c_fmt, c.has_c ? cb : NULL, ob, oerr, sizeof oerr);
        nx_point pt;
        nx_err err = {0};
        int erc = pt_from_text(toml, "point", &pt, &err) != NX_OK, parsed = !erc;
        for (int e = 0; e < 2 && !erc; e++) {
            nx_rows in = {.rows = R, .a_fmt = fa, .a = a, .b_fmt = fb, .b = c.dot ? b : NULL, .c_fmt = fc,
                          .c = c.has_c ? cv : NULL};
            int rc = nx_point_reduce(&pt, &in, n, c.dot, e ? NX_ENGINE_FAST : NX_ENGINE_MPFR, 1, y, &err) != NX_OK;
            for (size_t k = 0; k < pt.nclasses && !rc; k++) /* y is one tensor: one out format */
                rc = nx_point_out(pt.classes[k].pt) != nx_point_out(&pt);
            uint64_t eb = 0;
            for (size_t r = 0; r < R && !rc; r++) {
                rc = nx_encode(nx_point_out(&pt), y[r], &eb, &err) != NX_OK;
                if (!rc && !orc && eb != ob[r]) {
                    print_error("case %d row %zu (%s): engine %s 0x%llx, oracle 0x%llx\n%s\n", idx, r,
                                e ? "fast" : "mpfr", e ? "fast" : "mpfr", (unsigned long long)eb,
                                (unsigned long long)ob[r], toml);
                    fail();
                }
                rows_cmp += !rc && !orc;
            }
            if (rc != orc && !(rc && orc)) {
                print_error("case %d: engine %s, oracle %s\n%s\n", idx, rc ? err.msg : "ok", orc ? oerr : "ok", toml);
                fail();
            }
            if (rc)
                erc = 1;
        }
        if (erc && orc)
            both_err++;
        if (parsed)
            nx_point_free(&pt);
        cases++;
        classed += ncls;
        free(ab); free(bb); free(cb); free(ob); free(a); free(b); free(cv); free(y);
    }
    rp_edition = 2;
    fprintf(stderr, "row classes vs oracle: %ld points, %ld classes, %ld rows bit-identical in both engines, %ld "
                    "rejected by both\n", cases, classed, rows_cmp, both_err);
    assert_true(rows_cmp > 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_selectors),
        cmocka_unit_test(test_point_keys),
        cmocka_unit_test(test_reduce),
        cmocka_unit_test(test_one_row_class),
        cmocka_unit_test(test_size_classes),
        cmocka_unit_test(test_random_classes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
