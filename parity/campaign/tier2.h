/* tier2.h: the one Tier 2 (docs/tolerance.md).  A device's output against
 * the exact reference of a point, on a neutral case that campaign, check
 * and gate all fill: the device's point and the reference's, the inputs,
 * both outputs and the row map between them.  Bit for bit where the two
 * points are the same and nothing is a declared approximation or a negative
 * control; else the declared tolerance, else the bound derived from both
 * points' trees, else torch.testing's default.  The judge's words
 * (verdict.h) are the same for every caller. */
#ifndef PARITY_TIER2_H
#define PARITY_TIER2_H

#include <stddef.h>
#include <stdint.h>

#include "compare.h"
#include "famspec.h"
#include "safetensors.h"
#include "tolerance.h"

/* One device output to judge.  Batch row i of got holds logical row
 * rows[i] (rows NULL: i) and is compared with row ref_rows[i] of want
 * (ref_rows NULL: i); every other row-shaped output of want must then agree
 * bit for bit on the same rows when the comparison is bitwise. */
typedef struct t2_case {
    const char *name;        /* what the messages name: a point id, a trace's path */
    const fam_spec *dev;     /* the point the device ran */
    const fam_spec *ref;     /* the reference's point (dev itself in a campaign) */
    const char *differs;     /* how dev and ref differ, said (registry compare's summary); NULL */
    int negative;            /* a negative control: judged by its declared tolerance */
    const st_file *in;       /* the inputs the reference was evaluated on */
    const st_file *got;      /* the device's outputs (a trace's in.* tensors are ignored) */
    const st_file *want;     /* the reference's outputs */
    const int64_t *rows;     /* per batch row of got: its logical row, or NULL */
    const int64_t *ref_rows; /* per batch row of got: the row of want it is compared with, or NULL */
    int threads;             /* for a derived bound; <= 0: OpenMP's default */
    /* The flat indices of the mismatching elements are kept (t2_result.diff)
     * while *diff_budget holds them, which is then reduced; NULL: none kept. */
    size_t *diff_budget;
} t2_case;

typedef struct t2_result {
    int pass;                /* the judge's verdict */
    int bit_exact;           /* no bit of the main output differs from the reference */
    char output[32];         /* the main output's name ("y") */
    char detail[2048];       /* the judge's words: "LABEL: sentence" */
    cmp_result cmp;          /* the comparison of the main output */
    char *text;              /* cmp_result_text, owned */
    uint64_t *diff;          /* mismatching elements of the main output, ascending, owned; or NULL */
    size_t ndiff;
    int diff_dropped;        /* there were mismatches that the budget could not hold */
    int64_t cols;            /* the main output's last axis (1 for a scalar) */
} t2_result;

/* Tier 2's policy for a run at point dev against the reference of point
 * ref: bit for bit when the two have the same hash, no elementwise function
 * of dev is a declared approximation and the run is no negative control;
 * else t2_policy_choose's.  *why says why it is not bitwise ("" when it
 * is): `differs` (how the points differ), the negative control or the
 * approximation, then pol->why.  The arguments after negative are
 * t2_policy_choose's. */
nx_status t2_policy_for(const fam_spec *dev, const fam_spec *ref, const char *differs, int negative,
                        const st_file *in, nx_fmt fmt, size_t n, const uint64_t *ref_bits, const size_t *src,
                        int threads, t2_policy *pol, char *why, size_t len, nx_err *err);

/* Judges case c into *res.  The main output is want's "y", else its first
 * tensor; got must hold it with the same dtype and row size.  Errors only
 * for bad input (a missing or mismatched output, a size past the limits,
 * docs/limits.md) or memory, never for a failed check. */
nx_status t2_judge(const t2_case *c, t2_result *res, nx_err *err);
void t2_result_free(t2_result *res);

#endif
