/* cpu_gemv_w4a16.c: int4-weight GEMV kernels, y[b, n] = x[b, :] . w[n, :]
 * (docs/families.md, gemv_w4a16; docs/cpu-backend.md).
 *
 *   cpu_gemv_w4a16_dequant  scale_apply = per_element: w = fp16((q - z) * s),
 *                           then k: stride(V, seq, pairwise) over K
 *   cpu_gemv_w4a16_grouped  scale_apply = per_group: group: seq over each
 *                           group of x * (q - z), u_g = fp32(p_g * s_g),
 *                           then k: seq over the K/group values u_g
 *
 * q is int4 (0..15), one per byte or, with packed, two (family/fam_int4.h);
 * z is zeros[n, g] (stored as q is) or 8.  OpenMP runs over
 * output columns n; each thread computes every batch row of its columns
 * (per_group: 8 rows at a time, their chains side by side). */
#include "cpu_internal.h"
#include "fam_int4.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gemv_args {
    long B, N, K, G, vec;
    int zp, per_group, packed;
    const fam_reduction *k, *group;
} gemv_args;

static nx_status numerics(const fam_spec *s, gemv_args *g, nx_err *err)
{
    nx_status st;
    if ((st = cpu_bool(s, "zero_points", FAM_DEFAULT_BOOL, &g->zp, err)) || (st = cpu_bool(s, "packed", FAM_DEFAULT_BOOL, &g->packed, err)) ||
        (st = cpu_vec(s, &g->vec, err)))
        return st;
    const char *sa = fam_param_get(s, "scale_apply");
    if (!sa || !strcmp(sa, "per_element"))
        g->per_group = 0;
    else if (!strcmp(sa, "per_group"))
        g->per_group = 1;
    else
        return nx_err_set(err, NX_EINVAL, "cpu: gemv_w4a16: scale_apply = '%s' is not per_element or per_group", sa);
    return NX_OK;
}

static nx_status check_dequant(const fam_spec *s, const cpu_kernel *k, nx_err *err)
{
    gemv_args g;
    nx_status st = numerics(s, &g, err);
    if (st)
        return st;
    if (g.per_group)
        return nx_err_set(err, NX_EUNSUPPORTED, "cpu: kernel %s applies the scales per element; %s.%s has "
                          "scale_apply = per_group", k->id, s->family, s->point ? s->point : "?");
    char tree[64];
    snprintf(tree, sizeof tree, "stride(%ld, seq, pairwise)", g.vec);
    return cpu_check_red(s, k, "k", tree, 0, &g.k, err);
}

static nx_status check_grouped(const fam_spec *s, const cpu_kernel *k, nx_err *err)
{
    gemv_args g;
    nx_status st = numerics(s, &g, err);
    if (st)
        return st;
    if (!g.per_group)
        return nx_err_set(err, NX_EUNSUPPORTED, "cpu: kernel %s applies the scales per group; %s.%s has "
                          "scale_apply = per_element", k->id, s->family, s->point ? s->point : "?");
    if ((st = cpu_check_red(s, k, "group", "seq", 1, &g.group, err)))
        return st;
    return cpu_check_red(s, k, "k", "seq", 0, &g.k, err);
}

/* per_group for 8 batch rows at once: xt holds x packed [K][8] (rows of
 * the block, zeros past B), qz the row's (q - z) as floats.  For each row b:
 * group: seq over each group's G terms x * (q - z) (fmaf from +0, products
 * exact), u = fp32(p * s_g), k: seq over the u (adds from +0).  The 8 rows'
 * chains advance together, each in its order. */
CPU_HOT static void grouped8(const float *xt, const float *qz, const float *sc, size_t G, size_t ng, float *y8)
{
    float acc[8];
    for (size_t b = 0; b < 8; b++)
        acc[b] = 0.0f;
    for (size_t gi = 0; gi < ng; gi++) {
        float p[8];
        for (size_t b = 0; b < 8; b++)
            p[b] = 0.0f;
        for (size_t i = gi * G; i < (gi + 1) * G; i++)
            for (size_t b = 0; b < 8; b++)
                p[b] = fmaf(xt[i * 8 + b], qz[i], p[b]); /* group: seq */
        for (size_t b = 0; b < 8; b++) {
            float u = p[b] * sc[gi];
            acc[b] = acc[b] + u; /* k: seq */
        }
    }
    for (size_t b = 0; b < 8; b++)
        y8[b] = acc[b];
}

static nx_status run(const cpu_run *r, nx_err *err)
{
    const fam_spec *s = r->spec;
    gemv_args g;
    nx_status st;
    if ((st = numerics(s, &g, err)) || (st = cpu_dim(s, "B", -1, &g.B, err)) || (st = cpu_dim(s, "N", -1, &g.N, err)) ||
        (st = cpu_dim(s, "K", -1, &g.K, err)) || (st = cpu_dim(s, "group", -1, &g.G, err)))
        return st;
    if (g.K % g.G)
        return nx_err_set(err, NX_EINVAL, "cpu: gemv_w4a16: group = %ld does not divide K = %ld", g.G, g.K);
    g.k = fam_reduction_get(s, "k");
    g.group = fam_reduction_get(s, "group");
    size_t B = (size_t)g.B, N = (size_t)g.N, K = (size_t)g.K, G = (size_t)g.G, ng = K / G, V = (size_t)g.vec;
    size_t nbb = (B + 7) / 8; /* blocks of 8 batch rows (per_group) */
    nx_fmt yf = cpu_red_out(g.k);
    float *x = NULL, *scales = NULL, *xt = NULL, *y = malloc(B * N * sizeof *y);
    if (!y)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    if ((st = cpu_decode(st_find(r->in, "x"), r->threads, &x, err)) ||
        (st = cpu_decode(st_find(r->in, "scales"), r->threads, &scales, err)))
        goto done;
    const uint8_t *q = st_find(r->in, "qweight")->data;
    const uint8_t *zeros = g.zp ? st_find(r->in, "zeros")->data : NULL;
    if (g.per_group) { /* x packed [block][K][8] */
        if (!(xt = calloc(nbb * K * 8, sizeof *xt))) {
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
            goto done;
        }
        for (size_t b = 0; b < B; b++)
            for (size_t i = 0; i < K; i++)
                xt[((b / 8) * K + i) * 8 + b % 8] = x[b * K + i];
    }
    int oom = 0;
#pragma omp parallel num_threads(r->threads) reduction(| : oom)
    {
        float *w = malloc(K * sizeof *w); /* this column's weights, dequantized or (q - z) */
        oom |= !w;
#pragma omp for schedule(static)
        for (size_t n = 0; n < N; n++) {
            if (!w)
                continue;
            const int pk = g.packed;
            const uint8_t *qr = fam_u4_row(q, n, K, pk), *zr = zeros ? fam_u4_row(zeros, n, ng, pk) : NULL;
            if (!g.per_group) {
                /* cpu_gemv_w4a16_dequant.  w = fp16((q - z) * s): (q - z) * s is
                 * exact in float (4 + 11 bits); 0 * negative s is -0 (IEEE) */
                for (size_t gi = 0; gi < ng; gi++) {
                    float sc = scales[n * ng + gi];
                    int z = zr ? (int)fam_u4_at(zr, gi, pk) : 8;
                    float lut[16];
                    for (int v = 0; v < 16; v++)
                        lut[v] = cpu_round_to((float)(v - z) * sc, NX_FP16, 0);
                    for (size_t i = gi * G; i < (gi + 1) * G; i++)
                        w[i] = lut[fam_u4_at(qr, i, pk) & 15u];
                }
                for (size_t b = 0; b < B; b++) /* k: stride(V, seq, pairwise) */
                    y[b * N + n] = cpu_strided_dot(x + b * K, w, K, V);
            } else {
                /* cpu_gemv_w4a16_grouped */
                for (size_t gi = 0; gi < ng; gi++) {
                    int z = zr ? (int)fam_u4_at(zr, gi, pk) : 8;
                    for (size_t i = gi * G; i < (gi + 1) * G; i++)
                        w[i] = (float)((int)fam_u4_at(qr, i, pk) - z);
                }
                for (size_t bb = 0; bb < nbb; bb++) {
                    float y8[8];
                    grouped8(xt + bb * K * 8, w, scales + n * ng, G, ng, y8);
                    for (size_t b = bb * 8; b < B && b < bb * 8 + 8; b++)
                        y[b * N + n] = y8[b % 8];
                }
            }
        }
        free(w);
    }
    if (oom)
        st = nx_err_set(err, NX_ENOMEM, "out of memory (a dequantized row per thread)");
    else
        st = cpu_emit(r->out, "y", yf, g.k->point.saturate, 2, (int64_t[]){g.B, g.N}, y, r->threads, err);
done:
    free(x);
    free(xt);
    free(scales);
    free(y);
    return st;
}

const cpu_kernel cpu_k_gemv_dequant = {"cpu_gemv_w4a16_dequant", "gemv_w4a16",
                                       "per_element: fp16 dequant, then k: stride(V, seq, pairwise)", check_dequant,
                                       run};
const cpu_kernel cpu_k_gemv_grouped = {"cpu_gemv_w4a16_grouped", "gemv_w4a16",
                                       "per_group: group: seq, u = fp32(p * s), k: seq", check_grouped, run};
