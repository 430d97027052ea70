/* trace_check.h: checking traces (docs/traces.md) anywhere, no device
 * needed, as `parity check TRACE...` does: Tier 2 of each trace against the
 * exact reference of its point (or of another point) through the one
 * Tier 2 (tier2.h); Tier 1 across traces of one point, class and shape; and
 * cross-class parity across traces of one point on two classes.  The CLI
 * parses options and prints; everything judged lives here. */
#ifndef PARITY_TRACE_CHECK_H
#define PARITY_TRACE_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "campaign.h"
#include "registry.h"
#include "tier2.h"
#include "trace.h"

/* One trace and its Tier 2. */
typedef struct tc_trace {
    trace t;
    fam_spec spec;         /* the trace's point, resolved for its class and shape */
    st_file ref;           /* reference outputs, one row per logical row (or batch row with in.*) */
    int ref_by_batch;      /* the reference was computed on the trace's own in.* inputs */
    char id[128];          /* FAMILY.POINT */
    camp_check t2;         /* the verdict and the judge's words */
    /* the one Tier 2's result as it gave it: the comparison (cmp, text),
     * bit_exact, and every mismatching element of the main output (diff,
     * ndiff; cols its last axis) */
    t2_result r;
} tc_trace;

void tc_trace_init(tc_trace *c);
void tc_trace_free(tc_trace *c);

/* Tier 2 of c->t (read by the caller): the reference of the trace's point,
 * or of ref_point (of class ref_class, default the trace's; same family),
 * evaluated with engine (nx_engine_kind) on the trace's in.* tensors or on the
 * inputs its seed regenerates.  Errors name the trace and the field. */
nx_status tc_check_trace(const reg_registry *reg, const char *ref_point, const char *ref_class, int engine,
                         tc_trace *c, nx_err *err);

/* A Tier 1 comparison between traces a and b (indices into the checked
 * traces). */
typedef struct tc_pair {
    int check;             /* CK_DETERMINISM ... CK_ROWS */
    size_t a, b;
    int pass;
    int negative;          /* one of the traces is a negative control for this check */
    size_t shared_rows;
    char detail[2048];
} tc_pair;

/* Traces of one point, class and shape that share rows, judged by the
 * campaign's judge: runs that differ only in run index (determinism), mode
 * (eager vs graphed), kernel (new vs legacy) or batch (row invariance).
 * Linear: each trace against the first of its configuration (kernel,
 * mode, batch), and those first traces pairwise.  *out is malloc'd. */
nx_status tc_tier1(const tc_trace *cs, size_t n, tc_pair **out, size_t *nout, nx_err *err);

/* A cross-class comparison between traces a and b. */
typedef struct tc_cross {
    size_t a, b;
    camp_check x;
} tc_cross;

/* One comparison per point, shape and pair of classes (the first pair of
 * traces with the same batch and mode, else the first that shares rows),
 * through camp_cross_class.  On an error *out holds the comparisons made
 * before it (the caller frees it). */
nx_status tc_cross_class(const reg_registry *reg, const tc_trace *cs, size_t n, tc_cross **out, size_t *nout,
                         nx_err *err);

/* The checked traces as a campaign's point results, one per FAMILY.POINT
 * (in the order the points first appear), for the ledger (`parity check
 * --ledger`): Tier 2 fails when any trace of the point fails it, and is
 * bit-exact when every trace is (its basis the deciding trace's: the first
 * failing, else the point's main trace, the one with the most rows, graphed
 * and run 0 first); each Tier 1 check fails when a pair of the point fails
 * it, passes when one passed, else is skipped; a check is negative where
 * the point's param negative_control or a trace's expected_fail names it.
 * The shape, hash and kernel are the main trace's (its point resolved for
 * its class and shape); legacy is another kernel among the traces.  main[k]
 * is the index of result k's main trace.  *out and *main are malloc'd. */
nx_status tc_points(const tc_trace *cs, size_t n, const tc_pair *pairs, size_t npairs, camp_result **out,
                    size_t **main, size_t *nout, nx_err *err);

/* A kernel's output saved as .npy, checked as a trace whose metadata come
 * from options (`parity check --npy`). */
typedef struct tc_npy_opts {
    const char *path, *point, *cls, *shape, *seed, *dist, *dtype, *name, *mode, *kernel, *batch;
} tc_npy_opts;

/* Builds the trace; the trace validator then checks it like any trace. */
nx_status tc_npy_trace(const tc_npy_opts *o, trace *t, nx_err *err);
/* An error about a .npy trace's metadata names the option it came from
 * ("--seed: ..."). */
void tc_npy_name_option(nx_err *err);

#endif
