/* compare.h: Tier 2 element comparison (DESIGN.md "Parity tiers"): a device
 * tensor against a reference, element by element, both as bit patterns of
 * one format of docs/numerics.md §1, under one policy:
 *
 *   CMP_BITWISE    the bits must be equal.  Every NaN of the format equals
 *                  every other NaN (docs/numerics.md §2) unless nan_payload is set,
 *                  then NaNs must have the same bits.  -0 and +0 are different
 *                  patterns, so -0 vs +0 IS a mismatch in bitwise mode.
 *   CMP_TOLERANCE  torch.testing semantics: |got - ref| <= atol + rtol*|ref|,
 *                  decided exactly (equal to the bound passes).  NaN equals
 *                  NaN when equal_nan; an infinity must be matched by the
 *                  same infinity; -0 equals +0.
 *   CMP_ULP        the ordinal distance of the two patterns in the format is
 *                  at most max_ulp (+0 and -0 are at distance 0; crossing
 *                  zero counts every pattern in between: -min_sub to +min_sub
 *                  is 2).  NaN and inf as for CMP_TOLERANCE.
 *   CMP_ULP_OR_TOLERANCE  an element passes if it meets either of the two
 *                  (a fam_tolerance that declares both ulp and rtol/atol).
 *   CMP_BOUND      |got - exact[i]| <= bound[i] (a bound derived from the
 *                  tree, per element), decided exactly on the doubles given.
 *
 * The exact value: a double cannot hold the exact result of a reduction, so
 * `exact` is the reference's exact value rounded to binary64 (by MPFR, in
 * rne).  Its error (at most 2^-53 relative) is far below one ulp of every
 * format of §1 except fp64: a BOUND check of fp64 outputs is only as good as
 * that rounding, and callers should widen the bound by |exact|*2^-53.
 *
 * Patterns are right-aligned in uint64_t.  A pattern with bits above the
 * format's width, or a tf32/e8m13 pattern whose dropped mantissa bits are
 * not zero, is not a value of the format: that is an input error (NX_EINVAL
 * naming the element), never a verdict.
 *
 * The library never prints: the renderers return text or JSON. */
#ifndef PARITY_COMPARE_H
#define PARITY_COMPARE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "famspec.h"
#include "nx_error.h"
#include "nx_format.h"

#define CMP_MAX_NDIM 8
/* An index that does not exist (no mismatch, no finite pair, ...). */
#define CMP_NO_INDEX SIZE_MAX

typedef enum cmp_policy {
    CMP_BITWISE,
    CMP_TOLERANCE,
    CMP_ULP,
    CMP_ULP_OR_TOLERANCE,
    CMP_BOUND,
    CMP_NPOLICIES
} cmp_policy;

typedef struct cmp_options {
    cmp_policy policy;
    double rtol, atol;  /* CMP_TOLERANCE, CMP_ULP_OR_TOLERANCE; >= 0 */
    double max_ulp;     /* CMP_ULP, CMP_ULP_OR_TOLERANCE; >= 0 (floored) */
    int equal_nan;      /* non-bitwise policies: NaN == NaN (default 1, §2;
                           torch.testing's default is 0) */
    int nan_payload;    /* NaNs are equal only with equal bits (default 0) */
    int bound_vs_ref;   /* CMP_BOUND: `exact` holds the reference's values and
                           `bound` the derived bound between two points
                           (docs/tolerance.md); the report says so (default 0) */
} cmp_options;

/* Buckets of the ulp histogram.  Every element lands in exactly one bucket,
 * so the buckets sum to n: a finite pair by its ulp distance; a pair the
 * policy calls equal without a distance (the same infinity, NaN with NaN) in
 * bucket 0; every other pair with a NaN or an infinity (NaN vs number, inf
 * vs finite, +inf vs -inf, NaN vs NaN when they must not match) in
 * CMP_HIST_NONFINITE. */
enum {
    CMP_HIST_0, CMP_HIST_1, CMP_HIST_2, CMP_HIST_3_4, CMP_HIST_5_8, CMP_HIST_9_16,
    CMP_HIST_17_32, CMP_HIST_33_64, CMP_HIST_OVER_64, CMP_HIST_NONFINITE,
    CMP_HIST_NBUCKETS
};

/* What to compare.  got and ref are required; exact is required by
 * CMP_BOUND and optional otherwise (then the result also reports each
 * side's error against it); bound is required by CMP_BOUND (each >= 0, inf
 * allowed).  shape (ndim entries, row-major) must multiply to n; ndim = 0
 * with a non-NULL shape is a scalar (n = 1); shape = NULL with ndim = 0
 * means a flat vector of n. */
typedef struct cmp_input {
    nx_fmt fmt;
    size_t n;
    const uint64_t *got;   /* the device's patterns */
    const uint64_t *ref;   /* the reference's patterns, same format */
    const double *exact;   /* the reference's exact values, rounded to binary64 */
    const double *bound;   /* per-element error bound against exact */
    int ndim;
    const int64_t *shape;
} cmp_input;

typedef struct cmp_result {
    cmp_options opt;       /* the policy that gave this verdict */
    nx_fmt fmt;
    int ndim;
    int64_t shape[CMP_MAX_NDIM];
    size_t n;
    size_t mismatched;     /* M: elements that fail the policy */
    size_t first_mismatch; /* flat index, CMP_NO_INDEX when M = 0 */
    size_t bits_differ;    /* elements whose bits differ (under any policy:
                              "passes, but not bit-exact") */
    /* Greatest |got - ref| and |got - ref|/|ref| over pairs of finite
     * values (torch.testing: only over mismatched elements; here, when M = 0,
     * over all elements so a pass still reports its largest difference).
     * Ties keep the first index; |ref| = 0 with a difference gives inf.
     * Computed in binary64 (for fp64 the difference may round). */
    int diffs_over_mismatched;
    double max_abs;
    size_t max_abs_index;
    double max_rel;
    size_t max_rel_index;
    /* Greatest ulp distance over all pairs of finite values. */
    uint64_t max_ulp;
    size_t max_ulp_index;
    size_t hist[CMP_HIST_NBUCKETS];
    size_t nan_mismatch;   /* mismatched elements with a NaN on either side */
    size_t inf_mismatch;   /* mismatched elements with an inf (and no NaN) */
    size_t zero_sign_diff; /* elements where one side is +0 and the other -0:
                              mismatches in bitwise mode, equal otherwise */
    /* With exact: greatest |got - exact| and |ref - exact| over finite
     * values (CMP_NO_INDEX when none). */
    int has_exact;
    double max_err_exact;
    size_t max_err_exact_index;
    double ref_max_err_exact;
    size_t ref_max_err_exact_index;
    /* CMP_BOUND: the greatest |got - exact| / bound (1 means "at the bound";
     * an error against a zero bound is inf). */
    double max_bound_ratio;
    size_t max_bound_ratio_index;
} cmp_result;

const char *cmp_policy_name(cmp_policy p);  /* "bitwise", "tolerance", ... */
int cmp_policy_from_name(const char *name); /* -1 when unknown */
/* "0", "1", "2", "3-4", ..., ">64", "non-finite". */
const char *cmp_hist_bucket_name(int bucket);

/* Defaults: the policy, zero tolerances, equal_nan = 1, nan_payload = 0. */
void cmp_options_init(cmp_options *o, cmp_policy p);
/* The policy a point's declared tolerance asks for: ulp -> CMP_ULP,
 * rtol/atol -> CMP_TOLERANCE, both -> CMP_ULP_OR_TOLERANCE.  A tolerance that
 * declares neither is NX_EINVAL (the caller decides: bitwise or a bound). */
nx_status cmp_options_from_tolerance(const fam_tolerance *t, cmp_options *o, nx_err *err);

/* Compares in->got against in->ref (and in->exact) under *opt into *out.
 * Returns NX_EINVAL for bad options, a shape that does not multiply to n, a
 * missing exact/bound for CMP_BOUND, a negative or NaN bound, or a pattern
 * that is not a value of the format (the message names the element by its
 * index and which side).  The verdict is out->mismatched == 0. */
nx_status cmp_compare(const cmp_input *in, const cmp_options *opt, cmp_result *out, nx_err *err);

/* The ordinal distance between two patterns of format f: the patterns in
 * increasing order of value are numbered by consecutive integers (sign and
 * magnitude -> a monotone integer, +0 and -0 both 0, tf32/e8m13 counted in
 * their own precision).  Returns 0 (and leaves *dist alone) when either is
 * a NaN or not a value of f; an infinity is one past max finite. */
int cmp_ulp_distance(nx_fmt f, uint64_t a, uint64_t b, uint64_t *dist);

/* The exact predicate of CMP_TOLERANCE on finite doubles:
 * 1 if |got - ref| <= atol + rtol*|ref| holds for the real numbers (not
 * their binary64 evaluation).  rtol, atol >= 0, finite. */
int cmp_close(double got, double ref, double rtol, double atol);

/* The multi-dimensional index of flat index i (row-major) in shape. */
typedef enum cmp_index_style {
    CMP_INDEX_BRACKETS, /* "[1, 17]"; a scalar "[]" */
    CMP_INDEX_TUPLE     /* torch.testing's "(1, 17)", "(5,)"; a scalar "()" */
} cmp_index_style;
/* Writes the index into buf like snprintf (always terminated when cap > 0)
 * and returns the length it needs.  i >= the shape's size, or ndim outside
 * 0..CMP_MAX_NDIM, writes "?". */
size_t cmp_format_index(char *buf, size_t cap, size_t i, int ndim, const int64_t *shape,
                        cmp_index_style style);

/* A double as Python's repr writes it (torch.testing's messages): the
 * shortest text that reads back to the same double, ".0" on integral values,
 * "nan", "inf", "-inf".  Like snprintf; 32 bytes always suffice. */
void cmp_num_text(char *buf, size_t cap, double v);

/* What torch.testing users expect, then what it does not give:
 *   Mismatched elements: 3 / 4096 (0.1%)
 *   Greatest absolute difference: 0.0625 at index (1, 17) (up to 1e-05 allowed)
 *   Greatest relative difference: 0.03125 at index (1, 17) (up to 1.3e-06 allowed)
 *   Max ulp: 2 at index (1, 17)
 *   Ulp histogram: 0: 4093, 1: 0, 2: 3, 3-4: 0, ..., >64: 0, non-finite: 0
 *   Specials: ...
 *   Policy: ...
 * One line each, '\n'-terminated.  malloc'd; NULL when out of memory. */
char *cmp_result_text(const cmp_result *r);
/* The same as a JSON object (non-finite numbers as the strings "inf",
 * "-inf", "nan"; indices as arrays).  New reference; NULL when out of
 * memory. */
json_t *cmp_result_json(const cmp_result *r);

#endif
