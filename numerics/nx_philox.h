/* nx_philox.h: reproducible inputs.  Philox4x32-10 (Salmon, Moraes, Dror,
 * Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC 2011), a
 * counter-based generator: every element of every tensor is a pure function
 * of (seed, tensor id, element index), so any machine (CPU, GPU, any thread
 * count, any slice of the tensor) produces the same bits.
 *
 * Layout of one block: counter = {index & 0xffffffff, index >> 32, tensor,
 * draw}, key = {seed & 0xffffffff, seed >> 32}; the four output words feed
 * one element (two for `normal`, which pairs elements 2j and 2j+1).
 *
 * Distributions give an exact double, then round it to the tensor's format
 * in rne (docs/numerics.md §2).  Only integer arithmetic and IEEE basic
 * operations (+, -, *, /, sqrt: correctly rounded by definition) in a fixed
 * order are used (the log and sin/cos of `normal` are polynomials written
 * out below), so no result depends on the platform's libm, and a GPU port
 * that does not contract a * b + c reproduces every bit.  The exact
 * definitions are in nx_philox.c and in docs/families.md ("Inputs"). */
#ifndef NX_PHILOX_H
#define NX_PHILOX_H

#include <stddef.h>
#include <stdint.h>

#include "nx_error.h"
#include "nx_format.h"

/* The published constants (Random123, philox.h). */
#define NX_PHILOX_M0 0xD2511F53u
#define NX_PHILOX_M1 0xCD9E8D57u
#define NX_PHILOX_W0 0x9E3779B9u /* golden ratio */
#define NX_PHILOX_W1 0xBB67AE85u /* sqrt(3) - 1 */

/* Philox4x32 with `rounds` rounds (10 is the standard; 7 is tested too). */
void nx_philox4x32_r(unsigned rounds, const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
void nx_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* The block of (seed, tensor, index, draw), laid out as above. */
void nx_philox_block(uint64_t seed, uint32_t tensor, uint64_t index, uint32_t draw, uint32_t out[4]);
/* Word 0 of the blocks (seed, tensor, first + k, draw), k < count, into
 * w0[k]: the same values as nx_philox_block, 16 blocks at a time. */
void nx_philox_w0_run(uint64_t seed, uint32_t tensor, uint64_t first, uint32_t draw, size_t count, uint32_t *w0);

/* The tensor id of a tensor name: 32-bit FNV-1a of its bytes, so ids do
 * not depend on the order in which tensors are generated. */
uint32_t nx_philox_tensor_id(const char *name);

/* (hi >> 5) * 2^26 + (lo >> 6), times 2^-53: a uniform double in [0, 1). */
double nx_philox_u53(uint32_t hi, uint32_t lo);

/* floor(w * n / 2^32): a draw in [0, n) (n >= 1). */
uint32_t nx_philox_below(uint32_t w, uint32_t n);

typedef enum nx_dist {
    NX_DIST_NORMAL,      /* N(0, 1), Box-Muller */
    NX_DIST_UNIFORM,     /* [lo, hi) */
    NX_DIST_INT,         /* integers in [-int_max, int_max]: exact sums */
    NX_DIST_ADVERSARIAL, /* cancellation pairs, wide range, subnormals, signed zeros */
    NX_NDISTS
} nx_dist;

const char *nx_dist_name(nx_dist d);
int nx_dist_from_name(const char *name); /* -1 if unknown */

typedef struct nx_dist_spec {
    nx_dist dist;
    double lo, hi;  /* uniform: [lo, hi); both members of the format */
    long int_max;   /* int: >= 0, and every integer up to it exact in the format */
    int specials;   /* adversarial: also +-inf and NaN */
} nx_dist_spec;

/* The elementary functions of `normal`, as fixed IEEE binary64 operation
 * sequences (not correctly rounded, but the same bits everywhere; within a
 * few ulps of the exact functions):
 * nx_philox_log(u): log u for a positive normal double u;
 * nx_philox_sincospi(k, s, c): sin and cos of pi * k * 2^-52, k < 2^53. */
double nx_philox_log(double u);
void nx_philox_sincospi(uint64_t k, double *s, double *c);

/* Element i of `normal` before the format rounding (a double). */
double nx_philox_normal(uint64_t seed, uint32_t tensor, uint64_t i);

/* The defaults: uniform [-1, 1), int_max 8, no specials. */
void nx_dist_spec_init(nx_dist_spec *d, nx_dist dist);

/* Element i of tensor `tensor` for i in [first, first + count), rounded to
 * fmt (rne), into out[0 .. count).  threads <= 0: OpenMP's default.  The
 * values do not depend on first, count or threads.  Errors: a bad spec
 * (lo >= hi, int_max out of the format's exact range), out of memory. */
nx_status nx_philox_fill(uint64_t seed, uint32_t tensor, const nx_dist_spec *d, nx_fmt fmt, uint64_t first,
                         size_t count, double *out, int threads, nx_err *err);

#endif
