/* cpu_moe_grouped_gemm.c: top-k mixture-of-experts kernels
 * (docs/families.md, moe_grouped_gemm; docs/cpu-backend.md).
 *
 *   cpu_moe_grouped      k: seq over H;                      combine: seq over j
 *   cpu_moe_grouped_vec  k: stride(V, seq, pairwise) over H; combine: seq over j
 *
 * h_j[t, n] = x[t, :] . w[topk_ids[t, j], n, :] rounded to the k point's out
 * (bf16); y[t, n] = fmaf chain over j = 0 .. topk-1 of topk_weights[t, j] *
 * h_j[t, n] from +0, rounded to the combine point's out.  The expert GEMMs
 * run grouped by expert (OpenMP over expert x 8 output columns, the
 * expert's weight rows converted once, every token routed to it); the
 * combine runs over tokens.  Neither changes any output's order. */
#include "cpu_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct moe_args {
    long T, E, H, N, topk, vec;
    nx_fmt in;
    const fam_reduction *k, *combine;
} moe_args;

static nx_status numerics(const fam_spec *s, moe_args *m, nx_err *err)
{
    nx_status st;
    if ((st = cpu_fmt(s, "in", FAM_DEFAULT_FMT, &m->in, err)) || (st = cpu_vec(s, &m->vec, err)))
        return st;
    if (!cpu_fmt_readable(m->in))
        return nx_err_set(err, NX_EUNSUPPORTED, "cpu: moe_grouped_gemm does not read in = %s", nx_format(m->in)->name);
    return NX_OK;
}

static nx_status check(const fam_spec *s, const cpu_kernel *k, nx_err *err)
{
    moe_args m;
    nx_status st = numerics(s, &m, err);
    if (st)
        return st;
    char tree[64];
    if (k == &cpu_k_moe_grouped)
        snprintf(tree, sizeof tree, "seq");
    else
        snprintf(tree, sizeof tree, "stride(%ld, seq, pairwise)", m.vec);
    if ((st = cpu_check_red(s, k, "k", tree, 0, &m.k, err)))
        return st;
    return cpu_check_red(s, k, "combine", "seq", 0, &m.combine, err);
}

static nx_status run(const cpu_run *r, nx_err *err)
{
    const fam_spec *s = r->spec;
    moe_args m;
    nx_status st;
    if ((st = numerics(s, &m, err)) || (st = cpu_dim(s, "T", -1, &m.T, err)) || (st = cpu_dim(s, "E", -1, &m.E, err)) ||
        (st = cpu_dim(s, "H", -1, &m.H, err)) || (st = cpu_dim(s, "N", -1, &m.N, err)) ||
        (st = cpu_dim(s, "topk", -1, &m.topk, err)))
        return st;
    m.k = fam_reduction_get(s, "k");
    m.combine = fam_reduction_get(s, "combine");
    size_t T = (size_t)m.T, E = (size_t)m.E, H = (size_t)m.H, N = (size_t)m.N, TK = (size_t)m.topk, V = (size_t)m.vec;
    int vec = r->kernel == &cpu_k_moe_grouped_vec;
    nx_fmt hf = cpu_red_out(m.k), yf = cpu_red_out(m.combine);
    int hsat = m.k->point.saturate;
    const st_tensor *ids = st_find(r->in, "topk_ids"), *wt = st_find(r->in, "w");
    float *x = NULL, *tw = NULL, *y = malloc(T * N * sizeof *y), *h = malloc(T * TK * N * sizeof *h);
    size_t *first = calloc(E + 1, sizeof *first), *pairs = malloc(T * TK * sizeof *pairs);
    if (!y || !h || !first || !pairs) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto done;
    }
    if ((st = cpu_decode(st_find(r->in, "x"), r->threads, &x, err)) ||
        (st = cpu_decode(st_find(r->in, "topk_weights"), r->threads, &tw, err)))
        goto done;
    /* group the (token, slot) pairs by expert, in token order: pairs[first[e] .. first[e+1]) */
    for (size_t tj = 0; tj < T * TK; tj++)
        first[(size_t)(int32_t)st_get_bits(ids, ids->data, tj) + 1]++;
    for (size_t e = 0; e < E; e++)
        first[e + 1] += first[e];
    {
        size_t *fill = malloc(E * sizeof *fill);
        if (!fill) {
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
            goto done;
        }
        memcpy(fill, first, E * sizeof *fill);
        for (size_t tj = 0; tj < T * TK; tj++)
            pairs[fill[(size_t)(int32_t)st_get_bits(ids, ids->data, tj)]++] = tj;
        free(fill);
    }
    int oom = 0;
    size_t nblk = (N + 7) / 8;
    /* the expert GEMMs: one expert's 8 output columns per unit, packed once */
#pragma omp parallel num_threads(r->threads) reduction(| : oom)
    {
        float *row = malloc(H * sizeof *row), *bt = malloc(8 * H * sizeof *bt);
        oom |= !row || !bt;
#pragma omp for schedule(dynamic, 4)
        for (size_t u = 0; u < E * nblk; u++) {
            size_t e = u / nblk, n0 = (u % nblk) * 8, nb = N - n0 < 8 ? N - n0 : 8;
            if (!row || !bt || first[e] == first[e + 1])
                continue;
            if (!vec)
                cpu_pack8(wt, e * N + n0, nb, H, row, bt);
            for (size_t j = 0; j < nb; j++) {
                if (vec)
                    cpu_decode_range(wt, (e * N + n0 + j) * H, H, bt + j * H);
            }
            for (size_t pi = first[e]; pi < first[e + 1]; pi++) {
                size_t tj = pairs[pi], t = tj / TK;
                float h8[8];
                if (!vec) /* k: seq, 8 columns side by side */
                    cpu_seq_dot8(x + t * H, bt, H, h8);
                else      /* k: stride(V, seq, pairwise) */
                    for (size_t j = 0; j < nb; j++)
                        h8[j] = cpu_strided_dot(x + t * H, bt + j * H, H, V);
                for (size_t j = 0; j < nb; j++)
                    h[tj * N + n0 + j] = cpu_round_to(h8[j], hf, hsat);
            }
        }
        free(row);
        free(bt);
    }
    if (oom) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory (packed expert weights)");
        goto done;
    }
    /* combine: seq over j of topk_weights[t, j] * h_j[t, n], fmaf from +0 */
#pragma omp parallel for num_threads(r->threads) schedule(static)
    for (size_t t = 0; t < T; t++)
        for (size_t n = 0; n < N; n++) {
            float acc = 0.0f;
            for (size_t j = 0; j < TK; j++)
                acc = fmaf(tw[t * TK + j], h[(t * TK + j) * N + n], acc);
            y[t * N + n] = acc;
        }
    st = cpu_emit(r->out, "y", yf, m.combine->point.saturate, 2, (int64_t[]){m.T, m.N}, y, r->threads, err);
done:
    free(x);
    free(tw);
    free(y);
    free(h);
    free(first);
    free(pairs);
    return st;
}

const cpu_kernel cpu_k_moe_grouped = {"cpu_moe_grouped", "moe_grouped_gemm", "k: seq; combine: seq", check, run};
const cpu_kernel cpu_k_moe_grouped_vec = {"cpu_moe_grouped_vec", "moe_grouped_gemm",
                                          "k: stride(V, seq, pairwise); combine: seq", check, run};
