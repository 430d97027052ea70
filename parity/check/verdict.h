/* verdict.h: the one judge of the harness.  `parity campaign` and `parity
 * check` hand it the same evidence (two runs agreed or not and where; a
 * Tier 2 comparison; two classes' outputs at one point) and print what it
 * says, so the same evidence gets the same verdict in the same words
 * wherever it is judged.
 *
 * The words follow the evidence, never the policy alone: a comparison in
 * which no bit differs is called bit-exact even when it was judged by a
 * tolerance, and "not bit-exact" is said only when some bits differ.
 *
 * Every judgement is "LABEL: sentence", the label one of
 *   ok                                          the check passed
 *   ok (negative control failed as expected)    a check the kernel is built to fail, failed
 *   ok (declared difference)                    two classes whose points differ, so bits may
 *   FAIL                                        a parity check failed
 *   FAIL (negative control did not fail)        a control agreed: the check cannot tell it apart
 *
 * The library never prints. */
#ifndef PARITY_VERDICT_H
#define PARITY_VERDICT_H

#include <stddef.h>

#include "compare.h"
#include "famspec.h"

#define VD_OK "ok"
#define VD_OK_NEGATIVE "ok (negative control failed as expected)"
#define VD_OK_DECLARED "ok (declared difference)"
#define VD_FAIL "FAIL"
#define VD_FAIL_NEGATIVE "FAIL (negative control did not fail)"
/* A negative control whose check the campaign's inputs could not make
 * differ, and which failed as built on rows added to exercise it. */
#define VD_OK_NOT_EXERCISED "ok (negative control not exercised by these inputs; failed as expected on added rows)"

typedef enum vd_kind {
    VD_TIER1,   /* two runs of one point on one class must agree bit for bit */
    VD_TIER2,   /* a run against the exact reference of its point */
    VD_PARITY   /* the same point on two classes: the central claim */
} vd_kind;

/* Where two sets of outputs first differ, and how much. */
typedef struct vd_diff {
    int same;              /* every compared element has equal bits */
    char output[64];       /* the first output that differs ("" when same) */
    size_t differ;         /* elements of that output whose bits differ */
    size_t compared;       /* elements of that output compared (all outputs' when same) */
    size_t rows;           /* logical rows the two runs share */
    char first_at[160];    /* "[1, 5] (logical row 1; 0x3f80 vs 0x3f81)" in the first run's layout */
} vd_diff;

/* Writes the words for a difference: "output 'y': 15 / 96 elements differ,
 * first at [1, 5] (logical row 1)". */
void vd_diff_text(const vd_diff *d, char *buf, size_t len);

typedef struct vd_evidence {
    vd_kind kind;
    int negative;          /* Tier 1: the kernel is built to fail this check */
    /* VD_TIER1 and VD_PARITY */
    const char *what;      /* Tier 1: "eager and graphed runs" */
    const vd_diff *diff;
    /* VD_TIER2 */
    const cmp_result *cmp;
    const char *output;    /* the output compared: "y" */
    const char *first_at;  /* the first element outside, "" when none */
    const char *why;       /* why the comparison is not bitwise; "" when it is */
    /* VD_PARITY */
    const char *class_a, *class_b, *point;
    int parity_expected;   /* registry compare: equal hashes and no `atomic` */
    const char *declared;  /* what registry compare says differs, when not expected */
    const char *inputs_differ; /* non-NULL: the two runs saw other inputs (says how) */
} vd_evidence;

/* The judge.  Writes "LABEL: sentence" into text and returns 1 when the
 * check passed, 0 when it failed, -1 when it could not be judged (a
 * VD_PARITY comparison of runs that saw other inputs; label "skip"). */
int vd_judge(const vd_evidence *e, char *text, size_t len);

/* torch.testing's default tolerance for an output format (bf16 rtol 1.6e-2,
 * fp16 1e-3, fp32 1.3e-6, fp64 1e-7; atol 1e-5, fp64 1e-7), else rtol 1e-1
 * for the 8-bit and smaller formats.  Fills *o and names it in what. */
void vd_default_tolerance(nx_fmt f, cmp_options *o, char *what, size_t len);

/* Is check (a Tier 1 check name: "determinism", "eager_graphed",
 * "new_legacy", "rows") in list, a comma-separated list of such names
 * (a point's negative_control param, a trace's expected_fail key)? */
int vd_in_list(const char *list, const char *check);

#endif
