/* gate.h: the promotion gate (docs/ledger.md): the registry before a change
 * and after it, each run as a campaign of one class with the same seed and
 * shapes, point by point.  A point present on both sides passes when its
 * outputs are byte-identical (every trace the campaign writes, inputs
 * aside), no gate changed (each Tier 1 check's and Tier 2's verdict,
 * bit-exactness, the declared tolerance, the point hash) and its run time
 * is not slower beyond the noise band.  A kernel id that changed with
 * identical bits and gates is said, not failed.  Run times are compared
 * by interleaved timing with a stated false-alarm rate (timing.h).  Points only after the
 * change are new (not compared); points only before it are removed (a
 * failure: the change dropped an existing point).  The two sides may
 * also be git revisions of the repository (gate_side). */
#ifndef PARITY_GATE_H
#define PARITY_GATE_H

#include <stddef.h>

#include "campaign.h"

typedef struct gate_opts {
    const char *before, *after;    /* registry directories */
    const char *class_name;
    const char *preset;            /* shape preset */
    const char *families;          /* comma-separated, or NULL: all */
    unsigned long long seed;
    int dist, engine, repeats, threads;
    const dev_backend *backend;
    const char *traces;            /* keep both sides' traces in TRACES/before and TRACES/after; NULL: a temporary directory */
    int bench;                     /* compare run times (timing.h) */
    double slack;                  /* slower: the median time ratio's lower bound above 1 + slack */
    double alpha;                  /* the false-alarm rate of the whole gate, shared by its points */
    int pairs;                     /* interleaved pairs per point */
    const dev_backend *backend_after; /* the after side's backend; NULL: backend */
    void (*progress)(void *ctx, size_t i, size_t n, const char *id);
    void *ctx;
    /* polled between points: nonzero (a signal the caller caught) stops
     * the gate with an error, its temporary folders removed; NULL: never */
    volatile int *stop;
    /* called on the traces folder (o->traces) once it exists, before
     * anything is written in it: a run-level lock; NULL: none */
    nx_status (*lock_traces)(const char *dir, nx_err *err);
    /* The shape each point's kernels are timed at (docs/ledger.md "The
     * timing check"): the model's hot shape of the point, or NULL for the
     * preset's; *why says which.  NULL: the preset's shape for every point. */
    const char *(*bench_shape)(void *ctx, const char *id, char *why, size_t len);
    void *bench_ctx;
} gate_opts;

#define GATE_SLACK 0.10
#define GATE_ALPHA 0.01

typedef enum gate_kind {
    GATE_SAME,      /* compared: passes (notes may say a kernel changed) */
    GATE_FAIL,      /* compared: a difference that fails the gate */
    GATE_NEW,       /* only after the change */
    GATE_REMOVED,   /* only before it (fails) */
    GATE_ERROR,     /* an input error on both sides */
} gate_kind;

typedef struct gate_item {
    char id[128];
    gate_kind kind;
    char *notes;            /* lines, each "\n"-terminated: what differs, what changed; malloc'd or NULL */
    int kernel_changed;
    int outputs_compared;   /* 0 when the point declares a nondeterministic order (atomic) */
    double t_before, t_after;   /* the median seconds per run of each side's kernel (timed) */
    int timed;                  /* 1: t_*, ratio, lo, hi are set */
    double ratio, lo, hi;       /* time after/before: the median ratio and its interval */
    int pairs, reps;            /* the timing's pairs and runs per sample */
    char bench_shape[256];      /* the shape timed */
    char bench_why[256];        /* why that shape */
    char hash[65];              /* the numerics hash after (before when removed) */
    char kernel_before[96], kernel_after[96];
    int gained;                 /* checks that went from skip to a pass */
} gate_item;

typedef struct gate_report {
    gate_item *items;
    size_t n;
    size_t compared, failed, added, removed, errors, kernel_changed, gained;
} gate_report;

/* Runs the gate.  Returns an error for bad input that stops it altogether
 * (a registry that does not load, a class unknown on either side). */
nx_status gate_run(const gate_opts *o, gate_report *out, nx_err *err);
void gate_free(gate_report *r);

/* One side of the gate: a directory is used as it is; anything else must
 * be a git revision of the repository at the current directory, whose
 * registry_path (a path inside the repository, e.g. "kernels") is exported
 * with `git archive` into a new temporary directory.  *dir (malloc'd) is
 * the registry; *tmp (malloc'd, or NULL) the directory gate_side_free
 * removes. */
nx_status gate_side(const char *arg, const char *registry_path, char **dir, char **tmp, nx_err *err);
void gate_side_free(char *dir, char *tmp);

/* A class whose resolved view of some point differs between the two
 * registries: its points at the preset's shapes (only the families listed,
 * NULL: all) compared field by field (numerics hash, kernel, legacy kernel,
 * params, declared tolerance), and points added or removed. */
typedef struct gate_touch {
    char class_name[64];
    char *why;          /* "gemm.splitk: params split_k 4 -> 6; ..." (malloc'd) */
    size_t changes;     /* points whose view changed, were added or removed */
    /* The changes that fail the gate without running anything (a numerics
     * hash changed, a point or the class removed, a point that no longer
     * resolves): "gemm.splitk: numerics hash a -> b; ..." (malloc'd), or
     * NULL.  A class the gate cannot run here still fails on these. */
    char *fails;
} gate_touch;

/* Every class of either registry the change touches, in the after
 * registry's order, then classes only before.  *out malloc'd. */
nx_status gate_touched(const char *before, const char *after, const char *preset, const char *families,
                       gate_touch **out, size_t *n, nx_err *err);
void gate_touched_free(gate_touch *t, size_t n);

char *gate_text(const gate_opts *o, const gate_report *r);
char *gate_json(const gate_opts *o, const gate_report *r);

#endif
