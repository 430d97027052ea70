/* test_compare.c: Tier 2 element comparison (parity/check/compare.h).
 *
 * Every expected value is written here by hand: bit patterns from the field
 * layouts of docs/numerics.md §1, differences as hex floats, ulp distances by
 * counting patterns, histogram buckets by hand.  Nothing is taken from the
 * code under test.  The exact-tolerance cases were chosen where the binary64
 * evaluation of |got - ref| <= atol + rtol*|ref| gives the wrong answer. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "compare.h"
#include "testutil.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static cmp_options opts(cmp_policy p)
{
    cmp_options o;
    cmp_options_init(&o, p);
    return o;
}

/* Compares flat vectors, which must be accepted. */
static cmp_result run(nx_fmt f, const uint64_t *got, const uint64_t *ref, size_t n, const cmp_options *o)
{
    cmp_input in = {.fmt = f, .n = n, .got = got, .ref = ref};
    cmp_result r;
    nx_err e = {0};
    nx_status st = cmp_compare(&in, o, &r, &e);
    if (st != NX_OK)
        print_error("cmp_compare: %s\n", e.msg);
    assert_int_equal(st, NX_OK);
    return r;
}

static void assert_has(const char *text, const char *want)
{
    if (!strstr(text, want)) {
        print_error("missing \"%s\" in:\n%s\n", want, text);
        fail();
    }
}

/* ---- bitwise --------------------------------------------------------------------- */

static void test_bitwise_identical_bf16(void **state)
{
    (void)state;
    /* 1.0, -2.0, +0, +inf, NaN */
    const uint64_t a[] = {0x3f80, 0xc000, 0x0000, 0x7f80, 0x7fc0};
    cmp_options o = opts(CMP_BITWISE);
    cmp_result r = run(NX_BF16, a, a, N_OF(a), &o);
    assert_int_equal(r.mismatched, 0);
    assert_int_equal(r.bits_differ, 0);
    assert_true(r.first_mismatch == CMP_NO_INDEX);
    assert_int_equal(r.hist[CMP_HIST_0], 5); /* the inf and NaN pairs are equal: bucket 0 */
    assert_int_equal(r.max_ulp, 0);
    assert_double_bits_eq(r.max_abs, 0.0);
}

/* One flipped bit in a [3, 4, 5] bf16 tensor is found at its exact index. */
static void test_flipped_bit_bf16_multidim(void **state)
{
    (void)state;
    uint64_t ref[60], got[60];
    for (int i = 0; i < 60; i++)
        ref[i] = got[i] = 0x3f80 + (uint64_t)i; /* 1 + i/128 */
    got[48] ^= 1;                               /* [2, 1, 3]: 2*20 + 1*5 + 3 */
    const int64_t shape[] = {3, 4, 5};
    cmp_input in = {.fmt = NX_BF16, .n = 60, .got = got, .ref = ref, .ndim = 3, .shape = shape};
    cmp_options o = opts(CMP_BITWISE);
    cmp_result r;
    assert_int_equal(cmp_compare(&in, &o, &r, NULL), NX_OK);
    assert_int_equal(r.mismatched, 1);
    assert_int_equal(r.first_mismatch, 48);
    assert_int_equal(r.max_ulp, 1);
    assert_int_equal(r.max_ulp_index, 48);
    assert_int_equal(r.max_abs_index, 48);
    assert_double_bits_eq(r.max_abs, 0x1p-7); /* 0x3fb1 - 0x3fb0 = 2^-7 at [1, 2) */
    assert_double_bits_eq(r.max_rel, 0x1p-7 / 1.375);
    assert_int_equal(r.hist[CMP_HIST_0], 59);
    assert_int_equal(r.hist[CMP_HIST_1], 1);

    char buf[64];
    cmp_format_index(buf, sizeof buf, r.first_mismatch, r.ndim, r.shape, CMP_INDEX_BRACKETS);
    assert_string_equal(buf, "[2, 1, 3]");

    char *text = cmp_result_text(&r);
    assert_non_null(text);
    assert_string_equal(
        text,
        "Mismatched elements: 1 / 60 (1.7%)\n"
        "Greatest absolute difference: 0.0078125 at index (2, 1, 3)\n"
        "Greatest relative difference: 0.005681818181818182 at index (2, 1, 3)\n"
        "Max ulp: 1 at index (2, 1, 3) (bit-exact: 0 allowed)\n"
        "Ulp histogram: 0: 59, 1: 1, 2: 0, 3-4: 0, 5-8: 0, 9-16: 0, 17-32: 0, 33-64: 0, >64: 0, "
        "non-finite: 0\n"
        "Not bit-exact: 1 / 60 elements differ in their bits\n"
        "Specials: NaN mismatches 0, inf mismatches 0, -0/+0 pairs 0 (mismatches in bitwise mode)\n"
        "First mismatch at index (2, 1, 3)\n"
        "Policy: bitwise, bf16: bit-exact, the bits must be equal; -0 and +0 differ; every NaN "
        "equals every NaN\n");
    free(text);

    json_t *j = cmp_result_json(&r);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "mismatched")), 1);
    assert_true(json_is_false(json_object_get(j, "pass")));
    assert_string_equal(json_string_value(json_object_get(j, "signed_zero")), "mismatch");
    json_t *fm = json_object_get(j, "first_mismatch");
    assert_int_equal(json_integer_value(json_object_get(fm, "flat")), 48);
    json_t *idx = json_object_get(fm, "index");
    assert_int_equal(json_array_size(idx), 3);
    assert_int_equal(json_integer_value(json_array_get(idx, 0)), 2);
    assert_int_equal(json_integer_value(json_array_get(idx, 1)), 1);
    assert_int_equal(json_integer_value(json_array_get(idx, 2)), 3);
    json_t *mu = json_object_get(j, "max_ulp");
    assert_int_equal(json_integer_value(json_object_get(mu, "value")), 1);
    assert_double_bits_eq(json_real_value(json_object_get(json_object_get(j, "max_abs_diff"), "value")),
                          0x1p-7);
    json_t *h = json_object_get(j, "ulp_histogram");
    assert_int_equal(json_integer_value(json_object_get(h, "0")), 59);
    assert_int_equal(json_integer_value(json_object_get(h, "1")), 1);
    assert_int_equal(json_integer_value(json_object_get(h, "non-finite")), 0);
    json_decref(j);
}

/* fp32: the sign bit of pi flipped at [1, 2] of a [2, 3] tensor. */
static void test_flipped_sign_fp32(void **state)
{
    (void)state;
    const uint64_t ref[] = {0x3f800000, 0x40000000, 0x40400000, 0x3f000000, 0x00000001, 0x40490fdb};
    uint64_t got[6];
    memcpy(got, ref, sizeof got);
    got[5] = 0xc0490fdb;
    const int64_t shape[] = {2, 3};
    cmp_input in = {.fmt = NX_FP32, .n = 6, .got = got, .ref = ref, .ndim = 2, .shape = shape};
    cmp_options o = opts(CMP_BITWISE);
    cmp_result r;
    assert_int_equal(cmp_compare(&in, &o, &r, NULL), NX_OK);
    assert_int_equal(r.mismatched, 1);
    assert_int_equal(r.first_mismatch, 5);
    /* across zero: both magnitudes counted, 2 * 0x40490fdb */
    assert_int_equal(r.max_ulp, 0x80921fb6ull);
    assert_int_equal(r.hist[CMP_HIST_OVER_64], 1);
    assert_double_bits_eq(r.max_abs, 0x1.921fb6p+2); /* 2 * 0x1.921fb6p+1 */
    assert_double_bits_eq(r.max_rel, 2.0);
    char *text = cmp_result_text(&r);
    assert_has(text, "Greatest absolute difference: 6.2831854820251465 at index (1, 2)\n");
    assert_has(text, "Greatest relative difference: 2.0 at index (1, 2)\n");
    assert_has(text, "Max ulp: 2157060022 at index (1, 2)");
    free(text);
}

/* ---- signed zeros and NaN ------------------------------------------------------------ */

static void test_signed_zero(void **state)
{
    (void)state;
    const uint64_t got[] = {0x8000, 0x3c00}, ref[] = {0x0000, 0x3c00}; /* fp16 -0 / +0, 1 / 1 */
    cmp_options o = opts(CMP_BITWISE);
    cmp_result r = run(NX_FP16, got, ref, 2, &o);
    assert_int_equal(r.mismatched, 1); /* bitwise: -0 vs +0 is a mismatch */
    assert_int_equal(r.first_mismatch, 0);
    assert_int_equal(r.zero_sign_diff, 1);
    assert_int_equal(r.hist[CMP_HIST_0], 2); /* at ulp distance 0 all the same */
    char *text = cmp_result_text(&r);
    assert_has(text, "-0/+0 pairs 1 (mismatches in bitwise mode)");
    free(text);

    o = opts(CMP_TOLERANCE); /* rtol = atol = 0 */
    r = run(NX_FP16, got, ref, 2, &o);
    assert_int_equal(r.mismatched, 0);
    assert_int_equal(r.zero_sign_diff, 1);
    assert_int_equal(r.bits_differ, 1);
    text = cmp_result_text(&r);
    assert_has(text, "Not bit-exact: 1 / 2 elements differ in their bits\n");
    assert_has(text, "-0 equals +0");
    free(text);

    o = opts(CMP_ULP);
    r = run(NX_FP16, got, ref, 2, &o);
    assert_int_equal(r.mismatched, 0);
}

static void test_nan_payloads(void **state)
{
    (void)state;
    /* fp16: quiet NaN, NaN with payload 1, negative NaN, signalling NaN, then
     * NaN against 1.0 and 1.0 against NaN */
    const uint64_t got[] = {0x7e00, 0x7e01, 0xfe00, 0x7c01, 0x7e00, 0x3c00};
    const uint64_t ref[] = {0x7e00, 0x7e00, 0x7e00, 0x7e00, 0x3c00, 0x7e00};
    cmp_options o = opts(CMP_BITWISE);
    cmp_result r = run(NX_FP16, got, ref, 6, &o);
    assert_int_equal(r.mismatched, 2); /* every NaN equals every NaN */
    assert_int_equal(r.first_mismatch, 4);
    assert_int_equal(r.nan_mismatch, 2);
    assert_int_equal(r.bits_differ, 5);
    assert_int_equal(r.hist[CMP_HIST_0], 4);
    assert_int_equal(r.hist[CMP_HIST_NONFINITE], 2);
    assert_true(r.max_ulp_index == CMP_NO_INDEX); /* no pair of finite values */
    assert_true(r.max_abs_index == CMP_NO_INDEX);

    o.nan_payload = 1;
    r = run(NX_FP16, got, ref, 6, &o);
    assert_int_equal(r.mismatched, 5);
    assert_int_equal(r.first_mismatch, 1);
    assert_int_equal(r.nan_mismatch, 5);
    assert_int_equal(r.hist[CMP_HIST_0], 1);
    assert_int_equal(r.hist[CMP_HIST_NONFINITE], 5);

    o = opts(CMP_TOLERANCE);
    o.rtol = 1e300;
    r = run(NX_FP16, got, ref, 6, &o);
    assert_int_equal(r.mismatched, 2); /* equal_nan by default; NaN vs 1 never */
    o.equal_nan = 0;                   /* torch.testing's default */
    r = run(NX_FP16, got, ref, 6, &o);
    assert_int_equal(r.mismatched, 6);
    assert_int_equal(r.hist[CMP_HIST_NONFINITE], 6);

    /* e4m3: S.1111.111 is the only NaN; 0x7e is 448 */
    const uint64_t eg[] = {0x7f, 0xff, 0x7e}, er[] = {0xff, 0x7f, 0x7f};
    o = opts(CMP_BITWISE);
    r = run(NX_E4M3, eg, er, 3, &o);
    assert_int_equal(r.mismatched, 1);
    assert_int_equal(r.first_mismatch, 2);
    assert_int_equal(r.nan_mismatch, 1);
    o.nan_payload = 1;
    r = run(NX_E4M3, eg, er, 3, &o);
    assert_int_equal(r.mismatched, 3);
}

static void test_infinities(void **state)
{
    (void)state;
    /* fp32: +inf/+inf, +inf/max finite, -inf/+inf, max finite/+inf */
    const uint64_t got[] = {0x7f800000, 0x7f800000, 0xff800000, 0x7f7fffff};
    const uint64_t ref[] = {0x7f800000, 0x7f7fffff, 0x7f800000, 0x7f800000};
    cmp_options o = opts(CMP_TOLERANCE);
    o.atol = 0x1p1000; /* no finite tolerance lets an inf through */
    cmp_result r = run(NX_FP32, got, ref, 4, &o);
    assert_int_equal(r.mismatched, 3);
    assert_int_equal(r.first_mismatch, 1);
    assert_int_equal(r.inf_mismatch, 3);
    assert_int_equal(r.nan_mismatch, 0);
    assert_int_equal(r.hist[CMP_HIST_0], 1);
    assert_int_equal(r.hist[CMP_HIST_NONFINITE], 3);

    o = opts(CMP_ULP);
    o.max_ulp = 10; /* inf is one pattern past max finite, still a mismatch */
    r = run(NX_FP32, got, ref, 4, &o);
    assert_int_equal(r.mismatched, 3);

    uint64_t d = 0;
    assert_true(cmp_ulp_distance(NX_FP32, 0x7f800000, 0x7f7fffff, &d));
    assert_int_equal(d, 1);
}

/* ---- tolerance boundaries ------------------------------------------------------------ */

static void test_rtol_atol_boundaries(void **state)
{
    (void)state;
    /* bf16 1.0 against 1 + 2^-7: |got - ref| = 2^-7 */
    const uint64_t got[] = {0x3f81}, ref[] = {0x3f80};
    struct {
        double rtol, atol;
        int pass;
    } cases[] = {
        {0, 0x1p-7, 1},                  /* equal to the bound passes */
        {0x1p-8, 0x1p-8, 1},             /* 2^-8 + 2^-8 * 1 */
        {0, 0x1.fffffffffffffp-8, 0},    /* one double below */
        {0x1p-7, 0, 1},
        {0x1.fffffffffffffp-8, 0, 0},
        {0x1.fffffffffffffp-9, 0x1p-8, 0}, /* 2^-7 - 2^-61 */
        {0, 0, 0},
    };
    for (size_t k = 0; k < N_OF(cases); k++) {
        cmp_options o = opts(CMP_TOLERANCE);
        o.rtol = cases[k].rtol;
        o.atol = cases[k].atol;
        cmp_result r = run(NX_BF16, got, ref, 1, &o);
        if ((r.mismatched == 0) != cases[k].pass) {
            print_error("case %zu: rtol %a atol %a: mismatched %zu\n", k, o.rtol, o.atol, r.mismatched);
            fail();
        }
    }

    /* fp16 1.0 against 1 + 2^-10, and e4m3 1.0 (0x38) against 1.125 (0x39) */
    const uint64_t hg[] = {0x3c01}, hr[] = {0x3c00};
    cmp_options o = opts(CMP_TOLERANCE);
    o.atol = 0x1p-10;
    assert_int_equal(run(NX_FP16, hg, hr, 1, &o).mismatched, 0);
    o.atol = 0x1.fffffffffffffp-11;
    assert_int_equal(run(NX_FP16, hg, hr, 1, &o).mismatched, 1);
    const uint64_t eg[] = {0x39}, er[] = {0x38};
    o = opts(CMP_TOLERANCE);
    o.rtol = 0.125;
    assert_int_equal(run(NX_E4M3, eg, er, 1, &o).mismatched, 0);
    o.rtol = 0x1.fffffffffffffp-4;
    assert_int_equal(run(NX_E4M3, eg, er, 1, &o).mismatched, 1);

    /* torch.testing's bf16 defaults on 3.0 (0x4040): allowed 1e-5 + 0.048,
     * the ulp is 2^-6 there: 3 ulps (0.046875) pass, 4 (0.0625) fail */
    const uint64_t tg[] = {0x4043, 0x4044}, tr[] = {0x4040, 0x4040};
    o = opts(CMP_TOLERANCE);
    o.rtol = 1.6e-2;
    o.atol = 1e-5;
    cmp_result r = run(NX_BF16, tg, tr, 2, &o);
    assert_int_equal(r.mismatched, 1);
    assert_int_equal(r.first_mismatch, 1);
    char *text = cmp_result_text(&r);
    assert_has(text, "Mismatched elements: 1 / 2 (50.0%)\n"
                     "Greatest absolute difference: 0.0625 at index (1,) (up to 1e-05 allowed)\n"
                     "Greatest relative difference: 0.020833333333333332 at index (1,) (up to 0.016 "
                     "allowed)\n");
    free(text);
}

/* The predicate is decided on the real numbers, not their binary64 values. */
static void test_close_is_exact(void **state)
{
    (void)state;
    /* 0.3 as a double is below 3/10, so 10 * rtol < 3 exactly, while
     * fl(10 * rtol) = 3 */
    assert_int_equal(cmp_close(13.0, 10.0, 0x1.3333333333333p-2, 0), 0);
    assert_int_equal(cmp_close(13.0, 10.0, 0x1.3333333333334p-2, 0), 1);
    /* |(-2^-53) - 1| = 1 + 2^-53 rounds to 1 in binary64 */
    assert_int_equal(cmp_close(-0x1p-53, 1.0, 0, 1.0), 0);
    assert_int_equal(cmp_close(-0x1p-53, 1.0, 0x1p-53, 1.0), 1); /* equal */
    /* rtol * |ref| = 1.5 * 2^-1074 rounds to 2^-1073 in binary64 (ref is
     * subnormal, so got - ref is a multiple of 2^-1074 and exact) */
    assert_int_equal(cmp_close(0x1p-1040 + 0x1p-1073, 0x1p-1040, 0x1.8p-34, 0), 0);
    assert_int_equal(cmp_close(0x1p-1040 + 0x1p-1074, 0x1p-1040, 0x1.8p-34, 0), 1);
    /* subnormal atol */
    assert_int_equal(cmp_close(0x1p-1074, 0.0, 0, 0x1p-1074), 1);
    assert_int_equal(cmp_close(0x1p-1073, 0.0, 0, 0x1p-1074), 0);
    assert_int_equal(cmp_close(-0.0, 0.0, 0, 0), 1);
    /* a difference that overflows binary64 */
    assert_int_equal(cmp_close(0x1.fffffffffffffp+1023, -0x1.fffffffffffffp+1023, 0, 0x1.fffffffffffffp+1023), 0);
    assert_int_equal(cmp_close(0x1.fffffffffffffp+1023, -0x1.fffffffffffffp+1023, 1.0, 0x1.fffffffffffffp+1023), 1);
}

/* torch.testing: the greatest differences are taken over mismatched elements
 * only; with no mismatch, over all. */
static void test_diffs_over_mismatched(void **state)
{
    (void)state;
    /* fp32: 100 vs 100.5 (|d| 0.5, within 1% of 100) and 1 vs 1.25 (|d| 0.25, not) */
    const uint64_t got[] = {0x42c90000, 0x3fa00000}, ref[] = {0x42c80000, 0x3f800000};
    cmp_options o = opts(CMP_TOLERANCE);
    o.rtol = 0.01;
    cmp_result r = run(NX_FP32, got, ref, 2, &o);
    assert_int_equal(r.mismatched, 1);
    assert_true(r.diffs_over_mismatched);
    assert_double_bits_eq(r.max_abs, 0x1p-2);
    assert_int_equal(r.max_abs_index, 1);
    assert_double_bits_eq(r.max_rel, 0x1p-2);
    o.rtol = 0.5;
    r = run(NX_FP32, got, ref, 2, &o);
    assert_int_equal(r.mismatched, 0);
    assert_false(r.diffs_over_mismatched);
    assert_double_bits_eq(r.max_abs, 0x1p-1);
    assert_int_equal(r.max_abs_index, 0);
    assert_double_bits_eq(r.max_rel, 0x1p-2); /* 0.25/1 > 0.5/100 */
    assert_int_equal(r.max_rel_index, 1);
    /* |ref| = 0 with a difference: relative difference inf */
    const uint64_t zg[] = {0x3f800000}, zr[] = {0x00000000};
    o = opts(CMP_BITWISE);
    r = run(NX_FP32, zg, zr, 1, &o);
    assert_true(isinf(r.max_rel));
    char *text = cmp_result_text(&r);
    assert_has(text, "Absolute difference: 1.0\nRelative difference: inf\n"); /* one element */
    free(text);
}

/* ---- ulp distances ------------------------------------------------------------------ */

static void test_ulp_distance(void **state)
{
    (void)state;
    struct {
        nx_fmt f;
        uint64_t a, b, d;
    } cases[] = {
        {NX_FP16, 0x8001, 0x0001, 2}, /* -min_sub to +min_sub: -0/+0 count once */
        {NX_FP16, 0x8000, 0x0001, 1},
        {NX_FP16, 0x0000, 0x8000, 0},
        {NX_FP16, 0x03ff, 0x0400, 1}, /* max subnormal to min normal */
        {NX_FP16, 0x03fe, 0x0401, 3},
        {NX_FP16, 0xfbff, 0x7bff, 0xf7fe}, /* -65504 to 65504 */
        {NX_BF16, 0x007f, 0x0080, 1},
        {NX_BF16, 0x807f, 0x0080, 0xff},
        {NX_E4M3, 0x07, 0x08, 1},
        {NX_E4M3, 0x81, 0x01, 2},
        {NX_E4M3, 0x7e, 0x01, 125},
        {NX_E5M2, 0x7b, 0x7c, 1}, /* 57344 to inf */
        {NX_FP32, 0x80000001, 0x00000001, 2},
        {NX_FP32, 0x007fffff, 0x00800000, 1},
        {NX_FP64, 0x8000000000000001ull, 0x0000000000000001ull, 2},
        {NX_FP64, 0xffefffffffffffffull, 0x7fefffffffffffffull, 0xffdffffffffffffeull},
        {NX_TF32, 0x3f800000, 0x3f802000, 1}, /* counted in tf32's own precision */
        {NX_TF32, 0x80002000, 0x00002000, 2},
        {NX_E8M13, 0x3f800000, 0x3f800400, 1},
        {NX_E8M0, 0x7f, 0x80, 1},
        {NX_E8M0, 0x00, 0xfe, 254},
        {NX_E2M1, 0x1, 0x9, 2},  /* ±0.5 */
        {NX_E2M1, 0x7, 0xf, 14}, /* ±6 */
        {NX_E3M2, 0x1f, 0x20, 31},
        {NX_E2M3, 0x00, 0x1f, 31},
    };
    for (size_t k = 0; k < N_OF(cases); k++) {
        uint64_t d = 12345;
        int ok = cmp_ulp_distance(cases[k].f, cases[k].a, cases[k].b, &d);
        if (!ok || d != cases[k].d) {
            print_error("case %zu (%s 0x%llx, 0x%llx): ok %d, distance %llu, want %llu\n", k,
                        nx_format(cases[k].f)->name, (unsigned long long)cases[k].a,
                        (unsigned long long)cases[k].b, ok, (unsigned long long)d,
                        (unsigned long long)cases[k].d);
            fail();
        }
    }
    uint64_t d = 77;
    assert_false(cmp_ulp_distance(NX_FP16, 0x7e00, 0x3c00, &d)); /* NaN */
    assert_false(cmp_ulp_distance(NX_E8M0, 0xff, 0x7f, &d));
    assert_false(cmp_ulp_distance(NX_TF32, 0x3f800001, 0x3f800000, &d)); /* not a tf32 */
    assert_false(cmp_ulp_distance(NX_E2M1, 0x10, 0x0, &d));               /* above 4 bits */
    assert_int_equal(d, 77);

    /* the ULP policy on the same boundaries */
    const uint64_t got[] = {0x8001, 0x03ff, 0x8000}, ref[] = {0x0001, 0x0400, 0x0001};
    cmp_options o = opts(CMP_ULP);
    o.max_ulp = 1;
    cmp_result r = run(NX_FP16, got, ref, 3, &o);
    assert_int_equal(r.mismatched, 1);
    assert_int_equal(r.first_mismatch, 0);
    assert_int_equal(r.max_ulp, 2);
    assert_int_equal(r.max_ulp_index, 0);
    o.max_ulp = 2.9; /* floored */
    assert_int_equal(run(NX_FP16, got, ref, 3, &o).mismatched, 0);
}

static void test_histogram_buckets(void **state)
{
    (void)state;
    const uint64_t steps[] = {0, 1, 2, 3, 4, 5, 8, 9, 16, 17, 32, 33, 64, 65, 1000};
    uint64_t got[16], ref[16];
    for (size_t k = 0; k < N_OF(steps); k++) {
        ref[k] = 0x3f800000;
        got[k] = 0x3f800000 + steps[k];
    }
    ref[15] = 0x3f800000;
    got[15] = 0x7fc00000; /* NaN against 1 */
    cmp_options o = opts(CMP_ULP);
    o.max_ulp = 64;
    cmp_result r = run(NX_FP32, got, ref, 16, &o);
    const size_t want[CMP_HIST_NBUCKETS] = {1, 1, 1, 2, 2, 2, 2, 2, 2, 1};
    for (int b = 0; b < CMP_HIST_NBUCKETS; b++)
        if (r.hist[b] != want[b]) {
            print_error("bucket %s: %zu, want %zu\n", cmp_hist_bucket_name(b), r.hist[b], want[b]);
            fail();
        }
    assert_int_equal(r.mismatched, 3); /* 65, 1000 and the NaN */
    assert_int_equal(r.first_mismatch, 13);
    assert_int_equal(r.max_ulp, 1000);
    assert_int_equal(r.max_ulp_index, 14);
    assert_int_equal(r.nan_mismatch, 1);
    char *text = cmp_result_text(&r);
    assert_has(text, "Ulp histogram: 0: 1, 1: 1, 2: 1, 3-4: 2, 5-8: 2, 9-16: 2, 17-32: 2, 33-64: 2, "
                     ">64: 2, non-finite: 1\n");
    assert_has(text, "Max ulp: 1000 at index (14,) (up to 64 allowed)\n");
    free(text);
}

/* ---- bounds against the exact value --------------------------------------------------- */

static void test_bound(void **state)
{
    (void)state;
    const uint64_t got[] = {0x3f800000, 0x3f800000, 0x7fc00000};
    const uint64_t ref[] = {0x3f800000, 0x3f800000, 0x7fc00000};
    const double exact[] = {1 + 0x1p-30, 1 - 0x1p-30, NAN};
    double bound[] = {0x1p-30, 0x1p-31, 0};
    cmp_input in = {.fmt = NX_FP32, .n = 3, .got = got, .ref = ref, .exact = exact, .bound = bound};
    cmp_options o = opts(CMP_BOUND);
    cmp_result r;
    assert_int_equal(cmp_compare(&in, &o, &r, NULL), NX_OK);
    assert_int_equal(r.mismatched, 1); /* equal to the bound passes; twice it fails */
    assert_int_equal(r.first_mismatch, 1);
    assert_int_equal(r.bits_differ, 0);
    assert_double_bits_eq(r.max_bound_ratio, 2.0);
    assert_int_equal(r.max_bound_ratio_index, 1);
    assert_double_bits_eq(r.max_err_exact, 0x1p-30);
    assert_int_equal(r.max_err_exact_index, 0);
    char *text = cmp_result_text(&r);
    assert_has(text, "Greatest use of the bound: 2.0 of it at index (1,) (up to 1 allowed)\n");
    free(text);
    json_t *j = cmp_result_json(&r);
    assert_double_bits_eq(json_real_value(json_object_get(json_object_get(j, "max_bound_ratio"), "value")),
                          2.0);
    json_decref(j);

    bound[1] = INFINITY;
    assert_int_equal(cmp_compare(&in, &o, &r, NULL), NX_OK);
    assert_int_equal(r.mismatched, 0);

    nx_err e = {0};
    bound[1] = -1;
    assert_int_equal(cmp_compare(&in, &o, &r, &e), NX_EINVAL);
    assert_has(e.msg, "element 1");
    in.bound = NULL;
    assert_int_equal(cmp_compare(&in, &o, &r, &e), NX_EINVAL);
    assert_has(e.msg, "bound");
}

/* ---- input errors, indices, options ---------------------------------------------------- */

static void test_input_errors(void **state)
{
    (void)state;
    nx_err e = {0};
    cmp_result r;
    cmp_options o = opts(CMP_BITWISE);
    const uint64_t g[] = {0x3f80, 0x3f80, 0x10000}, f[] = {0x3f80, 0x3f80, 0x3f80};
    cmp_input in = {.fmt = NX_BF16, .n = 3, .got = g, .ref = f};
    assert_int_equal(cmp_compare(&in, &o, &r, &e), NX_EINVAL);
    assert_string_equal(e.msg, "element 2 of the device: pattern 0x10000 is not a value of bf16");

    const uint64_t t[] = {0x3f800001}, u[] = {0x3f800000};
    cmp_input tin = {.fmt = NX_TF32, .n = 1, .got = u, .ref = t};
    assert_int_equal(cmp_compare(&tin, &o, &r, &e), NX_EINVAL);
    assert_string_equal(e.msg, "element 0 of the reference: pattern 0x3f800001 is not a value of tf32");

    const int64_t shape[] = {2, 2};
    cmp_input sin = {.fmt = NX_BF16, .n = 3, .got = f, .ref = f, .ndim = 2, .shape = shape};
    assert_int_equal(cmp_compare(&sin, &o, &r, &e), NX_EINVAL);
    assert_has(e.msg, "holds 4 elements, but 3");

    o = opts(CMP_TOLERANCE);
    o.rtol = -1;
    cmp_input ok_in = {.fmt = NX_BF16, .n = 3, .got = f, .ref = f};
    assert_int_equal(cmp_compare(&ok_in, &o, &r, &e), NX_EINVAL);
    assert_has(e.msg, "rtol");
    o = opts(CMP_TOLERANCE);
    o.atol = NAN;
    assert_int_equal(cmp_compare(&ok_in, &o, &r, &e), NX_EINVAL);

    /* n = 0 is an empty comparison, not an error */
    cmp_input none = {.fmt = NX_FP32, .n = 0};
    o = opts(CMP_BITWISE);
    assert_int_equal(cmp_compare(&none, &o, &r, &e), NX_OK);
    assert_int_equal(r.mismatched, 0);
    char *text = cmp_result_text(&r);
    assert_has(text, "Mismatched elements: 0 / 0 (0.0%)\n");
    free(text);
}

static void test_format_index(void **state)
{
    (void)state;
    char buf[64];
    const int64_t s3[] = {3, 4, 5}, s1[] = {7};
    assert_int_equal(cmp_format_index(buf, sizeof buf, 48, 3, s3, CMP_INDEX_BRACKETS), 9);
    assert_string_equal(buf, "[2, 1, 3]");
    cmp_format_index(buf, sizeof buf, 48, 3, s3, CMP_INDEX_TUPLE);
    assert_string_equal(buf, "(2, 1, 3)");
    cmp_format_index(buf, sizeof buf, 0, 3, s3, CMP_INDEX_BRACKETS);
    assert_string_equal(buf, "[0, 0, 0]");
    cmp_format_index(buf, sizeof buf, 59, 3, s3, CMP_INDEX_BRACKETS);
    assert_string_equal(buf, "[2, 3, 4]");
    cmp_format_index(buf, sizeof buf, 60, 3, s3, CMP_INDEX_BRACKETS);
    assert_string_equal(buf, "?");
    cmp_format_index(buf, sizeof buf, 5, 1, s1, CMP_INDEX_TUPLE);
    assert_string_equal(buf, "(5,)");
    cmp_format_index(buf, sizeof buf, 5, 1, s1, CMP_INDEX_BRACKETS);
    assert_string_equal(buf, "[5]");
    cmp_format_index(buf, sizeof buf, 0, 0, NULL, CMP_INDEX_TUPLE);
    assert_string_equal(buf, "()");
    /* like snprintf: truncated, terminated, the full length returned */
    assert_int_equal(cmp_format_index(buf, 4, 48, 3, s3, CMP_INDEX_BRACKETS), 9);
    assert_string_equal(buf, "[2,");
}

static void test_options_from_tolerance(void **state)
{
    (void)state;
    cmp_options o;
    fam_tolerance t = {0};
    assert_int_equal(cmp_options_from_tolerance(&t, &o, NULL), NX_EINVAL);
    t.has_ulp = 1;
    t.ulp = 2;
    assert_int_equal(cmp_options_from_tolerance(&t, &o, NULL), NX_OK);
    assert_int_equal(o.policy, CMP_ULP);
    assert_double_bits_eq(o.max_ulp, 2.0);
    t.has_rtol = 1;
    t.rtol = 1.6e-2;
    t.atol = 1e-5;
    assert_int_equal(cmp_options_from_tolerance(&t, &o, NULL), NX_OK);
    assert_int_equal(o.policy, CMP_ULP_OR_TOLERANCE);
    assert_double_bits_eq(o.rtol, 1.6e-2);
    assert_true(o.equal_nan);

    /* either criterion passes an element: 1 vs 1 + 3 ulp (bf16, 3 * 2^-7) */
    const uint64_t g[] = {0x3f83}, r0[] = {0x3f80};
    o.max_ulp = 2;
    o.rtol = 0;
    o.atol = 0x1.8p-6;
    assert_int_equal(run(NX_BF16, g, r0, 1, &o).mismatched, 0);
    o.atol = 0x1p-6;
    assert_int_equal(run(NX_BF16, g, r0, 1, &o).mismatched, 1);
    o.max_ulp = 3;
    assert_int_equal(run(NX_BF16, g, r0, 1, &o).mismatched, 0);

    assert_int_equal(cmp_policy_from_name("bound"), CMP_BOUND);
    assert_int_equal(cmp_policy_from_name("nope"), -1);
    assert_string_equal(cmp_policy_name(CMP_ULP_OR_TOLERANCE), "ulp_or_tolerance");
}

static void test_num_text(void **state)
{
    (void)state;
    char buf[32];
    cmp_num_text(buf, sizeof buf, 0.0625);
    assert_string_equal(buf, "0.0625");
    cmp_num_text(buf, sizeof buf, 1e-5);
    assert_string_equal(buf, "1e-05");
    cmp_num_text(buf, sizeof buf, 0.1);
    assert_string_equal(buf, "0.1");
    cmp_num_text(buf, sizeof buf, 2.0);
    assert_string_equal(buf, "2.0");
    cmp_num_text(buf, sizeof buf, 1.0 / 3.0);
    assert_string_equal(buf, "0.3333333333333333");
    cmp_num_text(buf, sizeof buf, -INFINITY);
    assert_string_equal(buf, "-inf");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bitwise_identical_bf16),
        cmocka_unit_test(test_flipped_bit_bf16_multidim),
        cmocka_unit_test(test_flipped_sign_fp32),
        cmocka_unit_test(test_signed_zero),
        cmocka_unit_test(test_nan_payloads),
        cmocka_unit_test(test_infinities),
        cmocka_unit_test(test_rtol_atol_boundaries),
        cmocka_unit_test(test_close_is_exact),
        cmocka_unit_test(test_diffs_over_mismatched),
        cmocka_unit_test(test_ulp_distance),
        cmocka_unit_test(test_histogram_buckets),
        cmocka_unit_test(test_bound),
        cmocka_unit_test(test_input_errors),
        cmocka_unit_test(test_format_index),
        cmocka_unit_test(test_options_from_tolerance),
        cmocka_unit_test(test_num_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
