/* cpu_dot.c: the dot products several families share, in the two orders
 * the cpu points use most: seq (one fmaf chain) and stride(V, seq,
 * pairwise) (V fmaf lanes, combined pairwise).  CPU_HOT: see cpu_internal.h. */
#include "cpu_internal.h"

/* k: seq */
CPU_HOT float cpu_seq_dot(const float *a, const float *b, size_t n)
{
    float s = 0.0f;
    for (size_t i = 0; i < n; i++)
        s = fmaf(a[i], b[i], s);
    return s;
}

/* k: stride(V, seq, pairwise) */
CPU_HOT float cpu_strided_dot(const float *a, const float *b, size_t n, size_t V)
{
    float lane[CPU_MAX_VEC];
    for (size_t l = 0; l < V; l++)
        lane[l] = 0.0f;
    if (V == 8)
        cpu_lanes_fma(lane, a, b, n, 8);
    else
        cpu_lanes_fma(lane, a, b, n, V);
    return cpu_pairwise(lane, V);
}

/* k: seq for 8 outputs at once: out[j] = seq over i of a[i] * bt[i][j]
 * (bt packed [n][8]); the 8 chains advance together, each in order. */
CPU_HOT void cpu_seq_dot8(const float *a, const float *bt, size_t n, float *out)
{
    float s[8];
    for (size_t j = 0; j < 8; j++)
        s[j] = 0.0f;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < 8; j++)
            s[j] = fmaf(a[i], bt[i * 8 + j], s[j]);
    for (size_t j = 0; j < 8; j++)
        out[j] = s[j];
}

void cpu_pack8(const st_tensor *t, size_t first_row, size_t nrows, size_t n, float *row, float *bt)
{
    for (size_t j = 0; j < 8; j++) {
        if (j < nrows)
            cpu_decode_range(t, (first_row + j) * n, n, row);
        for (size_t i = 0; i < n; i++)
            bt[i * 8 + j] = j < nrows ? row[i] : 0.0f;
    }
}

/* o[d] = fmaf(p, v[d], o[d]) for every d: one step of D independent chains. */
CPU_HOT void cpu_axpy(float p, const float *v, float *o, size_t D)
{
    for (size_t d = 0; d < D; d++)
        o[d] = fmaf(p, v[d], o[d]);
}
