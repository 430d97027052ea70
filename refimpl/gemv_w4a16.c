/* gemv_w4a16.c: y[b, n] = x[b, :] . w[n, :] with int4 weights (docs/
 * families.md, gemv_w4a16).  w = fp16((q - z) * s) per element; policy
 * scale_apply decides where the scale applies:
 *   per_element  dequantize, then reduction `k` over K (terms x * w);
 *   per_group    reduction `group` over each group (terms x * (q - z), exact
 *                integers), u_g = fp32(p_g * s_g), then reduction `k` over
 *                the K / group values u_g. */
#include "ref_internal.h"
#include "fam_int4.h"
#include "nx_round_fast.h"
#include "nx_simd.h"
#include "rows.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gemv_p {
    long B, N, K, G;
    int zp, per_group, packed;
    const fam_reduction *k, *group;
} gemv_p;

static nx_status params(const fam_spec *s, gemv_p *p, nx_err *err)
{
    nx_status st;
    const char *who = s->point ? s->point : "?";
    if ((st = ref_dim(s, "B", -1, &p->B, err)) || (st = ref_dim(s, "N", -1, &p->N, err)) ||
        (st = ref_dim(s, "K", -1, &p->K, err)) || (st = ref_dim(s, "group", -1, &p->G, err)) ||
        (st = ref_param_bool(s, "zero_points", FAM_DEFAULT_BOOL, &p->zp, err)) || (st = ref_param_bool(s, "packed", FAM_DEFAULT_BOOL, &p->packed, err)) ||
        (st = ref_need_red(s, "k", &p->k, err)))
        return st;
    if (p->K % p->G)
        return nx_err_set(err, NX_EINVAL, "%s.%s: group = %ld does not divide K = %ld", s->family, who, p->G, p->K);
    const char *sa = fam_param_get(s, "scale_apply");
    if (!sa || !strcmp(sa, "per_element"))
        p->per_group = 0;
    else if (!strcmp(sa, "per_group"))
        p->per_group = 1;
    else
        return nx_err_set(err, NX_EINVAL, "%s.%s: param 'scale_apply' = '%s' is not per_element or per_group",
                          s->family, who, sa);
    p->group = NULL;
    if (p->per_group && (st = ref_need_red(s, "group", &p->group, err)))
        return st;
    return NX_OK;
}

static nx_status inputs(const fam_spec *s, ref_desc_list *l, nx_err *err)
{
    gemv_p p;
    nx_status st = params(s, &p, err);
    if (st)
        return st;
    /* every sum of x * (q - z) * s over up to K terms below 2^bits; w exact in fp16 */
    int bits = ref_point_exact_bits(&p.k->point);
    if (p.group && ref_point_exact_bits(&p.group->point) < bits)
        bits = ref_point_exact_bits(&p.group->point);
    long r = ref_int_bound(15.0 * (double)p.K, bits, NX_FP16);
    if (r > 136)
        r = 136; /* 15 * 136 < 2048: every dequantized weight exact in fp16 */
    long ng = p.K / p.G;
    ref_add_float(l, "x", NX_FP16, "B,K", 2, (int64_t[]){p.B, p.K}, r);
    ref_add_u4(l, "qweight", p.packed ? "N,ceil(K/2)" : "N,K", 2, (int64_t[]){p.N, p.K}, p.packed);
    ref_add_float(l, "scales", NX_FP16, "N,K/group", 2, (int64_t[]){p.N, ng}, r);
    if (p.zp)
        ref_add_u4(l, "zeros", p.packed ? "N,ceil(K/group/2)" : "N,K/group", 2, (int64_t[]){p.N, ng}, p.packed);
    return NX_OK;
}

typedef struct gemv_ctx {
    const double *x;
    const st_tensor *scales; /* read where used, from its fp16 storage */
    const uint8_t *q, *z; /* z NULL: the zero point is 8 */
    int packed;           /* q and z two per byte (family/fam_int4.h) */
    size_t N, K, G;
    const nx_rfmt *fast; /* fp16 rounding of the fast engine (nx_round_fast.h); NULL: MPFR */
    int avx2;            /* the AVX2 (+ F16C) paths may run (the CPU, PARITY_SIMD) */
} gemv_ctx;

/* scales[n, g], from the row of scales in the thread's cache (key n),
 * decoded from storage once per row; value by value from storage when the
 * cache cannot be had */
static double scale_of(const gemv_ctx *c, const double *srow, size_t n, size_t g)
{
    if (srow)
        return srow[g];
    double s;
    rows_decode_range(c->scales, n * (c->K / c->G) + g, 1, &s, NULL);
    return s;
}

static const double *scales_row(const gemv_ctx *c, size_t n, ref_math *m)
{
    size_t ng = c->K / c->G;
    return ref_math_row(m, c, n, c->scales, n * ng, ng);
}

static int zero_of(const gemv_ctx *c, size_t n, size_t g)
{
    size_t ng = c->K / c->G;
    return c->z ? (int)fam_u4_at(fam_u4_row(c->z, n, ng, c->packed), g, c->packed) : 8;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define GEMV_AVX2_EXPAND 1
#define GEMV_F16C 1
/* fp16((q - z) * s) for q = 0 .. 15 in rne, s a finite fp16 value, as
 * floats: the product is exact in binary32 (|q - z| < 16 times an 11-bit
 * significand, within float's range and above its smallest subnormal), and
 * F16C's conversion is IEEE's rounding to binary16: ties to even, gradual
 * underflow, overflow to infinity, the sign of a zero kept (0 * -s is -0).
 * Never NaN. */
__attribute__((target("avx2,f16c"))) static void weights_f16c(double s, int z, float *w)
{
    const __m256 sf = _mm256_set1_ps((float)s);
    const __m256i q0 = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), zv = _mm256_set1_epi32(z);
    for (int h = 0; h < 16; h += 8) {
        __m256 qz = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_add_epi32(q0, _mm256_set1_epi32(h)), zv));
        __m128i hb = _mm256_cvtps_ph(_mm256_mul_ps(qz, sf), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm256_storeu_ps(w + h, _mm256_cvtph_ps(hb));
    }
}

/* F16C, asked of the CPU.  clang's __builtin_cpu_supports knows no "f16c";
 * there every AVX2 CPU stands for it (F16C predates AVX2 on every x86 that
 * has both), so the fuzzing build (clang) compiles this file too. */
static int cpu_has_f16c(void)
{
#if defined(__clang__)
    return __builtin_cpu_supports("avx2");
#else
    return __builtin_cpu_supports("f16c");
#endif
}

/* The eight nibbles of p[0 .. 3] as int32 lanes, element k (bits 4k of
 * their little-endian word) in lane k. */
__attribute__((target("avx2"))) static inline __m256i nibbles8_avx2(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)v), _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                            _mm256_set1_epi32(15));
}

/* out[2i], out[2i + 1] = w[low nibble], w[high nibble] of p[i], i < nb:
 * eight nibbles (four bytes, element k at bits 4k of their little-endian
 * word) index the 16 weights, held in two registers, and go out as
 * doubles (exact).  Returns how many bytes it did (a multiple of 4). */
__attribute__((target("avx2"))) static size_t expand_avx2(const uint8_t *p, size_t nb, const float *w, double *out)
{
    const __m256 lo = _mm256_loadu_ps(w), hi = _mm256_loadu_ps(w + 8);
    size_t i = 0;
    for (; i + 4 <= nb; i += 4) {
        __m256i q = nibbles8_avx2(p + i);
        __m256 r = _mm256_blendv_ps(_mm256_permutevar8x32_ps(lo, q), _mm256_permutevar8x32_ps(hi, q),
                                    _mm256_castsi256_ps(_mm256_slli_epi32(q, 28))); /* q >= 8: the high half */
        _mm256_storeu_pd(out + 2 * i, _mm256_cvtps_pd(_mm256_castps256_ps128(r)));
        _mm256_storeu_pd(out + 2 * i + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(r, 1)));
    }
    return i;
}

/* out[2i], out[2i + 1] = (low nibble of p[i]) - z, (high nibble) - z, i < nb:
 * eight nibbles to eight int32 lanes, minus z, converted to doubles (exact). */
__attribute__((target("avx2"))) static size_t expand_qz_avx2(const uint8_t *p, size_t nb, int z, double *out)
{
    const __m256i zv = _mm256_set1_epi32(z);
    size_t i = 0;
    for (; i + 4 <= nb; i += 4) {
        __m256i q = _mm256_sub_epi32(nibbles8_avx2(p + i), zv);
        _mm256_storeu_pd(out + 2 * i, _mm256_cvtepi32_pd(_mm256_castsi256_si128(q)));
        _mm256_storeu_pd(out + 2 * i + 4, _mm256_cvtepi32_pd(_mm256_extracti128_si256(q, 1)));
    }
    return i;
}
#endif

/* per_element, row b * N + n: a = x[b, :] (in place) and b = w[n, :], w = fp16((q - z) * s).
 * (q - z) * s is exact in binary64; a zero q - z times a negative s is -0
 * (IEEE).  The 16 possible weights of a group are rounded once each. */
static void gather_elem(const void *vc, size_t row, double *a, double *b, ref_math *m)
{
    const gemv_ctx *c = vc;
    size_t n = row % c->N, ng = c->K / c->G, h = c->G / 2;
    (void)a;
    double w[16];
    const double *srow = scales_row(c, n, m);
    const uint8_t *qr = fam_u4_row(c->q, n, c->K, c->packed);
    for (size_t g = 0; g < ng; g++) {
        int z = zero_of(c, n, g);
        double s = scale_of(c, srow, n, g);
        size_t k0 = g * c->G, k1 = k0 + c->G, i = 0; /* i: bytes of the group already laid out */
        int bytes = c->packed && !(k0 & 1);          /* the group starts on a byte: both nibbles at once */
#ifdef GEMV_AVX2_EXPAND
        if (c->avx2 && c->fast && bytes && isfinite(s)) { /* the fast engine's weights, eight at a time */
            float wf[16];
            weights_f16c(s, z, wf);
            i = expand_avx2(qr + k0 / 2, h, wf, b + k0);
            if (i == h && !(c->G & 1))
                continue;
            for (int q = 0; q < 16; q++) /* the rest, by the loops below */
                w[q] = (double)wf[q];
        } else
#endif
            ref_fp16_weights(s, z, c->fast, m, w);
        if (bytes) {
            const uint8_t *p = qr + k0 / 2;
            for (; i < h; i++) {
                b[k0 + 2 * i] = w[p[i] & 15u];
                b[k0 + 2 * i + 1] = w[p[i] >> 4];
            }
            if (c->G & 1)
                b[k1 - 1] = w[p[h] & 15u];
        } else if (c->packed)
            for (size_t k = k0; k < k1; k++)
                b[k] = w[fam_u4_at(qr, k, 1)];
        else
            for (size_t k = k0; k < k1; k++)
                b[k] = w[qr[k]];
    }
}

void ref_fp16_weights(double s, int z, const nx_rfmt *fast, ref_math *m, double w[16])
{
#ifdef GEMV_F16C
    if (fast && isfinite(s) && cpu_has_f16c() && __builtin_cpu_supports("avx2")) {
        float wf[16];
        weights_f16c(s, z, wf);
        for (int q = 0; q < 16; q++)
            w[q] = (double)wf[q];
        return;
    }
#endif
    for (int q = 0; q < 16; q++)
        w[q] = fast ? nx_rf_round((double)(q - z) * s, fast, NX_RNE, 0)
                    : ref_round(m, (double)(q - z) * s, NX_FP16, NX_RNE, 0);
}

static const double *arow_elem(const void *vc, size_t row)
{
    const gemv_ctx *c = vc;
    return c->x + row / c->N * c->K;
}

/* per_group, row (b * N + n) * ng + g: a = x[b, group g] (in place) and
 * b = (q - z)[n, group g]. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static void gather_group(const void *vc, size_t row, double *a, double *b, ref_math *m)
{
    const gemv_ctx *c = vc;
    (void)m;
    size_t ng = c->K / c->G, g = row % ng, n = row / ng % c->N;
    int z = zero_of(c, n, g);
    (void)a;
    const uint8_t *qr = fam_u4_row(c->q, n, c->K, c->packed);
    size_t k0 = g * c->G;
    if (c->packed && !(k0 & 1)) { /* byte by byte: both nibbles at once */
        const uint8_t *p = qr + k0 / 2;
        double zd = (double)z;
        size_t h = c->G / 2, i = 0;
#ifdef GEMV_AVX2_EXPAND
        if (c->avx2)
            i = expand_qz_avx2(p, h, z, b);
#endif
        for (; i < h; i++) {
            b[2 * i] = (double)(p[i] & 15u) - zd;
            b[2 * i + 1] = (double)(p[i] >> 4) - zd;
        }
        if (c->G & 1)
            b[c->G - 1] = (double)(p[h] & 15u) - zd;
    } else if (c->packed) {
        for (size_t k = 0; k < c->G; k++)
            b[k] = (double)((int)fam_u4_at(qr, k0 + k, 1) - z);
    } else {
#pragma omp simd
        for (size_t k = 0; k < c->G; k++)
            b[k] = (double)((int)qr[k0 + k] - z);
    }
}

static const double *arow_group(const void *vc, size_t row)
{
    const gemv_ctx *c = vc;
    size_t ng = c->K / c->G;
    return c->x + row / ng / c->N * c->K + row % ng * c->G;
}

/* fp32(x * y), rne, the value of ref_f32_mul.  Where the binary64 product
 * is exact (fma(x, y, -p) == 0) and normal, converting it to float is the
 * one rounding of the exact product (IEEE conversion in the default rne
 * mode, overflow to inf included); a zero operand gives the IEEE signed
 * zero either way.  Anything else (an inexact or subnormal binary64
 * product, inf, NaN) goes through MPFR. */
static double f32_mul(ref_math *m, double x, double y)
{
    double p = x * y;
    if (isfinite(p) && (fabs(p) >= 0x1p-1022 ? fma(x, y, -p) == 0 : (x == 0 || y == 0) && isfinite(x + y)))
        return (double)(float)p;
    return ref_f32_mul(m, x, y);
}

static nx_status run(ref_job *j, nx_err *err)
{
    gemv_p p;
    nx_status st = params(j->spec, &p, err);
    if (st)
        return st;
    size_t B = (size_t)p.B, N = (size_t)p.N, K = (size_t)p.K, G = (size_t)p.G, ng = K / G;
    double *x = NULL, *u = NULL, *y = ref_alloc(B * N);
    if (!y)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    const st_tensor *zt = p.zp ? ref_tensor(j, "zeros") : NULL;
    if ((st = ref_decode(j, "x", &x, err)))
        goto done;
    /* with the fast engine, the weights' roundings are the fast engine's
     * too (the same bits as MPFR's: test_round); --engine mpfr keeps MPFR */
    nx_rfmt f16;
    nx_rfmt_init(&f16, NX_FP16);
    ref_job_forget_rows(j); /* the caches will hold rows of scales, key n */
    gemv_ctx c = {x, ref_tensor(j, "scales"), ref_tensor(j, "qweight")->data, zt ? zt->data : NULL, p.packed, N, K, G,
                  j->reduce == nx_fast_reduce ? &f16 : NULL, 0};
#ifdef GEMV_AVX2_EXPAND
    /* PARITY_SIMD=off or scalar: the byte loops */
    c.avx2 = nx_simd_isa_now() >= NX_SIMD_AVX2 && cpu_has_f16c();
#endif
    if (!p.per_group) {
        st = ref_reduce_rows_a(j, p.k, K, B * N, NX_FP16, NX_FP16, arow_elem, gather_elem, &c, y, err);
    } else {
        size_t rows = B * N * ng;
        if (!(u = ref_alloc(rows))) {
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
            goto done;
        }
        /* q - z are integers in [-15, 15], members of fp16 */
        if ((st = ref_reduce_rows_a(j, p.group, G, rows, NX_FP16, NX_FP16, arow_group, gather_group, &c, u, err)))
            goto done;
#pragma omp parallel for num_threads(ref_threads_for(j, rows * 4)) schedule(static)
        for (size_t bn = 0; bn < B * N; bn++) { /* u[bn * ng + g] times scales[n, g] */
            ref_math *m = ref_job_math(j);
            size_t n = bn % N;
            const double *srow = scales_row(&c, n, m);
            for (size_t g = 0; g < ng; g++)
                u[bn * ng + g] = f32_mul(m, u[bn * ng + g], scale_of(&c, srow, n, g));
        }
        st = ref_reduce_flat(j, p.k, ng, 0, B * N, NX_FP32, u, NX_FP32, NULL, y, err);
    }
    if (!st)
        st = ref_emit(j, "y", nx_point_out(&p.k->point), 2, (int64_t[]){p.B, p.N}, y, err);
done:
    free(x);
    free(u);
    free(y);
    return st;
}

/* per_element: y[b, n] is reduction k of x[b, :] . w[n, :], w = fp16((q - z)
 * s) rne, rounded to k's out: output element (i, n) is row i * N + n.
 * per_group: k reduces u_g = fp32(p_g s_g), whose group sums p_g the output
 * does not show, so there is no layout over the inputs. */
static nx_status out_rows(const fam_spec *s, const st_file *in, const st_tensor *y, const int64_t *rows,
                          size_t max_rows, ref_out_rows *o, nx_err *err)
{
    gemv_p p;
    nx_status st = params(s, &p, err);
    if (st)
        return st;
    if (p.per_group)
        return nx_err_set(err, NX_EUNSUPPORTED,
                          "%s.%s: scale_apply = per_group: reduction 'k' sums the scaled group sums, which the output "
                          "does not show; only per_element has the output as the rows of one reduction over the inputs",
                          s->family, s->point ? s->point : "?");
    size_t N = (size_t)p.N, K = (size_t)p.K, G = (size_t)p.G, ng = K / G;
    const st_tensor *tx = st_find(in, "x"), *tq = st_find(in, "qweight"), *ts = st_find(in, "scales"),
                    *tz = p.zp ? st_find(in, "zeros") : NULL;
    if (!tx || !tq || !ts || (p.zp && !tz))
        return nx_err_set(err, NX_EINVAL, "%s: inputs 'x', 'qweight', 'scales'%s are needed", s->family,
                          p.zp ? " and 'zeros'" : "");
    double *x = ref_alloc((size_t)tx->nelem), *sc = ref_alloc((size_t)ts->nelem), *w = ref_alloc(N * K);
    if (!x || !sc || !w) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto done;
    }
    if ((st = rows_decode(tx, x, err)) || (st = rows_decode(ts, sc, err)))
        goto done;
    for (size_t n = 0; n < N; n++) {
        const uint8_t *qr = fam_u4_row(tq->data, n, K, p.packed);
        const uint8_t *zr = tz ? fam_u4_row(tz->data, n, ng, p.packed) : NULL;
        for (size_t k = 0; k < K; k++) {
            int z = zr ? (int)fam_u4_at(zr, k / G, p.packed) : 8;
            /* (q - z) s is exact in binary64: one rounding to fp16 */
            w[n * K + k] = nx_round_fast((double)((int)fam_u4_at(qr, k, p.packed) - z) * sc[n * ng + k / G], NX_FP16,
                                         NX_RNE, 0);
        }
    }
    st = ref_out_rows_dot(s, "k", x, p.B, w, N, K, NX_FP16, NX_FP16, nx_point_out(&p.k->point), y, rows, max_rows, o, err);
done:
    free(x);
    free(sc);
    free(w);
    return st;
}

const ref_family ref_family_gemv_w4a16 = {"gemv_w4a16", inputs, run, out_rows};
