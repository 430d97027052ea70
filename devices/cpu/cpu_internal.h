/* cpu_internal.h: what the files of devices/cpu share: the kernel table
 * entry, the run context, format conversions written for this backend
 * (bf16/fp16/fp8 to float exactly, float to bf16/fp16 in rne by bit
 * manipulation), the correctly rounded fp32 functions, params, and the
 * check that a kernel realises the point it is asked to run.
 *
 * Not installed; the backend's sources and tests/test_cpu_backend.c include
 * it.  Nothing here calls refimpl/ or the numerics engines: the kernels are
 * plain C over float, and the numerics point is only read, to check that
 * the kernel's loop order is the one the point declares. */
#ifndef PARITY_CPU_INTERNAL_H
#define PARITY_CPU_INTERNAL_H

#include <stddef.h>
#include <math.h>
#include <stdint.h>

#include "device.h"
#include "nx_format.h"

/* The widest `vec` (lanes of a strided loop) the kernels keep on the stack. */
#define CPU_MAX_VEC 64

/* The hot loops get an x86-64-v3 clone (AVX2 + FMA), picked when the
 * library is loaded: there fmaf is one vfmadd instruction and independent
 * lanes or outputs run in vector registers.  The default clone calls the C
 * library's fmaf.  Both compute the same IEEE fused multiply-adds in the
 * same order (-ffp-contract=off, no reassociation), so the bits do not
 * depend on the clone; tests/test_cpu_backend.c runs whichever this
 * machine picks against the reference. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(PARITY_CPU_NO_CLONES)
#define CPU_HOT __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define CPU_HOT
#endif

/* The lanes of stride(V, seq, ...) over the n product terms a[i] * b[i]:
 * term i goes to lane i mod V, each lane an fmaf chain in increasing i
 * (lanes start wherever the caller set them, +0 for a fresh reduction).
 * Inlined, so a call with the constant V = 8 becomes fixed-width code. */
static inline __attribute__((always_inline)) void cpu_lanes_fma(float *lane, const float *a, const float *b, size_t n,
                                                                size_t V)
{
    size_t i = 0;
    for (; i + V <= n; i += V)
        for (size_t l = 0; l < V; l++)
            lane[l] = fmaf(a[i + l], b[i + l], lane[l]);
    for (size_t l = 0; i + l < n; l++)
        lane[l] = fmaf(a[i + l], b[i + l], lane[l]);
}

/* --- kernels ------------------------------------------------------------------ */

typedef struct cpu_kernel cpu_kernel;

typedef struct cpu_run {
    const fam_spec *spec;
    const st_file *in;
    st_file *out;
    int threads;             /* OpenMP threads of this run (>= 1) */
    const cpu_kernel *kernel;
} cpu_run;

struct cpu_kernel {
    const char *id;          /* the kernel id of the registry ("cpu_gemm_splitk") */
    const char *family;      /* "gemm" */
    const char *what;        /* one line for describe() and the docs */
    /* NX_OK if the kernel realises spec's numerics point exactly (trees,
     * formats, elementwise choices, policy params); otherwise
     * NX_EUNSUPPORTED with what differs. */
    nx_status (*check)(const fam_spec *spec, const cpu_kernel *k, nx_err *err);
    nx_status (*run)(const cpu_run *r, nx_err *err);
};

/* Every kernel of the backend, and how many (cpu_backend.c). */
extern const cpu_kernel *const cpu_kernels[];
extern const size_t cpu_nkernels;

/* The kernels of each family file. */
extern const cpu_kernel cpu_k_gemm_seq, cpu_k_gemm_splitk, cpu_k_gemm_splitk_legacy, cpu_k_gemm_splitk_threads,
    cpu_k_gemm_batch_split, cpu_k_gemm_atomic_split, cpu_k_gemm_reversed, cpu_k_gemm_reversed_legacy;
extern const cpu_kernel cpu_k_gemv_dequant, cpu_k_gemv_grouped;
extern const cpu_kernel cpu_k_moe_grouped, cpu_k_moe_grouped_vec;
extern const cpu_kernel cpu_k_attn, cpu_k_attn_split;
extern const cpu_kernel cpu_k_rmsnorm, cpu_k_rmsnorm_legacy, cpu_k_fused_add_rmsnorm;
extern const cpu_kernel cpu_k_silu, cpu_k_silu_libm;
extern const cpu_kernel cpu_k_softmax, cpu_k_softmax_libm;

/* --- formats (cpu_format.c) ---------------------------------------------------- */

/* The formats a kernel reads as input and writes as output. */
int cpu_fmt_readable(nx_fmt f);  /* fp32, fp16, bf16, e4m3, e5m2 */
int cpu_fmt_writable(nx_fmt f);  /* fp32, fp16, bf16 */

float cpu_bf16_to_f32(uint16_t b);
float cpu_fp16_to_f32(uint16_t h);
float cpu_e4m3_to_f32(uint8_t b);
float cpu_e5m2_to_f32(uint8_t b);
/* float -> pattern, rne; NaN gives the canonical NaN (sign 0); overflow
 * gives inf, or the largest finite value with saturate. */
uint16_t cpu_f32_to_bf16(float f, int saturate);
uint16_t cpu_f32_to_fp16(float f, int saturate);
uint32_t cpu_f32_bits(float f);   /* NaN canonical (0x7fc00000) */
float cpu_bits_f32(uint32_t u);

/* Rounds v to format f (writable) in rne and gives the value back as a
 * float: what a kernel does when it stores a partial result in f. */
float cpu_round_to(float v, nx_fmt f, int saturate);
/* The pattern of v rounded to f (writable), right-aligned. */
uint32_t cpu_encode(float v, nx_fmt f, int saturate);

/* Decodes elements [first, first + count) of a float input tensor (any
 * readable dtype) into dst: the kernels' packing step, so a large operand
 * is converted a tile at a time instead of into one big copy. */
void cpu_decode_range(const st_tensor *t, size_t first, size_t count, float *dst);
/* Decodes a whole float input tensor (small operands) into a malloc'd
 * float array, in parallel over elements with `threads` threads. */
nx_status cpu_decode(const st_tensor *t, int threads, float **out, nx_err *err);
/* Adds output tensor `name` of format f to out, values v rounded to f. */
nx_status cpu_emit(st_file *out, const char *name, nx_fmt f, int saturate, int ndim, const int64_t *shape,
                   const float *v, int threads, nx_err *err);

/* --- correctly rounded fp32 functions (cpu_math.c) ----------------------------- */

/* exp, 1/sqrt and silu(x) = x / (1 + exp(-x)) of the exact fp32 argument,
 * correctly rounded to fp32 in rne.  Evaluated in binary64 with an error
 * far below the check margin; where the binary64 value cannot decide the
 * rounding (about once in 2^19 arguments) MPFR decides (Ziv).
 * cpu_cr_fallbacks counts how often that happened (for tests). */
float cpu_exp_cr(float x);
float cpu_rsqrt_cr(float x);
float cpu_silu_cr(float x);
unsigned long cpu_cr_fallbacks(void);
/* The MPFR paths alone (tests compare the fast paths with them). */
/* 1 when an MPFR path below ran since the last call (and clears it). */
int cpu_mpfr_take_used(void);
float cpu_exp_mpfr(float x);
float cpu_rsqrt_mpfr(float x);
float cpu_silu_mpfr(float x);

/* --- params and checks (cpu_backend.c) ----------------------------------------- */

nx_status cpu_dim(const fam_spec *s, const char *name, long def, long *out, nx_err *err); /* def < 0: required */
nx_status cpu_long(const fam_spec *s, const char *name, long def, long *out, nx_err *err);
nx_status cpu_bool(const fam_spec *s, const char *name, int def, int *out, nx_err *err);
nx_status cpu_fmt(const fam_spec *s, const char *name, nx_fmt def, nx_fmt *out, nx_err *err);
/* A decimal or hex-float param rounded once to fp32 (strtof, correctly
 * rounded in glibc); def when absent. */
nx_status cpu_f32(const fam_spec *s, const char *name, const char *def, float *out, nx_err *err);
/* Param `vec`, the lane count (default 8), within [1, CPU_MAX_VEC]; else
 * NX_EUNSUPPORTED "cpu: FAMILY: vec = V outside [1, MAX]". */
nx_status cpu_vec(const fam_spec *s, long *vec, nx_err *err);
/* The kernel reads `in` (written too when in_written: a residual output)
 * and writes `out`; else NX_EUNSUPPORTED "cpu: FAMILY: in = .., out = ..
 * not handled" with the formats the backend handles. */
nx_status cpu_io_fmts(const fam_spec *s, nx_fmt in, int in_written, nx_fmt out, nx_err *err);

/* The reduction's point, after checking that it is the one the kernel
 * computes: acc fp32, rne, fma, exact products, no input rounding, no atom,
 * the canonical tree text equal to `tree`, an out format the kernel can
 * store (fp32 only when fp32_out), rne out rounding.  Errors name the
 * kernel, the reduction and both trees. */
nx_status cpu_check_red(const fam_spec *s, const cpu_kernel *k, const char *name, const char *tree, int fp32_out,
                        const fam_reduction **out, nx_err *err);
/* The elementwise function `name` must be cr (approx NULL) or the named
 * approximation. */
nx_status cpu_check_elem(const fam_spec *s, const cpu_kernel *k, const char *name, const char *approx,
                         nx_err *err);
/* The reduction's out format and saturate, for the kernels' stores. */
nx_fmt cpu_red_out(const fam_reduction *r);

/* Pairwise combination of n lane partials (docs/numerics.md §4 `pairwise` as a
 * combinator): n = 1 is v[0]; else h = ceil(n/2), pairwise(first h) +
 * pairwise(rest), each + one fp32 rounding. */
float cpu_pairwise(const float *v, size_t n);

/* stride(V, seq, pairwise) over the n terms a[i] * b[i] from +0: every lane,
 * an empty one too (+0), combined pairwise (cpu_dot.c, CPU_HOT). */
float cpu_strided_dot(const float *a, const float *b, size_t n, size_t V);
/* seq over the n terms a[i] * b[i]: one fmaf chain from +0. */
float cpu_seq_dot(const float *a, const float *b, size_t n);
/* seq for 8 outputs: out[j] = seq over i < n of a[i] * bt[i * 8 + j]. */
void cpu_seq_dot8(const float *a, const float *bt, size_t n, float *out);
/* Packs rows first_row .. first_row + nrows - 1 (nrows <= 8) of the
 * row-major float tensor t with rows of n elements, transposed: bt[i * 8 + j]
 * = t[first_row + j, i], zeros for j >= nrows; row is n floats of scratch. */
void cpu_pack8(const st_tensor *t, size_t first_row, size_t nrows, size_t n, float *row, float *bt);
/* o[d] = fmaf(p, v[d], o[d]), d < D. */
void cpu_axpy(float p, const float *v, float *o, size_t D);

#endif
