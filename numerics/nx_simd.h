/* nx_simd.h: the fast engine's vector path: many rows in the lanes of one
 * SIMD register, each lane running its own row's whole expanded program in
 * the program's order.
 *
 * It takes the points where every operation of the program is one native
 * IEEE operation of one format: an fp32 or fp64 accumulator, rne, each step
 * an add, a multiply (a product rounded to the accumulator's format) or a
 * fused multiply-add (where the point fuses), on inputs that are members of
 * that format (fp32: fp32, bf16 and fp16 tensors; fp64: those and fp64).
 * An IEEE operation on such operands is exactly the declared rounded
 * operation, subnormals, infinities and signed zeros included, so every
 * lane gives the bits of the scalar fast engine and of MPFR by
 * construction: no reassociation, no flush to zero (the default MXCSR), an
 * fma only where the program has one.  NaN results are NaN (their payload
 * is not part of the contract: a NaN is written as the canonical NaN,
 * docs/numerics.md §2.4).
 *
 * Variants, chosen at run time: AVX-512 (16 fp32 / 8 fp64 lanes), AVX2 +
 * FMA (8 / 4) and a portable scalar loop (8 / 4 lanes, fmaf/fma calls).
 * The environment variable PARITY_SIMD=scalar|avx2|avx512 forces one (for
 * tests; a variant the CPU lacks gives the best one below it); off turns
 * the vector path off (the scalar fast engine runs every point). */
#ifndef NX_SIMD_H
#define NX_SIMD_H

#include <stddef.h>
#include <stdint.h>

#include "nx_program.h"

/* How the elements of one input are stored. */
typedef enum nx_simd_store {
    NX_ST_F64, /* binary64 (also: decoded rows of exact doubles) */
    NX_ST_F32, /* binary32, little-endian */
    NX_ST_BF16,
    NX_ST_F16
} nx_simd_store;

typedef struct nx_simd_src {
    const void *p;       /* row 0's first element; NULL: no such input */
    nx_simd_store store;
    nx_fmt fmt;          /* the format the elements are members of */
    size_t stride;       /* elements from one row to the next */
} nx_simd_src;

/* rows rows of p->n terms; c (start values, one per row) only when
 * p->start. */
typedef struct nx_simd_rows {
    size_t rows;
    nx_simd_src a, b, c;
} nx_simd_rows;

typedef enum nx_simd_isa { NX_SIMD_OFF = -1, NX_SIMD_SCALAR, NX_SIMD_AVX2, NX_SIMD_AVX512 } nx_simd_isa;

/* The variant used now (PARITY_SIMD and the CPU), and its name. */
nx_simd_isa nx_simd_isa_now(void);
const char *nx_simd_isa_name(nx_simd_isa isa);

/* 1 when PARITY_SIMD names a variant.  Only then does nx_fast_reduce take
 * the vector path on rows already decoded to doubles, and does the path
 * take a program whose terms jump (stride trees: terms gathered one by one,
 * slower than the scalar block engine); otherwise those go to the scalar
 * block engine, which is as fast or faster there.  Rows as stored
 * (nx_fast_reduce_raw) take the path wherever it applies. */
int nx_simd_forced(void);

/* 1 when the vector path computes p on inputs stored so (formats a_fmt,
 * b_fmt, c_fmt; has_b: a dot product), 0 otherwise. */
int nx_simd_eligible(const nx_program *p, nx_fmt a_fmt, nx_fmt b_fmt, nx_fmt c_fmt);

/* acc[r] = row r's program result (before the `out` conversion), exactly,
 * for an eligible p.  Rows in parallel over `threads` threads (<= 0:
 * OpenMP's default), in blocks of whole vectors: the bits do not depend on
 * the thread count.  isa: the variant (nx_simd_isa_now() for the usual
 * one).  Returns 0; 1 when not taken (p not eligible, the variant not on
 * this CPU, or rows of 2^31 / W bytes or more); -1 when out of memory. */
int nx_simd_reduce(const nx_program *p, const nx_simd_rows *in, double *acc, int threads, nx_simd_isa isa);

#endif
