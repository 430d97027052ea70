/* lkb.h: the LKB report (docs/lkb.md): a model's step as data
 * (kernels/models/<model>/STEP.toml), the lowering rules of a class
 * (kernels/<class>/common/FUSIONS.toml), microbenchmark records
 * (kernels/<class>/MEASUREMENTS.toml, written by `parity bench`), and
 * from them: LKB coverage of the step at C = 1, 16, 128 with its measured
 * part, the evidence envelope, the LKB residual (class and per-model
 * sources, KERNEL.toml [shadow] entries, copy points), the single-class
 * bucket, promotion candidates, parameterization yield between two
 * registries and TTPV per point.  The library never prints. */
#ifndef PARITY_LKB_H
#define PARITY_LKB_H

#include <stddef.h>
#include <stdint.h>

#include "nx_error.h"
#include "registry.h"

/* ---- integer expressions of a step manifest --------------------------- */

/* Evaluates expr: decimal integers, names, + - * / (exact integer
 * division only) and parentheses, in exact integers (|v| < 2^62).  Each
 * name is looked up in names/values (n entries).  err names the
 * expression and the offending character or name. */
nx_status lkb_eval(const char *expr, const char *const *names, const long long *values, size_t n, long long *out,
                   nx_err *err);

/* ---- the step manifest ------------------------------------------------- */

typedef struct lkb_op {
    char *id;
    char *family;     /* the family that serves it; NULL: novel */
    int per_layer;    /* 1: counted `layers` times, 0: once per step */
    long long count;  /* launches per layer (or per step) */
    char *shape;      /* "T=C,H=4096": each value an expression in C */
    char *flops, *bytes; /* expressions in C and the shape's dimensions */
    char *where;      /* file:line */
} lkb_op;

typedef struct lkb_step {
    char *model, *path, *description;
    long long layers;
    lkb_op *ops;
    size_t nops;
} lkb_step;

/* Loads DIR/models/<model>/STEP.toml. */
nx_status lkb_step_load(const char *kernels_dir, const char *model, lkb_step *s, nx_err *err);
void lkb_step_free(lkb_step *s);
/* The op's shape at C rows ("T=16,H=4096"), its flops and bytes. */
nx_status lkb_op_eval(const lkb_op *op, long long c, char *shape, size_t len, long long *flops, long long *bytes,
                      nx_err *err);

/* ---- microbenchmark records -------------------------------------------- */

typedef struct lkb_record {
    char *id, *class_name, *point, *shape, *backend, *kernel, *utc, *host, *where;
    char *baseline;        /* "legacy kernel K", "class D", or NULL: none */
    char *energy_source;   /* "rapl ...", or "not measured: ..." */
    long long rows;
    int64_t utc_s;
    int warmup, repeats;
    double median_s, min_s, max_s, band_s;
    int has_baseline;
    double b_median_s, b_min_s, b_max_s;
    int has_energy, has_b_energy;
    double e_j, e_min_j, e_max_j, be_j, be_min_j, be_max_j; /* joules per run */
} lkb_record;

typedef struct lkb_records {
    lkb_record *r;
    size_t n;
} lkb_records;

/* Loads DIR/<class>/MEASUREMENTS.toml (absent: no records) and appends its
 * records to *out.  Unknown keys and wrong kinds are errors. */
nx_status lkb_records_load(const char *kernels_dir, const char *class_name, lkb_records *out, nx_err *err);
void lkb_records_free(lkb_records *rs);
/* The TOML text of one record (a [[measurement]] table). */
char *lkb_record_toml(const lkb_record *r);
/* A record of class at point, rows and shape (shape NULL: any), the latest. */
const lkb_record *lkb_record_find(const lkb_records *rs, const char *class_name, const char *point, long long rows,
                                  const char *shape);
/* 1 when the kernel beat its baseline beyond the noise band: the slowest
 * repeat of the kernel is faster than the fastest of the baseline. */
int lkb_record_beats_speed(const lkb_record *r);
/* The same for energy per run: the kernel's largest reading is below the
 * baseline's smallest. */
int lkb_record_beats_energy(const lkb_record *r);

/* ---- the residual ------------------------------------------------------ */

typedef enum { LKB_RES_SOURCE, LKB_RES_SHADOW, LKB_RES_COPY } lkb_res_kind;

typedef struct lkb_residual {
    lkb_res_kind kind;
    char *what;         /* source: its path under DIR; shadow and copy: FAMILY.POINT */
    char *scope;        /* source: "class" or the model's directory name; else NULL */
    long long lines;    /* source: its lines */
    char *why, *measurement; /* NULL when not given */
    int in_forks;       /* listed in DIR/FORKS.md */
    int users;          /* its users (docs/lkb.md "Users"): the (class, model) pairs whose
                           lowering routes an op to it, plus KERNEL.toml `users` not among them */
    char *users_text;   /* "sm80/llama3-8b, sm89/llama3-8b", or NULL */
    char *kernel_id;    /* source and shadow: KERNEL.toml `id`, or NULL */
    char *where;        /* the KERNEL.toml or manifest line that says why, or the file */
} lkb_residual;

/* ---- the report -------------------------------------------------------- */

enum { LKB_SHARED, LKB_SHARED_UNMEASURED, LKB_PARAM, LKB_POLICY, LKB_NOVEL, LKB_NCAT };
extern const char *const lkb_cat_names[LKB_NCAT];

typedef struct lkb_op_at {
    const lkb_op *op;
    char point[160];    /* FAMILY.POINT serving it, "" when none */
    char shape[256];
    int cat;            /* LKB_* */
    int no_rule;        /* shared-unmeasured because no rule of this class covers it */
    int covered;        /* run by an LKB kernel (an instantiation or branch point by a rule) */
    int in_envelope;    /* a record at (class, point, C, shape) */
    double t_s;         /* the op's time in the step (all its launches) */
    int weight_measured;/* t_s from the record, else the roofline model */
    char rule_where[160];
} lkb_op_at;

typedef struct lkb_coverage {
    long long c;
    lkb_op_at *ops;
    size_t nops;
    double total_s;
    double share[LKB_NCAT];   /* fractions of total_s */
    double coverage, measured;/* fractions */
    size_t n_measured_w, n_model_w;
} lkb_coverage;

typedef struct lkb_envelope_item {
    char *family, *point;
    long long rows[32];
    size_t nrows;
} lkb_envelope_item;

typedef struct lkb_ttpv {
    char *point;
    int speed_known, energy_known; /* a winning record exists */
    int energy_readable;           /* some record of the point has an energy reading */
    char speed_id[160], energy_id[160];
    int64_t speed_s, energy_s;     /* seconds since t0; never negative */
    int speed_early, energy_early; /* the record predates t0: TTPV 0, said so */
    char speed_utc[32], energy_utc[32];
} lkb_ttpv;

typedef struct lkb_single {
    char *point, *bundle, *where;
} lkb_single;

typedef struct lkb_yield {
    int computed;
    char before[1024];
    long long loc_before, loc_after, count_before, count_after;
    char *families_promoted, *points_promoted; /* comma lists, "" none */
    size_t nfamilies, npoints;
    /* points that are no promotion, with why: new (nothing of the residual
     * went), one user (rule 1 needs two), numerics changed; comma list */
    char *points_not;
    size_t nnot;
} lkb_yield;

typedef struct lkb_report {
    char class_name[64], model[64], kernels[1024];
    int has_step;
    lkb_coverage cov[3];                 /* C = 1, 16, 128 */
    lkb_envelope_item *env;
    size_t nenv;
    lkb_residual *res;
    size_t nres;
    long long res_count, res_loc, res_copy, res_shadow, res_sources;
    lkb_single *single;
    size_t nsingle;
    size_t n_candidates;                 /* residual entries with users >= 2 */
    lkb_ttpv *ttpv;
    size_t nttpv;
    char t0_what[200];
    lkb_yield yield;
    lkb_step step;
} lkb_report;

typedef struct lkb_opts {
    const char *model;      /* NULL: no coverage (no step) */
    const char *ledger;     /* for t0 (the class's first campaign); NULL or missing: the first record */
    const char *before;     /* another registry directory for the yield, or NULL */
} lkb_opts;

/* The report of class_name over the registry r loaded from r's directory. */
/* The point ("FAMILY.POINT") class_name's lowering rules (FUSIONS.toml of
 * its chain) give op at c rows, and the rule's file:line; both "" when no
 * rule serves it (or op has no family).  The decode loop lowers at its
 * batch this way. */
nx_status lkb_lower(const reg_registry *r, const char *class_name, const lkb_op *op, long long c, char *point,
                    size_t plen, char *where, size_t wlen, nx_err *err);

nx_status lkb_compute(const reg_registry *r, const char *class_name, const lkb_opts *o, lkb_report *rep,
                      nx_err *err);
void lkb_report_free(lkb_report *rep);
char *lkb_text(const lkb_report *rep);
char *lkb_json(const lkb_report *rep);

/* The LKB rules of the registry (docs/lkb.md "Lint"): evidence naming no
 * existing record, silent residual entries, bundles, rates, records, step
 * manifests and lowering rules.  Findings "file:line: error: ..." appended
 * to *report (malloc'd); returns the number of errors. */
size_t lkb_lint(const reg_registry *r, char **report);

/* The ledger fields of a campaign of class cls (residual_*, and coverage_*
 * when DIR/models/<model>/STEP.toml exists), for ledger_set_lkb; when the
 * report cannot be made, f->set = 0 and f->why says why. */
struct ledger_lkb;
void lkb_ledger_fields(const reg_registry *r, const char *cls, const char *model, struct ledger_lkb *f);

/* Shared helpers of the files of this folder. */
char *lkb_strdup(const char *s);

#endif
