/* nx_format.h: the number formats of docs/numerics.md §1 and the rounding modes
 * of §2, as data: their parameters, bit-pattern decode and encode.
 *
 * Every value of every format is exactly a binary64 number, so a decoded
 * value is a double and an engine keeps its intermediate values as doubles
 * that are exact members of their format.  Rounding an exact value into a
 * format is in nx_mp.h (MPFR) and nx_round_fast.h (integer bit masks). */
#ifndef NX_FORMAT_H
#define NX_FORMAT_H

#include <stdint.h>
#include <stddef.h>

#include "nx_error.h"

typedef enum nx_fmt {
    NX_FP64, NX_FP32, NX_TF32, NX_FP16, NX_BF16, NX_E5M2, NX_E4M3,
    NX_E3M2, NX_E2M3, NX_E2M1, NX_E8M0, NX_E8M13,
    NX_NFORMATS
} nx_fmt;

typedef enum nx_mode { NX_RNE, NX_RNA, NX_RZ, NX_RU, NX_RD, NX_NMODES } nx_mode;

typedef enum nx_nan_kind {
    NX_NAN_NONE,     /* no NaN: every pattern is finite (e3m2, e2m3, e2m1) */
    NX_NAN_IEEE,     /* exponent all ones, mantissa nonzero */
    NX_NAN_ALLONES   /* only S.1111.111 (e4m3) / 0xFF (e8m0) */
} nx_nan_kind;

typedef struct nx_format_info {
    const char *name;
    int storage_bits;   /* bits of the pattern (32 for tf32 and e8m13) */
    int exp_bits;       /* exponent field width */
    int man_bits;       /* stored mantissa field width of the layout */
    int p;              /* precision including the hidden bit */
    int bias;
    int emin;           /* minimum normal exponent, 1 - bias (e8m0: -127) */
    int has_inf;
    nx_nan_kind nan;
    int is_signed;      /* e8m0 is unsigned */
    int has_zero;       /* e8m0 has no zero */
    double max_finite;
    uint64_t canonical_nan; /* the quiet NaN pattern with sign 0 */
    const char *st_dtype;   /* safetensors dtype it is stored as */
} nx_format_info;

const nx_format_info *nx_format(nx_fmt f);

/* The exponent of a nonzero finite member x of f as a tensor core sees its
 * operand (§5 step 2): floor(log2 |x|) for a normal x, the format's emin for
 * a subnormal one (a subnormal's significand is 0.m, its exponent emin). */
int nx_fmt_exp(double x, nx_fmt f);

/* Looks a format up by its docs/numerics.md name; returns -1 if unknown. */
int nx_fmt_from_name(const char *name);
int nx_mode_from_name(const char *name);
const char *nx_mode_name(nx_mode m);

/* Minimum normal power of two 2^emin and the quantum of the subnormals
 * 2^(emin - p + 1), as doubles (exact). */
double nx_fmt_min_normal(nx_fmt f);

/* Decodes a bit pattern (right-aligned) to its exact value.  NaN patterns
 * give a quiet NaN double.  Patterns of tf32/e8m13 whose low mantissa bits
 * are not zero are not members of the format: *valid is set to 0 (the fp32
 * value is still returned).  valid may be NULL. */
double nx_decode(nx_fmt f, uint64_t bits, int *valid);

/* Encodes a value that must be a member of the format (as the engines
 * produce).  NaN gives the canonical NaN.  Returns NX_EINVAL if v is not
 * representable (including NaN in a format with no NaN). */
nx_status nx_encode(nx_fmt f, double v, uint64_t *bits, nx_err *err);

/* 1 if v is exactly a member of the format (NaN counts where the format has
 * NaN, inf where it has inf). */
int nx_is_member(nx_fmt f, double v);

#endif
