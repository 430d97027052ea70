/* gemm.cu: y[m, n] = epilogue(a[m, :] . b[n, :]) on the tensor cores
 * (docs/families.md, gemm), kernel cuda_gemm_mma, for sm80, sm89 and sm90.
 *
 * Each warp owns a 16 x 32 tile of outputs (four m16n8 accumulators) and
 * walks its K slice in order, 16 terms per mma.sync.aligned.m16n8k16 with
 * bf16 or fp16 inputs and fp32 accumulators.  The accumulator starts at +0
 * and is passed from one mma to the next; the hardware runs k16 as two
 * halves of 8 terms, each one fused multi-term addition with the
 * accumulator (docs/numerics.md §5: products exact, aligned to the largest
 * addend, cut to 24 fraction bits toward zero, one rz rounding to fp32):
 *   k = chain(8) with the class's mma atom.
 * Terms beyond the slice are +0 (a and b both zero): zero addends change no
 * atom, and a chain started at +0 never holds -0.
 * Split-K (split(S, chain(8), seq[, align=A])): slice k is [k c, min((k + 1)
 * c, K)) with c = ceil(K / S) rounded up to A; the CTA column blockIdx.z
 * runs slice k from scratch into ws[k][m][n]; gemm_combine adds the S
 * partials to +0 in slice order (the `seq` combinator), one fp32 rne
 * rounding each, then runs the epilogue.  S comes from the point only.
 * Epilogue, fp32 rne, no contraction: t = alpha * acc; t = t + beta * c;
 * t = t + bias[n]; y = round(t) to param out with k's out_rounding.
 * fp8 (kernel cuda_gemm_mma_fp8, sm89 and sm90): e4m3 or e5m2 inputs through
 * mma.sync.aligned.m16n8k32, one 32-term atom per mma (accumulating in the
 * fp22 = e8m13 format of docs/numerics.md §5): k = chain(32) with the fp8 atom;
 * the same slices, combine and epilogue.
 * wgmma (kernel cuda_gemm_wgmma, sm90 built as sm_90a): a CTA is one
 * warpgroup owning 64 x 32 outputs; per 16-term K step the B tile (32 n x
 * 16 k) is staged in shared memory in the no-swizzle K-major layout (8 x
 * 16-byte core matrices) and four wgmma.mma_async m64n8k16 (A from
 * registers, the mma fragment per warp) each add one 16-term atom to their
 * accumulators: k = chain(16) with Hopper's wgmma atom (25 fraction bits).
 * The same slices, combine and epilogue.
 * sm80/sm89 and the chain(8) points on sm90 run mma.sync. */
#include "cu_common.cuh"

/* Two consecutive elements (k, k + 1) of a row as one .b32 mma operand, the
 * element with the lower k in the low half; +0 outside [.., end). */
__device__ __forceinline__ uint32_t gemm_pair(const uint16_t *__restrict__ p, long row_off, long k, long end, bool row_ok)
{
    if (!row_ok)
        return 0u;
    if (k + 1 < end && ((row_off + k) & 1) == 0)
        return *(const uint32_t *)(p + row_off + k);
    uint32_t lo = k < end ? p[row_off + k] : 0u, hi = k + 1 < end ? p[row_off + k + 1] : 0u;
    return lo | (hi << 16);
}

template <bool BF16>
__device__ __forceinline__ void gemm_mma(float *d, const uint32_t *a, const uint32_t *b)
{
    if (BF16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* Four consecutive 8-bit elements (k .. k + 3) as one .b32 operand, the
 * lowest k in the low byte; +0 outside [.., end). */
__device__ __forceinline__ uint32_t gemm_quad(const uint8_t *__restrict__ p, long row_off, long k, long end, bool row_ok)
{
    if (!row_ok)
        return 0u;
    if (k + 3 < end && ((row_off + k) & 3) == 0)
        return *(const uint32_t *)(p + row_off + k);
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        if (k + i < end)
            v |= (uint32_t)p[row_off + k + i] << (8 * i);
    return v;
}

template <bool E4M3>
__device__ __forceinline__ void gemm_mma_fp8(float *d, const uint32_t *a, const uint32_t *b)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    if (E4M3)
        asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
        asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    (void)d;
    (void)a;
    (void)b;
    __trap(); /* fp8 mma needs sm_89: the host never launches this on sm80 */
#endif
}

/* The fp32 epilogue of docs/families.md and the output conversion. */
__device__ __forceinline__ void gemm_epilogue(const cu_gemm_cfg &c, const void *cm, const float *bias, void *y,
                                              long m, long n, float acc)
{
    acc = cu_round(acc, c.k_out); /* k's out is fp32: the identity, kept for the mode check */
    float t = __fmul_rn(c.alpha, acc);
    if (c.has_beta)
        t = __fadd_rn(t, __fmul_rn(c.beta, cu_ld(cm, (size_t)(m * c.N + n), c.c_fmt)));
    if (c.has_bias)
        t = __fadd_rn(t, bias[n]);
    cu_st(y, (size_t)(m * c.N + n), cu_round(t, c.y_out), c.y_out.fmt);
}

template <bool BF16>
__global__ void __launch_bounds__(CU_GEMM_WARPS * 32)
    gemm_mma_kernel(cu_gemm_cfg c, const uint16_t *__restrict__ A, const uint16_t *__restrict__ B, const void *cm,
                    const float *bias, void *y, float *ws)
{
    const int lane = (int)(threadIdx.x & 31), warp = (int)(threadIdx.x >> 5);
    const int g = lane >> 2, tq = lane & 3; /* the mma fragment's groupID and thread-in-group */
    const long M = c.M, N = c.N, K = c.K;
    const long m0 = (long)blockIdx.y * CU_GEMM_TILE_M;
    const long n0 = (long)blockIdx.x * CU_GEMM_TILE_N + (long)warp * CU_GEMM_WARP_N;
    const long slice = blockIdx.z;
    const long start = slice * c.slice, end = start + c.slice < K ? start + c.slice : K;
    float acc[4][4];
    for (int t = 0; t < 4; t++)
        for (int i = 0; i < 4; i++)
            acc[t][i] = 0.0f; /* chain(8) starts at +0 */
    const long r0 = m0 + g, r1 = m0 + g + 8;
    const bool ok0 = r0 < M, ok1 = r1 < M;
    /* k = chain(8): the slice's K loop in order, 16 terms (two atoms) per mma */
    for (long k0 = start; k0 < end; k0 += 16) {
        const long ka = k0 + tq * 2, kb = k0 + 8 + tq * 2;
        uint32_t a[4];
        a[0] = gemm_pair(A, r0 * K, ka, end, ok0); /* rows g, g+8; k 0..7 then 8..15 */
        a[1] = gemm_pair(A, r1 * K, ka, end, ok1);
        a[2] = gemm_pair(A, r0 * K, kb, end, ok0);
        a[3] = gemm_pair(A, r1 * K, kb, end, ok1);
        for (int t = 0; t < 4; t++) {
            const long n = n0 + t * 8 + g;
            uint32_t b[2];
            b[0] = gemm_pair(B, n * K, ka, end, n < N);
            b[1] = gemm_pair(B, n * K, kb, end, n < N);
            gemm_mma<BF16>(acc[t], a, b);
        }
    }
    for (int t = 0; t < 4; t++)
        for (int i = 0; i < 4; i++) {
            const long m = i < 2 ? r0 : r1, n = n0 + t * 8 + tq * 2 + (i & 1);
            if (m >= M || n >= N)
                continue;
            if (c.has_split)
                ws[(slice * M + m) * N + n] = acc[t][i];
            else
                gemm_epilogue(c, cm, bias, y, m, n, acc[t][i]);
        }
}

/* The fp8 K loop: k = chain(32), 32 terms (one atom) per m16n8k32. */
template <bool E4M3>
__global__ void __launch_bounds__(CU_GEMM_WARPS * 32)
    gemm_fp8_kernel(cu_gemm_cfg c, const uint8_t *__restrict__ A, const uint8_t *__restrict__ B, const void *cm,
                    const float *bias, void *y, float *ws)
{
    const int lane = (int)(threadIdx.x & 31), warp = (int)(threadIdx.x >> 5);
    const int g = lane >> 2, tq = lane & 3;
    const long M = c.M, N = c.N, K = c.K;
    const long m0 = (long)blockIdx.y * CU_GEMM_TILE_M;
    const long n0 = (long)blockIdx.x * CU_GEMM_TILE_N + (long)warp * CU_GEMM_WARP_N;
    const long slice = blockIdx.z;
    const long start = slice * c.slice, end = start + c.slice < K ? start + c.slice : K;
    float acc[4][4];
    for (int t = 0; t < 4; t++)
        for (int i = 0; i < 4; i++)
            acc[t][i] = 0.0f;
    const long r0 = m0 + g, r1 = m0 + g + 8;
    const bool ok0 = r0 < M, ok1 = r1 < M;
    for (long k0 = start; k0 < end; k0 += 32) {
        const long ka = k0 + tq * 4, kb = k0 + 16 + tq * 4;
        uint32_t a[4];
        a[0] = gemm_quad(A, r0 * K, ka, end, ok0); /* rows g, g+8; k 0..15 then 16..31 */
        a[1] = gemm_quad(A, r1 * K, ka, end, ok1);
        a[2] = gemm_quad(A, r0 * K, kb, end, ok0);
        a[3] = gemm_quad(A, r1 * K, kb, end, ok1);
        for (int t = 0; t < 4; t++) {
            const long n = n0 + t * 8 + g;
            uint32_t b[2];
            b[0] = gemm_quad(B, n * K, ka, end, n < N);
            b[1] = gemm_quad(B, n * K, kb, end, n < N);
            gemm_mma_fp8<E4M3>(acc[t], a, b);
        }
    }
    for (int t = 0; t < 4; t++)
        for (int i = 0; i < 4; i++) {
            const long m = i < 2 ? r0 : r1, n = n0 + t * 8 + tq * 2 + (i & 1);
            if (m >= M || n >= N)
                continue;
            if (c.has_split)
                ws[(slice * M + m) * N + n] = acc[t][i];
            else
                gemm_epilogue(c, cm, bias, y, m, n, acc[t][i]);
        }
}

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define CU_HAVE_WGMMA 1
#endif

/* The wgmma K loop: k = chain(16), one 16-term atom per m64n8k16. */
template <bool BF16>
__global__ void __launch_bounds__(128)
    gemm_wgmma_kernel(cu_gemm_cfg c, const uint16_t *__restrict__ A, const uint16_t *__restrict__ B, const void *cm,
                      const float *bias, void *y, float *ws)
{
#ifdef CU_HAVE_WGMMA
    /* B tile of one K step: [n8 chunk][k half][n row][8 k]: each [j][h] is one
     * 128-byte core matrix (8 rows of 16 bytes); the two k halves of a chunk
     * are 128 bytes apart (the leading byte offset) */
    __shared__ __align__(128) uint16_t bs[4][2][8][8];
    const int t = (int)threadIdx.x, lane = t & 31, warp = t >> 5;
    const int g = lane >> 2, tq = lane & 3;
    const long M = c.M, N = c.N, K = c.K;
    const long m0 = (long)blockIdx.y * 64, n0 = (long)blockIdx.x * 32;
    const long slice = blockIdx.z;
    const long start = slice * c.slice, end = start + c.slice < K ? start + c.slice : K;
    float acc[4][4];
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 4; i++)
            acc[j][i] = 0.0f; /* chain(16) starts at +0 */
    const long r0 = m0 + 16 * warp + g, r1 = r0 + 8; /* warp w owns rows 16w .. 16w+15 */
    const bool ok0 = r0 < M, ok1 = r1 < M;
    for (long k0 = start; k0 < end; k0 += 16) {
        for (int e = t; e < 512; e += 128) {
            const int nn = e >> 4, kk = e & 15;
            const long n = n0 + nn, k = k0 + kk;
            bs[nn >> 3][kk >> 3][nn & 7][kk & 7] = n < N && k < end ? B[n * K + k] : (uint16_t)0;
        }
        const long ka = k0 + tq * 2, kb = k0 + 8 + tq * 2;
        uint32_t a[4];
        a[0] = gemm_pair(A, r0 * K, ka, end, ok0);
        a[1] = gemm_pair(A, r1 * K, ka, end, ok1);
        a[2] = gemm_pair(A, r0 * K, kb, end, ok0);
        a[3] = gemm_pair(A, r1 * K, kb, end, ok1);
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); /* st.shared before the async proxy reads */
        __syncthreads();
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        for (int j = 0; j < 4; j++) {
            const uint32_t addr = (uint32_t)__cvta_generic_to_shared(&bs[j][0][0][0]);
            const uint64_t desc = (uint64_t)((addr >> 4) & 0x3fff) | ((uint64_t)(128 >> 4) << 16) |
                                  ((uint64_t)(256 >> 4) << 32); /* no swizzle, LBO 128 B, SBO 256 B */
            if (BF16)
                asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
                             "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, "
                             "p, 1, 1, 0;\n}\n"
                             : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
                             : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(1)
                             : "memory");
            else
                asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
                             "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, "
                             "p, 1, 1, 0;\n}\n"
                             : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
                             : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(1)
                             : "memory");
        }
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        __syncthreads(); /* every wgmma read bs before the next step writes it */
    }
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 4; i++) {
            const long m = i < 2 ? r0 : r1, n = n0 + j * 8 + tq * 2 + (i & 1);
            if (m >= M || n >= N)
                continue;
            if (c.has_split)
                ws[(slice * M + m) * N + n] = acc[j][i];
            else
                gemm_epilogue(c, cm, bias, y, m, n, acc[j][i]);
        }
#else
    (void)c;
    (void)A;
    (void)B;
    (void)cm;
    (void)bias;
    (void)y;
    (void)ws;
    __trap(); /* wgmma needs the sm_90a build: the host checks cu_wgmma_built() */
#endif
}

/* 1 if this build holds the sm_90a wgmma code. */
__global__ void gemm_wgmma_probe(int *out)
{
#ifdef CU_HAVE_WGMMA
    *out = 1;
#else
    *out = 0;
#endif
}

/* The `seq` combinator of split(S, chain(8), seq): +0, then each slice's
 * partial in slice order, fp32 rne; then the epilogue. */
__global__ void gemm_combine_kernel(cu_gemm_cfg c, const float *__restrict__ ws, const void *cm, const float *bias,
                                    void *y)
{
    const long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= c.M * c.N)
        return;
    float s = 0.0f;
    for (long k = 0; k < c.S; k++)
        s = __fadd_rn(s, ws[k * c.M * c.N + i]);
    gemm_epilogue(c, cm, bias, y, i / c.N, i % c.N, s);
}

extern "C" int cu_gemm_launch(const cu_gemm_cfg *c, const cu_gemm_args *a, void *stream)
{
    cudaStream_t st = (cudaStream_t)stream;
    dim3 g(c->main.grid[0], c->main.grid[1], c->main.grid[2]), bl(c->main.block[0]);
    const uint16_t *A = (const uint16_t *)a->a, *B = (const uint16_t *)a->b;
    const float *bias = (const float *)a->bias;
    const uint8_t *A8 = (const uint8_t *)a->a, *B8 = (const uint8_t *)a->b;
    if (c->wgmma && c->in == CU_BF16)
        gemm_wgmma_kernel<true><<<g, bl, 0, st>>>(*c, A, B, a->c, bias, a->y, a->ws);
    else if (c->wgmma)
        gemm_wgmma_kernel<false><<<g, bl, 0, st>>>(*c, A, B, a->c, bias, a->y, a->ws);
    else if (c->in == CU_BF16)
        gemm_mma_kernel<true><<<g, bl, 0, st>>>(*c, A, B, a->c, bias, a->y, a->ws);
    else if (c->in == CU_FP16)
        gemm_mma_kernel<false><<<g, bl, 0, st>>>(*c, A, B, a->c, bias, a->y, a->ws);
    else if (c->in == CU_E4M3)
        gemm_fp8_kernel<true><<<g, bl, 0, st>>>(*c, A8, B8, a->c, bias, a->y, a->ws);
    else
        gemm_fp8_kernel<false><<<g, bl, 0, st>>>(*c, A8, B8, a->c, bias, a->y, a->ws);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess || !c->has_split)
        return (int)e;
    gemm_combine_kernel<<<c->combine.grid[0], c->combine.block[0], 0, st>>>(*c, a->ws, a->c, bias, a->y);
    return (int)cudaGetLastError();
}

extern "C" int cu_wgmma_built(void)
{
    int *d = NULL, h = 0;
    if (cudaMalloc(&d, sizeof *d) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    gemm_wgmma_probe<<<1, 1>>>(d);
    if (cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost) != cudaSuccess)
        h = 0;
    cudaFree(d);
    cudaGetLastError();
    return h;
}
