/* ocl_norm.cl: the rmsnorm and softmax kernels of the opencl class
 * (docs/opencl.md; docs/families.md#rmsnorm, #softmax).  One work-group of
 * V work-items (V = param vec, a power of two) per token: work-item l is
 * lane l of the declared tree stride(V, seq, pairwise), it takes the
 * elements i = l, l + V, ... of the row; the V lane partials meet in local
 * memory and work-item 0 combines them pairwise.  Built after
 * ocl_round.cl and ocl_math.cl, contraction off.
 *
 *   rmsnorm       x' = x, or round_in(x + residual) (also residual_out);
 *                 ss = sumsq of x'*x' (fma lanes); ms = fp32(ss / H);
 *                 r = rsqrt_cr(fp32(ms + eps)); y = fp32(fp32(x' r) w)
 *   softmax       m = max x (a NaN wins); e = exp_cr(fp32(x - m));
 *                 s = sum of the e (lanes of + over values); y = fp32(e / s)
 *
 * The divisions are IEEE's correctly rounded ones: the program is built
 * with -cl-fp32-correctly-rounded-divide-sqrt. */
#pragma OPENCL FP_CONTRACT OFF

/* pairwise over the V lane partials, V a power of two: adjacent pairs
 * bottom-up, which is the tree's h = ceil(n/2) recursion for such V */
static float lanes_pairwise(__local float *v, uint V)
{
    for (uint w = V / 2; w >= 1; w /= 2)
        for (uint j = 0; j < w; j++)
            v[j] = v[2 * j] + v[2 * j + 1];
    return v[0];
}

/* xw: x' per element (fp32, the kernel's scratch; equal to x without a
 * residual); res_fmt: the `in` format x' is rounded to after the add. */
__kernel void rmsnorm(uint T, uint H, float eps, uint use_res, uint in_fmt, __global const float *x,
                      __global const float *res, __global const float *w, __global float *xw, uint out_fmt,
                      __global uint *y32, __global ushort *y16, __global uint *r32, __global ushort *r16,
                      __local float *lane)
{
    uint l = get_local_id(0), V = get_local_size(0), t = get_group_id(0);
    __local float rs;
    if (t >= T)
        return;
    ulong base = (ulong)t * H;
    float acc = 0.0f; /* lane l of stride(V, seq, pairwise) */
    for (uint i = l; i < H; i += V) {
        float v = x[base + i];
        if (use_res) {
            v = v + res[base + i]; /* one fp32 addition, then the rounding to `in`: */
            if (in_fmt == OCL_BF16)           /* double rounding through fp32 is */
                v = as_float((uint)ocl_bf16_rne(v) << 16); /* innocuous for p <= 11 */
            else if (in_fmt == OCL_FP16)
                v = ocl_fp16_value(ocl_fp16_rne(v));
            ocl_store(in_fmt, r32, r16, base + i, v);
        }
        xw[base + i] = v;
        acc = fma(v, v, acc);
    }
    lane[l] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l == 0) {
        float ss = lanes_pairwise(lane, V);
        float ms = ss / (float)H;
        rs = ocl_rsqrt_cr(ms + eps);
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    float r = rs;
    for (uint i = l; i < H; i += V) {
        float v = xw[base + i] * r;
        ocl_store(out_fmt, y32, y16, base + i, v * w[i]);
    }
}

/* e: the exponentials per element (fp32 scratch). */
__kernel void softmax(uint T, uint H, __global const float *x, __global float *e, uint out_fmt,
                      __global uint *y32, __global ushort *y16, __local float *lane)
{
    uint l = get_local_id(0), V = get_local_size(0), t = get_group_id(0);
    __local float mrow, srow;
    if (t >= T)
        return;
    ulong base = (ulong)t * H;
    float m = -INFINITY;
    for (uint i = l; i < H; i += V) { /* a NaN, once met, stays: NaN > m is false */
        float v = x[base + i];
        m = isnan(v) || v > m ? v : m;
    }
    lane[l] = m;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l == 0) {
        float mm = -INFINITY;
        for (uint j = 0; j < V; j++)
            mm = isnan(lane[j]) || lane[j] > mm ? lane[j] : mm;
        mrow = mm; /* the exact maximum (its sign of zero does not reach y) */
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    m = mrow;
    float s = 0.0f; /* lane l of stride(V, seq, pairwise) over values */
    for (uint i = l; i < H; i += V) {
        float ei = ocl_exp_cr(x[base + i] - m);
        e[base + i] = ei;
        s = s + ei;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    lane[l] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l == 0)
        srow = lanes_pairwise(lane, V);
    barrier(CLK_LOCAL_MEM_FENCE);
    s = srow;
    for (uint i = l; i < H; i += V)
        ocl_store(out_fmt, y32, y16, base + i, e[base + i] / s);
}
