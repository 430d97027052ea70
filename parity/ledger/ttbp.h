/* ttbp.h: time to bit parity (docs/ledger.md), read from the ledger.
 *
 * The scope is the complete runs of one class (and, given, one --model
 * label), in order of their start.  t0 is the start of the first.  A
 * point's record in a run is *at parity* when no Tier 1 check failed and
 * Tier 2 passed bit-exact ("bits"), or passed within the point's declared
 * tolerance without being bit-exact ("declared tolerance": the device runs
 * another, declared point).  A point reaches parity at the first run whose
 * record is at parity; TTBP is that run's start minus t0.  Every later
 * record not at parity is a regression (the run that broke it, and the run
 * that brought it back, if one did).  Overall TTBP is the time at which the
 * last of the points recorded in scope reached parity.
 *
 * Which points count: never a negative control (a point with a check
 * recorded as negative: it is built to fail); and, given a list (the hot
 * points of a model's step, which the CLI finds from the registry), only
 * the points in it. */
#ifndef PARITY_TTBP_H
#define PARITY_TTBP_H

#include <stddef.h>
#include <stdint.h>

#include "nx_error.h"

typedef struct ttbp_regression {
    int64_t run, at;           /* the run that broke parity, its start */
    char why[512];             /* "tier1 fail: determinism", "not bit-exact (tier2 by derived bound)", ... */
    int64_t back_run, back_at; /* the next run at parity again, 0 when none yet */
} ttbp_regression;

typedef struct ttbp_point {
    char id[128];
    int reached;               /* reached parity in some run */
    int64_t run, at;           /* the first run at parity, its start */
    char basis[32];            /* "bits" or "declared tolerance" */
    int now;                   /* its latest record is at parity */
    char now_why[512];         /* why not, when !now */
    int64_t last_run;
    ttbp_regression *regs;
    size_t nregs;
} ttbp_point;

typedef struct ttbp_report {
    char ledger[1024], class_name[64], model[128];  /* model "" when not given */
    size_t runs;               /* complete runs in scope */
    size_t incomplete;         /* incomplete runs in scope, ignored */
    int64_t first_run, t0, last_at;
    ttbp_point *pts;
    size_t npts;
    size_t reached;            /* points that reached parity */
    size_t now;                /* points at parity in their latest record */
    size_t regressed;          /* points with a regression */
    int64_t overall_at;        /* when every point had reached parity (valid when reached == npts) */
    int64_t overall_run;
    size_t controls;           /* negative controls left out */
    size_t not_hot;            /* recorded points left out: not in the list */
    char scope[256];           /* which points count, said: "every point", "the hot points of ..." */
} ttbp_report;

/* Reads the ledger.  An error (NX_EINVAL) when the class (model) has no
 * complete run in it. */
nx_status ttbp_compute(const char *ledger_path, const char *class_name, const char *model, ttbp_report *out,
                       nx_err *err);
/* The same over the points in only[0..n) (NULL: every point), scope
 * saying which they are ("the hot points of llama3-8b's step ..."). */
nx_status ttbp_compute_in(const char *ledger_path, const char *class_name, const char *model,
                          const char *const *only, size_t n, const char *scope, ttbp_report *out, nx_err *err);
void ttbp_free(ttbp_report *r);
/* 1 when every point reached parity and its latest record is at parity. */
int ttbp_ok(const ttbp_report *r);

/* Zero-day readiness of a model on one class (docs/ledger.md): whether
 * its TTBP (r, as ttbp_compute_in gave it) was reached without class work
 * since the model's first campaign on the class: no residual entry that
 * the first run did not have, no point the first run did not record, in
 * any run up to the one at which parity was reached.  *change says the
 * first such change ("run 3: new residual entry source sm90/x.cu"), ""
 * when none. */
typedef struct ttbp_zero_day {
    int reached;               /* every point that counts reached parity */
    int ready;                 /* reached, and without class work */
    int64_t run, at, ttbp_s;   /* when reached */
    char change[512];
} ttbp_zero_day;
nx_status ttbp_zero_day_of(const char *ledger_path, const ttbp_report *r, ttbp_zero_day *out, nx_err *err);
/* The classes with a complete campaign of model in the ledger; *out
 * malloc'd (free each and the array). */
nx_status ttbp_model_classes(const char *ledger_path, const char *model, char ***out, size_t *n, nx_err *err);

/* The report as a plain table and as JSON (malloc'd, NULL when out of memory). */
char *ttbp_text(const ttbp_report *r);
char *ttbp_json(const ttbp_report *r);

#endif
