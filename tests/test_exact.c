/* test_exact.c: the exact engine (nx_exact) against GMP.
 *
 * Sums and dot products of random values of every input format (decoded
 * from bit patterns by the independent oracle, tests/oracle), summed as
 * mpq_t; the superaccumulator's result rounded to every format in every
 * mode (and saturate) must equal orc_round_bits of the mpq sum, and its
 * MPFR export must equal the mpq sum exactly.  Lengths from 0 to 5000 (the
 * block cascade, its second and later passes, and the digit path), values
 * from one scale to the whole exponent range, cancellations, zeros of both
 * signs, and fp64 products that underflow or overflow binary64.  The zero
 * sign of an exact zero sum is IEEE's for sums: -0 if every term is -0, and
 * in rd if some term is not +0; else +0.
 *
 * PARITY_SEED overrides the seed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <gmp.h>
#include <math.h>
#include <mpfr.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nx_exact.h"
#include "nx_mp.h"
#include "oracle/oracle.h"
#include "testutil.h"

static const char *const fmt_names[NX_NFORMATS] = {"fp64", "fp32", "tf32", "fp16", "bf16", "e5m2",
                                                   "e4m3", "e3m2", "e2m3", "e2m1", "e8m0", "e8m13"};
static const char *const mode_names[NX_NMODES] = {"rne", "rna", "rz", "ru", "rd"};

/* Input formats of the exact engine: the patterns are drawn in these. */
static const nx_fmt in_fmts[] = {NX_FP64, NX_FP32, NX_TF32, NX_FP16, NX_BF16, NX_E5M2, NX_E4M3};

static int storage_bits(nx_fmt f) { return nx_format(f)->storage_bits; }

/* A random finite pattern of f near 2^scale (wide formats), or any finite
 * pattern; zeros of both signs now and then. */
static uint64_t rand_pattern(nx_fmt f, uint64_t *st, int scale, int wide)
{
    int sb = storage_bits(f);
    uint64_t sign = 1ull << (sb - 1);
    for (;;) {
        uint64_t r = tu_rand64(st);
        if (r % 40 == 0)
            return (r >> 8) & 1 ? sign : 0;
        uint64_t bits;
        if ((f == NX_FP64 || f == NX_FP32 || f == NX_TF32) && !wide) {
            double v = ldexp(1.0 + (double)(tu_rand64(st) >> 11) * 0x1p-53, scale + (int)(r % 13) - 6);
            if ((r >> 9) & 1)
                v = -v;
            if (f == NX_FP64) {
                bits = tu_dbits(v);
            } else {
                float fv = (float)v;
                uint32_t b32;
                memcpy(&b32, &fv, 4);
                bits = b32;
            }
        } else {
            bits = tu_rand64(st) & (sb == 64 ? ~0ull : (1ull << sb) - 1);
        }
        if (f == NX_TF32)
            bits &= ~0x1fffull; /* tf32: the fp32 layout with 13 low bits zero */
        int valid;
        double d = nx_decode(f == NX_TF32 ? NX_FP32 : f, bits, &valid);
        if (isfinite(d))
            return bits;
    }
}

typedef struct exact_case {
    size_t n;
    int dot;
    nx_fmt fa, fb;
    uint64_t *pa, *pb;
    double *a, *b;
} exact_case;

/* The mpq sum of the case, and the zero-sign flags. */
static void mpq_sum(const exact_case *c, mpq_t sum, int *all_neg0, int *some_not_pos0)
{
    mpq_t x, y;
    mpq_inits(x, y, NULL);
    mpq_set_ui(sum, 0, 1);
    *all_neg0 = c->n > 0;
    *some_not_pos0 = 0;
    for (size_t i = 0; i < c->n; i++) {
        int nz_a = 0, nz_b = 0;
        assert_int_equal(orc_decode(fmt_names[c->fa], c->pa[i], x, &nz_a), 0);
        double t;
        if (c->dot) {
            assert_int_equal(orc_decode(fmt_names[c->fb], c->pb[i], y, &nz_b), 0);
            mpq_mul(x, x, y);
            t = c->a[i] * c->b[i]; /* only its sign and zeroness are used */
        } else {
            t = c->a[i];
        }
        mpq_add(sum, sum, x);
        uint64_t tb = tu_dbits(t);
        if (tb != 0x8000000000000000ull)
            *all_neg0 = 0;
        if (tb != 0)
            *some_not_pos0 = 1;
    }
    mpq_clears(x, y, NULL);
}

static void check_case(const exact_case *c, nx_xacc *acc, uint64_t seed, long it, long *bad)
{
    mpq_t sum, q;
    mpq_inits(sum, q, NULL);
    int all_neg0, not_pos0;
    mpq_sum(c, sum, &all_neg0, &not_pos0);
    mpfr_t e;
    mpfr_init2(e, 2);
    nx_xacc_get_mpfr(acc, e);
    mpfr_get_q(q, e);
    if (!mpq_equal(q, sum)) {
        print_error("seed %llu it %ld: MPFR export differs from the mpq sum (n=%zu %s %s%s%s)\n",
                    (unsigned long long)seed, it, c->n, c->dot ? "dot" : "sum", fmt_names[c->fa],
                    c->dot ? "·" : "", c->dot ? fmt_names[c->fb] : "");
        (*bad)++;
    }
    mpfr_clear(e);
    for (int f = 0; f < NX_NFORMATS && *bad < 5; f++) {
        for (int m = 0; m < NX_NMODES; m++) {
            for (int sat = 0; sat < 2; sat++) {
                int zneg = mpq_sgn(sum) == 0 && (all_neg0 || (m == NX_RD && not_pos0));
                uint64_t want = 0, got = 0;
                int orc = orc_round_bits(fmt_names[f], mode_names[m], sat, sum, zneg ? -1 : 1, &want);
                double v = nx_xacc_round(acc, (nx_fmt)f, (nx_mode)m, sat);
                int erc = nx_encode((nx_fmt)f, v, &got, NULL) != NX_OK;
                if ((orc != 0) == erc && (orc != 0 || got == want))
                    continue;
                print_error("seed %llu it %ld: n=%zu %s of %s%s%s to %s %s sat=%d: got %a (0x%llx%s), "
                            "oracle 0x%llx%s\n",
                            (unsigned long long)seed, it, c->n, c->dot ? "dot" : "sum", fmt_names[c->fa],
                            c->dot ? "·" : "", c->dot ? fmt_names[c->fb] : "", fmt_names[f], mode_names[m], sat,
                            v, (unsigned long long)got, erc ? " none" : "", (unsigned long long)want,
                            orc ? " none" : "");
                (*bad)++;
            }
        }
    }
    mpq_clears(sum, q, NULL);
}

static void test_random_sums(void **state)
{
    (void)state;
    uint64_t seed = tu_seed(0xe8ac7), st = seed;
    long bad = 0;
    size_t cap = 5000;
    exact_case c;
    c.pa = malloc(cap * sizeof *c.pa);
    c.pb = malloc(cap * sizeof *c.pb);
    c.a = malloc(cap * sizeof *c.a);
    c.b = malloc(cap * sizeof *c.b);
    float *fa = malloc(cap * sizeof *fa), *fb = malloc(cap * sizeof *fb);
    assert_true(c.pa && c.pb && c.a && c.b && fa && fb);
    nx_xacc acc;
    for (long it = 0; it < 1500 && bad == 0; it++) {
        int r = (int)(tu_rand64(&st) % 8);
        c.n = r == 0 ? (size_t)(tu_rand64(&st) % 4) : r < 6 ? (size_t)(tu_rand64(&st) % 200) : (size_t)(tu_rand64(&st) % cap);
        c.dot = (int)(tu_rand64(&st) % 3) != 0;
        c.fa = in_fmts[tu_rand64(&st) % (sizeof in_fmts / sizeof in_fmts[0])];
        c.fb = tu_rand64(&st) % 3 ? c.fa : in_fmts[tu_rand64(&st) % (sizeof in_fmts / sizeof in_fmts[0])];
        int wide = (int)(tu_rand64(&st) % 4) == 0;
        int scale = tu_rand_range(&st, -60, 60);
        for (size_t i = 0; i < c.n; i++) {
            c.pa[i] = rand_pattern(c.fa, &st, scale, wide);
            c.pb[i] = rand_pattern(c.fb, &st, tu_rand_range(&st, -8, 8), wide);
            if (i > 0 && tu_rand64(&st) % 10 == 0) { /* exact cancellation of an earlier term */
                size_t j = (size_t)(tu_rand64(&st) % i);
                c.pa[i] = c.pa[j] ^ (1ull << (storage_bits(c.fa) - 1));
                c.pb[i] = c.pb[j];
                if (c.fb != c.fa)
                    c.pa[i] = c.pa[j], c.pb[i] = c.pb[j] ^ (1ull << (storage_bits(c.fb) - 1));
            }
            c.a[i] = nx_decode(c.fa == NX_TF32 ? NX_FP32 : c.fa, c.pa[i], NULL);
            c.b[i] = nx_decode(c.fb == NX_TF32 ? NX_FP32 : c.fb, c.pb[i], NULL);
        }
        int exact_products = c.fa != NX_FP64 && c.fb != NX_FP64;
        nx_xacc_init(&acc);
        int path = (int)(tu_rand64(&st) % 3);
        if (path == 2 && c.fa != NX_FP64 && (!c.dot || c.fb != NX_FP64)) {
            /* the float-input entry points */
            for (size_t i = 0; i < c.n; i++) {
                fa[i] = (float)c.a[i];
                fb[i] = (float)c.b[i];
            }
            if (c.dot)
                nx_xacc_add_dot_f32(&acc, fa, fb, c.n);
            else
                nx_xacc_add_sum_f32(&acc, fa, c.n);
        } else if (path == 1) {
            /* one term at a time, through the digits */
            for (size_t i = 0; i < c.n; i++) {
                if (c.dot)
                    nx_xacc_add_prod(&acc, c.a[i], c.b[i]);
                else
                    nx_xacc_add(&acc, c.a[i]);
            }
        } else if (c.dot) {
            nx_xacc_add_dot(&acc, c.a, c.b, c.n, exact_products);
        } else {
            nx_xacc_add_sum(&acc, c.a, c.n);
        }
        check_case(&c, &acc, seed, it, &bad);
    }
    free(c.pa);
    free(c.pb);
    free(c.a);
    free(c.b);
    free(fa);
    free(fb);
    assert_int_equal(bad, 0);
}

/* fp64 products beyond TwoProd's range, and sums beyond binary64's. */
static void test_extremes(void **state)
{
    (void)state;
    nx_xacc acc;
    mpfr_t e, w;
    mpfr_inits2(4400, e, w, (mpfr_ptr)0);
    struct { double a, b; } cases[] = {
        {0x1p-1074, 0x1p-1074}, {0x1.fffffffffffffp+1023, 0x1.fffffffffffffp+1023},
        {-0x1.23456789abcdep-600, 0x1.fedcba9876543p-500}, {0x1.0000000000001p+600, 0x1.fffffffffffffp+500},
        {0x1p-1074, 3.0}, {0x1.8p-1022, -0x1.8p-60},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        nx_xacc_init(&acc);
        nx_xacc_add_prod(&acc, cases[i].a, cases[i].b);
        nx_xacc_get_mpfr(&acc, e);
        mpfr_set_d(w, cases[i].a, MPFR_RNDN);
        mpfr_mul_d(w, w, cases[i].b, MPFR_RNDN); /* exact at 4400 bits */
        assert_int_equal(mpfr_cmp(e, w), 0);
        for (int m = 0; m < NX_NMODES; m++) {
            nx_mp mp;
            nx_mp_init(&mp);
            for (int f = 0; f < NX_NFORMATS; f++)
                assert_double_bits_eq(nx_xacc_round(&acc, (nx_fmt)f, (nx_mode)m, 0),
                                      nx_mp_round(&mp, w, (nx_fmt)f, (nx_mode)m, 0));
            nx_mp_clear(&mp);
        }
    }
    /* max double, 2^20 times: 2^1044, beyond binary64; then cancelled */
    nx_xacc_init(&acc);
    for (int i = 0; i < (1 << 20); i++)
        nx_xacc_add(&acc, 0x1.fffffffffffffp+1023);
    assert_int_equal(nx_xacc_sign(&acc), 1);
    assert_double_bits_eq(nx_xacc_round(&acc, NX_FP64, NX_RZ, 0), 0x1.fffffffffffffp+1023);
    assert_double_bits_eq(nx_xacc_round(&acc, NX_FP64, NX_RNE, 0), INFINITY);
    nx_xacc tmp;
    nx_xacc_init(&tmp);
    for (int i = 0; i < (1 << 20) - 1; i++)
        nx_xacc_add(&tmp, 0x1.fffffffffffffp+1023);
    nx_xacc_sub_acc(&acc, &tmp);
    assert_double_bits_eq(nx_xacc_round(&acc, NX_FP64, NX_RNE, 0), 0x1.fffffffffffffp+1023);
    /* specials */
    nx_xacc_init(&acc);
    nx_xacc_add(&acc, INFINITY);
    nx_xacc_add(&acc, 1.0);
    assert_double_bits_eq(nx_xacc_round(&acc, NX_BF16, NX_RNE, 0), INFINITY);
    assert_double_bits_eq(nx_xacc_round(&acc, NX_E4M3, NX_RNE, 0), NAN);
    assert_double_bits_eq(nx_xacc_round(&acc, NX_E4M3, NX_RNE, 1), 448.0);
    nx_xacc_add(&acc, -INFINITY);
    assert_double_bits_eq(nx_xacc_round(&acc, NX_FP32, NX_RNE, 0), NAN);
    /* zero signs */
    nx_xacc_init(&acc);
    assert_double_bits_eq(nx_xacc_round(&acc, NX_FP32, NX_RD, 0), 0.0); /* the empty sum */
    nx_xacc_add(&acc, -0.0);
    assert_double_bits_eq(nx_xacc_round(&acc, NX_FP32, NX_RNE, 0), -0.0);
    nx_xacc_add(&acc, 1.5);
    nx_xacc_add(&acc, -1.5);
    assert_double_bits_eq(nx_xacc_round(&acc, NX_FP32, NX_RNE, 0), 0.0);
    assert_double_bits_eq(nx_xacc_round(&acc, NX_FP32, NX_RD, 0), -0.0);
    mpfr_clears(e, w, (mpfr_ptr)0);
}

/* A check that cannot fail proves nothing: one ulp of difference is seen. */
static void test_negative_control(void **state)
{
    (void)state;
    nx_xacc acc;
    nx_xacc_init(&acc);
    nx_xacc_add(&acc, 1.0);
    nx_xacc_add(&acc, 0x1p-60);
    mpq_t s;
    mpq_init(s);
    mpq_set_ui(s, 1, 1);
    uint64_t want, got;
    assert_int_equal(orc_round_bits("fp64", "ru", 0, s, 1, &want), 0);
    assert_int_equal(nx_encode(NX_FP64, nx_xacc_round(&acc, NX_FP64, NX_RU, 0), &got, NULL), NX_OK);
    assert_true(got != want); /* 1 + 2^-60 rounds up; 1 does not */
    mpq_clear(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_negative_control),
        cmocka_unit_test(test_extremes),
        cmocka_unit_test(test_random_sums),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
