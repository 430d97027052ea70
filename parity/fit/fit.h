/* fit.h: searching a space of numerics points for one whose exact
 * evaluation reproduces given outputs bit for bit (`parity fit`,
 * docs/fit.md).
 *
 * A space is a list of candidates (a tree with its settings, or a whole
 * point).  The search evaluates candidates with the fast engine (bit-
 * identical to MPFR), one row at a time, each candidate stopping at its
 * first mismatching row; rows that recently killed a candidate are tried
 * first.  When no candidate fits every row it fits row classes (over a
 * grid of the rows when the pairs have one: edge rows or columns of a
 * tile; then leading rows, remainder rows, residues) separately.  The winner is verified on every row
 * with MPFR. */
#ifndef PARITY_FIT_H
#define PARITY_FIT_H

#include <stddef.h>

#include "nx_engine.h"
#include "nx_point.h"
#include "nx_rowclass.h"

/* One IN/Y pair: rows of terms and the outputs to reproduce. */
typedef struct fit_pair {
    nx_rows in;     /* rows, formats and values (caller-owned) */
    size_t n;       /* terms per row */
    int dot;        /* 1: in.b holds the second operands */
    const double *y;/* in.rows expected results, values of the out format */
    long grid_m, grid_n; /* the rows as an M x N grid (row r = i * N + j), or 0 x 0:
                          * with a grid, row classes over i, j, M, N are tried too
                          * (docs/fit.md); every pair with a grid must have the same
                          * one, of M * N rows (the fitted point holds one grid) */
} fit_pair;

/* A candidate: either settings + tree, or a whole point as inline TOML. */
typedef struct fit_cand {
    char *tree;     /* tree text (settings form), or NULL */
    char *toml;     /* a whole point (inline TOML), or NULL */
    signed char acc, fma, product, atom_preset; /* product -1: exact; atom_preset -1: none */
    short atom_frac;  /* -1: none (no parametric atom) */
    signed char atom_round; /* nx_mode of the parametric atom's round */
} fit_cand;

typedef struct fit_space {
    fit_cand *c;
    size_t count, cap;
    nx_fmt out;     /* every candidate's out format */
} fit_space;

/* What the space is built for: the out format (Y's), the input format and
 * whether the terms are products. */
typedef struct fit_ctx {
    nx_fmt out;
    nx_fmt in_fmt;
    int dot;
} fit_ctx;

void fit_space_init(fit_space *s, nx_fmt out);
void fit_space_free(fit_space *s);

/* The default space (docs/fit.md "The default space"); atoms = 1 adds the
 * atom presets and sweeps (by default only for narrow input formats). */
nx_status fit_space_default(fit_space *s, const fit_ctx *ctx, int atoms, nx_err *err);

/* Adds the candidates of a --space text (docs/fit.md "--space"): lines of
 * trees, inline TOML points, `let NAME = v, ...` lists expanded by {NAME},
 * and the words `default` and `atoms`.  Errors name the line. */
nx_status fit_space_parse(fit_space *s, const fit_ctx *ctx, const char *text, const char *name, nx_err *err);

/* Adds a whole point (inline TOML, as nx_point_print writes it) at the end
 * of the space: the search tries candidates in order, so points added to an
 * empty space first are preferred when several fit. */
nx_status fit_space_add_point(fit_space *s, const char *toml, nx_err *err);

/* The most candidates one line of a --space may expand to (and the most
 * values one `let` list may hold): a larger expansion is refused before it
 * is built (docs/limits.md). */
#define FIT_SPACE_MAX_LINES 100000
/* The most candidates a whole --space may hold (the default space is about
 * 12,000): the candidate past it is refused, naming its line. */
#define FIT_SPACE_MAX_CANDIDATES 1000000
/* Lowers (or, with 0, restores) those bounds for the process: the fuzz
 * target's, whose inputs are better spent on the grammar than on parsing
 * 100,000 copies of one line. */
void fit_space_set_limits(size_t max_lines, size_t max_candidates);
/* The candidate as a point (out set to the space's out unless the TOML says). */
nx_status fit_cand_point(const fit_space *s, size_t i, nx_point *pt, nx_err *err);
/* The candidate's canonical text (malloc'd), or NULL. */
char *fit_cand_text(const fit_space *s, size_t i);

typedef struct fit_opts {
    int threads;            /* <= 0: OpenMP's default */
    size_t max;             /* 0: every candidate; else the first max */
    int progress;           /* progress lines on stderr */
    nx_engine_kind engine;  /* NX_ENGINE_FAST (the search); MPFR for the bench's comparison */
    int classes;            /* 1: fit row classes when no single point fits */
    int verify;             /* 1: verify the result on every row with MPFR */
    int parts;              /* 1: where no point fits, the closest trees with
                             * one part in a setting of its own (docs/fit.md
                             * "Per-part arithmetic") before row classes */
} fit_opts;

typedef struct fit_near {
    size_t cand;
    size_t mismatches;      /* rows that differ, over all pairs */
} fit_near;

/* Candidates after the winner that a result names (the printers show 4). */
#define FIT_MAX_ALT 16
#define FIT_SHOW_ALT 4

typedef struct fit_result {
    int found;              /* 1: *point reproduces every row of every pair */
    char *point;            /* the fitted point, canonical inline TOML (malloc'd) */
    size_t nclasses;        /* row classes the fitted point uses (0: one point) */
    int per_part;           /* 1: the point is a closest tree with one part in a setting of its own */
    size_t evaluated;       /* candidates evaluated in the first pass */
    size_t over_work;       /* of those, skipped: a pair's rows x the candidate's operations
                             * are more than --max-work (docs/limits.md) */
    size_t row_evals;       /* rows evaluated, every pass */
    size_t nfit;            /* candidates that fit every row on their own */
    size_t total_rows;
    double seconds, cands_per_s;
    size_t alt[FIT_MAX_ALT];/* the next candidates (space order) that fit every row too */
    size_t nalt;
    fit_near near[8];       /* the closest candidates when nothing fits */
    size_t nnear;
} fit_result;

void fit_result_free(fit_result *r);

/* The search.  Errors: out of memory, a candidate that does not expand is
 * skipped (not an error), a verification that disagrees (NX_EINTERNAL). */
nx_status fit_run(const fit_pair *pairs, size_t npairs, const fit_space *space, const fit_opts *o, fit_result *res,
                  nx_err *err);

/* A selector over an M x N grid (cell i * N + j) from fit's grid families
 * (docs/fit.md "Row classes over a grid": edge rows `i >= M - M % P`,
 * `i % P >= k`, the same over j, N, one axis, `||` or `&&` of one of each)
 * true at every cell with want[] and false at every cell with neither
 * want[] nor claimed[] (the cells of classes listed before it); malloc'd,
 * NULL where none names the class. */
char *fit_grid_select(const unsigned char *want, const unsigned char *claimed, long M, long N);

/* parts.c: the parts of a tree text (docs/numerics.md §4.2 `X[...]`). */
#define FIT_PARTS_MAX 12
int fit_next_arg(const char *t, size_t *at, size_t *b, size_t *z, int *last);
/* The subtrees of t[from, to) that may take settings, outermost first, by
 * where their text begins and ends; at most max; *n counts them. */
void fit_tree_args(const char *t, size_t from, size_t to, size_t *begins, size_t *ends, size_t *n, size_t max);
/* The tree with "[br[q]]" after part q (ending at ends[q]); malloc'd. */
char *fit_with_settings(const char *tree, const size_t *ends, size_t np, char *const *br);

#endif
