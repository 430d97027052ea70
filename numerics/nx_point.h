/* nx_point.h: a numerics point (docs/numerics.md §3) and its atom (§5), resolved
 * into typed fields.  Reading one from TOML is the registry's job
 * (family/point_toml.c); this module owns defaults and validation. */
#ifndef NX_POINT_H
#define NX_POINT_H

#include "nx_error.h"
#include "nx_format.h"
#include "nx_tree.h"

/* §5 step 2: the exponent an addend counts with when the atom aligns.
 * OPERANDS (the default, measured on every NVIDIA tensor core): a product
 * a*b counts with e_a + e_b, e_x = max(floor(log2 |x|), emin of x's format);
 * VALUES (the first edition's rule): every addend with floor(log2 |x|). */
typedef enum nx_align { NX_ALIGN_OPERANDS = 0, NX_ALIGN_VALUES = 1 } nx_align;

const char *nx_align_name(nx_align a);
/* Returns 0 and sets *a for "operands" or "values", -1 otherwise. */
int nx_align_parse(const char *s, nx_align *a);

typedef struct nx_atom {
    int present;
    int frac_bits;      /* -1: addends stay exact */
    nx_mode term_round; /* default rz */
    int round;          /* nx_mode, or -1: the point's rounding */
    int acc;            /* nx_fmt, or -1: the current format */
    int align;          /* nx_align: the exponent a product counts with (§5 step 2) */
    int group;          /* the preset's N (0 when given by parameters) */
    char preset[32];    /* the preset name it came from, or "" */
} nx_atom;

typedef struct nx_atom_preset {
    const char *name;
    int group, frac_bits;
    nx_mode term_round, round;
    nx_fmt acc;
    const char *what;
} nx_atom_preset;

const nx_atom_preset *nx_atom_preset_find(const char *name);
const nx_atom_preset *nx_atom_preset_at(size_t i); /* NULL past the end */
void nx_atom_from_preset(nx_atom *a, const nx_atom_preset *p);

typedef struct nx_point {
    nx_fmt acc;
    nx_mode rounding;
    int in;             /* nx_fmt or -1 */
    nx_mode in_rounding;
    int fma;
    int product;        /* nx_fmt or -1 (exact) */
    nx_tree *tree;      /* owned */
    nx_atom atom;
    int out;            /* nx_fmt or -1 (= acc) */
    int out_rounding;   /* nx_mode or -1 (= rounding) */
    int saturate;
    /* row classes (§4.3): rows matching classes[k].select are reduced by
     * classes[k].pt (the first match wins); no class: every row by this */
    struct nx_rowclass *classes;
    size_t nclasses;
    long grid_m, grid_n;  /* grid = [M, N], or 0 x 0 */
} nx_point;

typedef struct nx_select nx_select;
typedef struct nx_rowclass {
    char *select;       /* the text, as given */
    nx_select *sel;
    nx_point *pt;       /* the whole point for these rows (no classes of its own) */
} nx_rowclass;

/* The point row r of R, a reduction of n terms, is reduced with (pt itself,
 * or one of its classes'). */
nx_status nx_point_for_row(const nx_point *pt, size_t r, size_t R, size_t n, const nx_point **out, nx_err *err);

/* A deep copy of pt without its classes and grid. */
nx_status nx_point_copy_base(const nx_point *pt, nx_point *out, nx_err *err);

/* Defaults of §3: fp32, rne, fma, exact products, seq, no atom. */
nx_status nx_point_init(nx_point *pt, nx_err *err);
void nx_point_free(nx_point *pt);

/* Replaces the tree; `name` prefixes parse errors. */
nx_status nx_point_set_tree(nx_point *pt, const char *text, const char *name, nx_err *err);

/* Cross-field checks: chain needs an atom, etc. */
nx_status nx_point_validate(const nx_point *pt, nx_err *err);

nx_fmt nx_point_out(const nx_point *pt);
nx_mode nx_point_out_rounding(const nx_point *pt);

/* Canonical inline-TOML text of the point (every key, resolved). */
char *nx_point_print(const nx_point *pt);

/* Appends to b one line per difference between x and y ("    acc: fp32 vs
 * fp64", "      split count: 4 vs 8": settings four spaces in, tree parts
 * six) and adds their number to *nd; nothing when they are the same. */
struct nx_sbuf;
void nx_point_diff(struct nx_sbuf *b, size_t *nd, const nx_point *x, const nx_point *y);

#endif
