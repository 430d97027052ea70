/* campaign.h: the harness proper.  For one family point at one shape:
 * generate inputs, run a class backend (repeats, eager and graphed, the
 * legacy kernel, batch variants), evaluate the reference, and give the
 * Tier 1 and Tier 2 verdicts.  The CLI (parity/cli/cmd_campaign.c,
 * cmd_check.c) loops over points and renders reports (parity/report/). */
#ifndef PARITY_CAMPAIGN_H
#define PARITY_CAMPAIGN_H

#include <stddef.h>
#include <stdint.h>

#include "compare.h"
#include "tolerance.h"
#include "verdict.h"
#include "device.h"
#include "famspec.h"
#include "registry.h"

typedef enum camp_verdict {
    CV_PASS,     /* the check passed (or a negative control failed, as it must) */
    CV_FAIL,     /* a parity check failed (or a negative control passed) */
    CV_SKIP,     /* not applicable or not runnable here; the detail says why */
} camp_verdict;

enum {
    CK_DETERMINISM,   /* Tier 1: N repeated runs identical */
    CK_EAGER_GRAPHED, /* Tier 1: eager vs graphed (cpu: 1 thread vs all) */
    CK_NEW_LEGACY,    /* Tier 1: two kernels of one point */
    CK_ROWS,          /* Tier 1: a row alone / in a batch / permuted / other batch size */
    CK_TIER2,         /* Tier 2: bits against the reference, or the tolerance */
    CK_PARITY,        /* cross-class: the same point on another class (--against) */
    CK_COUNT
};

const char *camp_check_name(int ck); /* "determinism", ... */

typedef struct camp_check {
    camp_verdict verdict;
    int negative;          /* a negative control: it is meant to fail */
    char detail[2048];     /* the judge's words: "LABEL: sentence" (verdict.h) */
} camp_check;

typedef struct camp_result {
    char id[128];          /* FAMILY.POINT */
    char class_name[32];
    char kernel[96];
    char legacy[96];       /* "" when the point has no legacy kernel */
    char shape[256];
    char hash[65];
    /* SHA-256 (hex) of the graphed run 0's outputs and of the inputs it ran
     * on (each tensor's name, dtype, shape and bytes; "" when it did not
     * run): what the ledger compares across classes (docs/ledger.md) */
    char out_digest[65], in_digest[65];
    camp_check checks[CK_COUNT];
    int bit_exact;         /* Tier 2: no bit of the main output differs from the reference */
    char against[32];      /* the class of the CK_PARITY check, "" without --against */
    cmp_result t2;         /* the Tier 2 comparison of the first output */
    char t2_output[32];
    char *t2_text;         /* rendered, owned */
    /* Where the bits of the Tier 2 output differ from the reference, kept
     * only with camp_opts.diff_budget (a report's heat map): flat indices,
     * ascending, owned; t2_cols is the output's last axis (1 for a scalar).
     * t2_diff_dropped: there were mismatches but the budget could not hold
     * them (t2_diff NULL). */
    uint64_t *t2_diff;
    size_t t2_ndiff;
    int64_t t2_cols;
    int t2_diff_dropped;
    double t_gen, t_run, t_ref, t_cmp; /* seconds */
    /* The power checks (camp_opts.power): run (0: not), their verdict
     * (pw_verdict), the neighbouring points distinguished, equivalent and
     * not distinguished by the inputs, those not distinguished named, and
     * the seconds they took. */
    int power_run, power_verdict;
    size_t power_dist, power_equiv, power_unseen;
    char power_unseen_names[512];
    char power_detail[1536];
    char power_space[2048];   /* the input-space model: what the cases covered, what not (docs/power.md) */
    double t_power;
    int error;             /* an input error (not a verdict): message in errmsg */
    int backend_error;     /* ... raised by an out-of-tree backend's run: it hung, died,
                              broke the protocol or its kernel failed (exit 3) */
    char errmsg[NX_ERR_MSG_MAX];
} camp_result;

/* The inputs generated for the previous point: points of one family at one
 * shape usually read the same tensors, which are then generated once. */
typedef struct camp_cache {
    char *key;             /* seed, dist and every input's description */
    st_file in;
} camp_cache;

void camp_cache_free(camp_cache *c);

typedef struct camp_opts {
    const dev_backend *backend;
    int repeats;           /* graphed runs compared for determinism (>= 2) */
    int threads;           /* graphed thread count (0 = all) */
    unsigned long long seed;
    int dist;              /* nx_dist */
    int engine;            /* nx_engine_kind */
    const char *traces;    /* directory for trace files, or NULL */
    camp_cache *cache;     /* or NULL: generate every point's inputs */
    /* Cross-class parity (CK_PARITY): class `against`'s run of each point,
     * read from against_traces (its trace AGAINST.FAMILY.POINT.graphed-0,
     * as --traces names them) or, without a directory, run here on
     * against_backend.  NULL against: the check is skipped and not reported. */
    const char *against;
    const char *against_traces;
    const dev_backend *against_backend;
    /* NULL, or the number of mismatching elements still to be kept over
     * the whole campaign (camp_result.t2_diff); each point that keeps its
     * mismatches takes them from it. */
    size_t *diff_budget;
    /* 1: the power checks of every point that is no negative control
     * (power.h, docs/power.md): a kernel that realises another point fails
     * Tier 2, and what the inputs can tell apart is reported */
    int power;
} camp_opts;

/* The backend that runs class cls: cpu for a chain reaching `cpu`, cuda
 * for a chain reaching an sm* root; NULL for any other. */
const dev_backend *camp_class_backend(const reg_registry *reg, const char *cls);

/* A family's batch dimension and preset shapes: family/famdesc.h. */

/* Runs one point.  Returns NX_OK with *res filled (verdicts inside), or an
 * error for input problems (then res->error is set too). */
nx_status camp_run_point(const reg_registry *reg, const char *class_name, const char *id,
                         const char *shape, const camp_opts *opts, camp_result *res, nx_err *err);
void camp_result_free(camp_result *res);

/* When a device runs another numerics point and none of the two declares a
 * tolerance: torch.testing's default for the output format (bf16 rtol
 * 1.6e-2, fp16 1e-3, fp32 1.3e-6, fp64 1e-7; atol 1e-5, fp64 1e-7), else
 * rtol 1e-1 for the 8-bit and smaller formats.  Fills *o and names it in
 * what. */
void camp_default_tolerance(nx_fmt f, cmp_options *o, char *what, size_t len);

/* The "differences" lines of a reg_compare text, joined with "; ". */
void camp_compare_summary(const char *text, char *out, size_t len);

/* Bytes of one row of a tensor whose first dimension is the batch (0 for
 * a scalar or an empty batch). */
size_t camp_row_bytes(const st_tensor *t);

/* Compares every output of run a with the same output of run b over the
 * logical rows both hold (batch row i of a holds logical row arows[i]; NULL
 * arows or brows: both runs hold their whole batch in order) and says where
 * they first differ.  Input tensors ("in.") are not compared. */
void camp_diff_runs(const st_file *a, const int64_t *arows, size_t an, const st_file *b, const int64_t *brows,
                    size_t bn, vd_diff *d);

/* What a Tier 1 check compares, in the words both campaign and check use:
 * "repeated runs", "eager and graphed runs", "the new and the legacy
 * kernel"; rows: "batch A and batch B" from the two batch strings. */
void camp_tier1_what(int ck, const char *batch_a, const char *batch_b, char *buf, size_t len);

/* Cross-class parity of one point: run a of class_a against run b of
 * class_b (rows as for camp_diff_runs), judged by vd_judge with what
 * `registry compare` says of the two points at shape.  inputs_differ: NULL,
 * or how the runs' inputs differ (then the check is a skip). */
nx_status camp_cross_class(const reg_registry *reg, const char *class_a, const char *class_b, const char *id,
                           const char *shape, const st_file *a, const int64_t *arows, size_t an, const st_file *b,
                           const int64_t *brows, size_t bn, const char *inputs_differ, camp_check *out, nx_err *err);

/* The checks a point's negative_control param names, as a trace's
 * expected_fail value ("eager_graphed,rows"); "" when none. */
void camp_expected_fail(const fam_spec *spec, char *buf, size_t len);

/* 1 if any check failed (a parity failure). */
int camp_result_failed(const camp_result *res);

/* Slices the batch-dimension rows `rows[0..n)` out of every tensor of `in`
 * whose first dimension is the batch dimension (per ref_inputs of spec);
 * other tensors are copied whole. */
nx_status camp_slice_inputs(const fam_spec *spec, const st_file *in, const int64_t *rows, size_t n,
                            st_file *out, nx_err *err);

#endif
