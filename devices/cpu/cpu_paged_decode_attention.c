/* cpu_paged_decode_attention.c: decode attention over a paged KV cache
 * (docs/families.md, paged_decode_attention; docs/cpu-backend.md).
 *
 *   cpu_paged_attention        split = 0: one pass over the context
 *   cpu_paged_attention_split  split > 0: the context in splits of `split`
 *                              positions, combined by a log-sum-exp
 *
 * Per (sequence b, query head h), KV head h / (HQ / HKV):
 *   qk:          seq (fmaf chain over D)            s_j = fp32(scale * qk_j)
 *   per split:   m = max s_j (NaN wins), p_j = exp_cr(fp32(s_j - m))
 *   softmax_sum: seq over the p_j (fp32 adds from +0)
 *   pv:          seq over positions of p_j * v_j[d] (fmaf), stored in the pv
 *                point's out (the partials' format)
 *   combine:     (split > 0) M = max m_c, w_c = exp_cr(fp32(m_c - M)),
 *                L and O[d] by seq fmaf chains over the splits
 *   y[d] = fp32(O[d] / L) rounded to param `out`.
 * OpenMP runs over (b, KV head) pairs: each K and V row is converted once
 * for the query heads that share it; every output keeps its order. */
#include "cpu_internal.h"

#include <math.h>
#include <stdlib.h>

typedef struct attn_args {
    long B, HQ, HKV, D, P, NP, MAXP, split;
    nx_fmt in, out;
    float scale;
    const fam_reduction *qk, *ssum, *pv, *combine;
} attn_args;

static nx_status numerics(const fam_spec *s, attn_args *a, nx_err *err)
{
    nx_status st;
    if ((st = cpu_fmt(s, "in", FAM_DEFAULT_FMT, &a->in, err)) || (st = cpu_fmt(s, "out", FAM_DEFAULT_FMT, &a->out, err)) ||
        (st = cpu_long(s, "split", 0, &a->split, err)))
        return st;
    if ((st = cpu_io_fmts(s, a->in, 0, a->out, err)))
        return st;
    if (a->split < 0)
        return nx_err_set(err, NX_EINVAL, "cpu: paged_decode_attention: split = %ld is negative", a->split);
    return NX_OK;
}

static nx_status check(const fam_spec *s, const cpu_kernel *k, nx_err *err)
{
    attn_args a;
    nx_status st = numerics(s, &a, err);
    if (st)
        return st;
    int want_split = k == &cpu_k_attn_split;
    a.combine = NULL;
    if (want_split != (a.split > 0))
        return nx_err_set(err, NX_EUNSUPPORTED, "cpu: kernel %s runs %s; %s.%s has split = %ld", k->id,
                          want_split ? "split > 0" : "split = 0", s->family, s->point ? s->point : "?", a.split);
    if ((st = cpu_check_red(s, k, "qk", "seq", 1, &a.qk, err)) ||
        (st = cpu_check_red(s, k, "softmax_sum", "seq", 0, &a.ssum, err)) ||
        (st = cpu_check_red(s, k, "pv", "seq", 0, &a.pv, err)) ||
        (want_split && (st = cpu_check_red(s, k, "combine", "seq", 0, &a.combine, err))) ||
        (st = cpu_check_elem(s, k, "exp", NULL, err)))
        return st;
    if (a.pv->point.saturate || (a.combine && a.combine->point.saturate) || a.ssum->point.saturate)
        return nx_err_set(err, NX_EUNSUPPORTED, "cpu: kernel %s does not saturate its partials", k->id);
    return NX_OK;
}

/* max with NaN propagation, from -inf */
static float nmax(float m, float x)
{
    if (isnan(m) || isnan(x))
        return NAN;
    return x > m ? x : m;
}

static nx_status run(const cpu_run *r, nx_err *err)
{
    const fam_spec *s = r->spec;
    attn_args a;
    nx_status st;
    if ((st = numerics(s, &a, err)) || (st = cpu_dim(s, "B", -1, &a.B, err)) ||
        (st = cpu_dim(s, "HQ", -1, &a.HQ, err)) || (st = cpu_dim(s, "HKV", -1, &a.HKV, err)) ||
        (st = cpu_dim(s, "D", -1, &a.D, err)) || (st = cpu_dim(s, "P", -1, &a.P, err)) ||
        (st = cpu_dim(s, "NP", -1, &a.NP, err)) || (st = cpu_dim(s, "MAXP", -1, &a.MAXP, err)))
        return st;
    if (a.HQ % a.HKV || a.HQ / a.HKV > 64)
        return nx_err_set(err, a.HQ % a.HKV ? NX_EINVAL : NX_EUNSUPPORTED,
                          "cpu: paged_decode_attention: HQ = %ld, HKV = %ld: HQ must be a multiple of HKV, at most 64 "
                          "query heads per KV head", a.HQ, a.HKV);
    if (a.D > (1L << 24))
        return nx_err_set(err, NX_EUNSUPPORTED, "cpu: paged_decode_attention: D = %ld is not exact in fp32", a.D);
    if (fam_param_get(s, "scale"))
        st = cpu_f32(s, "scale", NULL, &a.scale, err);
    else
        a.scale = cpu_rsqrt_cr((float)a.D); /* fp32(1/sqrt(D)), correctly rounded */
    if (st)
        return st;
    a.qk = fam_reduction_get(s, "qk");
    a.ssum = fam_reduction_get(s, "softmax_sum");
    a.pv = fam_reduction_get(s, "pv");
    a.combine = a.split > 0 ? fam_reduction_get(s, "combine") : NULL;
    size_t B = (size_t)a.B, HQ = (size_t)a.HQ, D = (size_t)a.D, P = (size_t)a.P, HKV = (size_t)a.HKV;
    size_t MAXP = (size_t)a.MAXP, maxL = MAXP * P, grp = HQ / HKV;
    size_t S = a.split > 0 ? (size_t)a.split : maxL, slen = S < maxL ? S : maxL, maxsplits = (maxL + S - 1) / S;
    nx_fmt qkf = cpu_red_out(a.qk), lf = cpu_red_out(a.ssum), of = cpu_red_out(a.pv);
    nx_fmt cf = a.combine ? cpu_red_out(a.combine) : NX_FP32;
    const st_tensor *kt = st_find(r->in, "k_cache"), *vt = st_find(r->in, "v_cache");
    const st_tensor *bt = st_find(r->in, "block_table"), *cl = st_find(r->in, "context_lens");
    float *q = NULL, *y = malloc(B * HQ * D * sizeof *y);
    if (!y)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    if ((st = cpu_decode(st_find(r->in, "q"), r->threads, &q, err)))
        goto done;
    int oom = 0;
    /* One unit is (sequence b, KV head): each K and V row is converted once
     * and serves the grp query heads that share it. */
#pragma omp parallel num_threads(r->threads) reduction(| : oom)
    {
        float *kv = malloc(D * sizeof *kv);
        float *sc = malloc(grp * slen * sizeof *sc);              /* [head][position in split] */
        float *mc = malloc(grp * maxsplits * sizeof *mc);         /* [head][split]: m, then w */
        float *lc = malloc(grp * maxsplits * sizeof *lc);         /* [head][split] */
        float *oc = malloc(grp * maxsplits * D * sizeof *oc);     /* [head][split][d] */
        int ok = kv && sc && mc && lc && oc;
        oom |= !ok;
#pragma omp for schedule(dynamic, 1)
        for (size_t u = 0; u < B * HKV; u++) {
            if (!ok)
                continue;
            size_t b = u / HKV, kvh = u % HKV, h0 = kvh * grp;
            size_t L = (size_t)(int32_t)st_get_bits(cl, cl->data, b);
            size_t len_s = a.split > 0 ? S : L, ns = (L + len_s - 1) / len_s;
            for (size_t c = 0; c < ns; c++) {
                size_t first = c * len_s, len = L - first < len_s ? L - first : len_s;
                float mx[64], l[64]; /* grp <= 64 (checked below) */
                for (size_t g = 0; g < grp; g++)
                    mx[g] = -INFINITY;
                for (size_t i = 0; i < len; i++) {
                    size_t j = first + i;
                    size_t page = (size_t)(int32_t)st_get_bits(bt, bt->data, b * MAXP + j / P);
                    cpu_decode_range(kt, ((page * P + j % P) * HKV + kvh) * D, D, kv);
                    for (size_t g = 0; g < grp; g++) {
                        float qk = cpu_round_to(cpu_seq_dot(q + (b * HQ + h0 + g) * D, kv, D), qkf, 0); /* qk: seq */
                        float sj = a.scale * qk;
                        sc[g * slen + i] = sj;
                        mx[g] = nmax(mx[g], sj);
                    }
                }
                for (size_t g = 0; g < grp; g++) {
                    l[g] = 0.0f;
                    float *o = oc + (g * maxsplits + c) * D;
                    for (size_t d = 0; d < D; d++)
                        o[d] = 0.0f;
                }
                for (size_t i = 0; i < len; i++) {
                    size_t j = first + i;
                    size_t page = (size_t)(int32_t)st_get_bits(bt, bt->data, b * MAXP + j / P);
                    cpu_decode_range(vt, ((page * P + j % P) * HKV + kvh) * D, D, kv);
                    for (size_t g = 0; g < grp; g++) {
                        float p = cpu_exp_cr(sc[g * slen + i] - mx[g]);
                        l[g] = l[g] + p;                                 /* softmax_sum: seq */
                        cpu_axpy(p, kv, oc + (g * maxsplits + c) * D, D); /* pv: seq, per d */
                    }
                }
                for (size_t g = 0; g < grp; g++) {
                    float *o = oc + (g * maxsplits + c) * D;
                    mc[g * maxsplits + c] = mx[g];
                    lc[g * maxsplits + c] = cpu_round_to(l[g], lf, 0);
                    for (size_t d = 0; d < D; d++)
                        o[d] = cpu_round_to(o[d], of, 0);
                }
            }
            for (size_t g = 0; g < grp; g++) {
                float *yr = y + (b * HQ + h0 + g) * D, *m = mc + g * maxsplits, *lv = lc + g * maxsplits;
                const float *o = oc + g * maxsplits * D;
                if (a.split == 0) { /* one split: no combine */
                    for (size_t d = 0; d < D; d++)
                        yr[d] = o[d] / lv[0];
                    continue;
                }
                float M = -INFINITY;
                for (size_t c = 0; c < ns; c++)
                    M = nmax(M, m[c]);
                for (size_t c = 0; c < ns; c++)
                    m[c] = cpu_exp_cr(m[c] - M); /* w_c, in place of m_c */
                /* combine: seq over the splits of w_c * l_c and of w_c * o_c[d] */
                float Ls = 0.0f;
                for (size_t c = 0; c < ns; c++)
                    Ls = fmaf(m[c], lv[c], Ls);
                Ls = cpu_round_to(Ls, cf, 0);
                for (size_t d = 0; d < D; d++) {
                    float O = 0.0f;
                    for (size_t c = 0; c < ns; c++)
                        O = fmaf(m[c], o[c * D + d], O);
                    yr[d] = cpu_round_to(O, cf, 0) / Ls;
                }
            }
        }
        free(kv);
        free(sc);
        free(mc);
        free(lc);
        free(oc);
    }
    if (oom)
        st = nx_err_set(err, NX_ENOMEM, "out of memory (per-thread attention scratch)");
    else
        st = cpu_emit(r->out, "y", a.out, a.pv->point.saturate, 3, (int64_t[]){a.B, a.HQ, a.D}, y, r->threads, err);
done:
    free(q);
    free(y);
    return st;
}

const cpu_kernel cpu_k_attn = {"cpu_paged_attention", "paged_decode_attention",
                               "split = 0; qk, softmax_sum, pv: seq; exp cr", check, run};
const cpu_kernel cpu_k_attn_split = {"cpu_paged_attention_split", "paged_decode_attention",
                                     "split > 0; qk, softmax_sum, pv, combine: seq; exp cr", check, run};
