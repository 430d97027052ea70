/* ocl_gemm.cl: the gemm kernels of the opencl class (docs/opencl.md,
 * docs/families.md#gemm), OpenCL C 1.2, built at run time by the ICD's
 * compiler with the options libparity_opencl.so records in describe().
 *
 * Contraction is off for the whole program: every product that the point
 * fuses is an explicit fma(), every other product and sum is two rounded
 * operations.  (The OpenCL C default is FP_CONTRACT ON; PoCL 3.1 over
 * LLVM 15 then fuses a*b + c into one fma, at every optimisation level and
 * with or without -cl-mad-enable; under the pragma OFF it never does,
 * even with -cl-fast-relaxed-math.  docs/opencl.md.)  The plant
 * `contract` builds this file with PARITY_OCL_CONTRACT defined.
 *
 * Inputs arrive as fp32 (the host converts bf16 and fp16 exactly);
 * outputs leave in the point's `out` format, rounded here (ocl_round.cl).
 *
 *   gemm_seq          k: seq, one fma chain per output, one work-item each
 *   gemm_seq_nofma    k: seq with fma = false: s = s + a*b, two roundings
 *   gemm_split_part   k: split(S, stride(V, seq, pairwise), seq), phase 1:
 *                     one work-item per (output, slice), V private lanes
 *   gemm_split_sum    phase 2: the S partials in slice order from +0
 *   gemm_split_legacy the same tree, one work-item per output doing it all
 *   gemm_wg           k: stride(W, seq, halving): a work-group of W items
 *                     per output, item l reduces terms l, l+W, ... by fma,
 *                     the W partials halved in local memory
 *   gemm_epilogue     t = alpha*acc (+ beta*c) (+ bias), rounded to `out` */
#ifndef PARITY_OCL_CONTRACT
#pragma OPENCL FP_CONTRACT OFF
#endif

#define OCL_MAX_VEC 64

/* pairwise over v[0 .. n), n a power of two (check_params refuses other
 * vec): the tree's h = n/2 halves at every level, i.e. adjacent pairs
 * combined bottom-up: ((v0 + v1) + (v2 + v3)) + ... */
static float pairwise_pow2(float *v, uint n)
{
    for (uint w = n / 2; w >= 1; w /= 2)
        for (uint j = 0; j < w; j++)
            v[j] = v[2 * j] + v[2 * j + 1];
    return v[0];
}

__kernel void gemm_seq(uint M, uint N, uint K, __global const float *a, __global const float *b,
                       __global float *acc)
{
    uint n = get_global_id(0), m = get_global_id(1);
    if (n >= N || m >= M)
        return;
    __global const float *ar = a + (ulong)m * K, *br = b + (ulong)n * K;
    float s = 0.0f; /* k: seq */
    for (uint i = 0; i < K; i++)
        s = fma(ar[i], br[i], s);
    acc[(ulong)m * N + n] = s;
}

__kernel void gemm_seq_nofma(uint M, uint N, uint K, __global const float *a, __global const float *b,
                             __global float *acc)
{
    uint n = get_global_id(0), m = get_global_id(1);
    if (n >= N || m >= M)
        return;
    __global const float *ar = a + (ulong)m * K, *br = b + (ulong)n * K;
    float s = 0.0f; /* k: seq, fma = false: the product rounded, then the sum rounded */
    for (uint i = 0; i < K; i++)
        s = s + ar[i] * br[i];
    acc[(ulong)m * N + n] = s;
}

/* One slice [lo, hi) of a . b by V fma lanes counted from the slice's
 * start, the lanes combined pairwise. */
static float slice_dot(__global const float *ar, __global const float *br, uint lo, uint hi, uint V)
{
    float lane[OCL_MAX_VEC];
    for (uint l = 0; l < V; l++)
        lane[l] = 0.0f;
    for (uint i = lo; i < hi; i++)
        lane[(i - lo) % V] = fma(ar[i], br[i], lane[(i - lo) % V]);
    return pairwise_pow2(lane, V);
}

/* c = ceil(K / S): slice k is [k c, min((k + 1) c, K)), empty past K. */
static void slice_bounds(uint K, uint S, uint k, uint *lo, uint *hi)
{
    ulong c = ((ulong)K + S - 1) / S, l = (ulong)k * c, h = l + c;
    *lo = l < K ? (uint)l : K;
    *hi = h < K ? (uint)h : K;
}

__kernel void gemm_split_part(uint M, uint N, uint K, uint S, uint V, __global const float *a,
                              __global const float *b, __global float *part)
{
    uint n = get_global_id(0), m = get_global_id(1), k = get_global_id(2);
    if (n >= N || m >= M || k >= S)
        return;
    uint lo, hi;
    slice_bounds(K, S, k, &lo, &hi);
    part[(ulong)k * M * N + (ulong)m * N + n] = slice_dot(a + (ulong)m * K, b + (ulong)n * K, lo, hi, V);
}

__kernel void gemm_split_sum(uint MN, uint S, __global const float *part, __global float *acc)
{
    uint r = get_global_id(0);
    if (r >= MN)
        return;
    float s = 0.0f; /* the combinator: seq over the partials from +0 */
    for (uint k = 0; k < S; k++)
        s = s + part[(ulong)k * MN + r];
    acc[r] = s;
}

__kernel void gemm_split_legacy(uint M, uint N, uint K, uint S, uint V, __global const float *a,
                                __global const float *b, __global float *acc)
{
    uint n = get_global_id(0), m = get_global_id(1);
    if (n >= N || m >= M)
        return;
    float s = 0.0f;
    for (uint k = 0; k < S; k++) {
        uint lo, hi;
        slice_bounds(K, S, k, &lo, &hi);
        s = s + slice_dot(a + (ulong)m * K, b + (ulong)n * K, lo, hi, V);
    }
    acc[(ulong)m * N + n] = s;
}

/* Work-group (n, m) of W items (W a power of two): item l reduces the
 * terms l, l + W, ... by fma from +0, then the halving tree over the W
 * partials in local memory: v_j = v_j + v_{j+o} for o = W/2, ..., 1. */
__kernel void gemm_wg(uint M, uint N, uint K, __global const float *a, __global const float *b,
                      __global float *acc, __local float *v)
{
    uint l = get_local_id(0), W = get_local_size(0), n = get_group_id(0), m = get_group_id(1);
    __global const float *ar = a + (ulong)m * K, *br = b + (ulong)n * K;
    float s = 0.0f;
    for (uint i = l; i < K; i += W)
        s = fma(ar[i], br[i], s);
    v[l] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint o = W / 2; o >= 1; o /= 2) {
        if (l < o)
            v[l] = v[l] + v[l + o];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0 && n < N && m < M)
        acc[(ulong)m * N + n] = v[0];
}

/* t = fp32(alpha acc); + fp32(beta c) when use_c; + bias[n] when use_bias;
 * then y = round(t) to out_fmt (0 fp32 into y32, 1 bf16 / 2 fp16 into
 * y16).  Without the pragma (the plant) t + beta*c contracts. */
__kernel void gemm_epilogue(uint M, uint N, __global const float *acc, float alpha, float beta, uint use_c,
                            __global const float *c, uint use_bias, __global const float *bias, uint out_fmt,
                            __global uint *y32, __global ushort *y16)
{
    ulong i = get_global_id(0);
    if (i >= (ulong)M * N)
        return;
    float t = alpha * acc[i];
    if (use_c)
        t = t + beta * c[i];
    if (use_bias)
        t = t + bias[i % N];
    ocl_store(out_fmt, y32, y16, i, t);
}
