/* reveal.h: asking a black-box kernel for its numerics point (`parity
 * reveal`, docs/reveal.md).
 *
 * A kernel is probed through rv_kernel: rows of a, b [rows, n] in, y [rows]
 * out (the layout of `parity reduce`), by a command (files), a served
 * command (a loop on a pipe) or a C function in process (parity_probe.h).
 *
 * The order: pair probes in the manner of FPRev (a +M and a -M term among
 * small exact fillers, zeros elsewhere): y counts the fillers outside the
 * subtree where the pair meets.  Probes are batched round by round; the
 * tree is rebuilt with multi-way nodes where several terms meet in one
 * fused operation, then recognised as a tree of the point language.
 * The arithmetic: the recognised tree crossed with formats, modes, fma,
 * product rounding and atoms, searched with parity_fit on targeted and
 * random rows; confirmed on fresh random rows. */
#ifndef PARITY_REVEAL_H
#define PARITY_REVEAL_H

#include <stddef.h>
#include <stdint.h>

#include "nx_error.h"
#include "nx_format.h"

/* The default R: rows of the arithmetic fit and the batch the row-index
 * probes run in.  Odd, so that every remainder class r >= R - R % m of a
 * power-of-two tile m has rows in it (256 would hide them all). */
#define RV_DEFAULT_ROWS 255

typedef struct rv_kernel rv_kernel;
struct rv_kernel {
    /* y[r] receives the kernel's result for row r as an exact value of its
     * out format (*out_fmt, set by every call). */
    nx_status (*eval)(rv_kernel *k, size_t rows, size_t n, const double *a, const double *b, double *y,
                      int *out_fmt, nx_err *err);
    void (*destroy)(rv_kernel *k);
    void *impl;
    nx_fmt in_fmt;      /* the dtype of a and b */
    int out_fmt;        /* y's format, -1 before the first call */
    size_t max_elems;   /* rows * n per call at most (0: no limit) */
    size_t max_rows;    /* rows per call at most (0: no limit); 1 sends every row alone, the kernel's
                           one-row path (docs/reveal.md "One row a call") */
    int exact_rows;     /* with max_rows: every call holds exactly max_rows rows (a short last call is
                           padded with copies of its first row, their answers dropped): the kernel's
                           path for calls of that many rows */
    size_t calls;       /* kernel invocations */
    size_t probes;      /* rows evaluated */
    int killed;         /* a call's command was killed (no answer in time, a wrong answer): a kernel
                           failure wherever it happens, never a length the kernel declines */
    double timeout_s;   /* --exec, --serve: one call's limit (RV_TIMEOUT_DEFAULT_S); past it the command's
                           process group is killed and the call fails */
    int shared_b;       /* --shared-b: the kernel takes one b for all the rows of a call (a gemv's x, a
                           column of a gemm's B); rv_call sends rows that share b (below) */
    size_t grid_m, grid_n; /* --grid M,N (0, 0: none): every call is one M x N output of a gemm, row r =
                              i * N + j holding A's row i as a and B's column j as b, the same a along a row
                              i and the same b down a column j (docs/reveal.md "Grid classes"); rv_call
                              places the caller's row r at cell r mod M * N and packs rows into such calls */
};

#define RV_TIMEOUT_DEFAULT_S 600.0

/* A grid kernel's limits (docs/limits.md): M and N at most
 * RV_GRID_MAX_SIDE, 2 to RV_GRID_MAX_CELLS outputs a call, at most
 * RV_GRID_MAX_TERMS terms a call at n, not with a shared b.  NX_EINVAL
 * with the reason (no option name: the command and the API prefix their
 * own), else NX_OK. */
#define RV_GRID_MAX_SIDE 65536
#define RV_GRID_MAX_CELLS ((size_t)1 << 20)
#define RV_GRID_MAX_TERMS ((size_t)1 << 24)
nx_status rv_grid_check(size_t m, size_t gn, size_t n, int shared_b, nx_err *err);

/* `CMD` with {in} and {out} replaced by two file names, each in single
 * quotes (a quote in a name written '\''), run by /bin/sh in a process
 * group of its own. */
nx_status rv_kernel_exec(const char *cmd, nx_fmt in, rv_kernel **out, nx_err *err);
/* CMD started once, in a process group of its own; each call writes
 * "IN OUT\n" to its stdin and waits for a line "ok" on its stdout
 * (parity_probe.h's --serve loop).  No answer within timeout_s, the end of
 * its output or any other answer kills the group (never waited on). */
nx_status rv_kernel_serve(const char *cmd, nx_fmt in, rv_kernel **out, nx_err *err);
/* "LIB.so:SYMBOL", a function of parity_probe.h's signature. */
nx_status rv_kernel_dlopen(const char *spec, nx_fmt in, rv_kernel **out, nx_err *err);
/* A numerics point (inline TOML) evaluated in process with the fast
 * engine: a simulated kernel, for tests. */
nx_status rv_kernel_point(const char *toml, nx_fmt in, rv_kernel **out, nx_err *err);
void rv_kernel_free(rv_kernel *k);

/* The first of count products a[i] b[i] that is not exact in the input
 * format (count where all are): a kernel with one b a call (shared_b)
 * takes a row whose b is not the call's as (a b, 1), the same terms only
 * where the products are exact. */
size_t rv_inexact_product(nx_fmt in, const double *a, const double *b, size_t count);
/* The products a[i] b[i] (exact: rv_inexact_product said so) as terms
 * against ones: ca[i] = a[i] b[i], cb[i] = 1, for a kernel of one b a call. */
void rv_as_products(const double *a, const double *b, size_t count, double *ca, double *cb);
/* Calls k on rows (splitting at max_elems and max_rows), counting calls
 * and probes. */
nx_status rv_call(rv_kernel *k, size_t rows, size_t n, const double *a, const double *b, double *y, nx_err *err);

#define RV_PER_PART_PROBED 1
#define RV_PER_PART_SEARCHED 2

/* A revealed tree: node 0 is the root; a leaf has leaf >= 0 and no
 * children; an inner node has two or more children (more: the terms meet
 * in one fused operation). */
typedef struct rv_node {
    int leaf;
    int nch;
    int *ch;
    int size;  /* leaves below */
} rv_node;

typedef struct rv_tree {
    rv_node *node;
    size_t count, cap;
    int root;
} rv_tree;

void rv_tree_free(rv_tree *t);
/* The bracketing, e.g. "((0+2)+(1+3))", a fused node as "[0+1+2+3]"
 * (malloc'd). */
char *rv_tree_text(const rv_tree *t);

/* Selectors over R (rows.c): the batch sizes probed besides R0, and the
 * probe rows kept from the row-index probes to tell classes apart. */
#define RV_ROWS_MAX_R 4
#define RV_ROWS_MAX_PROBES 64

/* The result, for the printer and for the HTML report. */
typedef struct rv_result {
    size_t n;
    nx_fmt in_fmt;
    int out_fmt;
    rv_tree tree;           /* the revealed order */
    int filler_sign;        /* the sign of the fillers that revealed it; 0: the
                             * toward-zero probes (counts modulo an ulp of M) */
    int count_bits;         /* the precision (bits) the counts were exact to */
    int rows_differ;        /* one row gave different results at different row
                             * indices: the kernel has row classes */
    char *tree_text;        /* the recognised tree in the point language, or NULL */
    char *point;            /* the revealed point (inline TOML), or NULL */
    size_t order_calls, order_probes;
    size_t arith_calls, arith_probes;
    size_t confirm_rows, confirm_ok;
    size_t alternatives;    /* other points of the arithmetic space that fit too */
    int per_part;           /* no point of the space fit; the point's parts each took a setting of
                               their own (docs/reveal.md "Per-part arithmetic"): RV_PER_PART_PROBED
                               read from probe rows of each part, RV_PER_PART_SEARCHED by the search
                               over the search rows (either bit, or both with row classes) */
    size_t part_evals;      /* the points the per-part probes and search evaluated */
    size_t part_probes;     /* the probe rows sent for the parts' settings */
    size_t part_settled;    /* the parts (and roots) whose setting the search rows settled, their
                               own rows leaving it open */
    /* where several fit: disambig_rows fresh rows at disambig_n held
     * against disambig_tried of them, disambig_held reproducing all */
    size_t disambig_rows, disambig_n, disambig_tried, disambig_held;
    size_t disambig_sparse; /* of them, sparse rows on which the candidates disagree */
    /* row classes found by probing every row index of a batch of
     * probe_rows rows (docs/reveal.md "Row classes"): class 0 is the tree
     * of most rows (tree_text); each other class a selector of
     * docs/numerics.md section 4.3 and its recognised tree */
    size_t probe_rows;
    size_t nclass;
    char **class_select;    /* [nclass]; [0] NULL */
    char **class_tree;      /* [nclass] */
    rv_tree *class_rt;      /* [nclass]: each class's revealed tree ([0]
                             * empty: it is `tree`); NULL without classes */
    int *row_class;         /* [probe_rows]: the class of each row index */
    size_t rows_R[RV_ROWS_MAX_R]; /* the other batch sizes the selectors were
                                   * held at (rows.c); rows_nR of them */
    size_t rows_nR;
    size_t rows_calls, rows_probes; /* the kernel calls and probe rows of it */
    /* induction (docs/reveal.md "Induction"): the order probed again at
     * induce_n and the name chosen to hold at both lengths */
    int induce;             /* an RV_INDUCE_* */
    size_t induce_n;
    size_t induce_n3;       /* a third length for folded lanes (0: none):
                             * a remainder that runs every loop after a fold */
    size_t separate_n;      /* where several names held at every length so
                             * far: the length probed that tells them apart
                             * (0: none) */
    size_t separate_names;  /* how many names held before it */
    int separate_kept;      /* 1: a name holds there too; 0: none did */
    size_t separate_rounds; /* lengths probed to tell the names apart (at most
                               RV_SEPARATE_ROUNDS), the last separate_n_last */
    size_t separate_n_last;
    size_t induce_calls, induce_probes;
    char *induce_alone;     /* the name at n alone, when induction renamed it
                             * or found none for both; else NULL */
    char *induce_other;     /* the name at induce_n alone (NULL: none) */
    char *induce_why;       /* RV_INDUCE_NO_TREE: why no tree there */
    int induce_classes;     /* 1: induced class by class (row classes) */
    size_t arith_classes;   /* row classes the arithmetic added (rows whose
                             * order is class 0's, whose arithmetic is not):
                             * the last arith_classes of the nclass */
    size_t induce_classes_alone; /* of them, classes no name holds for at
                                  * both lengths (named at n alone) */
} rv_result;

enum {
    RV_INDUCE_NOT_RUN = 0,  /* no tree at n, or row classes */
    RV_INDUCE_HOLDS,        /* the name at n holds at induce_n too */
    RV_INDUCE_RENAMED,      /* another name holds at both; tree_text is it */
    RV_INDUCE_ONE_LENGTH,   /* no name of the language holds at both */
    RV_INDUCE_NO_TREE       /* the probes at induce_n reveal no tree */
};

void rv_result_free(rv_result *r);

typedef struct rv_opts {
    size_t n;
    int verbose;            /* progress on stderr */
    size_t fit_rows;        /* random rows for the arithmetic (default RV_DEFAULT_ROWS) */
    size_t confirm_rows;    /* fresh rows for the confirmation (default 1000) */
    size_t disambig_rows;   /* random rows that decide among points that fit alike (default 4000) */
    unsigned long long seed;
    int order_only;
    int no_induce;          /* the order at n alone (no induction) */
    size_t probe_rows;      /* R of the row-index probes (default: fit_rows, else RV_DEFAULT_ROWS) */
    /* tree texts tried first as spellings of the revealed order (a user's
     * hypotheses of the kernel's loops: `reveal --space`); the first whose
     * expansion at n has the revealed bracketing names it, and the
     * arithmetic is fitted on it */
    char **hints;
    size_t nhints;
} rv_opts;

/* The largest n reveal takes: the order's probes cost about n^1.8 probe
 * terms (65,536 takes about 90 s on two cores; 2^20 would take hours), so
 * larger lengths are refused before anything is allocated. */
#define RV_MAX_N 65536

/* Lengths probed at most to tell apart names that hold at every length so
 * far (induction). */
#define RV_SEPARATE_ROUNDS 3

/* The lengths a recognition may span at most. */
#define RV_INDUCE_MAX 4

/* The order alone (filled into res->tree, res->tree_text), named by
 * induction: the order is revealed again at rv_induction_length(n) and
 * named by a tree text that holds at both lengths where one exists
 * (res->induce says what happened). */
nx_status rv_reveal_order(rv_kernel *k, const rv_opts *o, rv_result *res, nx_err *err);
/* Recognises a revealed tree: the tree text of the point language whose
 * expansion at n has the same bracketing (malloc'd), or NULL. */
char *rv_recognise(const rv_tree *t, size_t n);
/* The same, trying hints[0 .. nhints) first. */
char *rv_recognise_hinted(const rv_tree *t, size_t n, char *const *hints, size_t nhints);
/* The tree text whose expansion at every ns[i] (m of them, at most
 * RV_INDUCE_MAX) has the bracketing of *trees[i]; never expr(...) when
 * m > 1 (a bracketing names one length).  NULL when none. */
char *rv_recognise_lengths(const rv_tree *const *trees, const size_t *ns, size_t m, char *const *hints,
                           size_t nhints);
/* The names that hold at every ns[i], in the search's order: the first is
 * rv_recognise_lengths's, then others, at most max (and RV_ALT_MAX + 1)
 * into out (malloc'd), the searches sharing their expansions; the count. */
#define RV_ALT_MAX 4
size_t rv_recognise_names(const rv_tree *const *trees, const size_t *ns, size_t m, char *const *hints, size_t nhints,
                          char **out, size_t max);
/* The hash of a tree text's bracketing at n (0: it does not expand). */
uint64_t rv_text_hash(const char *text, size_t n);
/* Whether the tree text's expansion at n has t's bracketing. */
int rv_tree_is(const rv_tree *t, const char *text, size_t n);
/* Size classes (docs/reveal.md "Size classes"): a kernel whose order is
 * tree_lo at n_lo and tree_hi at n_hi > n_lo.  The order is revealed at
 * lengths between (bisection, ceil(log2(n_hi - n_lo)) reveals) until the
 * least length *T with tree_hi is found; *T = 0 when a length between has
 * neither order (then no single switch explains the kernel).  *reveals
 * counts the order reveals. */
nx_status rv_size_switch(rv_kernel *k, const rv_opts *o, size_t n_lo, const char *tree_lo, size_t n_hi,
                         const char *tree_hi, size_t *T, size_t *reveals, nx_err *err);
/* A selector of docs/numerics.md section 4.3 true exactly at the rows r
 * < R with cls[r] == c (malloc'd), or NULL where none of its forms (a
 * prefix, a remainder of R, a residue of r, a block of the remainder, a
 * range) names them. */
char *rv_row_selector(const int *cls, size_t R, int c);

/* Selectors over R (rows.c, docs/reveal.md "Selectors over R"). */
typedef struct rv_rowprobe {
    const double *a, *b; /* [n] each: one probe row */
    const double *y;     /* [R0]: its answers at every row index of R0 */
} rv_rowprobe;
/* For each class c with sel[c] (its selector at R0, malloc'd; NULL: left
 * alone) whose rows at R0 are one run: the candidates whose bounds are
 * functions of R, held at up to RV_ROWS_MAX_R other batch sizes, chosen
 * where they disagree most; the simplest survivor replaces sel[c].  The
 * classes are told apart at each size by the probe rows pr (each row
 * index given the class, by rep[c], whose answers it repeats); the sizes
 * probed into probed[], their count *nprobed. */
nx_status rv_rows_induce(rv_kernel *k, size_t n, size_t R0, const rv_rowprobe *pr, size_t npr, const int *cls,
                         const size_t *rep, size_t ncls, char **sel, size_t *probed, size_t *nprobed, nx_err *err);
/* The length the order is revealed again at for induction: the least
 * length past n that is 7 modulo 8 where n mod 8 < 4, else 3 modulo 8, so
 * that every loop of a power-of-two width 4 or more leaves a remainder of
 * 3 terms or more (one tail term cannot tell a carried tail from a
 * separate one) and a remainder of 4 or more modulo 8 is seen at one of
 * the two lengths; below n where that would pass RV_MAX_N. */
size_t rv_induction_length(size_t n);
/* The arithmetic with the order known, and the confirmation. */
nx_status rv_reveal_arith(rv_kernel *k, const rv_opts *o, rv_result *res, nx_err *err);
/* Length generalisation (docs/reveal.md "Other lengths"). */
/* Two lengths, neither n nor its induction length, that a point revealed
 * at n is confirmed at by default: n + 1 (n + 2 where that is the
 * induction length, n - 1 at RV_MAX_N), a remainder of every
 * power-of-two loop width when n is a multiple of one, and the largest
 * prime at most n / 2 (another remainder and another block count; for
 * n < 4 the first prime past both). */
void rv_confirm_lengths(size_t n, size_t out[2]);
/* Runs crows fresh random rows of n terms (fewer where crows * n would
 * pass 2^24 elements; *rows says how many) through k and through the
 * point text: *ok rows reproduced bit for bit.  A point that cannot be
 * evaluated at n (an expr(...) of fewer terms) reproduces none, its reason
 * in why[whylen]; err is the kernel's failure only. */
nx_status rv_confirm_at(rv_kernel *k, const char *point, size_t n, size_t crows, unsigned long long seed,
                        size_t *rows, size_t *ok, char *why, size_t whylen, nx_err *err);
/* The point held at n on crows fresh random rows sent one row a call (R =
 * 1, a batch size the probes never use): the kernel's answers against
 * the point's, each row evaluated as a batch of one. */
#define RV_ONE_ROW_ROWS 64
/* The same, R rows a call (crows a multiple of R: every call exactly R). */
nx_status rv_confirm_rows_a_call(rv_kernel *k, const char *point, size_t n, size_t crows, size_t R,
                                 unsigned long long seed, size_t *ok, char *why, size_t whylen, nx_err *err);
/* rv_join_one_row for calls of R rows: the path's classes under `R == R`. */
char *rv_join_rows(const char *point, const char *path, size_t R, nx_err *err);
nx_status rv_confirm_one_row(rv_kernel *k, const char *point, size_t n, size_t crows, unsigned long long seed,
                             size_t *ok, char *why, size_t whylen, nx_err *err);
/* Lengths (lengths.c): an account of lines, one at a time, to the
 * caller (`parity reveal` prints them; the API keeps the last). */
typedef struct rv_say {
    void (*line)(void *ctx, const char *text);
    void *ctx;
} rv_say;

#define RV_MAX_LENGTHS 16
enum { RV_LEN_HOLDS = 0, RV_LEN_REFUSED = 1 };

/* After rv_reveal_arith found res->point: where induction saw another
 * order at res->induce_n that no name shares (RV_INDUCE_ONE_LENGTH), one
 * switch of length between the two (a size class: res->point replaced by
 * the joined point) or else res->point run at res->induce_n.  *verdict:
 * RV_LEN_HOLDS, or RV_LEN_REFUSED with a last line `not confirmed: ...`
 * said.  Nothing to do (RV_LEN_HOLDS) for the other induction outcomes. */
nx_status rv_one_length(rv_kernel *k, const rv_opts *o, rv_result *res, const rv_say *say, int *verdict,
                        nx_err *err);
/* One point for the probed lengths lens[0 .. nlens) whose revealed points
 * are points[]: the first that reproduces fresh rows at every other, else
 * two orders joined by one switch of length (a size class), then
 * confirmed at rv_confirm_lengths(lens[0]) where not probed.  *verdict
 * RV_LEN_HOLDS with *out the point (malloc'd), or RV_LEN_REFUSED with the
 * reason said last (`not confirmed: ...`). */
nx_status rv_generalise(rv_kernel *k, const rv_opts *o, const size_t *lens, size_t nlens, char *const *points,
                        const rv_say *say, int *verdict, char **out, nx_err *err);
/* One row a call (docs/reveal.md "One row a call"): point, revealed from
 * batches of many rows, joined with one_row, the point revealed with every
 * row sent alone (k->max_rows = 1), as classes selected by `R == 1` ahead
 * of point's own (one_row's size classes as `R == 1 && (SEL)`), printed
 * canonically.  Malloc'd; NULL with err set where a text is not a point or
 * either has a grid. */
char *rv_join_one_row(const char *point, const char *one_row, nx_err *err);
/* The point held at R = 1 (RV_ONE_ROW_ROWS fresh rows at n, one a call;
 * said as `rows: at R = 1 ...`), and, where it fails, its one-row path
 * revealed by reveal_fn (called with k->max_rows = 1 and o's confirmation
 * and disambiguation rows a quarter of their defaults unless set; it
 * returns the point that holds at every length it was asked for, malloc'd,
 * or NULL) and joined (rv_join_one_row), the joined point confirmed one
 * row a call and in one batch.  *out: the point to report (malloc'd), the
 * joined one, or point itself where it holds at R = 1 or the one-row path
 * is not revealed (said). */
#define RV_ONE_ROW_CONFIRM 250  /* the one-row path's confirmation rows (default) */
#define RV_ONE_ROW_DISAMBIG 1000 /* and its disambiguation rows (default) */
typedef nx_status (*rv_reveal_fn)(rv_kernel *k, const rv_opts *o, void *ctx, char **point, nx_err *err);
nx_status rv_one_row(rv_kernel *k, const rv_opts *o, size_t n, const char *point, rv_reveal_fn reveal_fn, void *ctx,
                     const rv_say *say, char **out, nx_err *err);


#endif
