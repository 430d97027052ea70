/* campaign.h: the harness proper.  For one family point at one shape:
 * generate inputs, run a class backend (repeats, eager and graphed, the
 * legacy kernel, batch variants), evaluate the reference, and give the
 * Tier 1 and Tier 2 verdicts.  The CLI (parity/cli/cmd_campaign.c,
 * cmd_check.c) loops over points and renders reports (parity/report/). */
#ifndef PARITY_CAMPAIGN_H
#define PARITY_CAMPAIGN_H

#include <stddef.h>

#include "compare.h"
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
    CK_COUNT
};

const char *camp_check_name(int ck); /* "determinism", ... */

typedef struct camp_check {
    camp_verdict verdict;
    int negative;          /* a negative control: it is meant to fail */
    char detail[2048];
} camp_check;

typedef struct camp_result {
    char id[128];          /* FAMILY.POINT */
    char class_name[32];
    char kernel[96];
    char legacy[96];       /* "" when the point has no legacy kernel */
    char shape[256];
    char hash[65];
    camp_check checks[CK_COUNT];
    int bit_exact;         /* Tier 2 judged bit for bit */
    cmp_result t2;         /* the Tier 2 comparison of the first output */
    char t2_output[32];
    char *t2_text;         /* rendered, owned */
    double t_gen, t_run, t_ref, t_cmp; /* seconds */
    int error;             /* an input error (not a verdict): message in errmsg */
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
    int engine;            /* ref_engine */
    const char *traces;    /* directory for trace files, or NULL */
    camp_cache *cache;     /* or NULL: generate every point's inputs */
} camp_opts;

/* The dimension that indexes independent rows of a family ("M", "B", "T"). */
const char *camp_batch_dim(const char *family);

/* Shape presets: the shape of `family` in preset `name` ("small",
 * "8b-layer"); NULL when the preset or family is unknown. */
const char *camp_preset_shape(const char *preset, const char *family);
int camp_preset_known(const char *preset);

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

/* 1 if any check failed (a parity failure). */
int camp_result_failed(const camp_result *res);

/* Slices the batch-dimension rows `rows[0..n)` out of every tensor of `in`
 * whose first dimension is the batch dimension (per ref_inputs of spec);
 * other tensors are copied whole. */
nx_status camp_slice_inputs(const fam_spec *spec, const st_file *in, const int64_t *rows, size_t n,
                            st_file *out, nx_err *err);

#endif
