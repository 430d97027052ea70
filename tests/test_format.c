/* test_format.c: the formats of docs/numerics.md §1 (nx_format.h): bit-pattern
 * decode and encode.
 *
 * The 4-, 6-, 8- and 16-bit formats are enumerated exhaustively; fp32, tf32,
 * e8m13 and fp64 are checked on chosen patterns.  Expected values are written
 * here as hex floats and pattern counts from the field widths of §1, never
 * taken from the code under test. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nx_format.h"
#include "testutil.h"

/* ---- the small formats, as §1 and §2 state them ------------------------- */

enum { NAN_NONE, NAN_IEEE, NAN_ALLONES };

typedef struct small_fmt {
    nx_fmt f;
    const char *name;
    int bits;          /* pattern width */
    int exp_bits, man_bits;
    int is_signed;
    int has_inf;
    int nan_kind;
    uint64_t canon_nan; /* §2: exponent all ones, top mantissa bit set, sign 0 */
    double max_finite;  /* §1 table */
    double min_sub, max_sub, min_normal; /* 0 where the format has none */
    long finite_count;  /* finite patterns, ±0 counted twice */
} small_fmt;

static const small_fmt small_fmts[] = {
    /* IEEE formats: 2 signs x (2^e - 1) exponents x 2^m mantissas are finite */
    {NX_FP16, "fp16", 16, 5, 10, 1, 1, NAN_IEEE, 0x7e00, 0x1.ffcp+15, 0x1p-24,
     0x1.ff8p-15, 0x1p-14, 2L * 31 * 1024},
    {NX_BF16, "bf16", 16, 8, 7, 1, 1, NAN_IEEE, 0x7fc0, 0x1.fep+127, 0x1p-133,
     0x1.fcp-127, 0x1p-126, 2L * 255 * 128},
    {NX_E5M2, "e5m2", 8, 5, 2, 1, 1, NAN_IEEE, 0x7e, 0x1.cp+15, 0x1p-16, 0x1.8p-15,
     0x1p-14, 2L * 31 * 4},
    /* e4m3: only S.1111.111 is NaN */
    {NX_E4M3, "e4m3", 8, 4, 3, 1, 0, NAN_ALLONES, 0x7f, 0x1.cp+8, 0x1p-9, 0x1.cp-7,
     0x1p-6, 256 - 2},
    /* no inf, no NaN: every pattern is finite */
    {NX_E3M2, "e3m2", 6, 3, 2, 1, 0, NAN_NONE, 0, 0x1.cp+4, 0x1p-4, 0x1.8p-3, 0x1p-2, 64},
    {NX_E2M3, "e2m3", 6, 2, 3, 1, 0, NAN_NONE, 0, 0x1.ep+2, 0x1p-3, 0x1.cp-1, 0x1p+0, 64},
    {NX_E2M1, "e2m1", 4, 2, 1, 1, 0, NAN_NONE, 0, 0x1.8p+2, 0x1p-1, 0x1p-1, 0x1p+0, 16},
    /* e8m0: unsigned, 2^(E-127) for E = 0..254, 0xFF is NaN (interpretations 2) */
    {NX_E8M0, "e8m0", 8, 8, 0, 0, 0, NAN_ALLONES, 0xff, 0x1p+127, 0, 0, 0x1p-127, 255},
};

#define N_SMALL (sizeof small_fmts / sizeof small_fmts[0])

/* Is pattern b a NaN, from the field layout alone. */
static int is_nan_pattern(const small_fmt *s, uint64_t b)
{
    uint64_t mag = b & ((1ull << (s->bits - (s->is_signed ? 1 : 0))) - 1);
    uint64_t emask = (1ull << s->exp_bits) - 1;
    uint64_t mmask = (1ull << s->man_bits) - 1;
    switch (s->nan_kind) {
    case NAN_IEEE: return ((mag >> s->man_bits) & emask) == emask && (mag & mmask) != 0;
    case NAN_ALLONES: return mag == (1ull << (s->bits - (s->is_signed ? 1 : 0))) - 1;
    default: return 0;
    }
}

static uint64_t sign_bit(const small_fmt *s)
{
    return s->is_signed ? 1ull << (s->bits - 1) : 0;
}

/* Every pattern decodes and re-encodes to itself; NaN patterns re-encode to
 * the canonical NaN of §2. */
static void test_small_roundtrip(void **state)
{
    const small_fmt *s = *state;
    long nans = 0;
    for (uint64_t b = 0; b < (1ull << s->bits); b++) {
        char ctx[128];
        snprintf(ctx, sizeof ctx, "%s pattern 0x%llx", s->name, (unsigned long long)b);
        int valid = -1;
        double v = nx_decode(s->f, b, &valid);
        if (valid != 1)
            fail_msg("%s: decode says not a member (valid=%d)", ctx, valid);
        uint64_t back = 0xdeadbeef;
        nx_err err = {0};
        nx_status st = nx_encode(s->f, v, &back, &err);
        if (st != NX_OK)
            fail_msg("%s: decoded to %a, re-encode failed: %s", ctx, v, err.msg);
        if (is_nan_pattern(s, b)) {
            nans++;
            if (!isnan(v))
                fail_msg("%s: a NaN pattern decoded to %a", ctx, v);
            assert_bits_eq_ctx(s->name, back, s->canon_nan, ctx);
        } else {
            if (isnan(v))
                fail_msg("%s: a non-NaN pattern decoded to NaN", ctx);
            assert_bits_eq_ctx(s->name, back, b, ctx);
        }
    }
    /* negative control of the NaN classification itself */
    long want_nans = s->nan_kind == NAN_IEEE ? 2L * ((1L << s->man_bits) - 1)
                     : s->nan_kind == NAN_ALLONES ? (s->is_signed ? 2 : 1) : 0;
    assert_int_equal(nans, want_nans);
}

/* Nonnegative patterns in increasing order give strictly increasing values
 * up to max finite, then inf where the format has it, then only NaNs;
 * negative patterns mirror them. */
static void test_small_order(void **state)
{
    const small_fmt *s = *state;
    uint64_t npos = s->is_signed ? 1ull << (s->bits - 1) : 1ull << s->bits;
    double prev = -INFINITY;
    uint64_t last_finite = 0;
    int seen_finite = 0;
    for (uint64_t b = 0; b < npos; b++) {
        double v = nx_decode(s->f, b, NULL);
        if (isnan(v) || isinf(v))
            continue;
        if (seen_finite && b != last_finite + 1)
            fail_msg("%s: finite pattern 0x%llx after a non-finite one", s->name,
                     (unsigned long long)b);
        if (!(v > prev))
            fail_msg("%s: pattern 0x%llx gives %a, not above the previous %a", s->name,
                     (unsigned long long)b, v, prev);
        if (signbit(v))
            fail_msg("%s: nonnegative pattern 0x%llx gives %a", s->name,
                     (unsigned long long)b, v);
        prev = v;
        last_finite = b;
        seen_finite = 1;
    }
    assert_true(seen_finite);
    /* the first pattern is +0 (e8m0: 2^-127) */
    assert_double_bits_eq(nx_decode(s->f, 0, NULL), s->is_signed ? 0.0 : 0x1p-127);
    /* the largest finite is the §1 max finite, and so is the table's */
    char ctx[96];
    snprintf(ctx, sizeof ctx, "%s largest finite (pattern 0x%llx)", s->name,
             (unsigned long long)last_finite);
    assert_double_bits_eq_ctx(prev, s->max_finite, ctx);
    snprintf(ctx, sizeof ctx, "%s nx_format()->max_finite", s->name);
    assert_double_bits_eq_ctx(nx_format(s->f)->max_finite, s->max_finite, ctx);
    /* after it: +inf where the format has it, then NaN patterns only */
    uint64_t b = last_finite + 1;
    if (s->has_inf) {
        snprintf(ctx, sizeof ctx, "%s pattern 0x%llx after max finite", s->name,
                 (unsigned long long)b);
        assert_true(b < npos);
        assert_double_bits_eq_ctx(nx_decode(s->f, b, NULL), INFINITY, ctx);
        b++;
    }
    for (; b < npos; b++) {
        double v = nx_decode(s->f, b, NULL);
        if (!isnan(v))
            fail_msg("%s: pattern 0x%llx above max finite gives %a, want NaN", s->name,
                     (unsigned long long)b, v);
    }
    if (!s->is_signed)
        return;
    /* negative patterns mirror the nonnegative ones (-0 and -inf included) */
    for (uint64_t p = 0; p < npos; p++) {
        double v = nx_decode(s->f, p, NULL);
        double w = nx_decode(s->f, p | sign_bit(s), NULL);
        snprintf(ctx, sizeof ctx, "%s pattern 0x%llx vs 0x%llx", s->name,
                 (unsigned long long)(p | sign_bit(s)), (unsigned long long)p);
        if (isnan(v)) {
            if (!isnan(w))
                fail_msg("%s: want NaN, got %a", ctx, w);
        } else {
            assert_double_bits_eq_ctx(w, -v, ctx);
        }
    }
}

/* The count of finite patterns, and the chosen patterns min/max subnormal
 * and min normal. */
static void test_small_counts(void **state)
{
    const small_fmt *s = *state;
    long finite = 0;
    for (uint64_t b = 0; b < (1ull << s->bits); b++)
        if (isfinite(nx_decode(s->f, b, NULL)))
            finite++;
    if (finite != s->finite_count)
        fail_msg("%s: %ld finite patterns, want %ld", s->name, finite, s->finite_count);
    char ctx[64];
    if (s->min_sub != 0) {
        snprintf(ctx, sizeof ctx, "%s min subnormal", s->name);
        assert_double_bits_eq_ctx(nx_decode(s->f, 1, NULL), s->min_sub, ctx);
        snprintf(ctx, sizeof ctx, "%s max subnormal", s->name);
        assert_double_bits_eq_ctx(nx_decode(s->f, (1ull << s->man_bits) - 1, NULL),
                                  s->max_sub, ctx);
        snprintf(ctx, sizeof ctx, "%s -min subnormal", s->name);
        assert_double_bits_eq_ctx(nx_decode(s->f, sign_bit(s) | 1, NULL), -s->min_sub, ctx);
        snprintf(ctx, sizeof ctx, "%s min normal", s->name);
        assert_double_bits_eq_ctx(nx_decode(s->f, 1ull << s->man_bits, NULL), s->min_normal,
                                  ctx);
        snprintf(ctx, sizeof ctx, "%s nx_fmt_min_normal", s->name);
        assert_double_bits_eq_ctx(nx_fmt_min_normal(s->f), s->min_normal, ctx);
        snprintf(ctx, sizeof ctx, "%s -0", s->name);
        assert_double_bits_eq_ctx(nx_decode(s->f, sign_bit(s), NULL), -0.0, ctx);
    } else { /* e8m0 */
        assert_double_bits_eq(nx_decode(s->f, 0, NULL), 0x1p-127);
        assert_double_bits_eq(nx_decode(s->f, 127, NULL), 0x1p+0);
        assert_double_bits_eq(nx_decode(s->f, 254, NULL), 0x1p+127);
        assert_double_bits_eq(nx_fmt_min_normal(s->f), 0x1p-127);
    }
}

/* ---- fp32, tf32, e8m13, fp64: chosen patterns --------------------------- */

enum { RE_SELF, RE_CANON, RE_EINVAL };

typedef struct pattern_case {
    nx_fmt f;
    const char *name;
    uint64_t bits;
    double want;   /* NAN for a NaN pattern */
    int valid;     /* nx_decode's *valid */
    int reencode;  /* RE_SELF: to bits; RE_CANON: to canon; RE_EINVAL: rejected */
    uint64_t canon;
} pattern_case;

static const pattern_case wide_cases[] = {
    /* fp32 */
    {NX_FP32, "fp32", 0x00000001, 0x1p-149, 1, RE_SELF, 0},          /* min subnormal */
    {NX_FP32, "fp32", 0x807fffff, -0x1.fffffcp-127, 1, RE_SELF, 0},  /* -max subnormal */
    {NX_FP32, "fp32", 0x007fffff, 0x1.fffffcp-127, 1, RE_SELF, 0},   /* max subnormal */
    {NX_FP32, "fp32", 0x00800000, 0x1p-126, 1, RE_SELF, 0},          /* min normal */
    {NX_FP32, "fp32", 0x3f800001, 0x1.000002p+0, 1, RE_SELF, 0},
    {NX_FP32, "fp32", 0x7f7fffff, 0x1.fffffep+127, 1, RE_SELF, 0},   /* max finite */
    {NX_FP32, "fp32", 0x7f800000, INFINITY, 1, RE_SELF, 0},
    {NX_FP32, "fp32", 0xff800000, -INFINITY, 1, RE_SELF, 0},
    {NX_FP32, "fp32", 0x80000000, -0.0, 1, RE_SELF, 0},
    {NX_FP32, "fp32", 0x7fc00000, NAN, 1, RE_CANON, 0x7fc00000},
    {NX_FP32, "fp32", 0x7f800001, NAN, 1, RE_CANON, 0x7fc00000},     /* signaling */
    {NX_FP32, "fp32", 0xffffffff, NAN, 1, RE_CANON, 0x7fc00000},     /* negative, payload */
    /* tf32: fp32 layout, low 13 mantissa bits zero (interpretations 1) */
    {NX_TF32, "tf32", 0x00002000, 0x1p-136, 1, RE_SELF, 0},          /* min subnormal */
    {NX_TF32, "tf32", 0x007fe000, 0x1.ff8p-127, 1, RE_SELF, 0},      /* max subnormal */
    {NX_TF32, "tf32", 0x00800000, 0x1p-126, 1, RE_SELF, 0},          /* min normal */
    {NX_TF32, "tf32", 0x3f802000, 0x1.004p+0, 1, RE_SELF, 0},        /* 1 + 2^-10 */
    {NX_TF32, "tf32", 0x7f7fe000, 0x1.ffcp+127, 1, RE_SELF, 0},      /* max finite */
    {NX_TF32, "tf32", 0xff7fe000, -0x1.ffcp+127, 1, RE_SELF, 0},
    {NX_TF32, "tf32", 0x7f800000, INFINITY, 1, RE_SELF, 0},
    {NX_TF32, "tf32", 0x7fc00000, NAN, 1, RE_CANON, 0x7fc00000},
    {NX_TF32, "tf32", 0x00000001, 0x1p-149, 0, RE_EINVAL, 0},        /* not members */
    {NX_TF32, "tf32", 0x00001000, 0x1p-137, 0, RE_EINVAL, 0},
    {NX_TF32, "tf32", 0x3f801000, 0x1.002p+0, 0, RE_EINVAL, 0},
    {NX_TF32, "tf32", 0x7f7fffff, 0x1.fffffep+127, 0, RE_EINVAL, 0},
    /* e8m13: fp32 layout, low 10 mantissa bits zero (interpretations 1) */
    {NX_E8M13, "e8m13", 0x00000400, 0x1p-139, 1, RE_SELF, 0},        /* min subnormal */
    {NX_E8M13, "e8m13", 0x007ffc00, 0x1.fffp-127, 1, RE_SELF, 0},    /* max subnormal */
    {NX_E8M13, "e8m13", 0x00800000, 0x1p-126, 1, RE_SELF, 0},        /* min normal */
    {NX_E8M13, "e8m13", 0x3f800400, 0x1.0008p+0, 1, RE_SELF, 0},     /* 1 + 2^-13 */
    {NX_E8M13, "e8m13", 0x7f7ff800, 0x1.fffp+127, 1, RE_SELF, 0},    /* max finite - ulp */
    {NX_E8M13, "e8m13", 0x7f7ffc00, 0x1.fff8p+127, 1, RE_SELF, 0},   /* max finite */
    {NX_E8M13, "e8m13", 0xff7ffc00, -0x1.fff8p+127, 1, RE_SELF, 0},
    {NX_E8M13, "e8m13", 0x7f800000, INFINITY, 1, RE_SELF, 0},
    {NX_E8M13, "e8m13", 0xffc00001, NAN, 0, RE_CANON, 0x7fc00000},
    {NX_E8M13, "e8m13", 0x3f800200, 0x1.0004p+0, 0, RE_EINVAL, 0},   /* not members */
    {NX_E8M13, "e8m13", 0x00000200, 0x1p-140, 0, RE_EINVAL, 0},
    {NX_E8M13, "e8m13", 0x7f7fffff, 0x1.fffffep+127, 0, RE_EINVAL, 0},
    /* fp64 */
    {NX_FP64, "fp64", 0x0000000000000001ull, 0x1p-1074, 1, RE_SELF, 0},
    {NX_FP64, "fp64", 0x000fffffffffffffull, 0x1.ffffffffffffep-1023, 1, RE_SELF, 0},
    {NX_FP64, "fp64", 0x0010000000000000ull, 0x1p-1022, 1, RE_SELF, 0},
    {NX_FP64, "fp64", 0x7fefffffffffffffull, 0x1.fffffffffffffp+1023, 1, RE_SELF, 0},
    {NX_FP64, "fp64", 0xffefffffffffffffull, -0x1.fffffffffffffp+1023, 1, RE_SELF, 0},
    {NX_FP64, "fp64", 0x7ff0000000000000ull, INFINITY, 1, RE_SELF, 0},
    {NX_FP64, "fp64", 0x8000000000000000ull, -0.0, 1, RE_SELF, 0},
    {NX_FP64, "fp64", 0x7ff8000000000000ull, NAN, 1, RE_CANON, 0x7ff8000000000000ull},
    {NX_FP64, "fp64", 0x7ff0000000000001ull, NAN, 1, RE_CANON, 0x7ff8000000000000ull},
    {NX_FP64, "fp64", 0xfff8000000000000ull, NAN, 1, RE_CANON, 0x7ff8000000000000ull},
};

static void test_wide_patterns(void **state)
{
    (void)state;
    int failures = 0;
    for (size_t i = 0; i < sizeof wide_cases / sizeof wide_cases[0]; i++) {
        const pattern_case *c = &wide_cases[i];
        char ctx[128];
        snprintf(ctx, sizeof ctx, "%s pattern 0x%llx", c->name, (unsigned long long)c->bits);
        int valid = -1;
        double v = nx_decode(c->f, c->bits, &valid);
        /* a NaN pattern's membership is not asserted (§1 says nothing) */
        if (!isnan(c->want) && valid != c->valid) {
            print_error("%s: valid=%d, want %d\n", ctx, valid, c->valid);
            failures++;
        }
        if (!tu_same_double(v, c->want)) {
            tu_print_double_mismatch(ctx, v, c->want);
            failures++;
        }
        uint64_t back = 0;
        nx_err err = {0};
        nx_status st = nx_encode(c->f, v, &back, &err);
        if (c->reencode == RE_EINVAL) {
            if (st != NX_EINVAL) {
                print_error("%s: encode of non-member %a gave status %d (0x%llx), want "
                            "NX_EINVAL\n", ctx, v, (int)st, (unsigned long long)back);
                failures++;
            }
            continue;
        }
        uint64_t want = c->reencode == RE_SELF ? c->bits : c->canon;
        if (st != NX_OK || back != want) {
            print_error("%s: decoded %a re-encodes to 0x%llx (status %d: %s), want 0x%llx\n",
                        ctx, v, (unsigned long long)back, (int)st, err.msg,
                        (unsigned long long)want);
            failures++;
        }
    }
    /* max finite of the table of §1 */
    static const struct { nx_fmt f; double max; } maxes[] = {
        {NX_FP64, 0x1.fffffffffffffp+1023}, {NX_FP32, 0x1.fffffep+127},
        {NX_TF32, 0x1.ffcp+127}, {NX_E8M13, 0x1.fff8p+127}};
    for (size_t i = 0; i < sizeof maxes / sizeof maxes[0]; i++) {
        double got = nx_format(maxes[i].f)->max_finite;
        if (!tu_same_double(got, maxes[i].max)) {
            char ctx[64];
            snprintf(ctx, sizeof ctx, "%s nx_format()->max_finite",
                     nx_format(maxes[i].f)->name);
            tu_print_double_mismatch(ctx, got, maxes[i].max);
            failures++;
        }
    }
    if (failures)
        fail_msg("%d wide-format pattern checks failed (see above)", failures);
}

/* A NaN double of any sign or payload encodes to the canonical NaN (§2). */
static void test_encode_nan_canonical(void **state)
{
    (void)state;
    static const struct { nx_fmt f; const char *name; uint64_t canon; } fmts[] = {
        {NX_FP64, "fp64", 0x7ff8000000000000ull}, {NX_FP32, "fp32", 0x7fc00000},
        {NX_TF32, "tf32", 0x7fc00000}, {NX_E8M13, "e8m13", 0x7fc00000},
        {NX_FP16, "fp16", 0x7e00}, {NX_BF16, "bf16", 0x7fc0}, {NX_E5M2, "e5m2", 0x7e},
        {NX_E4M3, "e4m3", 0x7f}, {NX_E8M0, "e8m0", 0xff}};
    const double nans[] = {NAN, -NAN, tu_bdouble(0x7ff0000000000001ull),
                           tu_bdouble(0xfff0000000000001ull), tu_bdouble(0x7fffffffffffffffull)};
    int failures = 0;
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++)
        for (size_t k = 0; k < sizeof nans / sizeof nans[0]; k++) {
            uint64_t b = 0;
            nx_status st = nx_encode(fmts[i].f, nans[k], &b, NULL);
            if (st != NX_OK || b != fmts[i].canon) {
                print_error("%s: encode of NaN 0x%016llx gave 0x%llx (status %d), want "
                            "0x%llx\n", fmts[i].name, (unsigned long long)tu_dbits(nans[k]),
                            (unsigned long long)b, (int)st, (unsigned long long)fmts[i].canon);
                failures++;
            }
        }
    if (failures)
        fail_msg("%d NaN encodings are not canonical (see above)", failures);
}

/* ---- nx_encode rejects non-members ------------------------------------- */

typedef struct encode_case {
    nx_fmt f;
    const char *name;
    double v;
    int ok;          /* 1: a member (positive control), 0: NX_EINVAL */
    uint64_t bits;   /* the pattern of a member */
} encode_case;

static const encode_case encode_cases[] = {
    {NX_BF16, "bf16", 0x1.001p0, 0, 0},
    {NX_BF16, "bf16", 0x1.02p0, 1, 0x3f81},
    {NX_BF16, "bf16", 0x1p+128, 0, 0},      /* above max finite */
    {NX_BF16, "bf16", 0x1p-134, 0, 0},        /* half the min subnormal */
    {NX_E2M1, "e2m1", 0.25, 0, 0},
    {NX_E2M1, "e2m1", 0.5, 1, 0x1},
    {NX_E2M1, "e2m1", -6.0, 1, 0xf},
    {NX_E2M1, "e2m1", 5.0, 0, 0},
    {NX_E2M1, "e2m1", 8.0, 0, 0},
    {NX_E2M1, "e2m1", NAN, 0, 0},
    {NX_E2M1, "e2m1", INFINITY, 0, 0},
    {NX_E3M2, "e3m2", NAN, 0, 0},
    {NX_E3M2, "e3m2", -INFINITY, 0, 0},
    {NX_E3M2, "e3m2", 32.0, 0, 0},
    {NX_E3M2, "e3m2", 0x1p-5, 0, 0},
    {NX_E2M3, "e2m3", NAN, 0, 0},
    {NX_E2M3, "e2m3", 0x1.1p0, 0, 0},
    {NX_E2M3, "e2m3", 7.5, 1, 0x1f},
    {NX_E4M3, "e4m3", INFINITY, 0, 0},
    {NX_E4M3, "e4m3", -INFINITY, 0, 0},
    {NX_E4M3, "e4m3", 480.0, 0, 0},           /* S.1111.111 is NaN, not 480 */
    {NX_E4M3, "e4m3", 448.0, 1, 0x7e},
    {NX_E4M3, "e4m3", 0x1p-10, 0, 0},
    {NX_E8M0, "e8m0", -1.0, 0, 0},
    {NX_E8M0, "e8m0", 0.0, 0, 0},
    {NX_E8M0, "e8m0", -0.0, 0, 0},
    {NX_E8M0, "e8m0", 3.0, 0, 0},
    {NX_E8M0, "e8m0", 0x1p-128, 0, 0},
    {NX_E8M0, "e8m0", 0x1p+128, 0, 0},
    {NX_E8M0, "e8m0", INFINITY, 0, 0},
    {NX_E8M0, "e8m0", 1.0, 1, 0x7f},
    {NX_FP16, "fp16", 65520.0, 0, 0},
    {NX_FP16, "fp16", 0x1p-25, 0, 0},
    {NX_FP16, "fp16", 0x1.002p0, 0, 0},
    {NX_FP16, "fp16", 0x1.004p0, 1, 0x3c01},
    {NX_E5M2, "e5m2", 0x1.4p0, 1, 0x3d},
    {NX_E5M2, "e5m2", 0x1.2p0, 0, 0},
    {NX_FP32, "fp32", 0x1p-150, 0, 0},
    {NX_FP32, "fp32", 0x1.0000001p0, 0, 0},
    {NX_FP32, "fp32", 0x1p+128, 0, 0},
    {NX_TF32, "tf32", 0x1.002p0, 0, 0},
    {NX_TF32, "tf32", 0x1p-137, 0, 0},
    {NX_E8M13, "e8m13", 0x1.0004p0, 0, 0},
    {NX_E8M13, "e8m13", 0x1.fff8p+127, 1, 0x7f7ffc00},
};

static void test_encode_rejects(void **state)
{
    (void)state;
    int failures = 0;
    for (size_t i = 0; i < sizeof encode_cases / sizeof encode_cases[0]; i++) {
        const encode_case *c = &encode_cases[i];
        uint64_t b = 0;
        nx_err err = {0};
        nx_status st = nx_encode(c->f, c->v, &b, &err);
        if (c->ok) {
            if (st != NX_OK || b != c->bits) {
                print_error("%s: encode(%a) = 0x%llx status %d (%s), want 0x%llx\n", c->name,
                            c->v, (unsigned long long)b, (int)st, err.msg,
                            (unsigned long long)c->bits);
                failures++;
            }
            if (!nx_is_member(c->f, c->v)) {
                print_error("%s: nx_is_member(%a) = 0, want 1\n", c->name, c->v);
                failures++;
            }
        } else {
            if (st != NX_EINVAL || err.code != NX_EINVAL || err.msg[0] == '\0') {
                print_error("%s: encode(%a) gave status %d err.code %d msg \"%s\" (0x%llx), "
                            "want NX_EINVAL with a message\n", c->name, c->v, (int)st,
                            (int)err.code, err.msg, (unsigned long long)b);
                failures++;
            }
            if (nx_is_member(c->f, c->v) && !isnan(c->v)) {
                print_error("%s: nx_is_member(%a) = 1, want 0\n", c->name, c->v);
                failures++;
            }
        }
    }
    /* with err == NULL the status is still returned */
    uint64_t b;
    assert_int_equal(nx_encode(NX_E2M1, 0.25, &b, NULL), NX_EINVAL);
    /* inf is a member where the format has it */
    assert_int_equal(nx_encode(NX_BF16, -INFINITY, &b, NULL), NX_OK);
    assert_bits_eq("bf16", b, 0xff80);
    assert_int_equal(nx_encode(NX_E5M2, INFINITY, &b, NULL), NX_OK);
    assert_bits_eq("e5m2", b, 0x7c);
    if (failures)
        fail_msg("%d encode checks failed (see above)", failures);
}

int main(void)
{
    static char names[3 * N_SMALL][48];
    struct CMUnitTest tests[3 * N_SMALL + 3];
    size_t n = 0;
    static const struct { const char *what; CMUnitTestFunction fn; } per_fmt[] = {
        {"roundtrip", test_small_roundtrip}, {"order", test_small_order},
        {"counts", test_small_counts}};
    for (size_t i = 0; i < N_SMALL; i++)
        for (size_t k = 0; k < 3; k++) {
            snprintf(names[n], sizeof names[n], "%s_%s", per_fmt[k].what, small_fmts[i].name);
            tests[n] = (struct CMUnitTest){names[n], per_fmt[k].fn, NULL, NULL,
                                           (void *)&small_fmts[i]};
            n++;
        }
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_wide_patterns);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_encode_nan_canonical);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_encode_rejects);
    return _cmocka_run_group_tests("test_format", tests, n, NULL, NULL);
}
