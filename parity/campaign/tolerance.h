/* tolerance.h: which comparison Tier 2 uses where the device's result
 * cannot be held to the reference's bits (docs/tolerance.md): the device
 * point's declared tolerance; else the bound derived from both points'
 * trees (refimpl's ref_bound: |y_P - y_Q| <= bound_P + bound_Q per
 * element); else, as a last resort, torch.testing's default for the
 * output format.  Each choice comes with the sentence that says it. */
#ifndef PARITY_TOLERANCE_H
#define PARITY_TOLERANCE_H

#include <stddef.h>
#include <stdint.h>

#include "compare.h"
#include "famspec.h"
#include "safetensors.h"

typedef struct t2_policy {
    cmp_options opt;
    int derived;     /* 1: CMP_BOUND from the trees; exact and bound are set */
    double *exact;   /* per compared element: the reference's value (malloc'd) */
    double *bound;   /* per compared element: bound_P + bound_Q (malloc'd) */
    char why[1024];  /* "derived bound from the trees of ...", "declared tolerance ...", ... */
} t2_policy;

/* Chooses the policy for comparing the device's output (its point: dev)
 * with the reference's (point ref, evaluated on `in`).  The compared
 * elements are n patterns of format fmt, ref_bits[i] the reference's;
 * element i is element src[i] of the family's output y on `in` (src NULL:
 * i itself).  threads <= 0: OpenMP's default.  Errors only for bad input
 * or memory; a bound that cannot be derived is not an error. */
nx_status t2_policy_choose(const fam_spec *dev, const fam_spec *ref, const st_file *in, nx_fmt fmt, size_t n,
                           const uint64_t *ref_bits, const size_t *src, int threads, t2_policy *out, nx_err *err);
void t2_policy_free(t2_policy *p);

/* The cmp_input fields for the policy (exact and bound when derived). */
static inline void t2_policy_input(const t2_policy *p, cmp_input *ci)
{
    ci->exact = p->derived ? p->exact : NULL;
    ci->bound = p->derived ? p->bound : NULL;
}

#endif
