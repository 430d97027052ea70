/* paged_decode_attention.cu: one decode step over a paged KV cache with GQA
 * and split-KV (docs/families.md, paged_decode_attention), kernel
 * cuda_paged_attention: one CTA of 128 threads (4 warps) per (sequence b,
 * query head h, split c); query head h reads KV head h / (HQ / HKV);
 * position j lives in page block_table[b, j / P], slot j % P.
 *
 * A split is positions [c split, min((c + 1) split, L)) (split = 0: one
 * split of all L); the split size is the point's param, never derived from
 * the batch.  Positions are numbered from the split's first (i = 0, 1, ..)
 * and each reduction runs one of the trees the point may declare (the
 * template is chosen on the host, cuda_plan.c; POINTS.md lists them):
 *   qk_j  over D:  seq (one thread per position), or
 *                  stride(TG, seq, halving, block=V): TG threads per
 *                  position, lane l of the group takes the V-term blocks
 *                  l, l + TG, .. of q.k in order, the TG partials meet in a
 *                  shuffle-down halving;
 *   s_j = fp32(scale * qk_j);  m = max s_j (exact, NaN propagates);
 *   p_j = exp(fp32(s_j - m)): correctly rounded (crm_expf) or the declared
 *         approximation ex2.approx.ftz.f32(fp32(x * log2 e));
 *   l over the p_j: seq (thread 0, in order), or stride(128, seq, C):
 *         position i to thread i mod 128, each thread adds its p_j in
 *         order to +0, C = halving (shared memory) or tile(32, halving,
 *         seq) (warp shuffles, then the 4 warp partials in order);
 *   o[d] over the positions, terms p_j * v_j[d]: seq (thread d, one fma
 *         chain over the split), or stride(4, seq, seq, block=Q): warp w
 *         takes the Q-position blocks w, w + 4, .. in order, and the 4 warp
 *         partials of o[d] are added to +0 in warp order.
 * Without split y[d] = round(fp32(o[d] / l)) to param out.  With split the
 * CTA writes (m, l, o[]) to the workspace and attn_combine, one CTA per
 * (b, h), combines the splits in split order: M = max m_c, w_c =
 * exp(fp32(m_c - M)), L = combine over c of w_c * l_c = seq (fma chain from
 * +0), O[d] = combine of w_c * o_c[d] = seq, y[d] = round(fp32(O[d] / L)).
 * Every reduction result passes its point's out conversion. */
#include "cr_math.h"
#include "cu_common.cuh"

#define ATTN_WARPS (CU_ATTN_THREADS / 32)

__device__ __forceinline__ float attn_exp(float x, int approx)
{
    if (!approx)
        return crm_expf(x);
    float y, t = __fmul_rn(x, 0x1.715476p+0f); /* fp32(x * log2 e) */
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(t));
    return y;
}

/* Offset of (position j, KV head kvh, element 0) in the caches. */
__device__ __forceinline__ size_t attn_kv(const cu_attn_cfg &c, const int32_t *bt, long b, long j, long kvh)
{
    const long page = bt[b * c.MAXP + j / c.P];
    return (size_t)(((page * c.P + j % c.P) * c.HKV + kvh) * c.D);
}

__global__ void __launch_bounds__(CU_ATTN_THREADS)
    attn_split_kernel(cu_attn_cfg c, const void *q, const void *kc, const void *vc, const int32_t *bt,
                      const int32_t *cl, float *prob, float *part, void *y)
{
    extern __shared__ float pvsh[]; /* pv = stride(4, ...): the warps' partials, [4][D] */
    __shared__ float sh[CU_ATTN_THREADS];
    const long b = blockIdx.z, h = blockIdx.y, cs = blockIdx.x;
    const int t = (int)threadIdx.x, lane = t & 31, warp = t >> 5;
    const long L = cl[b], S = c.split > 0 ? c.split : L;
    const long first = cs * S;
    if (first >= L)
        return; /* uniform in the CTA: this split is past the sequence's end */
    const long len = L - first < S ? L - first : S;
    const long D = c.D, kvh = h / (c.HQ / c.HKV);
    const size_t qoff = (size_t)((b * c.HQ + h) * D);
    float *p = prob + (size_t)((b * c.HQ + h) * c.MAXP * c.P + first);

    /* scores: qk = seq (TG = 1) or stride(TG, seq, halving, block=V) */
    const int TG = c.qk_tg;
    const long V = c.qk_v, per = CU_ATTN_THREADS / TG;
    const int gid = t / TG, gl = t % TG;
    float mx = -__int_as_float(0x7f800000);
    for (long base = 0; base < len; base += per) { /* the same trip count in every lane */
        const long i = base + gid;
        float acc = 0.0f;
        if (i < len) {
            const size_t koff = attn_kv(c, bt, b, first + i, kvh);
            if (TG == 1) {
                for (long d = 0; d < D; d++)
                    acc = __fmaf_rn(cu_ld(q, qoff + (size_t)d, c.in), cu_ld(kc, koff + (size_t)d, c.in), acc);
            } else {
                for (long blk = gl; blk * V < D; blk += TG)
                    for (long e = 0; e < V && blk * V + e < D; e++) {
                        const size_t d = (size_t)(blk * V + e);
                        acc = __fmaf_rn(cu_ld(q, qoff + d, c.in), cu_ld(kc, koff + d, c.in), acc);
                    }
            }
        }
        for (int o = TG / 2; o >= 1; o >>= 1) /* the halving over the group's TG lanes */
            acc = __fadd_rn(acc, __shfl_down_sync(CU_FULL_MASK, acc, o, TG));
        if (i < len && gl == 0) {
            const float s = __fmul_rn(c.scale, cu_round(acc, c.qk_out));
            p[i] = s;
            mx = cu_nanmax(mx, s);
        }
    }
    /* m = max over the split (exact, any order) */
    sh[t] = mx;
    __syncthreads();
    for (int o = CU_ATTN_THREADS / 2; o >= 1; o >>= 1) {
        if (t < o)
            sh[t] = cu_nanmax(sh[t], sh[t + o]);
        __syncthreads();
    }
    const float m = sh[0];
    __syncthreads();

    /* p_j = exp(fp32(s_j - m)); thread i mod 128 owns position i */
    float l = 0.0f;
    for (long i = t; i < len; i += CU_ATTN_THREADS) {
        const float e = attn_exp(__fsub_rn(p[i], m), c.exp_approx);
        p[i] = e;
        l = __fadd_rn(l, e); /* softmax_sum = stride(128, seq, C): this thread's seq */
    }
    if (c.ssum_mode == 0) { /* softmax_sum = seq: one chain over the split, in order */
        __syncthreads();
        if (t == 0) {
            l = 0.0f;
            for (long i = 0; i < len; i++)
                l = __fadd_rn(l, p[i]);
            sh[0] = l;
        }
        __syncthreads();
        l = sh[0];
        __syncthreads();
    } else if (c.ssum_mode == 1) { /* C = halving over the 128 lanes (shared memory) */
        sh[t] = l;
        l = cu_block_halving(sh, CU_ATTN_THREADS);
    } else { /* C = tile(32, halving, seq): warp halving, then the warps in order */
        l = cu_warp_halving(l);
        if (lane == 0)
            sh[warp] = l;
        __syncthreads();
        l = 0.0f;
        for (int w = 0; w < ATTN_WARPS; w++)
            l = __fadd_rn(l, sh[w]);
        __syncthreads();
    }
    l = cu_round(l, c.ssum_out);
    __syncthreads(); /* every p[] write before the reads below */

    float *pt = part + (size_t)(((b * c.HQ + h) * c.nsplit_max + cs) * (D + 2));
    if (c.pv_q > 0) {
        /* pv = stride(4, seq, seq, block=Q): warp w, blocks w, w + 4, .. */
        const long Q = c.pv_q;
        for (long d = lane; d < D; d += 32) {
            float o = 0.0f;
            for (long blk = warp; blk * Q < len; blk += ATTN_WARPS)
                for (long i = blk * Q; i < blk * Q + Q && i < len; i++)
                    o = __fmaf_rn(p[i], cu_ld(vc, attn_kv(c, bt, b, first + i, kvh) + (size_t)d, c.in), o);
            pvsh[warp * D + d] = o;
        }
        __syncthreads();
    }
    for (long d = t; d < D; d += CU_ATTN_THREADS) {
        float o = 0.0f;
        if (c.pv_q > 0) {
            for (int w = 0; w < ATTN_WARPS; w++) /* the seq combinator over the warps */
                o = __fadd_rn(o, pvsh[w * D + d]);
        } else { /* pv = seq: thread d, one fma chain over the split */
            for (long i = 0; i < len; i++)
                o = __fmaf_rn(p[i], cu_ld(vc, attn_kv(c, bt, b, first + i, kvh) + (size_t)d, c.in), o);
        }
        o = cu_round(o, c.pv_out);
        if (c.split > 0)
            pt[2 + d] = o;
        else
            cu_st(y, qoff + (size_t)d, cu_round(__fdiv_rn(o, l), c.y_out), c.y_out.fmt);
    }
    if (c.split > 0 && t == 0) {
        pt[0] = m;
        pt[1] = l;
    }
}

/* The split combine of one (b, h), in split order. */
__global__ void __launch_bounds__(CU_ATTN_THREADS)
    attn_combine_kernel(cu_attn_cfg c, const int32_t *cl, const float *part, void *y)
{
    extern __shared__ float w[]; /* w_c, c < nsplit_max */
    const long b = blockIdx.y, h = blockIdx.x;
    const int t = (int)threadIdx.x;
    const long L = cl[b], ns = (L + c.split - 1) / c.split, D = c.D;
    const float *pt = part + (size_t)((b * c.HQ + h) * c.nsplit_max * (D + 2));
    float M = -__int_as_float(0x7f800000);
    for (long s = 0; s < ns; s++)
        M = cu_nanmax(M, pt[s * (D + 2)]);
    for (long s = t; s < ns; s += CU_ATTN_THREADS)
        w[s] = attn_exp(__fsub_rn(pt[s * (D + 2)], M), c.exp_approx);
    __syncthreads();
    float Ls = 0.0f; /* combine = seq over the splits: fma chain of w_c * l_c */
    for (long s = 0; s < ns; s++)
        Ls = __fmaf_rn(w[s], pt[s * (D + 2) + 1], Ls);
    Ls = cu_round(Ls, c.comb_out);
    const size_t yoff = (size_t)((b * c.HQ + h) * D);
    for (long d = t; d < D; d += CU_ATTN_THREADS) {
        float O = 0.0f; /* combine = seq: fma chain of w_c * o_c[d] */
        for (long s = 0; s < ns; s++)
            O = __fmaf_rn(w[s], pt[s * (D + 2) + 2 + d], O);
        O = cu_round(O, c.comb_out);
        cu_st(y, yoff + (size_t)d, cu_round(__fdiv_rn(O, Ls), c.y_out), c.y_out.fmt);
    }
}

extern "C" int cu_attn_launch(const cu_attn_cfg *c, const cu_attn_args *a, void *stream)
{
    cudaStream_t st = (cudaStream_t)stream;
    dim3 g(c->main.grid[0], c->main.grid[1], c->main.grid[2]);
    attn_split_kernel<<<g, c->main.block[0], c->main.smem, st>>>(*c, a->q, a->k_cache, a->v_cache, a->block_table,
                                                                 a->context_lens, a->prob, a->part, a->y);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess || c->split == 0)
        return (int)e;
    dim3 gc(c->combine.grid[0], c->combine.grid[1], c->combine.grid[2]);
    attn_combine_kernel<<<gc, c->combine.block[0], c->combine.smem, st>>>(*c, a->context_lens, a->part, a->y);
    return (int)cudaGetLastError();
}
