/* nx_philox.c: Philox4x32-10 and the input distributions (see nx_philox.h).
 *
 * Definitions (element i of a tensor with id t under seed s; B(j, d) is the
 * block of index j, draw d; u53(a, b) = ((a >> 5) * 2^26 + (b >> 6)) * 2^-53;
 * below(w, n) = floor(w * n / 2^32); RN() is the correctly rounded binary64
 * result; the last step always rounds to the tensor's format in rne):
 *
 *   uniform   w = B(i, 0); v = RN(lo + RN((hi - lo) * u53(w0, w1))); if the
 *             rounded value reaches hi, the largest member below hi instead.
 *   int       w = B(i, 0); v = below(w0, 2 * int_max + 1) - int_max.
 *   normal    w = B(i >> 1, 0); u1 = (u53(w0, w1) * 2^53 + 1) * 2^-53 in
 *             (0, 1]; k2 = u53(w2, w3) * 2^53; R = sqrt(-2 * nx_philox_log(u1))
 *             (+0 when u1 = 1); v = R * c for even i, R * s for odd i, where
 *             (s, c) = nx_philox_sincospi(k2): sin and cos of pi * k2 * 2^-52.
 *             nx_philox_log and nx_philox_sincospi are defined below as a
 *             fixed sequence of IEEE binary64 operations (exact argument
 *             reduction, Horner on coefficients given as hex literals); with
 *             sqrt and * (IEEE, correctly rounded) nothing depends on a libm,
 *             and a CUDA port gets the same bits when it does not contract
 *             a * b + c (nvcc -fmad=false, or __dmul_rn / __dadd_rn).
 *   adversarial: c = below(B(i >> 1, 1).w0, 100) picks the category of the
 *             pair {2j, 2j + 1}:
 *             c < 30   cancellation: both elements have the magnitude
 *                      m(B(i >> 1, 1)) and opposite signs (the odd one negated);
 *             c < 70   wide range: m(B(i, 2)) with its own sign;
 *             c < 80   a subnormal of the format: k * 2^(emin - p + 1),
 *                      k = 1 + below(w1, min(2^(p-1) - 1, 2^32 - 1));
 *             c < 86   an exact zero, +0 or -0;
 *             c < 94   uniform [-1, 1) from B(i, 2);
 *             else     uniform [-1, 1) too, or with `specials` +inf, -inf or
 *                      NaN (below(w1, 3)), rounded to the format (§2).
 *             m(w) = (1 + (w1 >> (32 - f)) * 2^-f) * 2^e, f = min(p - 1, 32)
 *             (exact in the format), e = elo + below(w2, ehi - elo + 1) with
 *             [elo, ehi] = [-40, 40] clamped to the format's normal
 *             exponents; the sign is w3 & 1 (1: negative).  Categories other
 *             than cancellation read B(i, 2). */
#include "nx_philox.h"
#include "nx_round_fast.h"

#include <math.h>
#include <omp.h>
#include <string.h>

void nx_philox4x32_r(unsigned rounds, const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (unsigned r = 0; r < rounds; r++) {
        if (r > 0) { /* the key schedule: bumped between rounds */
            k0 += NX_PHILOX_W0;
            k1 += NX_PHILOX_W1;
        }
        uint64_t p0 = (uint64_t)NX_PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)NX_PHILOX_M1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

void nx_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    nx_philox4x32_r(10, ctr, key, out);
}

void nx_philox_block(uint64_t seed, uint32_t tensor, uint64_t index, uint32_t draw, uint32_t out[4])
{
    uint32_t ctr[4] = {(uint32_t)index, (uint32_t)(index >> 32), tensor, draw};
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    nx_philox4x32_10(ctr, key, out);
}

/* 32 blocks side by side (structure of arrays): the rounds of
 * nx_philox4x32_r on 32 counters at once, a loop the compiler turns into
 * vector multiplies (32 x 32 -> 64 bits). */
#define PHILOX_LANES 32 /* 16 -> 32: 0.21 -> 0.17 s for 58.7 M int4 weights (AVX-512) */
static inline __attribute__((always_inline)) void philox_lanes(uint64_t seed, uint32_t tensor, uint64_t first, uint32_t draw, uint32_t w0[PHILOX_LANES],
                                                                 uint32_t (*rest)[PHILOX_LANES])
{
    uint32_t c0[PHILOX_LANES], c1[PHILOX_LANES], c2[PHILOX_LANES], c3[PHILOX_LANES];
    for (unsigned l = 0; l < PHILOX_LANES; l++) {
        uint64_t i = first + l;
        c0[l] = (uint32_t)i;
        c1[l] = (uint32_t)(i >> 32);
        c2[l] = tensor;
        c3[l] = draw;
    }
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (unsigned r = 0; r < 10; r++) {
        if (r > 0) {
            k0 += NX_PHILOX_W0;
            k1 += NX_PHILOX_W1;
        }
#pragma omp simd
        for (unsigned l = 0; l < PHILOX_LANES; l++) {
            uint64_t p0 = (uint64_t)NX_PHILOX_M0 * c0[l];
            uint64_t p1 = (uint64_t)NX_PHILOX_M1 * c2[l];
            uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1[l] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3[l] ^ k1;
            c1[l] = (uint32_t)p1;
            c3[l] = (uint32_t)p0;
            c0[l] = n0;
            c2[l] = n2;
        }
    }
    memcpy(w0, c0, sizeof c0);
    if (rest) {
        memcpy(rest[0], c1, sizeof c1);
        memcpy(rest[1], c2, sizeof c2);
        memcpy(rest[2], c3, sizeof c3);
    }
}

/* x86-64-v4 (AVX-512: 8 multiplies 32 x 32 -> 64 per instruction) and
 * x86-64-v3 (AVX2: 4) clones, picked at load time; integer arithmetic only,
 * so every clone gives the same words (tests/test_philox.c pins them). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
void nx_philox_w0_run(uint64_t seed, uint32_t tensor, uint64_t first, uint32_t draw, size_t count, uint32_t *w0)
{
    size_t k = 0;
    for (; k + PHILOX_LANES <= count; k += PHILOX_LANES)
        philox_lanes(seed, tensor, first + k, draw, w0 + k, NULL);
    for (uint32_t w[4]; k < count; k++) {
        nx_philox_block(seed, tensor, first + k, draw, w);
        w0[k] = w[0];
    }
}

/* All four words of the PHILOX_LANES blocks from first (of one draw):
 * w[j][l] is word j of block first + l.  Integer arithmetic only, like the
 * clone above. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static void philox_blocks(uint64_t seed, uint32_t tensor, uint64_t first, uint32_t draw, uint32_t w[4][PHILOX_LANES])
{
    philox_lanes(seed, tensor, first, draw, w[0], w + 1);
}

/* Block l of a philox_blocks result, as nx_philox_block gives it. */
static inline void lane_block(uint32_t w[4][PHILOX_LANES], unsigned l, uint32_t out[4])
{
    for (int j = 0; j < 4; j++)
        out[j] = w[j][l];
}

uint32_t nx_philox_tensor_id(const char *name)
{
    uint32_t h = 0x811c9dc5u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h ^= *p;
        h *= 0x01000193u;
    }
    return h;
}

double nx_philox_u53(uint32_t hi, uint32_t lo)
{
    uint64_t k = ((uint64_t)(hi >> 5) << 26) | (lo >> 6);
    return ldexp((double)k, -53); /* exact: k < 2^53 */
}

uint32_t nx_philox_below(uint32_t w, uint32_t n)
{
    return (uint32_t)(((uint64_t)w * n) >> 32);
}

static const char *const dist_names[NX_NDISTS] = {"normal", "uniform", "int", "adversarial"};

const char *nx_dist_name(nx_dist d)
{
    return (unsigned)d < NX_NDISTS ? dist_names[d] : "?";
}

int nx_dist_from_name(const char *name)
{
    for (int i = 0; i < NX_NDISTS; i++)
        if (strcmp(dist_names[i], name) == 0)
            return i;
    return -1;
}

void nx_dist_spec_init(nx_dist_spec *d, nx_dist dist)
{
    memset(d, 0, sizeof *d);
    d->dist = dist;
    d->lo = -1.0;
    d->hi = 1.0;
    d->int_max = 8;
}

/* The target format's rounding parameters. */
typedef struct gen_state {
    nx_rfmt rf;
} gen_state;

static double rne(gen_state *g, double v, nx_fmt f)
{
    (void)f;
    return nx_rf_round(v, &g->rf, NX_RNE, 0);
}

/* --- the deterministic elementary functions of `normal` ------------------- */

/* 1/(2k+1), k = 0..11, correctly rounded: log(m) = 2 atanh(s) = 2 s sum z^k/(2k+1) */
static const double log_c[12] = {
    0x1p+0,               0x1.5555555555555p-2, 0x1.999999999999ap-3, 0x1.2492492492492p-3,
    0x1.c71c71c71c71cp-4, 0x1.745d1745d1746p-4, 0x1.3b13b13b13b14p-4, 0x1.1111111111111p-4,
    0x1.e1e1e1e1e1e1ep-5, 0x1.af286bca1af28p-5, 0x1.8618618618618p-5, 0x1.642c8590b2164p-5,
};
/* (-1)^k/(2k+1)! and (-1)^k/(2k)!, k = 0..10, correctly rounded */
static const double sin_c[11] = {
    0x1p+0,                -0x1.5555555555555p-3, 0x1.1111111111111p-7,  -0x1.a01a01a01a01ap-13,
    0x1.71de3a556c734p-19, -0x1.ae64567f544e4p-26, 0x1.6124613a86d09p-33, -0x1.ae7f3e733b81fp-41,
    0x1.952c77030ad4ap-49, -0x1.2f49b46814157p-57, 0x1.71b8ef6dcf572p-66,
};
static const double cos_c[11] = {
    0x1p+0,                -0x1p-1,               0x1.5555555555555p-5,  -0x1.6c16c16c16c17p-10,
    0x1.a01a01a01a01ap-16, -0x1.27e4fb7789f5cp-22, 0x1.1eed8eff8d898p-29, -0x1.93974a8c07c9dp-37,
    0x1.ae7f3e733b81fp-45, -0x1.6827863b97d97p-53, 0x1.e542ba4020225p-62,
};
#define PHILOX_PI 0x1.921fb54442d18p+1
#define PHILOX_LN2_HI 0x1.62e42fefa39efp-1
#define PHILOX_LN2_LO 0x1.abc9e3b39803fp-56
#define PHILOX_SQRT2 0x1.6a09e667f3bcdp+0

double nx_philox_log(double u)
{
    uint64_t b;
    memcpy(&b, &u, sizeof b);
    int e = (int)((b >> 52) & 0x7ff) - 1023;
    b = (b & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
    double m;
    memcpy(&m, &b, sizeof m); /* u = m 2^e, m in [1, 2) */
    if (m > PHILOX_SQRT2) {
        m = 0.5 * m; /* exact */
        e += 1;
    }
    double f = m - 1.0; /* exact (Sterbenz) */
    double s = f / (2.0 + f);
    double z = s * s;
    double p = log_c[11];
    for (int k = 10; k >= 0; k--)
        p = p * z + log_c[k];
    double r = (2.0 * s) * p;
    return (double)e * PHILOX_LN2_HI + ((double)e * PHILOX_LN2_LO + r);
}

void nx_philox_sincospi(uint64_t k, double *sn, double *cs)
{
    unsigned q = (unsigned)(k >> 51) & 3u;            /* quadrant of pi * k 2^-52 */
    uint64_t r = k & ((1ull << 51) - 1);              /* the rest, r 2^-52 in [0, 1/2) */
    int swap = r > (1ull << 50);                      /* beyond 1/4: use 1/2 - r */
    if (swap)
        r = (1ull << 51) - r;
    double x = ((double)r * 0x1p-52) * PHILOX_PI;    /* (double)r and the scaling are exact */
    double z = x * x;
    double ps = sin_c[10], pc = cos_c[10];
    for (int i = 9; i >= 0; i--) {
        ps = ps * z + sin_c[i];
        pc = pc * z + cos_c[i];
    }
    double s0 = x * ps, c0 = pc;
    if (swap) {
        double t = s0;
        s0 = c0;
        c0 = t;
    }
    switch (q) {
    case 0: *sn = s0; *cs = c0; break;
    case 1: *sn = c0; *cs = -s0; break;
    case 2: *sn = -s0; *cs = -c0; break;
    default: *sn = -c0; *cs = s0; break;
    }
}

/* Uniform [lo, hi) from two words, in the format. */
static double uniform(gen_state *g, const nx_dist_spec *d, nx_fmt f, uint32_t a, uint32_t b)
{
    double u = nx_philox_u53(a, b);
    double w = d->hi - d->lo;
    double p = w * u;
    double v = d->lo + p;
    double r = rne(g, v, f);
    if (r >= d->hi)
        r = nx_rf_round(nextafter(d->hi, -INFINITY), &g->rf, NX_RD, 0);
    return r;
}

typedef struct fmt_range {
    int p, elo, ehi;
} fmt_range;

static fmt_range range_of(nx_fmt f)
{
    const nx_format_info *fi = nx_format(f);
    fmt_range r;
    r.p = fi->p;
    int emax = ilogb(fi->max_finite);
    r.elo = fi->emin > -40 ? fi->emin : -40;
    r.ehi = emax < 40 ? emax : 40;
    return r;
}

/* m(w) of the header: exact in the format. */
static double magnitude(const fmt_range *fr, const uint32_t w[4])
{
    int fbits = fr->p - 1 < 32 ? fr->p - 1 : 32;
    double frac = fbits > 0 ? ldexp((double)(fbits == 32 ? w[1] : (w[1] >> (32 - fbits))), -fbits) : 0.0;
    int e = fr->elo + (int)nx_philox_below(w[2], (uint32_t)(fr->ehi - fr->elo + 1));
    double m = ldexp(1.0 + frac, e);
    return (w[3] & 1u) ? -m : m;
}

/* Element i from its pair's block pw = B(i div 2, 1) and, where the pair's
 * kind needs it, its own block B(i, 2): ew, or drawn here when NULL.  One
 * pair block serves both elements of the pair. */
static double adversarial(gen_state *g, uint64_t seed, uint32_t tensor, const nx_dist_spec *d, nx_fmt f,
                          const fmt_range *fr, uint64_t i, const uint32_t pw[4], const uint32_t *ew)
{
    uint32_t w[4];
    uint32_t c = nx_philox_below(pw[0], 100);
    if (c < 30) {
        double m = magnitude(fr, pw);
        return rne(g, (i & 1u) ? -m : m, f);
    }
    if (ew)
        memcpy(w, ew, sizeof w);
    else
        nx_philox_block(seed, tensor, i, 2, w);
    if (c < 70)
        return rne(g, magnitude(fr, w), f);
    if (c < 80) {
        uint64_t kmax = fr->p - 1 >= 32 ? 0xffffffffu : ((uint64_t)1 << (fr->p - 1)) - 1;
        if (kmax == 0) /* no subnormals (p = 1): the minimum normal */
            return rne(g, (w[3] & 1u) ? -nx_fmt_min_normal(f) : nx_fmt_min_normal(f), f);
        double k = 1.0 + (double)nx_philox_below(w[1], (uint32_t)kmax);
        double v = ldexp(k, nx_format(f)->emin - fr->p + 1);
        return rne(g, (w[3] & 1u) ? -v : v, f);
    }
    if (c < 86)
        return rne(g, (w[3] & 1u) ? -0.0 : 0.0, f);
    if (c >= 94 && d->specials) {
        switch (nx_philox_below(w[1], 3)) {
        case 0: return rne(g, INFINITY, f);
        case 1: return rne(g, -INFINITY, f);
        default: return NAN;
        }
    }
    nx_dist_spec u;
    nx_dist_spec_init(&u, NX_DIST_UNIFORM);
    return uniform(g, &u, f, w[0], w[2]);
}

/* The pair's values before the format rounding: v[0] (even), v[1] (odd). */
static void normal_pair(const uint32_t w[4], double v[2])
{
    uint64_t k1 = ((uint64_t)(w[0] >> 5) << 26) | (w[1] >> 6);
    uint64_t k2 = ((uint64_t)(w[2] >> 5) << 26) | (w[3] >> 6);
    double u1 = (double)(k1 + 1) * 0x1p-53; /* exact: k1 + 1 <= 2^53 */
    double t = -2.0 * nx_philox_log(u1);
    double r = t > 0 ? sqrt(t) : 0.0;
    double sn, cs;
    nx_philox_sincospi(k2, &sn, &cs);
    v[0] = r * cs;
    v[1] = r * sn;
}

double nx_philox_normal(uint64_t seed, uint32_t tensor, uint64_t i)
{
    uint32_t w[4];
    double v[2];
    nx_philox_block(seed, tensor, i >> 1, 0, w);
    normal_pair(w, v);
    return v[i & 1u];
}

/* A uniform or int element from its block B(i, 0). */
static double flat(gen_state *g, const nx_dist_spec *d, nx_fmt f, const uint32_t w[4])
{
    if (d->dist == NX_DIST_UNIFORM)
        return uniform(g, d, f, w[0], w[1]);
    return rne(g, (double)((long)nx_philox_below(w[0], (uint32_t)(2 * d->int_max + 1)) - d->int_max), f);
}

static void fill_range(gen_state *g, uint64_t seed, uint32_t tensor, const nx_dist_spec *d, nx_fmt f,
                       uint64_t first, size_t count, double *out)
{
    fmt_range fr = range_of(f);
    uint32_t w[4];
    size_t k = 0;
    while (k < count) {
        uint64_t i = first + k;
        switch (d->dist) {
        case NX_DIST_NORMAL: {
            double v[2];
            if (!(i & 1u) && count - k >= 2 * PHILOX_LANES) { /* PHILOX_LANES whole pairs: their blocks side by side */
                uint32_t wl4[4][PHILOX_LANES];
                philox_blocks(seed, tensor, i >> 1, 0, wl4);
                for (unsigned l = 0; l < PHILOX_LANES; l++) {
                    uint32_t wl[4];
                    lane_block(wl4, l, wl);
                    normal_pair(wl, v);
                    out[k + 2 * l] = rne(g, v[0], f);
                    out[k + 2 * l + 1] = rne(g, v[1], f);
                }
                k += 2 * PHILOX_LANES;
                continue;
            }
            nx_philox_block(seed, tensor, i >> 1, 0, w);
            normal_pair(w, v);
            out[k] = rne(g, v[i & 1u], f);
            k++;
            if (!(i & 1u) && k < count) { /* the pair's odd element shares the block */
                out[k] = rne(g, v[1], f);
                k++;
            }
            continue;
        }
        case NX_DIST_UNIFORM:
        case NX_DIST_INT:
            if (count - k >= PHILOX_LANES) { /* a run of lanes side by side */
                uint32_t wl4[4][PHILOX_LANES];
                philox_blocks(seed, tensor, i, 0, wl4);
                for (unsigned l = 0; l < PHILOX_LANES; l++) {
                    lane_block(wl4, l, w);
                    out[k + l] = flat(g, d, f, w);
                }
                k += PHILOX_LANES;
            } else {
                nx_philox_block(seed, tensor, i, 0, w);
                out[k++] = flat(g, d, f, w);
            }
            continue;
        default: {
            if (!(i & 1u) && count - k >= 2 * PHILOX_LANES) {
                /* PHILOX_LANES pairs: their pair blocks and their elements' own blocks side by side */
                uint32_t pw4[4][PHILOX_LANES], ew4[2][4][PHILOX_LANES];
                philox_blocks(seed, tensor, i >> 1, 1, pw4);
                philox_blocks(seed, tensor, i, 2, ew4[0]);
                philox_blocks(seed, tensor, i + PHILOX_LANES, 2, ew4[1]);
                for (unsigned e = 0; e < 2 * PHILOX_LANES; e++) {
                    uint32_t pw[4], ew[4];
                    lane_block(pw4, e >> 1, pw);
                    lane_block(ew4[e / PHILOX_LANES], e % PHILOX_LANES, ew);
                    out[k + e] = adversarial(g, seed, tensor, d, f, &fr, i + e, pw, ew);
                }
                k += 2 * PHILOX_LANES;
                continue;
            }
            nx_philox_block(seed, tensor, i >> 1, 1, w);
            out[k] = adversarial(g, seed, tensor, d, f, &fr, i, w, NULL);
            k++;
            if (!(i & 1u) && k < count) { /* the pair's odd element: the same pair block */
                out[k] = adversarial(g, seed, tensor, d, f, &fr, i + 1, w, NULL);
                k++;
            }
            continue;
        }
        }
    }
}

nx_status nx_philox_fill(uint64_t seed, uint32_t tensor, const nx_dist_spec *d, nx_fmt fmt, uint64_t first,
                         size_t count, double *out, int threads, nx_err *err)
{
    const nx_format_info *fi = nx_format(fmt);
    if (!fi)
        return nx_err_set(err, NX_EINVAL, "unknown format %d", (int)fmt);
    if (!fi->is_signed || !fi->has_zero)
        return nx_err_set(err, NX_EINVAL, "format %s cannot hold generated inputs (it is unsigned, with no zero)",
                          fi->name);
    if ((unsigned)d->dist >= NX_NDISTS)
        return nx_err_set(err, NX_EINVAL, "unknown distribution %d", (int)d->dist);
    if (d->dist == NX_DIST_UNIFORM && !(d->lo < d->hi && isfinite(d->lo) && isfinite(d->hi)))
        return nx_err_set(err, NX_EINVAL, "uniform: the range [%g, %g) is empty or not finite", d->lo, d->hi);
    if (d->dist == NX_DIST_INT) {
        double lim = ldexp(1.0, fi->p < 30 ? fi->p : 30);
        if (lim > fi->max_finite)
            lim = floor(fi->max_finite);
        if (d->int_max < 0 || (double)d->int_max > lim)
            return nx_err_set(err, NX_EINVAL, "int: int_max %ld is outside [0, %.0f], the integers exact in %s",
                              d->int_max, lim, fi->name);
    }
    const size_t chunk = 4096; /* even, so normal pairs stay in one chunk */
    size_t nchunks = (count + chunk - 1) / chunk;
#pragma omp parallel num_threads(threads > 0 ? threads : omp_get_max_threads()) if (nchunks > 1)
    {
        gen_state g;
        nx_rfmt_init(&g.rf, fmt);
#pragma omp for schedule(dynamic, 1)
        for (size_t c = 0; c < nchunks; c++) {
            size_t lo = c * chunk, n = count - lo < chunk ? count - lo : chunk;
            fill_range(&g, seed, tensor, d, fmt, first + lo, n, out + lo);
        }
    }
    return NX_OK;
}
