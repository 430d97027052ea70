/* test_fast.c: the fast engine against the MPFR engine, bit for bit.
 *
 *  - nx_round_fast against nx_mp_round on random doubles, double-doubles and
 *    normalised triples, every format, mode and saturate; nx_rf_cut against
 *    nx_mp_round_quantum;
 *  - random points x inputs (randpoint.c: every format, tree construct,
 *    mode, atom, in/product/out conversion, specials), 1 to 19 rows each so
 *    full and partial blocks of 8 rows are both exercised;
 *  - the benchmark's points and every atom preset on longer rows, where the
 *    hot paths (runs, fixed-point atoms, hardware fmaf) are taken;
 *  - atoms too wide for 64 bits: every row goes to MPFR, same bits;
 *  - negative controls: a comparison that must fail does.
 * The fast engine may hand a row to MPFR; the test also checks that it does
 * so rarely, so agreement is not bought by never running the fast code.
 *
 * PARITY_SEED overrides the seed, PARITY_CASES the number of random points
 * (the 'long' CTest label runs a million). */
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
#include "nx_mp.h"
#include "nx_round_fast.h"
#include "point_toml.h"
#include "randpoint.h"
#include "testutil.h"

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : dflt;
}

/* ---------------------------------------------------------------------- */
/* Rounding. */

static double rand_double(uint64_t *st)
{
    uint64_t u = tu_rand64(st);
    switch (u % 5) {
    case 0: return tu_bdouble(tu_rand64(st)); /* any pattern: NaN, inf, subnormal */
    case 1: return ldexp((double)(tu_rand64(st) >> 11), tu_rand_range(st, -1180, 1000));
    default: {
        double v = ldexp((double)(tu_rand64(st) >> (11 + tu_rand64(st) % 50)), tu_rand_range(st, -220, 200));
        return (u >> 40) & 1 ? -v : v;
    }
    }
}

static void test_round_fast(void **state)
{
    (void)state;
    uint64_t seed = tu_seed(0x0f5a57), st = seed;
    nx_mp mp;
    nx_mp_init(&mp);
    mpfr_t x, q;
    mpfr_init2(x, 400);
    mpfr_init2(q, 64);
    long bad = 0;
    for (long it = 0; it < 400000 && bad < 5; it++) {
        nx_fmt f = (nx_fmt)(tu_rand64(&st) % NX_NFORMATS);
        nx_mode m = (nx_mode)(tu_rand64(&st) % NX_NMODES);
        int sat = tu_rand64(&st) % 4 == 0;
        nx_rfmt rf;
        nx_rfmt_init(&rf, f);
        double v = rand_double(&st), lo = 0, lo2 = 0;
        int kind = (int)(tu_rand64(&st) % 3);
        if (kind && isfinite(v) && fabs(v) > 0x1p-900 && fabs(v) < 0x1p900) {
            int lg = nx_rf_lg(v);
            /* lo: anywhere up to 4 ulp(hi), often exactly half an ulp or a
             * small multiple of the format's half quantum */
            switch (tu_rand64(&st) % 4) {
            case 0: lo = ldexp(1.0, lg - 53); break;
            case 1: lo = ldexp((double)(tu_rand64(&st) % 64), lg - 56); break;
            default: lo = ldexp((double)(tu_rand64(&st) >> 11), lg - 53 - 53 - (int)(tu_rand64(&st) % 80)); break;
            }
            if (tu_rand64(&st) & 1)
                lo = -lo;
            if (kind == 2 && lo != 0) {
                lo2 = ldexp((double)(tu_rand64(&st) >> 12), nx_rf_lg(lo) - 53 - 52 - (int)(tu_rand64(&st) % 20));
                if (tu_rand64(&st) & 1)
                    lo2 = -lo2;
            }
        }
        double got, want;
        if (lo == 0) {
            got = nx_rf_round(v, &rf, m, sat);
            want = nx_mp_round_d(&mp, v, f, m, sat);
        } else {
            got = kind == 2 ? nx_rf_round_ddd(v, lo, lo2, &rf, m, sat) : nx_rf_round_dd(v, lo, &rf, m, sat);
            mpfr_set_d(x, v, MPFR_RNDN);
            mpfr_add_d(x, x, lo, MPFR_RNDN); /* exact at 400 bits */
            mpfr_add_d(x, x, lo2, MPFR_RNDN);
            want = nx_mp_round(&mp, x, f, m, sat);
        }
        if (!tu_same_double(got, want)) {
            char ctx[256];
            snprintf(ctx, sizeof ctx, "seed %llu it %ld: %s %s sat=%d of %a + %a + %a",
                     (unsigned long long)seed, it, nx_format(f)->name, nx_mode_name(m), sat, v, lo, lo2);
            tu_print_double_mismatch(ctx, got, want);
            bad++;
        }
        /* the atom cut: a quantum around the value's bits */
        if (isfinite(v) && v != 0 && fabs(v) > 0x1p-900 && fabs(v) < 0x1p900) {
            int qq = nx_rf_lg(v) - (int)(tu_rand64(&st) % 60);
            int64_t c = nx_rf_cut(v, lo, qq, m);
            mpfr_set_d(x, v, MPFR_RNDN);
            mpfr_add_d(x, x, lo, MPFR_RNDN);
            nx_mp_round_quantum(q, x, qq, m);
            mpfr_div_2si(q, q, qq, MPFR_RNDN);
            if (mpfr_cmp_si(q, (long)c) != 0) {
                print_error("seed %llu it %ld: cut of %a + %a at 2^%d (%s): got %lld\n",
                            (unsigned long long)seed, it, v, lo, qq, nx_mode_name(m), (long long)c);
                bad++;
            }
        }
    }
    /* fp32, bf16 and fp16 in rne take direct paths (IEEE's conversion, the
     * double's bits): across each format's whole range and its edges, with
     * short mantissas (ties) and long ones, against MPFR */
    static const nx_fmt direct[] = {NX_FP32, NX_BF16, NX_FP16};
    for (size_t d = 0; d < 3 && bad < 5; d++) {
        nx_rfmt rf;
        nx_rfmt_init(&rf, direct[d]);
        int emax = (int)floor(log2(rf.maxf));
        for (long it = 0; it < 100000 && bad < 5; it++) {
            int bitsn = 1 + (int)(tu_rand64(&st) % 53);
            double mant = (double)((tu_rand64(&st) >> (64 - bitsn)) | (1ull << (bitsn - 1)));
            double v = ldexp(mant, tu_rand_range(&st, rf.emin - rf.p - 3, emax + 2) - (bitsn - 1));
            if (tu_rand64(&st) & 1)
                v = -v;
            double got = nx_rf_round(v, &rf, NX_RNE, 0), want = nx_mp_round_d(&mp, v, direct[d], NX_RNE, 0);
            if (!tu_same_double(got, want)) {
                char ctx[128];
                snprintf(ctx, sizeof ctx, "seed %llu: %s rne of %a", (unsigned long long)seed,
                         nx_format(direct[d])->name, v);
                tu_print_double_mismatch(ctx, got, want);
                bad++;
            }
        }
    }
    mpfr_clear(x);
    mpfr_clear(q);
    nx_mp_clear(&mp);
    assert_int_equal(bad, 0);
}

/* ---------------------------------------------------------------------- */
/* Engines. */

/* Encodes an engine result in the out format; -1 if it has no encoding. */
static int enc(nx_fmt f, double v, uint64_t *bits)
{
    return nx_encode(f, v, bits, NULL) == NX_OK ? 0 : -1;
}

typedef struct cmp_stats {
    long rows, mismatches, mpfr_rows;
} cmp_stats;

/* Runs both engines over rows x n inputs; reports each differing row. */
/* The comparison every test here rests on: out-format patterns (and the
 * values where a pattern does not exist) of two engines' rows. */
static void count_mismatches(nx_fmt out, const double *ym, const double *yf, size_t rows, cmp_stats *cs,
                             const char *what)
{
    for (size_t r = 0; r < rows; r++) {
        uint64_t bm = 0, bf = 0;
        int em = enc(out, ym[r], &bm), ef = enc(out, yf[r], &bf);
        if (em == ef && bm == bf && (em != 0 || tu_same_double(ym[r], yf[r])))
            continue;
        if (cs->mismatches++ < 5)
            fprintf(stderr, "MISMATCH %s row %zu: mpfr %a (pattern 0x%llx%s), fast %a (pattern 0x%llx%s)\n", what, r,
                    ym[r], (unsigned long long)bm, em ? ", none" : "", yf[r], (unsigned long long)bf,
                    ef ? ", none" : "");
    }
}

static void compare_c(const nx_program *prog, nx_fmt fa, const double *a, nx_fmt fb, const double *b,
                      nx_fmt fc, const double *c, size_t rows, int threads, cmp_stats *cs, const char *what)
{
    double *ym = malloc(rows * sizeof *ym), *yf = malloc(rows * sizeof *yf);
    assert_non_null(ym);
    assert_non_null(yf);
    nx_rows in = {.rows = rows, .a_fmt = fa, .a = a, .b_fmt = fb, .b = b, .c_fmt = fc, .c = c};
    nx_err err = {0};
    size_t redone = 0;
    assert_int_equal(nx_mpfr_reduce(prog, &in, ym, threads, &err), NX_OK);
    assert_int_equal(nx_fast_reduce_ex(prog, &in, yf, threads, &redone, &err), NX_OK);
    cs->rows += (long)rows;
    cs->mpfr_rows += (long)redone;
    count_mismatches(prog->out, ym, yf, rows, cs, what);
    free(ym);
    free(yf);
}

static void compare(const nx_program *prog, nx_fmt fa, const double *a, nx_fmt fb, const double *b,
                    size_t rows, int threads, cmp_stats *cs, const char *what)
{
    compare_c(prog, fa, a, fb, b, NX_FP64, NULL, rows, threads, cs, what);
}

static void random_points(long count, uint64_t seed)
{
    rp_seed(seed);
    cmp_stats cs = {0};
    long cases = 0, cs_with_c = 0;
    for (long idx = 0; idx < count && cs.mismatches == 0; idx++) {
        rp_case c;
        rp_case_make(&c);
        nx_err err = {0};
        nx_point pt;
        if (pt_from_text(c.toml, "point", &pt, &err)) {
            rp_case_dump(&c, seed, idx, err.msg);
            fail();
        }
        nx_program *prog;
        if (nx_program_build_ex(&pt, c.n, c.dot, c.has_c, &prog, &err)) {
            rp_case_dump(&c, seed, idx, err.msg);
            fail();
        }
        /* more rows: the case's row first, then fresh rows of the same kind */
        size_t rows = 1 + (size_t)rp_below(rp_below(4) == 0 ? 19 : 3);
        size_t n = c.n;
        double *a = malloc((rows * n + 1) * sizeof *a), *b = malloc((rows * n + 1) * sizeof *b);
        assert_non_null(a);
        assert_non_null(b);
        nx_fmt fa = (nx_fmt)nx_fmt_from_name(c.in_fmt), fb = (nx_fmt)nx_fmt_from_name(c.b_fmt);
        nx_fmt fc = c.has_c ? (nx_fmt)nx_fmt_from_name(c.c_fmt) : NX_FP64;
        double *cv = malloc(rows * sizeof *cv);
        assert_non_null(cv);
        for (size_t r = 0; r < rows && c.has_c; r++) /* the case's c first, then fresh ones */
            cv[r] = nx_decode(fc, r == 0 ? c.c : rp_gen_c_bits(c.c_fmt, c.c_scale), NULL);
        int scale = rp_below(40) - 20;
        for (size_t r = 0; r < rows; r++) {
            uint64_t ab[RP_MAX_N], bb[RP_MAX_N];
            for (size_t i = 0; i < n; i++) {
                ab[i] = r == 0 ? c.a[i] : rp_gen_bits(c.in_fmt, ab, i, scale);
                bb[i] = r == 0 ? c.b[i] : rp_gen_bits(c.b_fmt, bb, i, rp_below(10) - 5);
                a[r * n + i] = nx_decode(fa, ab[i], NULL);
                b[r * n + i] = nx_decode(fb, bb[i], NULL);
            }
        }
        long before = cs.mismatches;
        compare_c(prog, fa, a, fb, c.dot ? b : NULL, fc, c.has_c ? cv : NULL, rows, 1, &cs, "random point");
        cs_with_c += c.has_c ? (long)rows : 0;
        if (cs.mismatches != before) {
            char why[64];
            snprintf(why, sizeof why, "fast != mpfr (%zu rows; row 0 is below)", rows);
            rp_case_dump(&c, seed, idx, why);
        }
        cases++;
        free(a);
        free(b);
        free(cv);
        nx_program_free(prog);
        nx_point_free(&pt);
    }
    fprintf(stderr,
            "fast vs mpfr: seed %llu, %ld points, %ld rows (%ld from a start value c), %ld mismatches, %ld rows "
            "handed to MPFR\n",
            (unsigned long long)seed, cases, cs.rows, cs_with_c, cs.mismatches, cs.mpfr_rows);
    assert_true(cs_with_c * 5 > cs.rows); /* c is drawn for about a third of the points */
    assert_int_equal(cs.mismatches, 0);
    /* fp64 products that underflow and atoms wider than 64 bits are rare */
    assert_true(cs.mpfr_rows * 50 < cs.rows);
}

static void test_random_points(void **state)
{
    (void)state;
    random_points(env_long("PARITY_CASES", 20000), tu_seed(20261203));
}

/* The same with the third edition's forms and subtree settings
 * (docs/numerics.md §4.1, §4.2), lanes included (rp_edition 4), tiles
 * carried (rp_edition 5), stored results (rp_edition 7) and heads
 * (rp_edition 8), in the trees. */
static void test_random_points_edition4(void **state)
{
    (void)state;
    rp_edition = 8;
    random_points(env_long("PARITY_CASES", 20000), tu_seed(20261204));
    rp_edition = 2;
}

/* ---------------------------------------------------------------------- */
/* Longer rows through the hot paths. */

/* Random values of format f, roughly normal, with zeros, sometimes wide
 * exponents; patterns decoded, so every value is a member. */
static void fill(nx_fmt f, double *v, size_t count, uint64_t *st, int wide)
{
    for (size_t i = 0; i < count; i++) {
        double x = 0;
        for (int k = 0; k < 4; k++)
            x += (double)(tu_rand64(st) >> 11) * 0x1p-53;
        x = (x - 2) * 1.7;
        if (wide)
            x = ldexp(x, tu_rand_range(st, -30, 30));
        if (tu_rand64(st) % 32 == 0)
            x = tu_rand64(st) & 1 ? -0.0 : 0.0;
        v[i] = nx_round_fast(x, f, NX_RNE, 1);
    }
}

static const char *const shape_points[] = {
    "{ acc = \"fp32\", tree = \"seq\" }",
    "{ acc = \"fp32\", tree = \"split(8, seq, pairwise)\" }",
    "{ acc = \"fp32\", tree = \"stride(32, seq, halving, block=8)\" }",
    "{ acc = \"fp32\", tree = \"chain(16)\", atom = \"sm90.wgmma.bf16\" }",
    "{ acc = \"bf16\", tree = \"seq\" }",
    "{ acc = \"bf16\", tree = \"split(8, seq, pairwise)\" }",
    "{ acc = \"bf16\", tree = \"stride(32, seq, halving, block=8)\" }",
    "{ acc = \"bf16\", tree = \"chain(16)\", atom = { frac_bits = 25, round = \"rz\" } }",
    "{ acc = \"e8m13\", rounding = \"rz\", tree = \"seq\", out = \"fp32\" }",
    "{ acc = \"e8m13\", rounding = \"rz\", tree = \"split(8, seq, pairwise)\", out = \"fp32\" }",
    "{ acc = \"e8m13\", rounding = \"rz\", tree = \"stride(32, seq, halving, block=8)\", out = \"fp32\" }",
    "{ acc = \"fp32\", tree = \"chain(16)\", atom = { frac_bits = 13, term_round = \"rz\", round = \"rz\", acc = \"e8m13\" } }",
    "{ acc = \"fp32\", tree = \"chain(32)\", atom = \"sm90.wgmma.fp8\", out = \"bf16\" }",
    "{ acc = \"fp32\", fma = false, tree = \"seq\" }",
    "{ acc = \"fp32\", product = \"bf16\", tree = \"split(4, seq, seq)\", out = \"bf16\" }",
    "{ acc = \"fp32\", in = \"tf32\", in_rounding = \"rz\", tree = \"chain(8)\", atom = \"sm90.wgmma.tf32\" }",
    "{ acc = \"fp64\", tree = \"seq\", out = \"fp32\" }",
    "{ acc = \"fp64\", rounding = \"rz\", tree = \"pairwise\" }",
    "{ acc = \"fp16\", rounding = \"rna\", tree = \"tile(64, seq, pairwise)\" }",
    "{ acc = \"fp32\", rounding = \"ru\", tree = \"reverse(seq)\" }",
    "{ acc = \"fp32\", rounding = \"rd\", tree = \"split(3, seq@fp64, seq)\" }",
    "{ acc = \"fp32\", tree = \"split(4, chain(4), seq)\", atom = { term_round = \"rne\" } }",
    "{ acc = \"fp32\", tree = \"seq@bf16\", out = \"e4m3\", saturate = true }",
    "{ acc = \"e5m2\", rounding = \"rd\", tree = \"halving\" }",
};

static void test_shapes(void **state)
{
    (void)state;
    uint64_t seed = tu_seed(0x5eed5), st = seed;
    static const nx_fmt in_fmts[] = {NX_FP32, NX_BF16, NX_E4M3, NX_FP64, NX_FP16};
    cmp_stats cs = {0};
    for (size_t pi = 0; pi < sizeof shape_points / sizeof shape_points[0]; pi++) {
        for (size_t fi = 0; fi < sizeof in_fmts / sizeof in_fmts[0]; fi++) {
            for (int dot = 0; dot < 2; dot++) {
                nx_err err = {0};
                nx_point pt;
                assert_int_equal(pt_from_text(shape_points[pi], "point", &pt, &err), NX_OK);
                size_t n = 37 + (size_t)tu_rand_range(&st, 0, 600), rows = 9 + (size_t)tu_rand_range(&st, 0, 12);
                nx_program *prog;
                assert_int_equal(nx_program_build(&pt, n, dot, &prog, &err), NX_OK);
                double *a = malloc(rows * n * sizeof *a), *b = malloc(rows * n * sizeof *b);
                assert_non_null(a);
                assert_non_null(b);
                int wide = (int)(fi + (size_t)dot) % 2;
                fill(in_fmts[fi], a, rows * n, &st, wide);
                fill(in_fmts[fi], b, rows * n, &st, 0);
                char what[256];
                snprintf(what, sizeof what, "%s %s %s n=%zu (seed %llu)", shape_points[pi], nx_format(in_fmts[fi])->name,
                         dot ? "dot" : "sum", n, (unsigned long long)seed);
                long before = cs.mismatches;
                compare(prog, in_fmts[fi], a, in_fmts[fi], dot ? b : NULL, rows, 2, &cs, what);
                if (cs.mismatches != before)
                    fprintf(stderr, "  in %s\n", what);
                free(a);
                free(b);
                nx_program_free(prog);
                nx_point_free(&pt);
            }
        }
    }
    fprintf(stderr, "fast vs mpfr on long rows: %ld rows, %ld mismatches, %ld rows handed to MPFR\n", cs.rows,
            cs.mismatches, cs.mpfr_rows);
    assert_int_equal(cs.mismatches, 0);
    assert_true(cs.mpfr_rows * 100 < cs.rows);
}

/* The fused fp32 runs that the AVX2 clone evaluates with transposed loads
 * (run_fmaf8_avx2: contiguous terms of a full block of 8 rows;
 * group_fmaf8_avx2: the 8 lanes of stride(8)), against MPFR: lane order is
 * visible through a `seq` and a `reverse(seq)` combinator, lengths that
 * are and are not multiples of 4 and 8, row counts that fill blocks and
 * leave a partial one. */
static void test_fused_fp32_blocks(void **state)
{
    (void)state;
    static const char *const pts[] = {
        "{ acc = \"fp32\", tree = \"seq\" }",
        "{ acc = \"fp32\", tree = \"stride(8, seq, seq)\" }",
        "{ acc = \"fp32\", tree = \"stride(8, seq, reverse(seq))\" }",
        "{ acc = \"fp32\", tree = \"split(3, seq, seq)\" }",
    };
    static const nx_fmt fmts[] = {NX_BF16, NX_FP16, NX_FP32};
    static const size_t ns[] = {64, 128, 100, 1027, 4096};
    uint64_t seed = tu_seed(0xb10c), st = seed;
    cmp_stats cs = {0};
    for (size_t pi = 0; pi < sizeof pts / sizeof pts[0]; pi++)
        for (size_t fi = 0; fi < sizeof fmts / sizeof fmts[0]; fi++)
            for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
                nx_err err = {0};
                nx_point pt;
                assert_int_equal(pt_from_text(pts[pi], "point", &pt, &err), NX_OK);
                size_t n = ns[ni], rows = 8 + (size_t)tu_rand_range(&st, 0, 12);
                nx_program *prog;
                assert_int_equal(nx_program_build(&pt, n, 1, &prog, &err), NX_OK);
                double *a = malloc(rows * n * sizeof *a), *b = malloc(rows * n * sizeof *b);
                assert_non_null(a);
                assert_non_null(b);
                fill(fmts[fi], a, rows * n, &st, 0);
                fill(fmts[fi], b, rows * n, &st, 0);
                char what[200];
                snprintf(what, sizeof what, "%s %s n=%zu rows=%zu (seed %llu)", pts[pi], nx_format(fmts[fi])->name, n,
                         rows, (unsigned long long)seed);
                compare(prog, fmts[fi], a, fmts[fi], b, rows, 1, &cs, what);
                free(a);
                free(b);
                nx_program_free(prog);
                nx_point_free(&pt);
            }
    fprintf(stderr, "fused fp32 blocks: %ld rows, %ld mismatches\n", cs.rows, cs.mismatches);
    assert_int_equal(cs.mismatches, 0);
}

/* Atoms too wide for the int64 fixed point (frac_bits 70) are handed to
 * MPFR row by row: the way out must give the same bits, and be taken. */
/* An exact cancellation a·b + s = 0 in every mode, every accumulator and
 * with fp64, fp32 and bf16 tensors (docs/numerics.md §2.3): the zero is -0
 * under rd and +0 otherwise, fused or not.  Random inputs with 52-bit
 * mantissas never cancel exactly, so this is worked by hand: row r is
 * a = (-(y·z), y), b = (1, z) with short mantissas, so y·z is exact. */
static void test_exact_cancellation(void **state)
{
    (void)state;
    static const char *const modes[] = {"rne", "rna", "rz", "ru", "rd"};
    static const char *const accs[] = {"fp64", "fp32", "bf16"};
    const nx_fmt tens[] = {NX_FP64, NX_FP32, NX_BF16};
    const double ys[3] = {0x1.8p3, -0x1.4p-7, 0x1.cp40}, zs[3] = {0x1.2p-2, 0x1.ep5, -0x1.6p-30};
    for (int m = 0; m < 5; m++)
        for (int ac = 0; ac < 3; ac++)
            for (int fma_on = 0; fma_on < 2; fma_on++)
                for (int tf = 0; tf < 3; tf++) {
                    char toml[160];
                    snprintf(toml, sizeof toml, "{ acc = \"%s\", rounding = \"%s\", fma = %s, tree = \"seq\" }",
                             accs[ac], modes[m], fma_on ? "true" : "false");
                    nx_point pt;
                    nx_err err = {0};
                    assert_int_equal(pt_from_text(toml, "p", &pt, &err), NX_OK);
                    nx_program *p;
                    assert_int_equal(nx_program_build(&pt, 2, 1, &p, &err), NX_OK);
                    double a[6], b[6], y[3];
                    for (int r = 0; r < 3; r++) {
                        a[2 * r] = -(ys[r] * zs[r]);
                        a[2 * r + 1] = ys[r];
                        b[2 * r] = 1;
                        b[2 * r + 1] = zs[r];
                    }
                    nx_rows rows = {.rows = 3, .a_fmt = tens[tf], .a = a, .b_fmt = tens[tf], .b = b};
                    double want = m == 4 ? -0.0 : 0.0;
                    for (int e = 0; e < 2; e++) {
                        assert_int_equal(e ? nx_fast_reduce(p, &rows, y, 1, &err) : nx_mpfr_reduce(p, &rows, y, 1, &err),
                                         NX_OK);
                        for (int r = 0; r < 3; r++)
                            assert_double_bits_eq_ctx(y[r], want, toml);
                    }
                    nx_program_free(p);
                    nx_point_free(&pt);
                }
}

static void test_fallback(void **state)
{
    (void)state;
    uint64_t st = 0xfa11;
    size_t rows = 11, n = 100;
    double *a = malloc(rows * n * sizeof *a), *b = malloc(rows * n * sizeof *b);
    assert_non_null(a);
    assert_non_null(b);
    fill(NX_FP32, a, rows * n, &st, 1);
    fill(NX_BF16, b, rows * n, &st, 0);
    nx_err err = {0};
    nx_point pt;
    assert_int_equal(pt_from_text("{ acc = \"fp32\", tree = \"chain(8)\", atom = { frac_bits = 70 } }", "p", &pt, &err),
                     NX_OK);
    nx_program *prog;
    assert_int_equal(nx_program_build(&pt, n, 1, &prog, &err), NX_OK);
    cmp_stats cs = {0};
    compare(prog, NX_FP32, a, NX_BF16, b, rows, 2, &cs, "frac_bits 70");
    assert_int_equal(cs.mismatches, 0);
    assert_int_equal(cs.mpfr_rows, (long)rows);
    nx_program_free(prog);
    nx_point_free(&pt);
    free(a);
    free(b);
}

/* ---------------------------------------------------------------------- */
/* Negative controls: the comparison above can fail. */

static void test_negative_control(void **state)
{
    (void)state;
    /* Two points that differ only in rounding mode give different bits on
     * ordinary data: a check that compared nothing would not notice. */
    uint64_t st = 99;
    size_t rows = 16, n = 300;
    double *a = malloc(rows * n * sizeof *a), *b = malloc(rows * n * sizeof *b);
    double ya[16], yb[16];
    assert_non_null(a);
    assert_non_null(b);
    fill(NX_FP32, a, rows * n, &st, 0);
    fill(NX_FP32, b, rows * n, &st, 0);
    nx_err err = {0};
    nx_point p1, p2;
    nx_program *g1, *g2;
    assert_int_equal(pt_from_text("{ acc = \"bf16\", rounding = \"rne\" }", "p", &p1, &err), NX_OK);
    assert_int_equal(pt_from_text("{ acc = \"bf16\", rounding = \"rz\" }", "p", &p2, &err), NX_OK);
    assert_int_equal(nx_program_build(&p1, n, 1, &g1, &err), NX_OK);
    assert_int_equal(nx_program_build(&p2, n, 1, &g2, &err), NX_OK);
    nx_rows in = {.rows = rows, .a_fmt = NX_FP32, .a = a, .b_fmt = NX_FP32, .b = b};
    assert_int_equal(nx_fast_reduce(g1, &in, ya, 1, &err), NX_OK);
    assert_int_equal(nx_mpfr_reduce(g2, &in, yb, 1, &err), NX_OK);
    int differ = 0;
    for (size_t r = 0; r < rows; r++)
        differ += !tu_same_double(ya[r], yb[r]);
    assert_true(differ > 0);
    /* the comparison the tests rest on sees those rows ... */
    cmp_stats cs = {0};
    count_mismatches(NX_BF16, yb, ya, rows, &cs, "negative control: rne vs rz (expected)");
    assert_int_equal(cs.mismatches, differ);
    /* ... and one flipped last bit, in one row only */
    double yc[16];
    memcpy(yc, ya, sizeof yc);
    uint64_t p0 = 0;
    assert_int_equal(enc(NX_BF16, ya[5], &p0), 0);
    yc[5] = nx_decode(NX_BF16, p0 ^ 1, NULL);
    cmp_stats c1 = {0};
    count_mismatches(NX_BF16, ya, yc, rows, &c1, "negative control: one flipped bit (expected)");
    assert_int_equal(c1.mismatches, 1);
    cmp_stats c0 = {0};
    count_mismatches(NX_BF16, ya, ya, rows, &c0, "identical");
    assert_int_equal(c0.mismatches, 0);
    nx_program_free(g1);
    nx_program_free(g2);
    nx_point_free(&p1);
    nx_point_free(&p2);
    free(a);
    free(b);
}

/* e8m0 has no zero: the +0 of an empty lane or slice, taken as a leaf by a
 * combinator, rounds to NaN (docs/numerics.md §7 items 2, 8), while a seq
 * combinator adds it (round(s + 0) = s).  Both engines against bits worked
 * out by hand; the fast engine once treated leaf(+0) as the identity. */
static void test_e8m0_empty_parts(void **state)
{
    (void)state;
    static const struct {
        const char *tree;
        size_t n;
        float a[4];
        uint32_t want; /* fp32 out */
    } cases[] = {
        /* lane 0 = t0 + t1 = 2^31 (exact); lane 1 empty: leaf(+0) = NaN, so NaN */
        {"stride(2, seq, halving, block=2)", 2, {0x1p30f, 0x1p30f}, 0x7fc00000},
        {"stride(2, seq, halving, block=2)", 2, {1, 1}, 0x7fc00000},
        /* both lanes: (1 + 1) + (1 + 1) = 4 */
        {"stride(2, seq, halving, block=2)", 4, {1, 1, 1, 1}, 0x40800000},
        /* lane 0: 1 + 2 = 3, a tie (p = 1) up to 4; lane 1: 0 + 3 -> 4, 4 + 4 = 8;
         * 4 + 8 = 12, a tie, up to 16 */
        {"stride(2, seq, halving, block=2)", 4, {1, 2, 3, 4}, 0x41800000},
        /* slices 2 and 3 empty: pairwise takes leaf(+0) = NaN */
        {"split(4, seq, pairwise)", 2, {1, 1}, 0x7fc00000},
        /* seq adds the empty slices: ((0 + 1) + 1) + 0 + 0 = 2 */
        {"split(4, seq, seq)", 2, {1, 1}, 0x40000000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[160];
        snprintf(text, sizeof text, "{ acc = \"e8m0\", tree = \"%s\", out = \"fp32\" }", cases[i].tree);
        nx_err err = {0};
        nx_point pt;
        nx_program *prog;
        assert_int_equal(pt_from_text(text, "point", &pt, &err), NX_OK);
        assert_int_equal(nx_program_build(&pt, cases[i].n, 0, &prog, &err), NX_OK);
        double a[4];
        for (size_t k = 0; k < cases[i].n; k++)
            a[k] = cases[i].a[k];
        nx_rows in = {.rows = 1, .a_fmt = NX_FP32, .a = a};
        double ym, yf;
        assert_int_equal(nx_mpfr_reduce(prog, &in, &ym, 1, &err), NX_OK);
        assert_int_equal(nx_fast_reduce(prog, &in, &yf, 1, &err), NX_OK);
        uint64_t bm = 0, bf = 0;
        assert_int_equal(enc(NX_FP32, ym, &bm), 0);
        assert_int_equal(enc(NX_FP32, yf, &bf), 0);
        if (bm != cases[i].want || bf != cases[i].want)
            print_error("%s n=%zu: want 0x%08x, mpfr 0x%08llx, fast 0x%08llx\n", cases[i].tree, cases[i].n,
                        cases[i].want, (unsigned long long)bm, (unsigned long long)bf);
        assert_int_equal(bm, cases[i].want);
        assert_int_equal(bf, cases[i].want);
        nx_program_free(prog);
        nx_point_free(&pt);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_e8m0_empty_parts),
        cmocka_unit_test(test_round_fast),
        cmocka_unit_test(test_negative_control),
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_fused_fp32_blocks),
        cmocka_unit_test(test_fallback),
        cmocka_unit_test(test_exact_cancellation),
        cmocka_unit_test(test_random_points),
        cmocka_unit_test(test_random_points_edition4),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
