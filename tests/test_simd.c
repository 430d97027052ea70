/* test_simd.c: the fast engine's vector path (nx_simd.h) against MPFR.
 *
 *  - hand-worked rows whose bits are known (ties to even in a chain, a sum
 *    of negative zeros, subnormals that a flush to zero would lose, an
 *    fma's single rounding, inf - inf), on every variant;
 *  - random points the vector path takes (fp32/fp64 rne accumulators,
 *    every tree construct without atoms, fused or not, product rounded to
 *    the accumulator or exact, any `out`, a start value c) over random
 *    rows in fp32, bf16, fp16 and fp64 storage with NaN, inf, subnormals,
 *    signed zeros and exact cancellations, 1 to 41 rows (never only whole
 *    vectors): the rows as stored (nx_fast_reduce_raw) and decoded
 *    (nx_fast_reduce), each variant forced with PARITY_SIMD, 1 and 2
 *    threads, against nx_mpfr_reduce bit for bit;
 *  - the path is really taken (eligibility and *done checked), and points
 *    it must not take (rd, an atom, bf16 accumulators) are refused.
 * PARITY_SEED overrides the seed, PARITY_CASES the number of points. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nx_engine.h"
#include "nx_simd.h"
#include "point_toml.h"
#include "randpoint.h"
#include "testutil.h"

static const char *const isas[] = {"scalar", "avx2", "avx512"};

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : dflt;
}

static nx_program *build(const char *toml, size_t n, int dot, int start)
{
    nx_point pt;
    nx_err err = {0};
    if (pt_from_text(toml, "point", &pt, &err)) {
        fprintf(stderr, "point %s: %s\n", toml, err.msg);
        fail();
    }
    nx_program *p = NULL;
    if (nx_program_build_ex(&pt, n, dot, start, &p, &err)) {
        fprintf(stderr, "point %s: %s\n", toml, err.msg);
        fail();
    }
    nx_point_free(&pt);
    return p;
}

static nx_simd_store store_of(nx_fmt f)
{
    return f == NX_FP64 ? NX_ST_F64 : f == NX_FP32 ? NX_ST_F32 : f == NX_BF16 ? NX_ST_BF16 : NX_ST_F16;
}

static size_t width(nx_fmt f)
{
    return f == NX_FP64 ? 8 : f == NX_FP32 ? 4 : 2;
}

/* One input: patterns, their bytes as stored, their exact values. */
typedef struct tens {
    nx_fmt f;
    size_t count;
    uint8_t *raw;
    double *val;
} tens;

static void tens_make(tens *t, nx_fmt f, const uint64_t *bits, size_t count)
{
    t->f = f;
    t->count = count;
    t->raw = malloc(count * width(f) + 1);
    t->val = malloc((count + 1) * sizeof *t->val);
    assert_non_null(t->raw);
    assert_non_null(t->val);
    for (size_t i = 0; i < count; i++) {
        memcpy(t->raw + i * width(f), &bits[i], width(f)); /* little-endian host */
        t->val[i] = nx_decode(f, bits[i], NULL);
    }
}

static void tens_free(tens *t)
{
    free(t->raw);
    free(t->val);
}

/* Same out-format pattern (or both NaN, or the same double without one). */
static int same(nx_fmt out, double x, double y)
{
    uint64_t bx = 0, by = 0;
    int ex = nx_encode(out, x, &bx, NULL) == NX_OK, ey = nx_encode(out, y, &by, NULL) == NX_OK;
    if (ex != ey)
        return 0;
    if (ex)
        return bx == by;
    return (isnan(x) && isnan(y)) || memcmp(&x, &y, sizeof x) == 0;
}

/* Every vector variant and thread count against MPFR on rows of a (and b,
 * c).  Returns the number of differing rows. */
static long check_all(const char *toml, const nx_program *p, const tens *a, const tens *b, const tens *c,
                      size_t rows)
{
    size_t n = p->n;
    nx_rows in = {.rows = rows, .a_fmt = a->f, .a = a->val, .b_fmt = b ? b->f : NX_FP64,
                  .b = b ? b->val : NULL, .c_fmt = c ? c->f : NX_FP64, .c = c ? c->val : NULL};
    double *ym = malloc((rows + 1) * sizeof *ym), *y = malloc((rows + 1) * sizeof *y);
    assert_non_null(ym);
    assert_non_null(y);
    nx_err err = {0};
    assert_int_equal(nx_mpfr_reduce(p, &in, ym, 1, &err), NX_OK);
    assert_true(nx_simd_eligible(p, a->f, b ? b->f : a->f, c ? c->f : NX_FP32));
    nx_simd_rows sr = {.rows = rows,
                       .a = {a->raw, store_of(a->f), a->f, n},
                       .b = {b ? b->raw : NULL, b ? store_of(b->f) : NX_ST_F64, b ? b->f : NX_FP64, n},
                       .c = {c ? c->raw : NULL, c ? store_of(c->f) : NX_ST_F64, c ? c->f : NX_FP64, 1}};
    long bad = 0;
    for (int v = 0; v < 3; v++) {
        setenv("PARITY_SIMD", isas[v], 1);
        for (int th = 1; th <= 2; th++) {
            for (int decoded = 0; decoded < 2; decoded++) {
                for (size_t r = 0; r < rows; r++)
                    y[r] = -12345.0;
                if (decoded) {
                    assert_int_equal(nx_fast_reduce(p, &in, y, th, &err), NX_OK);
                } else {
                    int done = 0;
                    assert_int_equal(nx_fast_reduce_raw(p, &sr, y, th, &done, &err), NX_OK);
                    assert_int_equal(done, 1);
                }
                for (size_t r = 0; r < rows; r++)
                    if (!same(p->out, ym[r], y[r]) && bad++ < 5)
                        fprintf(stderr, "MISMATCH %s (%s, %d threads, %s) row %zu of %zu, n = %zu: mpfr %a, simd %a\n",
                                toml, isas[v], th, decoded ? "decoded" : "as stored", r, rows, n, ym[r], y[r]);
            }
        }
    }
    unsetenv("PARITY_SIMD");
    free(ym);
    free(y);
    return bad;
}

/* Hand-worked rows: the expected patterns are worked out in the comments,
 * not computed here. */
static void hand_case(const char *toml, nx_fmt f, int dot, const uint64_t *abits, const uint64_t *bbits, size_t n,
                      uint64_t want)
{
    nx_program *p = build(toml, n, dot, 0);
    tens a, b;
    tens_make(&a, f, abits, n);
    if (dot)
        tens_make(&b, f, bbits, n);
    nx_simd_rows sr = {.rows = 1, .a = {a.raw, store_of(f), f, n}, .b = {dot ? b.raw : NULL, store_of(f), f, n}};
    for (int v = 0; v < 3; v++) {
        setenv("PARITY_SIMD", isas[v], 1);
        double y = 0;
        int done = 0;
        nx_err err = {0};
        assert_int_equal(nx_fast_reduce_raw(p, &sr, &y, 1, &done, &err), NX_OK);
        assert_int_equal(done, 1);
        uint64_t got = 0;
        assert_int_equal(nx_encode(p->out, y, &got, NULL), NX_OK);
        if (got != want)
            fprintf(stderr, "%s on %s: got 0x%llx, want 0x%llx\n", toml, isas[v], (unsigned long long)got,
                    (unsigned long long)want);
        assert_true(got == want);
    }
    unsetenv("PARITY_SIMD");
    tens_free(&a);
    if (dot)
        tens_free(&b);
    nx_program_free(p);
}

static void test_hand(void **state)
{
    (void)state;
    /* 1 + 2^-24 is a tie in fp32 and stays 1 (even), three times: 1 = 0x3f800000 */
    const uint64_t tie[4] = {0x3f800000, 0x33800000, 0x33800000, 0x33800000};
    hand_case("{ acc = \"fp32\" }", NX_FP32, 0, tie, NULL, 4, 0x3f800000);
    /* pairwise: (1 + 2^-24) -> 1, (2^-24 + 2^-24) = 2^-23, 1 + 2^-23 exact: 0x3f800001 */
    hand_case("{ acc = \"fp32\", tree = \"pairwise\" }", NX_FP32, 0, tie, NULL, 4, 0x3f800001);
    /* -0 + -0 = -0 (pairwise); seq starts from +0 and +0 + -0 = +0 */
    const uint64_t nz[2] = {0x80000000, 0x80000000};
    hand_case("{ acc = \"fp32\", tree = \"pairwise\" }", NX_FP32, 0, nz, NULL, 2, 0x80000000);
    hand_case("{ acc = \"fp32\" }", NX_FP32, 0, nz, NULL, 2, 0x00000000);
    /* subnormals: 2^-149 + 2^-149 = 2^-148 (a flush to zero gives 0) */
    const uint64_t sub[2] = {0x00000001, 0x00000001};
    hand_case("{ acc = \"fp32\", tree = \"pairwise\" }", NX_FP32, 0, sub, NULL, 2, 0x00000002);
    /* bf16 storage: 2^-133 (0x0001, the least bf16 subnormal) twice */
    const uint64_t bsub[2] = {0x0001, 0x0001};
    hand_case("{ acc = \"fp32\", tree = \"pairwise\" }", NX_BF16, 0, bsub, NULL, 2, 0x00020000);
    /* fp16 storage: 2^-24 (0x0001) + 1 (0x3c00) in fp32 = 1 + 2^-24: a tie, stays 1 */
    const uint64_t hsum[2] = {0x3c00, 0x0001};
    hand_case("{ acc = \"fp32\", tree = \"pairwise\" }", NX_FP16, 0, hsum, NULL, 2, 0x3f800000);
    /* fma: (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24, fused with -1: 2^-11 + 2^-24 exactly
     * = 2^-11 (1 + 2^-13): exponent 116 (0x3a000000), significand bit 10 (0x400): 0x3a000400;
     * unfused the product rounds to 1 + 2^-11 (a tie to even) and the sum is 2^-11 = 0x3a000000.
     * Row: t0 = 1 * -1 (exact: -1), t1 = (1 + 2^-12)^2. */
    const uint64_t fa[2] = {0x3f800000, 0x3f800800}, fb[2] = {0xbf800000, 0x3f800800};
    hand_case("{ acc = \"fp32\" }", NX_FP32, 1, fa, fb, 2, 0x3a000400);
    hand_case("{ acc = \"fp32\", fma = false }", NX_FP32, 1, fa, fb, 2, 0x3a000000);
    /* inf + -inf = NaN (canonical fp32 NaN 0x7fc00000 when written) */
    const uint64_t inf2[2] = {0x7f800000, 0xff800000};
    hand_case("{ acc = \"fp32\", tree = \"pairwise\" }", NX_FP32, 0, inf2, NULL, 2, 0x7fc00000);
    /* fp64 lanes: 1 + 2^-53 ties to 1; pairwise with 2^-53 + 2^-53 gives 1 + 2^-52 */
    const uint64_t dtie[4] = {0x3ff0000000000000ull, 0x3ca0000000000000ull, 0x3ca0000000000000ull,
                              0x3ca0000000000000ull};
    hand_case("{ acc = \"fp64\" }", NX_FP64, 0, dtie, NULL, 4, 0x3ff0000000000000ull);
    hand_case("{ acc = \"fp64\", tree = \"pairwise\" }", NX_FP64, 0, dtie, NULL, 4, 0x3ff0000000000001ull);
}

/* Points the vector path must refuse: a mode other than rne, an atom, an
 * accumulator narrower than fp32, an fp64 tensor under fp32 lanes. */
static void test_refused(void **state)
{
    (void)state;
    const char *pts[] = {"{ acc = \"fp32\", rounding = \"rd\" }", "{ acc = \"bf16\" }",
                         "{ acc = \"fp32\", tree = \"chain(16)\", atom = { frac_bits = 25 } }",
                         "{ acc = \"fp32\", product = \"bf16\" }", "{ acc = \"fp32\", in = \"bf16\" }"};
    for (size_t i = 0; i < sizeof pts / sizeof *pts; i++) {
        nx_program *p = build(pts[i], 64, 1, 0);
        if (nx_simd_eligible(p, NX_FP32, NX_FP32, NX_FP32))
            fprintf(stderr, "taken: %s\n", pts[i]);
        assert_false(nx_simd_eligible(p, NX_FP32, NX_FP32, NX_FP32));
        nx_program_free(p);
    }
    nx_program *p = build("{ acc = \"fp32\" }", 64, 1, 0);
    assert_true(nx_simd_eligible(p, NX_FP32, NX_BF16, NX_FP32));
    assert_false(nx_simd_eligible(p, NX_FP64, NX_FP32, NX_FP32));
    nx_program_free(p);
}

static const char *const trees[] = {"seq",
                                    "pairwise",
                                    "halving",
                                    "reverse(seq)",
                                    "split(4, seq, pairwise)",
                                    "split(3, pairwise, seq)",
                                    "stride(8, seq, halving, block=2)",
                                    "stride(32, seq, halving, block=8)",
                                    "tile(16, seq, seq)"};

static void test_random(void **state)
{
    (void)state;
    long cases = env_long("PARITY_CASES", 150);
    uint64_t seed = (uint64_t)env_long("PARITY_SEED", 5);
    rp_seed(seed);
    const char *fname[] = {"fp32", "bf16", "fp16", "fp64"};
    const nx_fmt fmts[] = {NX_FP32, NX_BF16, NX_FP16, NX_FP64};
    const char *outs[] = {"", ", out = \"bf16\"", ", out = \"fp16\", out_rounding = \"rz\"", ", out = \"e4m3\""};
    long bad = 0;
    for (long idx = 0; idx < cases && !bad; idx++) {
        int acc64 = rp_below(3) == 0, dot = rp_below(3) != 0, start = rp_below(4) == 0;
        int fa = rp_below(acc64 ? 4 : 3), fb = rp_below(acc64 ? 4 : 3), fc = rp_below(acc64 ? 4 : 3);
        size_t n = (size_t)rp_below(5) == 0 ? (size_t)rp_below(4) : (size_t)rp_below(300);
        size_t rows = 1 + (size_t)rp_below(41);
        int fused = rp_below(2), prod = dot && !fused && rp_below(2);
        char toml[512];
        snprintf(toml, sizeof toml, "{ acc = \"%s\", tree = \"%s\"%s%s%s }", acc64 ? "fp64" : "fp32",
                 trees[rp_below((int)(sizeof trees / sizeof *trees))], fused ? "" : ", fma = false",
                 prod ? (acc64 ? ", product = \"fp64\"" : ", product = \"fp32\"") : "", outs[rp_below(4)]);
        nx_program *p = build(toml, n, dot, start);
        size_t cnt = rows * n;
        uint64_t *ab = malloc((cnt + 1) * sizeof *ab), *bb = malloc((cnt + 1) * sizeof *bb),
                 *cb = malloc(rows * sizeof *cb);
        assert_non_null(ab);
        assert_non_null(bb);
        assert_non_null(cb);
        for (size_t r = 0; r < rows; r++) {
            int scale = rp_below(40) - 20;
            for (size_t i = 0; i < n; i++) {
                ab[r * n + i] = rp_gen_bits(fname[fa], ab + r * n, i, scale);
                bb[r * n + i] = rp_gen_bits(fname[fb], bb + r * n, i, scale);
            }
            cb[r] = rp_gen_c_bits(fname[fc], scale);
        }
        tens a, b, c;
        tens_make(&a, fmts[fa], ab, cnt);
        tens_make(&b, fmts[fb], bb, cnt);
        tens_make(&c, fmts[fc], cb, rows);
        bad += check_all(toml, p, &a, dot ? &b : NULL, start ? &c : NULL, rows);
        tens_free(&a);
        tens_free(&b);
        tens_free(&c);
        free(ab);
        free(bb);
        free(cb);
        nx_program_free(p);
    }
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
