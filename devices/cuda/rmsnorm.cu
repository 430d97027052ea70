/* rmsnorm.cu: y = x' * rsqrt(mean(x'^2) + eps) * weight (docs/families.md,
 * rmsnorm), kernel cuda_rmsnorm: one row per CTA of L threads.
 *
 * x' = x, or x + residual rounded once to x's format (fp32 add then one
 *   rounding to fp16/bf16: innocuous double rounding, 24 >= 2p + 2), also
 *   written as residual_out.
 * sumsq: the H terms x' * x' are cut into blocks of V consecutive terms,
 *   block i goes to thread i mod L, each thread runs one fp32 fma chain over
 *   its blocks in order, and the L partials meet in C:
 *   sumsq = stride(L, seq, C, block=V), C = halving (a shared-memory tree,
 *   L a power of two) or tile(32, halving, seq) (a shuffle-down halving in
 *   each warp, then the warp partials added to +0 in warp order).
 * ms = fp32(ss / H); r = rsqrt(fp32(ms + eps)): correctly rounded
 *   (crm_rsqrtf, cr_math.h: binary64 candidate plus an exact midpoint test)
 *   or, when the point declares it, rsqrt.approx.f32;
 *   y = round(fp32(fp32(x' * r) * weight)) to param out.
 * Nothing depends on T or on the row's position. */
#include "cr_math.h"
#include "cu_common.cuh"

/* x'[h] of row `row` (and residual_out when asked). */
__device__ __forceinline__ float rms_xp(const cu_rms_cfg &c, const void *x, const void *res, void *res_out,
                                        size_t i, bool write)
{
    float v = cu_ld(x, i, c.in);
    if (c.residual) {
        cu_cvt to_in = {c.in, CU_RNE, 0};
        v = cu_round(__fadd_rn(v, cu_ld(res, i, c.in)), to_in);
        if (write)
            cu_st(res_out, i, v, c.in);
    }
    return v;
}

__global__ void __launch_bounds__(1024) rms_kernel(cu_rms_cfg c, const void *x, const void *w, const void *res,
                                                   void *y, void *res_out)
{
    __shared__ float sh[1024];
    const long row = blockIdx.x, H = c.H, V = c.V, L = c.L;
    const int t = (int)threadIdx.x;
    const size_t base = (size_t)(row * H);
    float acc = 0.0f;
    /* sumsq = stride(L, seq, C, block=V): blocks t, t + L, ... in order */
    for (long blk = t; blk * V < H; blk += L)
        for (long i = 0; i < V && blk * V + i < H; i++) {
            const float v = rms_xp(c, x, res, res_out, base + (size_t)(blk * V + i), true);
            acc = __fmaf_rn(v, v, acc);
        }
    float ss;
    if (!c.tile_combine) {
        sh[t] = acc;
        ss = cu_block_halving(sh, (int)L); /* C = halving */
    } else {
        acc = cu_warp_halving(acc); /* C = tile(32, halving, seq) */
        if ((t & 31) == 0)
            sh[t >> 5] = acc;
        __syncthreads();
        ss = 0.0f;
        for (long k = 0; k < L / 32; k++)
            ss = __fadd_rn(ss, sh[k]);
    }
    ss = cu_round(ss, c.ss_out);
    const float ms = __fdiv_rn(ss, (float)H);
    const float a = __fadd_rn(ms, c.eps);
    float r;
    if (c.rsqrt_approx)
        asm("rsqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(a));
    else
        r = crm_rsqrtf(a);
    for (long h = t; h < H; h += L) {
        const float v = rms_xp(c, x, res, res_out, base + (size_t)h, false);
        const float o = __fmul_rn(__fmul_rn(v, r), cu_ld(w, (size_t)h, c.in));
        cu_st(y, base + (size_t)h, cu_round(o, c.y_out), c.y_out.fmt);
    }
}

extern "C" int cu_rms_launch(const cu_rms_cfg *c, const cu_rms_args *a, void *stream)
{
    dim3 g(c->main.grid[0], c->main.grid[1], c->main.grid[2]);
    rms_kernel<<<g, c->main.block[0], 0, (cudaStream_t)stream>>>(*c, a->x, a->weight, a->residual, a->y,
                                                                 a->residual_out);
    return (int)cudaGetLastError();
}
