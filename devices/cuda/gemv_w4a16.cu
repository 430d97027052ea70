/* gemv_w4a16.cu: y[b, n] = x[b, :] . w[n, :] with int4 weights and fp16
 * group scales (docs/families.md, gemv_w4a16), one warp per output (b, n)
 * and K slice.
 *
 * per_element (kernel cuda_gemv_w4a16_dequant): w = fp16((q - z) * s); the
 *   K terms x * w of a slice are cut into blocks of V = 8 consecutive terms
 *   (one 16-byte load of x, one 8-byte load of q), block i of the slice goes
 *   to lane i mod 32, each lane runs one fp32 fma chain over its blocks in
 *   increasing order, and the 32 lane partials meet in a shuffle-down
 *   halving:  k = stride(32, seq, halving, block=8).
 * per_group (kernel cuda_gemv_w4a16_grouped): group g of the slice goes to
 *   lane g mod 32; the lane reduces the group's G terms x * (q - z) in one
 *   fp32 fma chain (group = seq), u_g = fp32(p_g * s_g), and adds its u_g in
 *   increasing g (seq); the lanes meet in the halving:
 *   k = stride(32, seq, halving) over the K / G values u_g.
 * qweight and zeros are int4, one per byte or (param packed) two per byte,
 * low nibble first, each row on whole bytes (family/fam_int4.h).
 * Split-K (the k tree split(S, <the stride tree>, seq)): slice k is terms
 *   (groups) [k c, min((k + 1) c, n)), c = ceil(n / S) rounded up to the
 *   tree's align; each slice is reduced from scratch by its own warp into
 *   ws[k][b][n], and gemv_combine adds the S partials to +0 in slice order
 *   (the `seq` combinator).  S comes from the point, never from B. */
#include "cu_common.cuh"

/* Value i of an int4 row: one per byte, or two with `packed` (element 2j in
 * the low nibble of byte j; family/fam_int4.h). */
__device__ __forceinline__ int gemv_u4(const uint8_t *row, long i, int packed)
{
    return packed ? (int)((row[i >> 1] >> ((i & 1) << 2)) & 15u) : (int)row[i];
}

/* 8 values of a row from k0: one 8-byte load (one per byte) or one 4-byte
 * load (packed), when the address allows it; else value by value. */
__device__ __forceinline__ void gemv_u4x8(const uint8_t *row, long k0, int packed, uint8_t *qv)
{
    if (!packed && ((size_t)(row + k0) & 7) == 0) {
        uint2 qq = *(const uint2 *)(row + k0);
        memcpy(qv, &qq, 8);
    } else if (packed && (k0 & 1) == 0 && ((size_t)(row + k0 / 2) & 3) == 0) {
        uint32_t qq = *(const uint32_t *)(row + k0 / 2);
        for (int e = 0; e < 8; e++)
            qv[e] = (uint8_t)((qq >> (4 * e)) & 15u);
    } else {
        for (int e = 0; e < 8; e++)
            qv[e] = (uint8_t)gemv_u4(row, k0 + e, packed);
    }
}

/* x * w for the 8 terms k0 .. k0+7 (full and aligned) or fewer (scalar). */
__global__ void __launch_bounds__(128) gemv_elem_kernel(cu_gemv_cfg c, const uint16_t *__restrict__ x,
                                                        const uint8_t *__restrict__ q,
                                                        const uint16_t *__restrict__ scales,
                                                        const uint8_t *__restrict__ zeros, void *y, float *ws)
{
    const int lane = (int)(threadIdx.x & 31);
    const long n = (long)blockIdx.x * (blockDim.x / 32) + (long)(threadIdx.x >> 5);
    const long b = blockIdx.y, slice = blockIdx.z;
    if (n >= c.N)
        return; /* whole warps leave together: n is uniform in a warp */
    const long K = c.K, G = c.G, ng = K / G, V = c.V;
    const long start = slice * c.slice, end = start + c.slice < K ? start + c.slice : K;
    const uint16_t *xr = x + b * K;
    const int pk = c.packed;
    const uint8_t *qr = q + n * (pk ? (K + 1) / 2 : K);
    const uint8_t *zr = zeros ? zeros + n * (pk ? (ng + 1) / 2 : ng) : NULL;
    float acc = 0.0f; /* +0: a lane without blocks gives +0 */
    const long nterms = end > start ? end - start : 0, nblk = (nterms + V - 1) / V;
    for (long blk = lane; blk < nblk; blk += 32) {
        /* k = stride(32, seq, halving, block=V): this lane's blocks, in order */
        const long k0 = start + blk * V;
        const long kn = end - k0 < V ? end - k0 : V;
        uint16_t xv[8];
        uint8_t qv[8];
        if (V == 8 && kn == 8 && ((b * K + k0) & 7) == 0) {
            uint4 xx = *(const uint4 *)(xr + k0); /* 16-byte load: 8 fp16 */
            memcpy(xv, &xx, 16);
            gemv_u4x8(qr, k0, pk, qv);
        } else {
            for (long i = 0; i < kn && i < 8; i++) {
                xv[i] = xr[k0 + i];
                qv[i] = (uint8_t)gemv_u4(qr, k0 + i, pk);
            }
        }
        for (long i = 0; i < kn; i++) {
            const long k = k0 + i, g = k / G;
            const int z = zr ? gemv_u4(zr, g, pk) : 8;
            const float s = cu_h2f(scales[n * ng + g]);
            const int qi = i < 8 ? (int)qv[i] : gemv_u4(qr, k, pk);
            const float xi = i < 8 ? cu_h2f(xv[i]) : cu_h2f(xr[k]);
            /* w = fp16((q - z) * s): the fp32 product is exact (4 x 11 bits) */
            const float w = __half2float(__float2half_rn(__fmul_rn((float)(qi - z), s)));
            acc = __fmaf_rn(xi, w, acc);
        }
    }
    acc = cu_warp_halving(acc); /* the halving combinator of stride(32, ...) */
    if (lane == 0) {
        if (c.has_split)
            ws[(slice * c.B + b) * c.N + n] = acc;
        else
            cu_st(y, (size_t)(b * c.N + n), cu_round(acc, c.y_out), c.y_out.fmt);
    }
}

__global__ void __launch_bounds__(128) gemv_group_kernel(cu_gemv_cfg c, const uint16_t *__restrict__ x,
                                                         const uint8_t *__restrict__ q,
                                                         const uint16_t *__restrict__ scales,
                                                         const uint8_t *__restrict__ zeros, void *y, float *ws)
{
    const int lane = (int)(threadIdx.x & 31);
    const long n = (long)blockIdx.x * (blockDim.x / 32) + (long)(threadIdx.x >> 5);
    const long b = blockIdx.y, slice = blockIdx.z;
    if (n >= c.N)
        return;
    const long K = c.K, G = c.G, ng = K / G;
    const long start = slice * c.slice, end = start + c.slice < ng ? start + c.slice : ng;
    float acc = 0.0f;
    const int pk = c.packed;
    const uint8_t *qr = q + n * (pk ? (K + 1) / 2 : K);
    const uint8_t *zr = zeros ? zeros + n * (pk ? (ng + 1) / 2 : ng) : NULL;
    /* k = stride(32, seq, halving) over the groups of the slice: group
     * start + i goes to lane i mod 32, in increasing order */
    for (long g = start + lane; g < end; g += 32) {
        const int z = zr ? gemv_u4(zr, g, pk) : 8;
        const uint16_t *xg = x + b * K + g * G;
        const long k0 = g * G; /* the group's first value in the row */
        float p = 0.0f;        /* group = seq: one fma chain over the group's terms */
        long i = 0;
        if (((b * K + g * G) & 7) == 0) {
            for (; i + 8 <= G; i += 8) {
                uint4 xx = *(const uint4 *)(xg + i);
                uint16_t xv[8];
                uint8_t qv[8];
                memcpy(xv, &xx, 16);
                gemv_u4x8(qr, k0 + i, pk, qv);
                for (int e = 0; e < 8; e++)
                    p = __fmaf_rn(cu_h2f(xv[e]), (float)((int)qv[e] - z), p);
            }
        }
        for (; i < G; i++)
            p = __fmaf_rn(cu_h2f(xg[i]), (float)(gemv_u4(qr, k0 + i, pk) - z), p);
        p = cu_round(p, c.group_out);
        const float u = __fmul_rn(p, cu_h2f(scales[n * ng + g])); /* u_g = fp32(p_g * s_g) */
        acc = __fadd_rn(acc, u);                                   /* the lane's seq over its u_g */
    }
    acc = cu_warp_halving(acc);
    if (lane == 0) {
        if (c.has_split)
            ws[(slice * c.B + b) * c.N + n] = acc;
        else
            cu_st(y, (size_t)(b * c.N + n), cu_round(acc, c.y_out), c.y_out.fmt);
    }
}

/* The `seq` combinator of split(S, ..., seq): +0, then each slice partial
 * in slice order, one fp32 rounding each; then k's out conversion. */
__global__ void gemv_combine_kernel(cu_gemv_cfg c, const float *__restrict__ ws, void *y)
{
    const long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= c.B * c.N)
        return;
    float s = 0.0f;
    for (long k = 0; k < c.S; k++)
        s = __fadd_rn(s, ws[k * c.B * c.N + i]);
    cu_st(y, (size_t)i, cu_round(s, c.y_out), c.y_out.fmt);
}

extern "C" int cu_gemv_launch(const cu_gemv_cfg *c, const cu_gemv_args *a, void *stream)
{
    cudaStream_t st = (cudaStream_t)stream;
    dim3 g(c->main.grid[0], c->main.grid[1], c->main.grid[2]), bl(c->main.block[0]);
    const uint16_t *x = (const uint16_t *)a->x, *s = (const uint16_t *)a->scales;
    const uint8_t *q = (const uint8_t *)a->qweight, *z = (const uint8_t *)a->zeros;
    if (c->per_group)
        gemv_group_kernel<<<g, bl, 0, st>>>(*c, x, q, s, z, a->y, a->ws);
    else
        gemv_elem_kernel<<<g, bl, 0, st>>>(*c, x, q, s, z, a->y, a->ws);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess || !c->has_split)
        return (int)e;
    gemv_combine_kernel<<<c->combine.grid[0], c->combine.block[0], 0, st>>>(*c, a->ws, a->y);
    return (int)cudaGetLastError();
}
