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

/* A numerics change of a point: a record whose hash differs from the
 * point's previous record; parity reached under the old hash is dropped. */
typedef struct ttbp_hash_event {
    int64_t run, at;
    char was[65], now[65];
    int64_t dropped_run;       /* the run at which parity under the old hash had been reached, 0: none */
} ttbp_hash_event;

typedef struct ttbp_point {
    char id[128];
    int reached;               /* reached bit parity under its current hash */
    int64_t run, at;           /* the first run at bit parity (under the current hash), its start */
    char basis[32];            /* "bits" (or "declared tolerance" when only declared parity was reached) */
    int decl;                  /* reached declared parity (and not bit parity) under the current hash */
    int64_t decl_run, decl_at;
    char decl_why[512];        /* what differs by declaration */
    int now;                   /* its latest record is at bit parity */
    int now_level;             /* its latest record: 2 bit parity, 1 declared parity, 0 neither */
    char now_why[512];         /* why not, when !now */
    char reference[64];        /* the class its bits are held to, "" for the exact reference of its own point */
    char hash[65];             /* its latest record's numerics hash */
    int not_run;               /* listed (a hot point, model.M) but no record of it counts */
    int64_t last_run;
    ttbp_regression *regs;
    size_t nregs;
    ttbp_hash_event *events;
    size_t nevents;
    struct ttbp_hash_state *hist; /* the parity reached under each earlier hash */
    size_t nhist;
} ttbp_point;

/* What a point reached under one hash (a point whose hash comes back
 * finds its parity under that hash again). */
typedef struct ttbp_hash_state {
    char hash[65];
    int reached, decl;
    int64_t run, at, decl_run, decl_at;
    char decl_why[512];
} ttbp_hash_state;

/* What ttbp_compute_opts counts (docs/ledger.md). */
typedef struct ttbp_opts {
    /* The class whose bits the class is held to: NULL: the class's
     * HARDWARE.toml `reference` (recorded with its runs), else, for each
     * point, the nearest ancestor on its chain that ran the point; a class
     * with no parent and no reference is held to the exact reference of
     * its own points. */
    const char *reference;
    /* Only records of runs at these shapes ("model:M") count (a model's
     * own point model.M always does); NULL: every shape. */
    const char *shapes;
} ttbp_opts;

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
    char reference[64];        /* --reference or the recorded `reference`, "" when none */
    char reference_how[160];   /* how the target is chosen, said */
    char shapes[160];          /* the shapes that count, "" any */
    size_t other_shapes;       /* records left out: at other shapes */
    char other_shapes_said[256]; /* which ("small", "8b-layer") */
    size_t declared;           /* points at declared parity only */
    int64_t decl_overall_at, decl_overall_run; /* every point at bit or declared parity (valid when reached + declared == npts) */
    size_t hash_events;
} ttbp_report;

/* Reads the ledger.  An error (NX_EINVAL) when the class (model) has no
 * complete run in it. */
nx_status ttbp_compute(const char *ledger_path, const char *class_name, const char *model, ttbp_report *out,
                       nx_err *err);
/* The same over the points in only[0..n) (NULL: every point), scope
 * saying which they are ("the hot points of llama3-8b's step ..."). */
nx_status ttbp_compute_in(const char *ledger_path, const char *class_name, const char *model,
                          const char *const *only, size_t n, const char *scope, ttbp_report *out, nx_err *err);
/* The same with what counts (o NULL: the defaults). */
nx_status ttbp_compute_opts(const char *ledger_path, const char *class_name, const char *model,
                            const char *const *only, size_t n, const char *scope, const ttbp_opts *o,
                            ttbp_report *out, nx_err *err);
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
