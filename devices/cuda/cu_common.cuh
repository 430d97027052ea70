/* cu_common.cuh: device helpers the family kernels share: element loads by
 * format, the rounding of an fp32 value into a reduction's or the output's
 * format (cu_cvt), canonical NaN stores, the NaN-propagating max, and the
 * warp and block halving trees.
 *
 * Everything is compiled with -fmad=false and uses the _rn intrinsics, so
 * no multiply and add is ever contracted: every rounding the kernels make is
 * one written here or in the family file. */
#ifndef PARITY_CU_COMMON_CUH
#define PARITY_CU_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "cuda_kernels.h"

#define CU_FULL_MASK 0xffffffffu

__device__ __forceinline__ float cu_h2f(uint16_t b)
{
    return __half2float(__ushort_as_half(b));
}

__device__ __forceinline__ float cu_bf2f(uint16_t b)
{
    return __uint_as_float((uint32_t)b << 16); /* exact, NaN payload kept */
}

/* Element i of a tensor of format fmt, as its (exact) fp32 value. */
__device__ __forceinline__ float cu_ld(const void *p, size_t i, int fmt)
{
    if (fmt == CU_FP32)
        return ((const float *)p)[i];
    uint16_t b = ((const uint16_t *)p)[i];
    return fmt == CU_FP16 ? cu_h2f(b) : cu_bf2f(b);
}

/* Bits of a 16-bit element as fp32. */
__device__ __forceinline__ float cu_16(uint16_t b, int fmt)
{
    return fmt == CU_FP16 ? cu_h2f(b) : cu_bf2f(b);
}

__device__ __forceinline__ float cu_inf_like(float v, float maxf, int saturate)
{
    return saturate ? copysignf(maxf, v) : v;
}

/* v rounded once to c.fmt in c.mode (docs/numerics.md §2), returned as the
 * (exact) fp32 value of the result.  Saturation: an overflow or an infinite
 * value gives +-max finite (the reference's nx_round_inf/overflow). */
__device__ __forceinline__ float cu_round(float v, cu_cvt c)
{
    if (v != v)
        return v;
    float r;
    if (c.fmt == CU_FP32) {
        r = v;
        return isinf(r) ? cu_inf_like(r, 0x1.fffffep127f, c.saturate) : r;
    }
    if (c.fmt == CU_FP16) {
        __half h;
        switch (c.mode) {
        case CU_RZ: h = __float2half_rz(v); break;
        case CU_RU: h = __float2half_ru(v); break;
        case CU_RD: h = __float2half_rd(v); break;
        default: h = __float2half_rn(v); break;
        }
        r = __half2float(h);
        return isinf(r) ? cu_inf_like(r, 65504.0f, c.saturate) : r;
    }
    __nv_bfloat16 h;
    switch (c.mode) {
    case CU_RZ: h = __float2bfloat16_rz(v); break;
    case CU_RU: h = __float2bfloat16_ru(v); break;
    case CU_RD: h = __float2bfloat16_rd(v); break;
    default: h = __float2bfloat16_rn(v); break;
    }
    r = __bfloat162float(h);
    return isinf(r) ? cu_inf_like(r, 0x1.fep127f, c.saturate) : r;
}

/* Stores v, a member of fmt (already rounded by cu_round), as element i;
 * NaN as the format's canonical quiet NaN (docs/numerics.md §2). */
__device__ __forceinline__ void cu_st(void *p, size_t i, float v, int fmt)
{
    if (fmt == CU_FP32) {
        ((uint32_t *)p)[i] = v != v ? 0x7fc00000u : __float_as_uint(v);
        return;
    }
    uint16_t b;
    if (v != v)
        b = fmt == CU_FP16 ? 0x7e00u : 0x7fc0u;
    else if (fmt == CU_FP16)
        b = __half_as_ushort(__float2half_rn(v)); /* exact */
    else
        b = (uint16_t)(__float_as_uint(v) >> 16); /* exact: the low 16 bits are zero */
    ((uint16_t *)p)[i] = b;
}

/* max with NaN propagation (the reference's nmax).  The sign of a zero
 * maximum is never observable: only exp(s - m) and exp(m_c - M) use it. */
__device__ __forceinline__ float cu_nanmax(float a, float b)
{
    if (a != a || b != b)
        return __uint_as_float(0x7fc00000u);
    return b > a ? b : a;
}

/* `halving` over the 32 lanes of a warp (docs/numerics.md §4): for o = 16, 8, 4,
 * 2, 1: v_j = round(v_j + v_{j+o}) for j < o.  Lane 0 ends with the result. */
__device__ __forceinline__ float cu_warp_halving(float v)
{
    for (int o = 16; o >= 1; o >>= 1)
        v = __fadd_rn(v, __shfl_down_sync(CU_FULL_MASK, v, o));
    return v;
}

/* `halving` over the n (a power of two) values sh[0 .. n) in shared memory,
 * by threads 0 .. n-1 of the block; every thread of the block must call it.
 * Returns the result to every thread. */
__device__ __forceinline__ float cu_block_halving(float *sh, int n)
{
    __syncthreads();
    for (int o = n / 2; o >= 1; o >>= 1) {
        int t = (int)threadIdx.x;
        if (t < o)
            sh[t] = __fadd_rn(sh[t], sh[t + o]);
        __syncthreads();
    }
    float r = sh[0];
    __syncthreads();
    return r;
}

#endif
