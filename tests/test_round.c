/* test_round.c: the MPFR rounding core (nx_mp.h) against docs/numerics.md §2.
 *
 * Expected values come from a tiny integer reference written here from the
 * contract alone: a value (-1)^s · M · 2^E (M an unsigned __int128) is cut to
 * a multiple of the quantum by shifts, and the remainder is compared with the
 * half quantum.  A format is only (p, emin, max finite, inf?, NaN?, signed?,
 * zero?), copied from the table of §1, not from nx_format().
 *
 * Targeted cases (exact members, quarter ulps, midpoints, sticky bits just
 * off a midpoint, subnormals, the subnormal/normal boundary, overflow with
 * and without saturate, signed zeros, NaN and inf) state their expected
 * results case by case and also cross-check the reference; random sweeps
 * compare nx_mp_round_d, nx_mp_round and nx_mp_add / nx_mp_fma / nx_mp_mul
 * with the reference.  Seed: PARITY_SEED (echoed on failure). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <mpfr.h>

#include "nx_format.h"
#include "nx_mp.h"
#include "testutil.h"

__extension__ typedef unsigned __int128 u128;

#define DEFAULT_SEED 20261202u
#define N_RANDOM_ROUND 20000 /* per format, mode and entry point */
#define N_RANDOM_ARITH 4000  /* per format, mode and operation */
#ifndef MAX_PRINTED
#define MAX_PRINTED 12 /* mismatches printed per test */
#endif

/* ---- the formats of §1, as the reference sees them ---------------------- */

typedef struct rfmt {
    nx_fmt f;
    const char *name;
    int p;          /* precision, hidden bit included */
    int emin;       /* minimum normal exponent (e8m0: -127, interpretations 2) */
    double maxf;    /* max finite */
    int has_inf, has_nan, is_signed, has_zero;
} rfmt;

static const rfmt rfmts[] = {
    {NX_FP64, "fp64", 53, -1022, 0x1.fffffffffffffp+1023, 1, 1, 1, 1},
    {NX_FP32, "fp32", 24, -126, 0x1.fffffep+127, 1, 1, 1, 1},
    {NX_TF32, "tf32", 11, -126, 0x1.ffcp+127, 1, 1, 1, 1},
    {NX_FP16, "fp16", 11, -14, 0x1.ffcp+15, 1, 1, 1, 1},
    {NX_BF16, "bf16", 8, -126, 0x1.fep+127, 1, 1, 1, 1},
    {NX_E5M2, "e5m2", 3, -14, 0x1.cp+15, 1, 1, 1, 1},
    {NX_E4M3, "e4m3", 4, -6, 0x1.cp+8, 0, 1, 1, 1},
    {NX_E3M2, "e3m2", 3, -2, 0x1.cp+4, 0, 0, 1, 1},
    {NX_E2M3, "e2m3", 4, 0, 0x1.ep+2, 0, 0, 1, 1},
    {NX_E2M1, "e2m1", 2, 0, 0x1.8p+2, 0, 0, 1, 1},
    {NX_E8M0, "e8m0", 1, -127, 0x1p+127, 0, 1, 0, 0},
    {NX_E8M13, "e8m13", 14, -126, 0x1.fff8p+127, 1, 1, 1, 1},
};
#define N_RFMTS (sizeof rfmts / sizeof rfmts[0])

static const char *const mode_names[NX_NMODES] = {"rne", "rna", "rz", "ru", "rd"};

static int emax_of(const rfmt *F) { return ilogb(F->maxf); }
static int qsub_of(const rfmt *F) { return F->emin - F->p + 1; } /* the smallest quantum */

/* ---- the integer reference ---------------------------------------------- */

static int bitlen(u128 m)
{
    uint64_t hi = (uint64_t)(m >> 64), lo = (uint64_t)m;
    if (hi)
        return 128 - __builtin_clzll(hi);
    return lo ? 64 - __builtin_clzll(lo) : 0;
}

/* §2 overflow table (+ interpretations 2 for the unsigned e8m0). */
static double ref_overflow(const rfmt *F, int neg, nx_mode m, int sat)
{
    if (neg && !F->is_signed)
        return NAN;
    if (sat || m == NX_RZ || (m == NX_RU && neg) || (m == NX_RD && !neg))
        return neg ? -F->maxf : F->maxf;
    if (F->has_inf)
        return neg ? -INFINITY : INFINITY;
    if (F->has_nan)
        return NAN;
    return neg ? -F->maxf : F->maxf;
}

/* The value n·2^q (n the rounded count of quanta) with sign, zero, overflow
 * and unsigned rules applied. */
static double ref_finish(const rfmt *F, int neg, u128 n, int q, nx_mode m, int sat)
{
    if (n == 0) /* §2: keeps its sign; e8m0 has no zero (interpretations 2) */
        return F->has_zero ? (neg ? -0.0 : 0.0) : NAN;
    if (neg && !F->is_signed)
        return NAN;
    double v = ldexp((double)n, q); /* n <= 2^p <= 2^53: exact, or inf beyond binary64 */
    if (v > F->maxf)
        return ref_overflow(F, neg, m, sat);
    return neg ? -v : v;
}

/* Rounds (-1)^neg · M · 2^E (M < 2^126) to F in mode m. */
static double ref_round(const rfmt *F, int neg, u128 M, int E, nx_mode m, int sat)
{
    if (M == 0)
        return ref_finish(F, neg, 0, 0, m, sat);
    int lg = bitlen(M) - 1 + E; /* floor(log2 |x|) */
    int e = lg > F->emin ? lg : F->emin;
    int q = e - F->p + 1; /* gradual underflow: the quantum stays 2^(emin-p+1) */
    u128 n;
    int cmp = 0, inexact = 0; /* cmp: sign of remainder - half quantum */
    if (E >= q) {
        n = M << (E - q); /* < 2^p: no overflow of the shift */
    } else {
        int sh = q - E;
        if (sh >= 127) {
            n = 0;
            inexact = 1;
            cmp = -1; /* M < 2^126 <= half */
        } else {
            n = M >> sh;
            u128 rem = M - (n << sh);
            u128 half = (u128)1 << (sh - 1);
            if (rem) {
                inexact = 1;
                cmp = rem < half ? -1 : rem > half;
            }
        }
    }
    if (inexact) {
        int up = 0;
        switch (m) {
        case NX_RNE: up = cmp > 0 || (cmp == 0 && (n & 1)); break;
        case NX_RNA: up = cmp >= 0; break;
        case NX_RZ: up = 0; break;
        case NX_RU: up = !neg; break;
        case NX_RD: up = neg; break;
        default: fail_msg("bad mode %d", (int)m);
        }
        n += (u128)up;
    }
    return ref_finish(F, neg, n, q, m, sat);
}

/* An exact value (-1)^neg · m · 2^e; m = 0 is a signed zero. */
typedef struct xval {
    int neg;
    u128 m;
    int e;
} xval;

static xval xv_of_double(double d)
{
    xval x = {signbit(d) != 0, 0, 0};
    if (d == 0)
        return x;
    int ex;
    double fr = frexp(fabs(d), &ex);
    x.m = (u128)(uint64_t)ldexp(fr, 53);
    x.e = ex - 53;
    return x;
}

/* 1 if the exact sum is computable in 126 bits; then *r = a + b (exact),
 * with the §2 zero rules: x + (-x) = +0 (rd: -0), (±0) + (±0) by IEEE. */
static int xv_add(xval a, xval b, nx_mode m, xval *r)
{
    if (a.m == 0 && b.m == 0) {
        r->m = 0;
        r->e = 0;
        r->neg = a.neg == b.neg ? a.neg : (m == NX_RD);
        return 1;
    }
    if (a.m == 0) { *r = b; return 1; }
    if (b.m == 0) { *r = a; return 1; }
    int e0 = a.e < b.e ? a.e : b.e;
    if (bitlen(a.m) + (a.e - e0) > 125 || bitlen(b.m) + (b.e - e0) > 125)
        return 0;
    u128 A = a.m << (a.e - e0), B = b.m << (b.e - e0);
    r->e = e0;
    if (a.neg == b.neg) {
        r->neg = a.neg;
        r->m = A + B;
    } else if (A > B) {
        r->neg = a.neg;
        r->m = A - B;
    } else if (B > A) {
        r->neg = b.neg;
        r->m = B - A;
    } else {
        r->neg = m == NX_RD;
        r->m = 0;
    }
    return 1;
}

static xval xv_mul(xval a, xval b) /* operands of at most 63 bits */
{
    xval r = {a.neg ^ b.neg, a.m * b.m, a.e + b.e};
    return r;
}

/* ---- conversions and bookkeeping ---------------------------------------- */

static nx_mp g_mp;
static mpfr_t g_x;
static uint64_t g_seed;
static long g_checks;   /* comparisons made by the current test */
static int g_failures;  /* mismatches in the current test */

static void begin_test(void)
{
    g_checks = 0;
    g_failures = 0;
}

static void end_test(const char *what)
{
    print_message("    %s: %ld comparisons\n", what, g_checks);
    if (g_failures)
        fail_msg("%s: %d of %ld comparisons failed (first %d above; PARITY_SEED=%llu)", what,
                 g_failures, g_checks, MAX_PRINTED, (unsigned long long)g_seed);
}

static void u128_str(char buf[40], u128 m)
{
    uint64_t hi = (uint64_t)(m >> 64), lo = (uint64_t)m;
    if (hi)
        snprintf(buf, 40, "0x%llx%016llx", (unsigned long long)hi, (unsigned long long)lo);
    else
        snprintf(buf, 40, "0x%llx", (unsigned long long)lo);
}

static void mismatch(const char *what, const char *ctx, double got, double want)
{
    g_failures++;
    if (g_failures > MAX_PRINTED)
        return;
    char line[512];
    snprintf(line, sizeof line, "%s: %s [PARITY_SEED=%llu]", what, ctx,
             (unsigned long long)g_seed);
    tu_print_double_mismatch(line, got, want);
}

static void compare(const char *what, const char *ctx, double got, double want)
{
    g_checks++;
    if (!tu_same_double(got, want))
        mismatch(what, ctx, got, want);
}

/* Sets g_x to the exact value (-1)^neg · M · 2^E. */
static void set_mpfr(int neg, u128 M, int E)
{
    mpfr_set_prec(g_x, 128);
    if (M == 0) {
        mpfr_set_zero(g_x, neg ? -1 : 1);
        return;
    }
    mpfr_set_ui_2exp(g_x, (unsigned long)(uint64_t)(M >> 64), 64, MPFR_RNDN);
    mpfr_add_ui(g_x, g_x, (unsigned long)(uint64_t)M, MPFR_RNDN); /* exact at 128 bits */
    mpfr_mul_2si(g_x, g_x, E, MPFR_RNDN);
    if (neg)
        mpfr_neg(g_x, g_x, MPFR_RNDN);
}

/* 1 and *d if (-1)^neg · M · 2^E is exactly a binary64 number. */
static int to_double(int neg, u128 M, int E, double *d)
{
    if (M == 0) {
        *d = neg ? -0.0 : 0.0;
        return 1;
    }
    while ((M & 1) == 0) {
        M >>= 1;
        E++;
    }
    int L = bitlen(M);
    if (L > 53 || E < -1074 || L - 1 + E > 1023)
        return 0;
    double v = ldexp((double)(uint64_t)M, E);
    *d = neg ? -v : v;
    return 1;
}

static void case_ctx(char *ctx, size_t n, const rfmt *F, int neg, u128 M, int E, nx_mode m,
                     int sat)
{
    char ms[40];
    u128_str(ms, M);
    snprintf(ctx, n, "%s %s sat=%d x=%s%s*2^%d", F->name, mode_names[m], sat, neg ? "-" : "+",
             ms, E);
}

/* Rounds (-1)^neg · M · 2^E with nx_mp_round (and nx_mp_round_d where the
 * value is a double); want: the expected value, checked against the
 * reference too (a disagreement there is a defect of this test). */
static void check_round(const rfmt *F, int neg, u128 M, int E, nx_mode m, int sat, double want)
{
    char ctx[200];
    case_ctx(ctx, sizeof ctx, F, neg, M, E, m, sat);
    double ref = ref_round(F, neg, M, E, m, sat);
    g_checks++;
    if (!tu_same_double(ref, want))
        mismatch("TEST DEFECT: the reference disagrees with the case's expectation", ctx, ref,
                 want);
    set_mpfr(neg, M, E);
    compare("nx_mp_round", ctx, nx_mp_round(&g_mp, g_x, F->f, m, sat), want);
    double d;
    if (to_double(neg, M, E, &d))
        compare("nx_mp_round_d", ctx, nx_mp_round_d(&g_mp, d, F->f, m, sat), want);
}

/* ---- targeted cases ------------------------------------------------------ */

enum { AT_EXACT, AT_BELOW_HALF, AT_TIE, AT_ABOVE_HALF };

/* The expected result for a value strictly between lo = n·2^q and
 * hi = (n+1)·2^q (or exactly lo), stated case by case from §2. */
static double want_between(const rfmt *F, int neg, u128 n, int q, int where, nx_mode m, int sat)
{
    int up = 0; /* magnitude rounds to hi */
    if (where != AT_EXACT) {
        switch (m) {
        case NX_RNE: up = where == AT_ABOVE_HALF || (where == AT_TIE && (n & 1)); break;
        case NX_RNA: up = where != AT_BELOW_HALF; break;
        case NX_RZ: up = 0; break;
        case NX_RU: up = !neg; break;
        default: up = neg; break;
        }
    }
    return ref_finish(F, neg, n + (u128)up, q, m, sat);
}

/* Offsets f / 2^s of a quantum above lo: quarters, the half, and sticky
 * bits just off it (wide M: these go through nx_mp_round only). */
static const struct { int s; uint64_t f; int where; } offsets[] = {
    {0, 0, AT_EXACT},
    {2, 1, AT_BELOW_HALF}, {2, 2, AT_TIE}, {2, 3, AT_ABOVE_HALF},
    {60, 1, AT_BELOW_HALF}, {60, (1ull << 59) - 1, AT_BELOW_HALF},
    {60, (1ull << 59) + 1, AT_ABOVE_HALF}, {60, (1ull << 60) - 1, AT_ABOVE_HALF},
};

static void check_between(const rfmt *F, u128 n, int q)
{
    for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; o++) {
        int s = offsets[o].s;
        u128 M = (n << s) + offsets[o].f;
        if (M == 0)
            continue; /* zero has its own test */
        for (int neg = 0; neg < 2; neg++)
            for (int m = 0; m < NX_NMODES; m++)
                for (int sat = 0; sat < 2; sat++)
                    check_round(F, neg, M, q - s, (nx_mode)m, sat,
                                want_between(F, neg, n, q, offsets[o].where, (nx_mode)m, sat));
    }
}

/* Exact members, quarter ulps, midpoints and sticky bits in the subnormal
 * range, the lowest normal binade, the binade of 1 and the top binade. */
static void test_round_grid(void **state)
{
    const rfmt *F = *state;
    begin_test();
    const int p = F->p, emax = emax_of(F), qsub = qsub_of(F);
    const u128 lead = (u128)1 << (p - 1), top = ((u128)1 << p) - 1;
    /* between 0 and the smallest subnormal (e8m0: its smallest value) */
    check_between(F, 0, qsub);
    if (p >= 2) {
        check_between(F, 1, qsub);        /* smallest subnormal and the next */
        check_between(F, lead - 1, qsub); /* largest subnormal .. min normal */
    }
    int binades[3] = {F->emin, 0, emax};
    for (int b = 0; b < 3; b++) {
        int e = binades[b];
        if (e < F->emin || e > emax || (b == 1 && (e == F->emin || e == emax)))
            continue;
        int q = e - p + 1;
        u128 ns[3] = {lead, lead + 1, top};
        for (int i = 0; i < 3; i++) {
            int dup = ns[i] > top;
            for (int j = 0; j < i; j++)
                dup |= ns[j] == ns[i];
            if (!dup)
                check_between(F, ns[i], q);
        }
    }
    end_test(F->name);
}

/* Around max finite: just below, max itself, just above, the midpoint to
 * the next step of precision p, the next step, far above; saturate on and
 * off; and the §2 overflow table spelled out. */
static void test_round_overflow(void **state)
{
    const rfmt *F = *state;
    begin_test();
    const int emax = emax_of(F), q = emax - F->p + 1;
    const u128 nmax = (u128)ldexp(F->maxf, -q);
    /* max - ulp .. max, max .. next step (beyond max: overflow), next .. */
    if (nmax - 1 >= ((u128)1 << (F->p - 1)))
        check_between(F, nmax - 1, q);
    check_between(F, nmax, q);
    check_between(F, nmax + 1, q);
    /* far above, and the table of §2 written out literally */
    const int far[] = {emax + 2, emax + 11, emax + 300};
    for (size_t i = 0; i < sizeof far / sizeof far[0]; i++)
        for (int neg = 0; neg < 2; neg++)
            for (int m = 0; m < NX_NMODES; m++)
                for (int sat = 0; sat < 2; sat++) {
                    double mag;
                    int to_max = sat || m == NX_RZ || (m == NX_RU && neg) || (m == NX_RD && !neg);
                    if (to_max || (!F->has_inf && !F->has_nan))
                        mag = F->maxf;
                    else if (F->has_inf)
                        mag = INFINITY;
                    else
                        mag = NAN;
                    double want = !F->is_signed && neg ? NAN : neg ? -mag : mag;
                    check_round(F, neg, 3, far[i], (nx_mode)m, sat, want);
                    check_round(F, neg, 1, far[i], (nx_mode)m, sat, want);
                }
    end_test(F->name);
}

/* Below half the smallest subnormal (by far, and by one sticky bit), the
 * half exactly, and signed zeros in and out. */
static void test_round_underflow_zero(void **state)
{
    const rfmt *F = *state;
    begin_test();
    const int qsub = qsub_of(F);
    const double sub = ldexp(1.0, qsub);
    for (int neg = 0; neg < 2; neg++)
        for (int m = 0; m < NX_NMODES; m++)
            for (int sat = 0; sat < 2; sat++) {
                /* a value below half the smallest subnormal: ±0 keeping its
                 * sign, or the smallest subnormal in ru (+) / rd (-) */
                int away = (m == NX_RU && !neg) || (m == NX_RD && neg);
                double want = away ? (neg ? -sub : sub) : (neg ? -0.0 : 0.0);
                if (!F->has_zero) /* e8m0: zero and negatives are NaN */
                    want = neg || !away ? NAN : sub;
                const struct { u128 M; int E; } below[] = {
                    {1, qsub - 2}, {1, qsub - 3}, {7, qsub - 4}, {1, qsub - 100},
                    {((u128)1 << 60) - 1, qsub - 61}, {1, -1200}, {5, -3000}};
                for (size_t i = 0; i < sizeof below / sizeof below[0]; i++)
                    check_round(F, neg, below[i].M, below[i].E, (nx_mode)m, sat, want);
                /* the half: a tie between 0 (even) and the smallest subnormal */
                int up = m == NX_RNA || away;
                double half_want = up ? (neg ? -sub : sub) : (neg ? -0.0 : 0.0);
                if (!F->has_zero)
                    half_want = neg || !up ? NAN : sub;
                check_round(F, neg, 1, qsub - 1, (nx_mode)m, sat, half_want);
                /* zero in, zero out, sign kept (e8m0: NaN) */
                double zero_want = F->has_zero ? (neg ? -0.0 : 0.0) : NAN;
                check_round(F, neg, 0, 0, (nx_mode)m, sat, zero_want);
            }
    end_test(F->name);
}

/* NaN in, NaN out; infinities per docs/interpretations.md 3. */
static void test_round_special(void **state)
{
    const rfmt *F = *state;
    begin_test();
    for (int m = 0; m < NX_NMODES; m++)
        for (int sat = 0; sat < 2; sat++)
            for (int neg = 0; neg < 2; neg++) {
                char ctx[96];
                snprintf(ctx, sizeof ctx, "%s %s sat=%d x=%sinf", F->name, mode_names[m], sat,
                         neg ? "-" : "+");
                double mag = sat ? F->maxf : F->has_inf ? INFINITY : F->has_nan ? NAN : F->maxf;
                double want = !F->is_signed && neg ? NAN : neg ? -mag : mag;
                compare("nx_mp_round_d", ctx, nx_mp_round_d(&g_mp, neg ? -INFINITY : INFINITY,
                                                            F->f, (nx_mode)m, sat), want);
                mpfr_set_inf(g_x, neg ? -1 : 1);
                compare("nx_mp_round", ctx, nx_mp_round(&g_mp, g_x, F->f, (nx_mode)m, sat), want);
                compare("nx_round_inf", ctx, nx_round_inf(neg, F->f, sat), want);
                snprintf(ctx, sizeof ctx, "%s %s sat=%d x=%snan", F->name, mode_names[m], sat,
                         neg ? "-" : "+");
                compare("nx_mp_round_d", ctx,
                        nx_mp_round_d(&g_mp, neg ? -NAN : NAN, F->f, (nx_mode)m, sat), NAN);
                mpfr_set_nan(g_x);
                compare("nx_mp_round", ctx, nx_mp_round(&g_mp, g_x, F->f, (nx_mode)m, sat), NAN);
            }
    end_test(F->name);
}

/* ---- random sweeps -------------------------------------------------------- */

static uint64_t test_rng(const rfmt *F, int kind, int m)
{
    return g_seed * 0x100000001b3ull ^ ((uint64_t)F->f << 16) ^ ((uint64_t)kind << 8) ^
           (uint64_t)m;
}

/* A random floor(log2 |x|): a quarter near underflow, a quarter near
 * overflow, half anywhere in the format's range (with margins). */
static int rand_lg(const rfmt *F, uint64_t *rng)
{
    const int lo = qsub_of(F) - 4, hi = emax_of(F) + 3;
    switch (tu_rand64(rng) % 4) {
    case 0: return tu_rand_range(rng, lo, F->emin + 2);
    case 1: return tu_rand_range(rng, emax_of(F) - 2, hi);
    default: return tu_rand_range(rng, lo, hi);
    }
}

/* A random M of exactly L bits (top bit set). */
static u128 rand_m(uint64_t *rng, int L)
{
    u128 r = ((u128)tu_rand64(rng) << 64) | tu_rand64(rng);
    if (L < 128)
        r &= ((u128)1 << L) - 1;
    return r | ((u128)1 << (L - 1));
}

/* L: often short (exact values and exact midpoints), else up to maxbits. */
static int rand_len(const rfmt *F, uint64_t *rng, int maxbits)
{
    int shortmax = F->p + 2 < maxbits ? F->p + 2 : maxbits;
    return tu_rand64(rng) % 2 ? tu_rand_range(rng, 1, shortmax) : tu_rand_range(rng, 1, maxbits);
}

static void sweep_round(const rfmt *F, int use_double)
{
    for (int m = 0; m < NX_NMODES; m++) {
        uint64_t rng = test_rng(F, use_double, m);
        for (int i = 0; i < N_RANDOM_ROUND; i++) {
            int neg = (int)(tu_rand64(&rng) & 1), sat = (int)(tu_rand64(&rng) & 1);
            int L, E;
            u128 M;
            double d = 0;
            do {
                L = rand_len(F, &rng, use_double ? 53 : 120);
                M = rand_m(&rng, L);
                E = rand_lg(F, &rng) - (L - 1);
            } while (use_double && !to_double(neg, M, E, &d));
            double want = ref_round(F, neg, M, E, (nx_mode)m, sat);
            char ctx[200];
            case_ctx(ctx, sizeof ctx, F, neg, M, E, (nx_mode)m, sat);
            if (use_double) {
                compare("nx_mp_round_d", ctx, nx_mp_round_d(&g_mp, d, F->f, (nx_mode)m, sat),
                        want);
            } else {
                set_mpfr(neg, M, E);
                compare("nx_mp_round", ctx, nx_mp_round(&g_mp, g_x, F->f, (nx_mode)m, sat),
                        want);
            }
        }
    }
}

static void test_round_random(void **state)
{
    const rfmt *F = *state;
    begin_test();
    sweep_round(F, 1);
    sweep_round(F, 0);
    end_test(F->name);
}

/* ---- nx_mp_add / nx_mp_fma / nx_mp_mul ----------------------------------- */

/* A random double of floor(log2) lg with at most maxbits significant bits;
 * 0 if there is none (lg out of binary64's range). */
static int rand_double(uint64_t *rng, int lg, int maxbits, double *d)
{
    if (lg > 1023 || lg < -1074)
        return 0;
    int room = lg + 1075; /* bits down to 2^-1074 */
    int L = tu_rand_range(rng, 1, maxbits < room ? maxbits : room);
    u128 M = rand_m(rng, L);
    return to_double((int)(tu_rand64(rng) & 1), M, lg - (L - 1), d);
}

static void arith_ctx(char *ctx, size_t n, const rfmt *F, const char *op, nx_mode m,
                      const double *v, int nv, int dp)
{
    int k = snprintf(ctx, n, "%s %s %s(", F->name, mode_names[m], op);
    for (int i = 0; i < nv && k > 0 && (size_t)k < n; i++)
        k += snprintf(ctx + k, n - (size_t)k, "%s%a", i ? ", " : "", v[i]);
    if (k > 0 && (size_t)k < n)
        snprintf(ctx + k, n - (size_t)k, ")%s", dp < 0 ? "" : dp ? " dbl_product=1" : " dbl_product=0");
}

/* The three operations on x, y (add), a, b (mul) or a, b, c (fma) against
 * the reference; returns 0 if the exact result does not fit the reference. */
static int check_add(const rfmt *F, nx_mode m, double x, double y)
{
    xval s;
    if (!xv_add(xv_of_double(x), xv_of_double(y), m, &s))
        return 0;
    double v[2] = {x, y};
    char ctx[200];
    arith_ctx(ctx, sizeof ctx, F, "add", m, v, 2, -1);
    compare("nx_mp_add", ctx, nx_mp_add(&g_mp, x, y, F->f, m), ref_round(F, s.neg, s.m, s.e, m, 0));
    return 1;
}

static int check_fma(const rfmt *F, nx_mode m, double a, double b, double c, int dp)
{
    xval s;
    if (!xv_add(xv_mul(xv_of_double(a), xv_of_double(b)), xv_of_double(c), m, &s))
        return 0;
    double v[3] = {a, b, c};
    char ctx[200];
    arith_ctx(ctx, sizeof ctx, F, "fma", m, v, 3, dp);
    compare("nx_mp_fma", ctx, nx_mp_fma(&g_mp, a, b, c, F->f, m, dp),
            ref_round(F, s.neg, s.m, s.e, m, 0));
    return 1;
}

static void check_mul(const rfmt *F, nx_mode m, double a, double b, int dp)
{
    xval p = xv_mul(xv_of_double(a), xv_of_double(b));
    double v[2] = {a, b};
    char ctx[200];
    arith_ctx(ctx, sizeof ctx, F, "mul", m, v, 2, dp);
    compare("nx_mp_mul", ctx, nx_mp_mul(&g_mp, a, b, F->f, m, dp),
            ref_round(F, p.neg, p.m, p.e, m, 0));
}

/* a*b is exact in binary64 (the dbl_product precondition). */
static int product_is_double(double a, double b)
{
    xval p = xv_mul(xv_of_double(a), xv_of_double(b));
    double d;
    return to_double(p.neg, p.m, p.e, &d);
}

static void test_arith_random(void **state)
{
    const rfmt *F = *state;
    begin_test();
    for (int m = 0; m < NX_NMODES; m++) {
        nx_mode md = (nx_mode)m;
        uint64_t rng = test_rng(F, 2, m);
        /* add: operands near each other's exponent, sometimes cancelling */
        for (int i = 0; i < N_RANDOM_ARITH;) {
            double x, y;
            int lg = rand_lg(F, &rng);
            if (!rand_double(&rng, lg + tu_rand_range(&rng, -1, 2), 53, &x) ||
                !rand_double(&rng, lg - tu_rand_range(&rng, 0, 60), 53, &y))
                continue;
            switch (tu_rand64(&rng) % 16) {
            case 0: y = -x; break;                     /* exact cancellation */
            case 1: y = -nextafter(x, 0.0); break;     /* near cancellation */
            case 2: y = tu_rand64(&rng) & 1 ? -0.0 : 0.0; break;
            default: break;
            }
            if (tu_rand64(&rng) & 1) {
                double t = x; x = y; y = t;
            }
            i += check_add(F, md, x, y);
        }
        /* fma, products of full doubles (dbl_product = 0) and of 24-bit
         * significands exact in binary64 (dbl_product = 1) */
        for (int dp = 0; dp < 2; dp++)
            for (int i = 0; i < N_RANDOM_ARITH;) {
                double a, b, c;
                int T = rand_lg(F, &rng);
                int la = T / 2 + tu_rand_range(&rng, -30, 30);
                int bits = dp ? 24 : 53;
                if (!rand_double(&rng, la, bits, &a) || !rand_double(&rng, T - la, bits, &b))
                    continue;
                if (dp && !product_is_double(a, b))
                    continue;
                switch (tu_rand64(&rng) % 8) {
                case 0: { /* c = -(a*b cut to 53 bits): near or exact cancellation */
                    xval p = xv_mul(xv_of_double(a), xv_of_double(b));
                    int sh = bitlen(p.m) > 53 ? bitlen(p.m) - 53 : 0;
                    if (!to_double(!p.neg, p.m >> sh, p.e + sh, &c))
                        continue;
                    break;
                }
                case 1: c = tu_rand64(&rng) & 1 ? -0.0 : 0.0; break;
                default:
                    if (!rand_double(&rng, T + tu_rand_range(&rng, -60, 5), 53, &c))
                        continue;
                }
                i += check_fma(F, md, a, b, c, dp);
            }
        /* mul */
        for (int dp = 0; dp < 2; dp++)
            for (int i = 0; i < N_RANDOM_ARITH;) {
                double a, b;
                int T = rand_lg(F, &rng);
                int la = T / 2 + tu_rand_range(&rng, -30, 30);
                int bits = dp ? 24 : 53;
                if (!rand_double(&rng, la, bits, &a) || !rand_double(&rng, T - la, bits, &b))
                    continue;
                if (dp && !product_is_double(a, b))
                    continue;
                check_mul(F, md, a, b, dp);
                i++;
            }
    }
    end_test(F->name);
}

/* Signed zeros of exact sums and products (§2), NaN and inf operands. */
static void test_arith_zero_special(void **state)
{
    const rfmt *F = *state;
    begin_test();
    for (int m = 0; m < NX_NMODES; m++) {
        nx_mode md = (nx_mode)m;
        const double pz = F->has_zero ? 0.0 : NAN, nz = F->has_zero ? -0.0 : NAN;
        const double cancel = md == NX_RD ? nz : pz; /* x + (-x) */
        char ctx[200];
        const double xs[] = {1.0, 0x1.8p-3, 448.0, 0x1p-140, 0x1.fffffffffffffp+1023, 0x1p-1074};
        for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
            double x = xs[i];
            snprintf(ctx, sizeof ctx, "%s %s add(%a, %a)", F->name, mode_names[m], x, -x);
            compare("nx_mp_add", ctx, nx_mp_add(&g_mp, x, -x, F->f, md), cancel);
            compare("nx_mp_add", ctx, nx_mp_add(&g_mp, -x, x, F->f, md), cancel);
            snprintf(ctx, sizeof ctx, "%s %s fma(%a, -1, %a)", F->name, mode_names[m], x, x);
            for (int dp = 0; dp < 2; dp++) {
                compare("nx_mp_fma", ctx, nx_mp_fma(&g_mp, x, -1.0, x, F->f, md, dp), cancel);
                compare("nx_mp_fma", ctx, nx_mp_fma(&g_mp, -x, 1.0, x, F->f, md, dp), cancel);
            }
        }
        const struct { double x, y, want; } zz[] = {
            {0.0, 0.0, pz}, {-0.0, -0.0, nz}, {0.0, -0.0, cancel}, {-0.0, 0.0, cancel}};
        for (size_t i = 0; i < sizeof zz / sizeof zz[0]; i++) {
            snprintf(ctx, sizeof ctx, "%s %s add(%a, %a)", F->name, mode_names[m], zz[i].x, zz[i].y);
            compare("nx_mp_add", ctx, nx_mp_add(&g_mp, zz[i].x, zz[i].y, F->f, md), zz[i].want);
            for (int dp = 0; dp < 2; dp++) {
                /* a zero product meets a zero addend: the same IEEE rule */
                snprintf(ctx, sizeof ctx, "%s %s fma(%a, 3, %a) dbl_product=%d", F->name,
                         mode_names[m], zz[i].x, zz[i].y, dp);
                compare("nx_mp_fma", ctx, nx_mp_fma(&g_mp, zz[i].x, 3.0, zz[i].y, F->f, md, dp),
                        zz[i].want);
                snprintf(ctx, sizeof ctx, "%s %s fma(%a, -3, %a) dbl_product=%d", F->name,
                         mode_names[m], -zz[i].x, zz[i].y, dp);
                compare("nx_mp_fma", ctx, nx_mp_fma(&g_mp, -zz[i].x, -3.0, zz[i].y, F->f, md, dp),
                        zz[i].want);
            }
        }
        for (int dp = 0; dp < 2; dp++) {
            snprintf(ctx, sizeof ctx, "%s %s mul signed zeros dbl_product=%d", F->name,
                     mode_names[m], dp);
            compare("nx_mp_mul", ctx, nx_mp_mul(&g_mp, 0.0, -3.0, F->f, md, dp), nz);
            compare("nx_mp_mul", ctx, nx_mp_mul(&g_mp, -0.0, -3.0, F->f, md, dp), pz);
            compare("nx_mp_mul", ctx, nx_mp_mul(&g_mp, -0.0, 0.0, F->f, md, dp), nz);
        }
        /* NaN in, NaN out; inf - inf = NaN; 0 * inf = NaN */
        snprintf(ctx, sizeof ctx, "%s %s NaN/inf operands", F->name, mode_names[m]);
        compare("nx_mp_add", ctx, nx_mp_add(&g_mp, NAN, 1.0, F->f, md), NAN);
        compare("nx_mp_add", ctx, nx_mp_add(&g_mp, INFINITY, -INFINITY, F->f, md), NAN);
        compare("nx_mp_mul", ctx, nx_mp_mul(&g_mp, 0.0, INFINITY, F->f, md, 0), NAN);
        compare("nx_mp_mul", ctx, nx_mp_mul(&g_mp, NAN, 2.0, F->f, md, 1), NAN);
        compare("nx_mp_fma", ctx, nx_mp_fma(&g_mp, 0.0, INFINITY, 1.0, F->f, md, 0), NAN);
        compare("nx_mp_fma", ctx, nx_mp_fma(&g_mp, INFINITY, 1.0, -INFINITY, F->f, md, 0), NAN);
        compare("nx_mp_fma", ctx, nx_mp_fma(&g_mp, 1.0, 2.0, NAN, F->f, md, 1), NAN);
        /* inf in: interpretations 3 without saturate */
        double pinf = F->has_inf ? INFINITY : F->has_nan ? NAN : F->maxf;
        double ninf = !F->is_signed ? NAN : -pinf;
        snprintf(ctx, sizeof ctx, "%s %s inf operands", F->name, mode_names[m]);
        compare("nx_mp_add", ctx, nx_mp_add(&g_mp, INFINITY, -1.0, F->f, md), pinf);
        compare("nx_mp_add", ctx, nx_mp_add(&g_mp, 1.0, -INFINITY, F->f, md), ninf);
        compare("nx_mp_mul", ctx, nx_mp_mul(&g_mp, -2.0, INFINITY, F->f, md, 0), ninf);
        compare("nx_mp_fma", ctx, nx_mp_fma(&g_mp, -2.0, -INFINITY, 5.0, F->f, md, 0), pinf);
        compare("nx_mp_fma", ctx, nx_mp_fma(&g_mp, 2.0, 3.0, -INFINITY, F->f, md, 1), ninf);
    }
    /* overflow of a sum or product into fp64's range edge, spelled out */
    if (F->f == NX_FP64) {
        const double big = 0x1.fffffffffffffp+1023;
        for (int m = 0; m < NX_NMODES; m++) {
            double want = (m == NX_RZ || m == NX_RD) ? big : INFINITY;
            char ctx[120];
            snprintf(ctx, sizeof ctx, "fp64 %s add(%a, %a)", mode_names[m], big, big);
            compare("nx_mp_add", ctx, nx_mp_add(&g_mp, big, big, NX_FP64, (nx_mode)m), want);
            snprintf(ctx, sizeof ctx, "fp64 %s mul(%a, 2)", mode_names[m], big);
            compare("nx_mp_mul", ctx, nx_mp_mul(&g_mp, big, 2.0, NX_FP64, (nx_mode)m, 0), want);
            snprintf(ctx, sizeof ctx, "fp64 %s fma(%a, 2, -%a)", mode_names[m], big, 0x1p+970);
            compare("nx_mp_fma", ctx, nx_mp_fma(&g_mp, big, 2.0, -0x1p+970, NX_FP64, (nx_mode)m, 0),
                    want);
        }
    }
    end_test(F->name);
}

/* ---- main ----------------------------------------------------------------- */

static int group_setup(void **state)
{
    (void)state;
    nx_mp_init(&g_mp);
    mpfr_init2(g_x, 128);
    g_seed = tu_seed(DEFAULT_SEED);
    print_message("test_round: PARITY_SEED=%llu\n", (unsigned long long)g_seed);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    mpfr_clear(g_x);
    nx_mp_clear(&g_mp);
    mpfr_free_cache();
    return 0;
}

int main(void)
{
    static const struct { const char *what; CMUnitTestFunction fn; } per_fmt[] = {
        {"grid", test_round_grid},
        {"overflow", test_round_overflow},
        {"underflow_zero", test_round_underflow_zero},
        {"special", test_round_special},
        {"random", test_round_random},
        {"arith_random", test_arith_random},
        {"arith_zero_special", test_arith_zero_special},
    };
    enum { NPER = sizeof per_fmt / sizeof per_fmt[0] };
    static char names[NPER * N_RFMTS][48];
    static struct CMUnitTest tests[NPER * N_RFMTS];
    size_t n = 0;
    for (size_t k = 0; k < NPER; k++)
        for (size_t i = 0; i < N_RFMTS; i++) {
            snprintf(names[n], sizeof names[n], "%s_%s", per_fmt[k].what, rfmts[i].name);
            tests[n] = (struct CMUnitTest){names[n], per_fmt[k].fn, NULL, NULL,
                                           (void *)&rfmts[i]};
            n++;
        }
    return _cmocka_run_group_tests("test_round", tests, n, group_setup, group_teardown);
}
