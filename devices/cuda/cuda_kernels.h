/* cuda_kernels.h: what the host side (C) hands the CUDA kernels of
 * devices/cuda: one configuration struct per family (the numerics
 * structure taken from the point, the launch geometry computed by
 * cuda_plan.c) and one launcher per family, defined in the family's .cu
 * file.  Plain C: compiled by the C compiler and by nvcc. */
#ifndef PARITY_CUDA_KERNELS_H
#define PARITY_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element formats the kernels read and write (values match nx_fmt's
 * NX_FP32, NX_FP16, NX_BF16 through cu_dtype_of_fmt in cuda_plan.c). */
typedef enum cu_dtype { CU_FP32 = 0, CU_FP16 = 1, CU_BF16 = 2, CU_E4M3 = 3, CU_E5M2 = 4 } cu_dtype;
/* Rounding modes of a conversion (docs/numerics.md §2 minus rna). */
typedef enum cu_rmode { CU_RNE = 0, CU_RZ = 1, CU_RU = 2, CU_RD = 3 } cu_rmode;

/* A rounding of an fp32 value into a format: a reduction's `out`
 * conversion or the family's final output. */
typedef struct cu_cvt {
    int fmt;      /* cu_dtype */
    int mode;     /* cu_rmode */
    int saturate; /* overflow (and inf) gives +-max finite */
} cu_cvt;

/* Launch geometry of one kernel. */
typedef struct cu_dim {
    unsigned grid[3], block[3];
    size_t smem; /* dynamic shared memory, bytes */
} cu_dim;

/* ---- gemv_w4a16 --------------------------------------------------------- */
typedef struct cu_gemv_cfg {
    long B, N, K, G;   /* rows, outputs, reduction length, group size */
    int per_group;     /* scale_apply = per_group */
    int zero_points;   /* zeros[] present (else the zero point is 8) */
    int packed;        /* qweight and zeros two int4 per byte, low nibble first,
                          rows padded to whole bytes (family/fam_int4.h) */
    int has_split;     /* the k tree is split(S, ..., seq): partials go through ws */
    long S;            /* slices (1 without split) */
    long slice;        /* c: terms (per_element) or groups (per_group) per slice */
    int V;             /* per_element: terms per lane block (stride block=V) */
    cu_cvt group_out;  /* per_group: the group reduction's out conversion */
    cu_cvt y_out;      /* the k reduction's out conversion = y's format */
    cu_dim main, combine;
    size_t ws_bytes;   /* S * B * N fp32 partials when has_split */
} cu_gemv_cfg;

typedef struct cu_gemv_args {
    const void *x, *qweight, *scales, *zeros; /* zeros NULL without zero_points */
    void *y;
    float *ws;
} cu_gemv_args;

/* ---- gemm ---------------------------------------------------------------- */
#define CU_GEMM_WARPS 4      /* warps per CTA, side by side along N */
#define CU_GEMM_TILE_M 16    /* the mma's M */
#define CU_GEMM_WARP_N 32    /* 4 mma n8 tiles per warp */
#define CU_GEMM_TILE_N (CU_GEMM_WARPS * CU_GEMM_WARP_N)
#define CU_WGMMA_TILE_M 64   /* one warpgroup: 4 warps x 16 rows */
#define CU_WGMMA_TILE_N 32   /* four m64n8k16 per K step */

typedef struct cu_gemm_cfg {
    long M, N, K;
    int in;            /* cu_dtype of a and b: CU_FP16, CU_BF16 (mma k16), CU_E4M3, CU_E5M2 (mma k32) */
    int wgmma;         /* 1: the sm_90a wgmma kernel (64 x 32 CTA tile), 0: mma.sync (16 x 128) */
    int has_split;
    long S, slice;     /* K slices and their length c (aligned) */
    float alpha, beta; /* fp32 (params rounded once) */
    int has_beta, has_bias;
    int c_fmt;         /* cu_dtype of c (param out) */
    cu_cvt k_out;      /* the k reduction's out: fp32 (checked), its mode */
    cu_cvt y_out;      /* param out with k's out_rounding and saturate */
    cu_dim main, combine;
    size_t ws_bytes;
} cu_gemm_cfg;

typedef struct cu_gemm_args {
    const void *a, *b, *c, *bias; /* c, bias NULL when unused */
    void *y;
    float *ws;
} cu_gemm_args;

/* ---- rmsnorm --------------------------------------------------------------- */
typedef struct cu_rms_cfg {
    long T, H;
    int in;            /* cu_dtype of x, weight, residual */
    int residual;
    int L, V;          /* stride(L, seq, C, block=V): threads per row, terms per block */
    int tile_combine;  /* C: 0 = halving over the L lanes, 1 = tile(32, halving, seq) */
    int rsqrt_approx;  /* 0: correctly rounded; 1: rsqrt.approx.f32 (declared approximation) */
    float eps;
    cu_cvt ss_out;     /* the sumsq reduction's out */
    cu_cvt y_out;      /* param out with sumsq's out_rounding and saturate */
    cu_dim main;
} cu_rms_cfg;

typedef struct cu_rms_args {
    const void *x, *weight, *residual;
    void *y, *residual_out;
} cu_rms_args;

/* ---- paged_decode_attention ------------------------------------------------- */
#define CU_ATTN_THREADS 128  /* threads per (sequence, head, split) CTA */

typedef struct cu_attn_cfg {
    long B, HQ, HKV, D, P, NP, MAXP;
    long split;        /* positions per split, 0 = one split */
    long nsplit_max;   /* splits of the longest possible context (MAXP * P) */
    int in;            /* cu_dtype of q, k_cache, v_cache */
    int qk_tg;         /* qk: 1 = seq; TG = stride(TG, seq, halving, block=qk_v) */
    long qk_v;
    int ssum_mode;     /* softmax_sum: 0 = seq, 1 = stride(128, seq, halving),
                          2 = stride(128, seq, tile(32, halving, seq)) */
    long pv_q;         /* pv: 0 = seq; Q = stride(4, seq, seq, block=Q) */
    int exp_approx;    /* 0: correctly rounded; 1: ex2.approx.ftz.f32 (declared approximation) */
    float scale;
    cu_cvt qk_out, ssum_out, pv_out, comb_out;
    cu_cvt y_out;      /* param out with pv's out_rounding and saturate */
    cu_dim main, combine;
    size_t prob_bytes; /* fp32 scores/probabilities: B * HQ * MAXP * P */
    size_t part_bytes; /* per split (m, l, o[D]): B * HQ * nsplit_max * (D + 2) fp32 */
} cu_attn_cfg;

typedef struct cu_attn_args {
    const void *q, *k_cache, *v_cache;
    const int32_t *block_table, *context_lens;
    void *y;
    float *prob, *part;
} cu_attn_args;

/* Launchers (the .cu files): enqueue the family's kernels on stream (a
 * cudaStream_t) and return the cudaError_t of the launches as an int. */
int cu_gemv_launch(const cu_gemv_cfg *c, const cu_gemv_args *a, void *stream);
int cu_gemm_launch(const cu_gemm_cfg *c, const cu_gemm_args *a, void *stream);
int cu_rms_launch(const cu_rms_cfg *c, const cu_rms_args *a, void *stream);
int cu_attn_launch(const cu_attn_cfg *c, const cu_attn_args *a, void *stream);
/* 1 if the current device runs the sm_90a wgmma code of this build (an
 * sm_90a cubin on an sm_90 GPU); 0 otherwise. */
int cu_wgmma_built(void);

#ifdef __cplusplus
}
#endif

#endif
