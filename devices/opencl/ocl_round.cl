/* ocl_round.cl: fp32 -> bf16 / fp16 in round to nearest even by integer
 * bit manipulation, as a kernel's epilogue does it, and the store of a
 * result in the point's `out` format.  NaN results are the canonical
 * quiet NaN with sign 0 (docs/numerics.md §2): 0x7fc00000, 0x7fc0, 0x7e00.
 * No saturation: an overflow is IEEE's infinity (the points declare
 * saturate = false).  Included first by every program. */

#define OCL_FP32 0u
#define OCL_BF16 1u
#define OCL_FP16 2u

static ushort ocl_bf16_rne(float f)
{
    uint u = as_uint(f);
    if (isnan(f))
        return (ushort)0x7fc0;
    /* add half an ulp minus one, plus the kept lsb (ties to even), and cut;
     * a carry into the exponent is the right result, up to infinity */
    return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static ushort ocl_fp16_rne(float f)
{
    uint u = as_uint(f);
    if (isnan(f))
        return (ushort)0x7e00;
    uint sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    int e = (int)(a >> 23) - 127;
    uint mant = a & 0x7fffffu;
    if (e >= 16) /* |f| >= 2^16, infinity included: beyond fp16's range */
        return (ushort)(sign | 0x7c00u);
    if (e >= -14) { /* fp16 normal range: 13 bits dropped */
        uint h = ((uint)(e + 15) << 10) | (mant >> 13), rem = mant & 0x1fffu;
        if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
            h++; /* a carry rounds up to the next binade, or to infinity */
        return (ushort)(sign | h);
    }
    if (e < -25 || a == 0) /* below 2^-25, half the least subnormal: +-0 (2^-25 itself ties to 0 below) */
        return (ushort)sign;
    /* subnormal: the value in units of 2^-24 is m 2^(e + 1), e + 1 <= -14 */
    uint m = mant | 0x800000u, s = (uint)(-(e + 1)); /* 14 <= s <= 24 */
    uint q = m >> s, rem = m & ((1u << s) - 1u), mid = 1u << (s - 1u);
    if (rem > mid || (rem == mid && (q & 1u)))
        q++; /* q = 0x400 is the least normal: right */
    return (ushort)(sign | q);
}

/* An fp16 pattern's value, exactly. */
static float ocl_fp16_value(ushort h)
{
    uint sign = ((uint)h & 0x8000u) << 16, e = ((uint)h >> 10) & 0x1fu, m = (uint)h & 0x3ffu;
    if (e == 0u) /* zero or subnormal: m 2^-24, exact in fp32 */
        return as_float(sign | as_uint((float)m * 0x1p-24f));
    if (e == 31u)
        return as_float(sign | 0x7f800000u | (m << 13));
    return as_float(sign | ((e + 112u) << 23) | (m << 13));
}

static void ocl_store(uint fmt, __global uint *y32, __global ushort *y16, ulong i, float t)
{
    if (fmt == OCL_FP32)
        y32[i] = isnan(t) ? 0x7fc00000u : as_uint(t);
    else if (fmt == OCL_BF16)
        y16[i] = ocl_bf16_rne(t);
    else
        y16[i] = ocl_fp16_rne(t);
}
