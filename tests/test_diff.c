/* test_diff.c: the analysis of `parity diff` (parity/diff/diff.h) on
 * hand-made arrays.
 *
 * Every expected value comes from the construction: bf16 patterns written
 * from the field layout (sign, 8 exponent bits, 7 mantissa bits), ulp
 * distances by counting patterns (adding k to a positive pattern's bits is
 * k ulps while the exponent field does not overflow into inf), errors from
 * the decoded values worked by hand, and the patterns from the sets of
 * indices chosen. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "diff.h"

/* A [rows, cols] tensor of dtype dt with the given patterns, in its own file. */
static const st_tensor *make(st_file *f, st_dtype dt, int64_t rows, int64_t cols, const uint64_t *bits)
{
    st_init(f);
    int64_t shape[2] = {rows, cols};
    st_tensor *t = NULL;
    nx_err e = {0};
    assert_int_equal(st_add_tensor(f, "y", dt, 2, shape, &t, &e), NX_OK);
    for (int64_t i = 0; i < rows * cols; i++)
        st_put_bits(t, t->data, (size_t)i, bits[i]);
    return t;
}

static void test_histogram_first_worst(void **state)
{
    (void)state;
    /* bf16: 1, 2, 3, -1 | +0, inf, 1, 4 */
    const uint64_t a[8] = {0x3f80, 0x4000, 0x4040, 0xbf80, 0x0000, 0x7f80, 0x3f80, 0x4080};
    /* equal | +1 ulp | +3 ulp (3.046875) | equal ||
     * -0 (distance 0, bits differ) | max finite vs inf | +16 ulp (1.125) |
     * +300 ulp: 0x4080 + 300 = 0x41ac = 2^4 * (1 + 44/128) = 21.5 */
    const uint64_t b[8] = {0x3f80, 0x4001, 0x4043, 0xbf80, 0x8000, 0x7f7f, 0x3f90, 0x41ac};
    st_file fa, fb;
    const st_tensor *ta = make(&fa, ST_BF16, 2, 4, a), *tb = make(&fb, ST_BF16, 2, 4, b);
    diff_result r;
    nx_err e = {0};
    diff_context c = {NULL, NULL, 3};
    assert_int_equal(diff_tensors(ta, tb, &c, &r, &e), NX_OK);
    assert_int_equal(r.n, 8);
    assert_int_equal(r.mismatched, 6);
    assert_int_equal(r.hist[DIFF_H_0], 3);       /* two equal, -0 vs +0 */
    assert_int_equal(r.hist[DIFF_H_1], 1);
    assert_int_equal(r.hist[DIFF_H_2_3], 1);
    assert_int_equal(r.hist[DIFF_H_4_15], 0);
    assert_int_equal(r.hist[DIFF_H_16_255], 1);
    assert_int_equal(r.hist[DIFF_H_256_UP], 1);
    assert_int_equal(r.hist[DIFF_H_NONFINITE], 1);
    assert_int_equal(r.zero_sign, 1);
    assert_int_equal(r.inf_mismatch, 1);
    assert_int_equal(r.nan_mismatch, 0);
    /* first: flat 1 = [0, 1]; worst: flat 7, 300 ulp */
    assert_int_equal(r.first.index, 1);
    assert_int_equal(r.first.a_bits, 0x4000);
    assert_int_equal(r.first.b_bits, 0x4001);
    assert_int_equal(r.first.ulp, 1);
    assert_int_equal(r.worst.index, 7);
    assert_int_equal(r.worst.ulp, 300);
    assert_true(r.worst.b == 21.5);
    /* |21.5 - 4| = 17.5, 17.5 / 4 = 4.375, both at flat 7 */
    assert_true(r.has_err);
    assert_true(r.max_abs == 17.5);
    assert_int_equal(r.max_abs_index, 7);
    assert_true(r.max_rel == 4.375);
    assert_int_equal(r.max_rel_index, 7);
    /* the first three differing elements are listed */
    assert_int_equal(r.nlist, 3);
    assert_int_equal(r.list[2].index, 4);
    /* row 0 differs in columns 1, 2; row 1 in all four */
    assert_int_equal(r.naxes, 2);
    assert_int_equal(r.axes[0].count[0], 2);
    assert_int_equal(r.axes[0].count[1], 4);
    assert_int_equal(r.axes[1].count[0], 1);
    assert_int_equal(r.axes[1].count[3], 1);
    assert_int_equal(r.axes[0].pat.ndiff, 2);
    assert_int_equal(r.axes[1].pat.ndiff, 4);
    diff_result_free(&r);
    st_free(&fa);
    st_free(&fb);
}

/* The bucket edges of docs/diff.md: 0 | 1 | 2-3 | 4-15 | 16-255 | >=256. */
static void test_bucket_edges(void **state)
{
    (void)state;
    const uint64_t d[] = {0, 1, 2, 3, 4, 15, 16, 255, 256, 1u << 20};
    const int want[] = {DIFF_H_0, DIFF_H_1, DIFF_H_2_3, DIFF_H_2_3, DIFF_H_4_15, DIFF_H_4_15,
                        DIFF_H_16_255, DIFF_H_16_255, DIFF_H_256_UP, DIFF_H_256_UP};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
        assert_int_equal(diff_bucket_of(d[i]), want[i]);
    assert_string_equal(diff_bucket_name(DIFF_H_4_15), "4-15");
    assert_string_equal(diff_bucket_name(DIFF_H_NONFINITE), "nan/inf");
}

static void test_identical_and_nan(void **state)
{
    (void)state;
    /* fp32: 1.0, a quiet NaN; B: 1.0, another NaN payload */
    const uint64_t a[2] = {0x3f800000, 0x7fc00000}, b[2] = {0x3f800000, 0x7fc00001};
    st_file fa, fb;
    const st_tensor *ta = make(&fa, ST_F32, 1, 2, a), *tb = make(&fb, ST_F32, 1, 2, b);
    diff_result r;
    nx_err e = {0};
    assert_int_equal(diff_tensors(ta, ta, NULL, &r, &e), NX_OK);
    assert_int_equal(r.mismatched, 0);
    assert_int_equal(r.hist[DIFF_H_0], 2);
    diff_result_free(&r);
    /* the bits of the NaNs differ: a NaN/inf mismatch, no ulp */
    assert_int_equal(diff_tensors(ta, tb, NULL, &r, &e), NX_OK);
    assert_int_equal(r.mismatched, 1);
    assert_int_equal(r.nan_mismatch, 1);
    assert_int_equal(r.hist[DIFF_H_NONFINITE], 1);
    assert_false(r.first.has_ulp);
    assert_int_equal(r.first.index, 1);
    diff_result_free(&r);
    st_free(&fa);
    st_free(&fb);
}

static void test_shape_dtype_refused(void **state)
{
    (void)state;
    const uint64_t z[6] = {0};
    st_file f1, f2, f3;
    const st_tensor *t1 = make(&f1, ST_BF16, 2, 3, z), *t2 = make(&f2, ST_BF16, 3, 2, z),
                    *t3 = make(&f3, ST_F16, 2, 3, z);
    diff_result r;
    nx_err e = {0};
    assert_int_equal(diff_tensors(t1, t2, NULL, &r, &e), NX_EINVAL);
    assert_non_null(strstr(e.msg, "[2, 3]"));
    assert_non_null(strstr(e.msg, "[3, 2]"));
    assert_int_equal(diff_tensors(t1, t3, NULL, &r, &e), NX_EINVAL);
    assert_non_null(strstr(e.msg, "BF16"));
    assert_non_null(strstr(e.msg, "F16"));
    st_free(&f1);
    st_free(&f2);
    st_free(&f3);
}

/* A hit mask of length L with the given indices set. */
static diff_pattern pattern(int64_t L, const int64_t *idx, size_t n)
{
    uint8_t hit[256] = {0};
    assert_true(L <= 256);
    for (size_t i = 0; i < n; i++)
        hit[idx[i]] = 1;
    diff_pattern p;
    diff_pattern_find(hit, L, &p);
    return p;
}

static void assert_text(const diff_pattern *p, const char *want)
{
    char buf[512];
    diff_pattern_text(p, "row", "rows", buf, sizeof buf);
    if (!strstr(buf, want)) {
        print_error("missing \"%s\" in \"%s\"\n", want, buf);
        fail();
    }
}

static void test_every_4th_row(void **state)
{
    (void)state;
    const int64_t idx[] = {1, 5, 9, 13};
    diff_pattern p = pattern(16, idx, 4);
    assert_int_equal(p.ndiff, 4);
    assert_int_equal(p.lo, 1);
    assert_int_equal(p.hi, 13);
    assert_false(p.contiguous);
    assert_int_equal(p.stride, 4);
    assert_int_equal(p.offset, 1);
    assert_true(p.stride_complete);
    assert_int_equal(p.tile_start, 0); /* row 1 is no tile's first row */
    assert_int_equal(p.tile_end, 0);
    assert_int_equal(p.remainder_tiles, 0);
    assert_int_equal(p.block, 0);
    assert_text(&p, "every 4th row from row 1");
    /* rows 1, 5, 9 of 16: the same residue, not every such row */
    p = pattern(16, idx, 3);
    assert_int_equal(p.stride, 4);
    assert_false(p.stride_complete);
}

static void test_last_row(void **state)
{
    (void)state;
    const int64_t last16[] = {15};
    diff_pattern p = pattern(16, last16, 1);
    assert_int_equal(p.ndiff, 1);
    assert_int_equal(p.lo, 15);
    assert_true(p.contiguous);
    assert_int_equal(p.stride, 0);
    assert_int_equal(p.tile_end, 0);       /* the last row alone is no tile pattern */
    assert_int_equal(p.remainder_tiles, 0); /* 16 rows tile evenly by every power of two */
    assert_text(&p, "row 15 (the last)");
    /* 17 rows: row 16 is the partial last tile of 2-, 4-, 8- and 16-row tiles */
    const int64_t last17[] = {16};
    p = pattern(17, last17, 1);
    assert_int_equal(p.remainder_tiles, (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4));
    /* 18 rows, the last two: 18 = 4*4 + 2 = 8*2 + 2 = 16 + 2, not 2*9 */
    const int64_t last2[] = {16, 17};
    p = pattern(18, last2, 2);
    assert_int_equal(p.remainder_tiles, (1u << 2) | (1u << 3) | (1u << 4));
    assert_text(&p, "rows 16..17 (the last ones)");
}

static void test_tile_edges(void **state)
{
    (void)state;
    /* the last row of each 16-row tile but the final one, of 64 */
    const int64_t ends[] = {15, 31, 47};
    diff_pattern p = pattern(64, ends, 3);
    assert_int_equal(p.tile_end, 16);
    assert_int_equal(p.tile_start, 0);
    assert_int_equal(p.stride, 16);
    assert_int_equal(p.offset, 15);
    assert_false(p.stride_complete); /* 63 would complete it */
    assert_text(&p, "at the end of 16-row tiles");
    /* the first row of each 8-row tile after the first */
    const int64_t starts[] = {8, 16, 24};
    p = pattern(32, starts, 3);
    assert_int_equal(p.tile_start, 8);
    assert_int_equal(p.tile_end, 0);
    /* both edges of 8-row tiles: 7|8, 15|16, 23|24 */
    const int64_t both[] = {7, 8, 15, 16, 23, 24};
    p = pattern(32, both, 6);
    assert_int_equal(p.tile_edges, 8);
    assert_int_equal(p.tile_start, 0);
    assert_int_equal(p.tile_end, 0);
    /* whole aligned 16-blocks 1 and 3 of 64 */
    int64_t blocks[32];
    for (int i = 0; i < 16; i++) {
        blocks[i] = 16 + i;
        blocks[16 + i] = 48 + i;
    }
    p = pattern(64, blocks, 32);
    assert_int_equal(p.block, 16);
    assert_false(p.contiguous);
    assert_text(&p, "whole aligned blocks of 16 rows: 2 of 4");
}

static void test_all_and_none(void **state)
{
    (void)state;
    const int64_t all[] = {0, 1, 2, 3};
    diff_pattern p = pattern(4, all, 4);
    assert_int_equal(p.ndiff, 4);
    assert_int_equal(p.block, 0);
    assert_text(&p, "all 4 rows");
    p = pattern(4, all, 0);
    assert_int_equal(p.ndiff, 0);
    char buf[64];
    assert_int_equal(diff_pattern_text(&p, "row", "rows", buf, sizeof buf), 0);
}

/* A moe_grouped_gemm trace (T=4 tokens, E=3 experts, topk=2, N=3) whose
 * y is `y`, routing token t to the experts ids[t]. */
static void moe_trace(trace *t, const uint64_t *y, const int32_t *ids)
{
    st_file f;
    st_init(&f);
    nx_err e = {0};
    const char *kv[][2] = {{"parity.trace", "1"}, {"family", "moe_grouped_gemm"}, {"point", "p"}, {"class", "c"},
                           {"kernel", "k"}, {"device", "{}"}, {"shape", "T=4,E=3,H=2,N=3,topk=2"}, {"mode", "eager"},
                           {"run", "0"}, {"batch", "rows=0..3"}, {"created", "2026-01-01T00:00:00Z"}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        assert_int_equal(st_add_meta(&f, kv[i][0], kv[i][1], &e), NX_OK);
    int64_t sy[2] = {4, 3}, si[2] = {4, 2};
    st_tensor *x = NULL;
    assert_int_equal(st_add_tensor(&f, "y", ST_F32, 2, sy, &x, &e), NX_OK);
    for (size_t i = 0; i < 12; i++)
        st_put_bits(x, x->data, i, y[i]);
    assert_int_equal(st_add_tensor(&f, "in.topk_ids", ST_I32, 2, si, &x, &e), NX_OK);
    for (size_t i = 0; i < 8; i++)
        st_put_bits(x, x->data, i, (uint32_t)ids[i]);
    trace_init(t);
    if (trace_from_st("moe", &f, t, &e) != NX_OK) {
        print_error("%s\n", e.msg);
        fail();
    }
}

static void test_experts(void **state)
{
    (void)state;
    /* token 0 -> 0, 1; token 1 -> 1, 2; token 2 -> 0, 2; token 3 -> 1, 0 */
    const int32_t ids[8] = {0, 1, 1, 2, 0, 2, 1, 0};
    uint64_t ya[12], yb[12];
    for (int i = 0; i < 12; i++)
        ya[i] = yb[i] = 0x3f800000;
    /* tokens 1 and 2 differ (column 0 of token 1, column 2 of token 2):
     * exactly the tokens routed to expert 2 */
    yb[3] = 0x3f800001;
    yb[8] = 0x3f800002;
    trace a, b;
    moe_trace(&a, ya, ids);
    moe_trace(&b, yb, ids);
    diff_result r;
    nx_err e = {0};
    diff_context c = {&a, &b, 0};
    assert_int_equal(diff_tensors(trace_output(&a, "y"), trace_output(&b, "y"), &c, &r, &e), NX_OK);
    assert_int_equal(r.mismatched, 2);
    assert_string_equal(r.axes[0].dim, "T");
    assert_string_equal(r.axes[0].units, "tokens");
    assert_string_equal(r.axes[1].dim, "N");
    assert_int_equal(r.ngroups, 1);
    const diff_group *g = &r.groups[0];
    assert_string_equal(g->units, "experts");
    assert_int_equal(g->nitems, 3);
    /* expert 0: tokens 0, 2, 3 (token 2 differs); expert 1: tokens 0, 1, 3
     * (token 1); expert 2: tokens 1, 2 (both) */
    assert_int_equal(g->ntotal[0], 3);
    assert_int_equal(g->ndiff[0], 1);
    assert_int_equal(g->ntotal[1], 3);
    assert_int_equal(g->ndiff[1], 1);
    assert_int_equal(g->ntotal[2], 2);
    assert_int_equal(g->ndiff[2], 2);
    diff_result_free(&r);
    trace_free(&a);
    trace_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_histogram_first_worst), cmocka_unit_test(test_bucket_edges),
        cmocka_unit_test(test_identical_and_nan),
        cmocka_unit_test(test_shape_dtype_refused),   cmocka_unit_test(test_every_4th_row),
        cmocka_unit_test(test_last_row),              cmocka_unit_test(test_tile_edges),
        cmocka_unit_test(test_all_and_none),          cmocka_unit_test(test_experts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
