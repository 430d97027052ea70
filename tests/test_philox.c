/* test_philox.c: the input generator (numerics/nx_philox.h).
 *
 * Known-answer vectors of Philox4x32 (7 and 10 rounds) from the kat_vectors
 * file of the Random123 distribution (D. E. Shaw Research; reproduced in
 * DEShawResearch/fs123 core123/ut/ut_philox.cpp); purity (an element does
 * not depend on which range, slice or thread count produced it); the normal
 * normal's log and sin/cos within a few ulps of MPFR, its first values pinned;
 * the properties of each distribution. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <mpfr.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nx_philox.h"
#include "testutil.h"

typedef struct kat {
    unsigned rounds;
    uint32_t ctr[4], key[2], out[4];
} kat;

/* Random123 kat_vectors: "philox4x32 R ctr0 ctr1 ctr2 ctr3 key0 key1 out0..out3" */
static const kat kats[] = {
    {7, {0, 0, 0, 0}, {0, 0}, {0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48}},
    {7, {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
     {0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662}},
    {7, {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
     {0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a}},
    {10, {0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {10, {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {10, {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

static void test_kat(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof kats / sizeof kats[0]; i++) {
        uint32_t out[4];
        if (kats[i].rounds == 10)
            nx_philox4x32_10(kats[i].ctr, kats[i].key, out);
        else
            nx_philox4x32_r(kats[i].rounds, kats[i].ctr, kats[i].key, out);
        for (int w = 0; w < 4; w++) {
            if (out[w] != kats[i].out[w])
                print_error("KAT %zu (%u rounds) word %d: got %08x want %08x\n", i, kats[i].rounds, w, out[w],
                            kats[i].out[w]);
            assert_int_equal(out[w], kats[i].out[w]);
        }
    }
}

/* The block layout: counter {index lo, index hi, tensor, draw}, key {seed lo, seed hi}. */
static void test_block_layout(void **state)
{
    (void)state;
    uint64_t seed = 0x299f31d0a4093822ull, index = 0x85a308d3243f6a88ull;
    uint32_t got[4];
    nx_philox_block(seed, 0x13198a2e, index, 0x03707344, got);
    for (int w = 0; w < 4; w++)
        assert_int_equal(got[w], kats[5].out[w]);
}

static void test_helpers(void **state)
{
    (void)state;
    assert_int_equal(nx_philox_tensor_id(""), 0x811c9dc5u); /* FNV-1a offset basis */
    assert_int_equal(nx_philox_tensor_id("a"), 0xe40c292cu);
    assert_int_equal(nx_philox_tensor_id("foobar"), 0xbf9cf968u);
    assert_double_bits_eq(nx_philox_u53(0, 0), 0.0);
    assert_double_bits_eq(nx_philox_u53(0xffffffffu, 0xffffffffu), 1.0 - 0x1p-53);
    assert_double_bits_eq(nx_philox_u53(0x80000000u, 0), 0.5);
    assert_int_equal(nx_philox_below(0, 7), 0);
    assert_int_equal(nx_philox_below(0xffffffffu, 7), 6);
    assert_int_equal(nx_philox_below(0x80000000u, 10), 5);
    assert_int_equal(nx_dist_from_name("adversarial"), NX_DIST_ADVERSARIAL);
    assert_int_equal(nx_dist_from_name("gauss"), -1);
    assert_string_equal(nx_dist_name(NX_DIST_INT), "int");
}

static void fill(nx_dist_spec *d, nx_fmt f, uint64_t seed, uint32_t id, uint64_t first, size_t n, double *out,
                 int threads)
{
    nx_err e = {0};
    nx_status st = nx_philox_fill(seed, id, d, f, first, n, out, threads, &e);
    if (st)
        print_error("nx_philox_fill: %s\n", e.msg);
    assert_int_equal(st, NX_OK);
}

/* Element i is the same whether made alone, in any slice, with any threads. */
static void test_purity(void **state)
{
    (void)state;
    const nx_fmt fmts[] = {NX_FP32, NX_BF16, NX_FP16, NX_E4M3, NX_FP64};
    enum { N = 9000 };
    double *all = malloc(N * sizeof *all), *part = malloc(N * sizeof *part), one;
    assert_non_null(all);
    assert_non_null(part);
    for (int dist = 0; dist < NX_NDISTS; dist++) {
        for (size_t fi = 0; fi < sizeof fmts / sizeof fmts[0]; fi++) {
            nx_dist_spec d;
            nx_dist_spec_init(&d, (nx_dist)dist);
            d.specials = 1;
            fill(&d, fmts[fi], 42, 7, 0, N, all, 1);
            fill(&d, fmts[fi], 42, 7, 0, N, part, 2);
            for (size_t i = 0; i < N; i++)
                assert_true(tu_same_double(part[i], all[i]));
            /* odd starts and odd lengths cut normal pairs and chunks apart */
            fill(&d, fmts[fi], 42, 7, 4095, 4099, part, 3);
            for (size_t i = 0; i < 4099; i++)
                assert_true(tu_same_double(part[i], all[4095 + i]));
            for (size_t i = 0; i < 40; i++) {
                size_t k = (i * 2654435761u) % N;
                fill(&d, fmts[fi], 42, 7, k, 1, &one, 1);
                if (!tu_same_double(one, all[k]))
                    print_error("dist %s fmt %d element %zu: alone %a, in the range %a\n", nx_dist_name((nx_dist)dist),
                                (int)fmts[fi], k, one, all[k]);
                assert_true(tu_same_double(one, all[k]));
            }
            /* another tensor id or seed gives another stream */
            fill(&d, fmts[fi], 42, 8, 0, 64, part, 1);
            int differ = 0;
            for (size_t i = 0; i < 64; i++)
                differ += !tu_same_double(part[i], all[i]);
            assert_true(differ > 8);
            fill(&d, fmts[fi], 43, 7, 0, 64, part, 1);
            differ = 0;
            for (size_t i = 0; i < 64; i++)
                differ += !tu_same_double(part[i], all[i]);
            assert_true(differ > 8);
        }
    }
    free(all);
    free(part);
}

/* ulps of binary64 between got and the exact value x (an MPFR number). */
static double ulp_err(double got, mpfr_srcptr x)
{
    mpfr_t d;
    mpfr_init2(d, 300);
    mpfr_sub_d(d, x, got, MPFR_RNDN);
    mpfr_abs(d, d, MPFR_RNDN);
    long e = mpfr_get_exp(x); /* |x| in [2^(e-1), 2^e): ulp 2^(e-53) */
    mpfr_mul_2si(d, d, 53 - e, MPFR_RNDN);
    double r = mpfr_get_d(d, MPFR_RNDN);
    mpfr_clear(d);
    return r;
}

/* The elementary functions of `normal` are a few ulps from the exact ones
 * (MPFR at 300 bits), over the arguments the generator feeds them. */
static void test_normal_functions(void **state)
{
    (void)state;
    uint64_t rs = tu_seed(2);
    mpfr_t x, y;
    mpfr_inits2(300, x, y, (mpfr_ptr)0);
    double worst_log = 0, worst_sc = 0;
    for (int i = 0; i < 20000; i++) {
        uint64_t k = tu_rand64(&rs) >> 11; /* 53 bits */
        if (i < 64)
            k = (uint64_t)i << (i % 2 ? 0 : 45); /* near 0, near quadrant edges */
        if (i >= 64 && i < 128)
            k = ((1ull << 53) - 1) - (uint64_t)(i - 64);
        double u = (double)(k + 1) * 0x1p-53;
        if (u != 1.0) {
            mpfr_set_d(x, u, MPFR_RNDN);
            mpfr_log(y, x, MPFR_RNDN);
            double e = ulp_err(nx_philox_log(u), y);
            if (e > worst_log)
                worst_log = e;
        }
        double sn, cs;
        nx_philox_sincospi(k, &sn, &cs);
        mpfr_set_ui(x, (unsigned long)k, MPFR_RNDN);
        mpfr_div_2ui(x, x, 52, MPFR_RNDN);
        mpfr_sinpi(y, x, MPFR_RNDN);
        if (!mpfr_zero_p(y)) {
            double e = ulp_err(sn, y);
            if (e > worst_sc)
                worst_sc = e;
        } else {
            assert_true(sn == 0);
        }
        mpfr_cospi(y, x, MPFR_RNDN);
        if (!mpfr_zero_p(y)) {
            double e = ulp_err(cs, y);
            if (e > worst_sc)
                worst_sc = e;
        }
    }
    mpfr_clears(x, y, (mpfr_ptr)0);
    if (worst_log > 4 || worst_sc > 4)
        print_error("worst errors: log %g ulp, sincospi %g ulp\n", worst_log, worst_sc);
    assert_true(worst_log <= 4);
    assert_true(worst_sc <= 4);
    /* exact points */
    double sn, cs;
    nx_philox_sincospi(0, &sn, &cs);
    assert_double_bits_eq(sn, 0.0);
    assert_double_bits_eq(cs, 1.0);
    nx_philox_sincospi(1ull << 51, &sn, &cs); /* pi/2 */
    assert_double_bits_eq(sn, 1.0);
    assert_double_bits_eq(cs, -0.0);
    assert_double_bits_eq(nx_philox_log(1.0), 0.0);
}

/* The values the generator writes are the definition's (nx_philox_normal,
 * rounded), and the first ones are pinned: any class or port must
 * reproduce these bits (seed 1, tensor id 3). */
static void test_normal_definition(void **state)
{
    (void)state;
    static const double pinned[8] = {
        0x1.fbde8c52d8008p-1,  -0x1.01cbf5338efd4p-1, -0x1.6ebee4508502dp+0, 0x1.2d1076ff0396fp-2,
        0x1.10e94f4b79b14p-2,  0x1.e3a90198c16a7p-3,  0x1.471baea8e9ee6p+1,  0x1.19f53ffc7dd6bp+0,
    };
    enum { N = 2000 };
    double v[N];
    nx_dist_spec d;
    nx_dist_spec_init(&d, NX_DIST_NORMAL);
    fill(&d, NX_FP64, 1, 3, 0, N, v, 1);
    for (size_t i = 0; i < N; i++)
        assert_double_bits_eq(v[i], nx_philox_normal(1, 3, i));
    for (size_t i = 0; i < 8; i++) {
        if (!tu_same_double(v[i], pinned[i]))
            print_error("normal %zu: %a, pinned %a\n", i, v[i], pinned[i]);
        assert_true(tu_same_double(v[i], pinned[i]));
    }
}

static void test_normal_moments(void **state)
{
    (void)state;
    enum { N = 40000 };
    double *v = malloc(N * sizeof *v);
    assert_non_null(v);
    nx_dist_spec d;
    nx_dist_spec_init(&d, NX_DIST_NORMAL);
    fill(&d, NX_FP32, tu_seed(5), 11, 0, N, v, 0);
    double s = 0, s2 = 0, mx = 0;
    for (size_t i = 0; i < N; i++) {
        assert_true(isfinite(v[i]));
        assert_true((double)(float)v[i] == v[i]); /* an fp32 member */
        s += v[i];
        s2 += v[i] * v[i];
        if (fabs(v[i]) > mx)
            mx = fabs(v[i]);
    }
    double mean = s / N, var = s2 / N - mean * mean;
    if (fabs(mean) > 0.03 || fabs(var - 1) > 0.04)
        print_error("mean %g var %g (seed %llu)\n", mean, var, (unsigned long long)tu_seed(5));
    assert_true(fabs(mean) < 0.03);
    assert_true(fabs(var - 1) < 0.04);
    assert_true(mx > 3 && mx < 9); /* tails reached, and bounded by sqrt(-2 log 2^-53) */
    free(v);
}

static void test_uniform(void **state)
{
    (void)state;
    enum { N = 20000 };
    double *v = malloc(N * sizeof *v);
    assert_non_null(v);
    const nx_fmt fmts[] = {NX_FP32, NX_BF16, NX_E2M1, NX_E4M3};
    for (size_t fi = 0; fi < 4; fi++) {
        nx_dist_spec d;
        nx_dist_spec_init(&d, NX_DIST_UNIFORM);
        fill(&d, fmts[fi], 9, 2, 0, N, v, 0);
        double s = 0;
        int lo_seen = 0;
        for (size_t i = 0; i < N; i++) {
            assert_true(v[i] >= -1.0 && v[i] < 1.0); /* never hi, even where rne would reach it */
            assert_true(nx_is_member(fmts[fi], v[i]));
            lo_seen |= v[i] == -1.0;
            s += v[i];
        }
        assert_true(fabs(s / N) < (fmts[fi] == NX_FP32 || fmts[fi] == NX_BF16 ? 0.03 : 0.2));
        if (fmts[fi] == NX_E2M1)
            assert_true(lo_seen);
    }
    nx_dist_spec d;
    nx_dist_spec_init(&d, NX_DIST_UNIFORM);
    d.lo = 2;
    d.hi = 3;
    fill(&d, NX_FP32, 9, 2, 0, N, v, 0);
    for (size_t i = 0; i < N; i++)
        assert_true(v[i] >= 2 && v[i] < 3);
    free(v);
}

/* Integers: in range, every value reached, and a dot product within the
 * bound is the same in any order (here: forward, backward, pairwise in fp32). */
static float pairwise_f(const float *x, size_t n)
{
    if (n == 1)
        return x[0];
    size_t h = (n + 1) / 2;
    return pairwise_f(x, h) + pairwise_f(x + h, n - h);
}

static void test_int(void **state)
{
    (void)state;
    enum { N = 4096 };
    double a[N], b[N];
    nx_dist_spec d;
    nx_dist_spec_init(&d, NX_DIST_INT);
    d.int_max = 63; /* 4096 * 63^2 < 2^24 */
    fill(&d, NX_BF16, 77, nx_philox_tensor_id("a"), 0, N, a, 0);
    fill(&d, NX_BF16, 77, nx_philox_tensor_id("b"), 0, N, b, 0);
    int seen[127] = {0};
    int64_t exact = 0;
    float prod[N], fwd = 0, bwd = 0;
    for (size_t i = 0; i < N; i++) {
        assert_true(a[i] == floor(a[i]) && fabs(a[i]) <= 63);
        seen[(int)a[i] + 63] = 1;
        exact += (int64_t)a[i] * (int64_t)b[i];
        prod[i] = (float)(a[i] * b[i]);
    }
    for (int k = 0; k < 127; k++)
        assert_true(seen[k]);
    for (size_t i = 0; i < N; i++)
        fwd += prod[i];
    for (size_t i = N; i-- > 0;)
        bwd += prod[i];
    assert_true((int64_t)fwd == exact);
    assert_true((int64_t)bwd == exact);
    assert_true((int64_t)pairwise_f(prod, N) == exact);
    /* int_max beyond the format's exact integers is refused */
    nx_err e = {0};
    d.int_max = 300;
    assert_int_equal(nx_philox_fill(1, 1, &d, NX_BF16, 0, 4, a, 1, &e), NX_EINVAL);
    assert_non_null(strstr(e.msg, "bf16"));
}

static void test_adversarial(void **state)
{
    (void)state;
    enum { N = 20000 };
    double *v = malloc(N * sizeof *v);
    assert_non_null(v);
    nx_dist_spec d;
    nx_dist_spec_init(&d, NX_DIST_ADVERSARIAL);
    fill(&d, NX_FP32, 3, 4, 0, N, v, 0);
    size_t pairs = 0, sub = 0, pz = 0, nz = 0, big = 0, tiny = 0;
    for (size_t i = 0; i < N; i++) {
        assert_true(isfinite(v[i]));
        assert_true(nx_is_member(NX_FP32, v[i]));
        if (v[i] == 0)
            *(signbit(v[i]) ? &nz : &pz) += 1;
        else if (fabs(v[i]) < 0x1p-126)
            sub++;
        if (fabs(v[i]) >= 0x1p30)
            big++;
        if (v[i] != 0 && fabs(v[i]) <= 0x1p-30 && fabs(v[i]) >= 0x1p-40)
            tiny++;
        assert_true(fabs(v[i]) < 0x1p41);
        if (i % 2 == 0 && v[i] != 0 && v[i] == -v[i + 1])
            pairs++;
    }
    size_t np = N / 2;
    assert_true(pairs > np / 4 && pairs < np * 2 / 5); /* about 30% of the pairs */
    assert_true(sub > N / 20);
    assert_true(pz > N / 100 && nz > N / 100);
    assert_true(big > N / 50 && tiny > N / 50);
    /* fp16: the range is clamped to the format (no overflow), subnormals of fp16 */
    fill(&d, NX_FP16, 3, 4, 0, N, v, 0);
    sub = 0;
    for (size_t i = 0; i < N; i++) {
        assert_true(isfinite(v[i]));
        sub += v[i] != 0 && fabs(v[i]) < 0x1p-14;
    }
    assert_true(sub > N / 20);
    /* specials only when asked */
    d.specials = 1;
    fill(&d, NX_FP32, 3, 4, 0, N, v, 0);
    size_t pinf = 0, ninf = 0, nan = 0;
    for (size_t i = 0; i < N; i++) {
        pinf += v[i] == INFINITY;
        ninf += v[i] == -INFINITY;
        nan += isnan(v[i]) != 0;
    }
    assert_true(pinf > 10 && ninf > 10 && nan > 10);
    free(v);
}

/* uniform, int and adversarial from their definitions in docs/families.md
 * ("Inputs"), computed here from single blocks (nx_philox_block, checked by
 * the known-answer vectors) and compared with what ranges produce: the
 * ranges start at 0, 1 and 37 and run past whole runs of blocks drawn side
 * by side, so a lane, a draw or a pair block out of place shows. */
static uint32_t below_def(uint32_t w, uint32_t n)
{
    return (uint32_t)(((uint64_t)w * n) >> 32);
}

static double u53_def(uint32_t a, uint32_t b)
{
    return ldexp((double)(a >> 5) * 0x1p26 + (double)(b >> 6), -53);
}

/* fp32's adversarial magnitude from a block: 2^e (1 + f), e in [-40, 40],
 * f the top 23 bits of w1, the sign from w3 */
static double magnitude_def(const uint32_t w[4])
{
    double m = ldexp(1.0 + ldexp((double)(w[1] >> 9), -23), -40 + (int)below_def(w[2], 81));
    return (w[3] & 1u) ? -m : m;
}

static void test_definitions(void **state)
{
    (void)state;
    enum { N = 3000 };
    static const size_t starts[] = {0, 1, 37};
    double *v = malloc(N * sizeof *v);
    assert_non_null(v);
    const uint64_t seed = 0x1234567890abcULL;
    const uint32_t id = 11;
    for (size_t si = 0; si < 3; si++) {
        size_t first = starts[si];
        uint32_t w[4], pw[4];
        nx_dist_spec d;
        nx_dist_spec_init(&d, NX_DIST_UNIFORM);
        fill(&d, NX_FP32, seed, id, first, N, v, 1);
        for (size_t k = 0; k < N; k++) {
            nx_philox_block(seed, id, first + k, 0, w);
            double x = (double)(float)(-1.0 + 2.0 * u53_def(w[0], w[1]));
            if (x == 1.0)
                x = nextafterf(1.0f, 0.0f);
            assert_double_bits_eq(v[k], x);
        }
        nx_dist_spec_init(&d, NX_DIST_INT);
        d.int_max = 100;
        fill(&d, NX_FP32, seed, id, first, N, v, 1);
        for (size_t k = 0; k < N; k++) {
            nx_philox_block(seed, id, first + k, 0, w);
            assert_double_bits_eq(v[k], (double)((long)below_def(w[0], 201) - 100));
        }
        nx_dist_spec_init(&d, NX_DIST_ADVERSARIAL);
        fill(&d, NX_FP32, seed, id, first, N, v, 1);
        size_t checked = 0;
        for (size_t k = 0; k < N; k++) {
            uint64_t i = first + k;
            nx_philox_block(seed, id, i >> 1, 1, pw); /* the pair's block */
            nx_philox_block(seed, id, i, 2, w);       /* the element's own */
            uint32_t c = below_def(pw[0], 100);
            if (c < 30) { /* cancellation pair: (m, -m) */
                double m = magnitude_def(pw);
                assert_double_bits_eq(v[k], (i & 1u) ? -m : m);
                checked++;
            } else if (c < 70) {
                assert_double_bits_eq(v[k], magnitude_def(w));
                checked++;
            } else if (c >= 80 && c < 86) {
                assert_double_bits_eq(v[k], (w[3] & 1u) ? -0.0 : 0.0);
                checked++;
            }
        }
        assert_true(checked > N / 2);
    }
    free(v);
}

static void test_errors(void **state)
{
    (void)state;
    nx_err e = {0};
    double v[4];
    nx_dist_spec d;
    nx_dist_spec_init(&d, NX_DIST_UNIFORM);
    d.lo = 1;
    d.hi = 1;
    assert_int_equal(nx_philox_fill(1, 1, &d, NX_FP32, 0, 4, v, 1, &e), NX_EINVAL);
    assert_non_null(strstr(e.msg, "empty"));
    nx_dist_spec_init(&d, NX_DIST_NORMAL);
    assert_int_equal(nx_philox_fill(1, 1, &d, NX_E8M0, 0, 4, v, 1, &e), NX_EINVAL);
    assert_non_null(strstr(e.msg, "e8m0"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kat),          cmocka_unit_test(test_block_layout),
        cmocka_unit_test(test_helpers),      cmocka_unit_test(test_purity),
        cmocka_unit_test(test_normal_functions), cmocka_unit_test(test_normal_definition),
        cmocka_unit_test(test_normal_moments),
        cmocka_unit_test(test_uniform),      cmocka_unit_test(test_int),
        cmocka_unit_test(test_adversarial),  cmocka_unit_test(test_definitions),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
