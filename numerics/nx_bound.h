/* nx_bound.h: the error of a point's result, and an a-priori bound on it.
 *
 * For a row: the exact value x of the reduction as stated (sum of a_i·b_i,
 * or of a_i, of the row's inputs as given, before any `in` rounding, plus
 * the start value c when the rows have one; from nx_exact), the result's
 * error |y - x| (absolute, and in ulps of the out format at x), and a bound derived from the program alone (its tree, its
 * formats and modes) and the magnitudes |t_i| of the row's terms: every
 * rounding of a value of magnitude at most S to a format of precision p
 * errs by at most u·S + eta, u = 2^-p (rne, rna) or 2^(1-p) (rz, ru, rd),
 * eta the format's subnormal quantum (halved for rne/rna); every atom cut
 * to 2^(E-F) errs by at most 2^(E-F) per addend (half for rne/rna) with
 * 2^E at most the largest addend's magnitude bound; the errors of the
 * operands are carried up the tree; magnitudes are bounded by the exact
 * sums of |t_i| plus the carried errors.  A rounding whose magnitude bound
 * exceeds its format's max finite may overflow: the bound is then +inf.
 * The bound is computed in binary64 and inflated to cover that
 * arithmetic's own rounding.  docs/engines.md derives it and states how
 * close it comes to the worst observed errors. */
#ifndef NX_BOUND_H
#define NX_BOUND_H

#include <mpfr.h>

#include "nx_engine.h"

typedef struct nx_bound_row {
    double exact;      /* the exact value, rounded to binary64 (rne) */
    double error;      /* |y - exact|, rounded up; +inf if y is inf or NaN and x is not */
    double ulp;        /* the out format's quantum at the exact value */
    double error_ulps; /* error / ulp */
    double bound;      /* the a-priori bound on |y - exact| (+inf: none) */
    double bound_ulps; /* bound / ulp */
} nx_bound_row;

/* Per-thread scratch for one program. */
typedef struct nx_bound nx_bound;
nx_bound *nx_bound_new(const nx_program *p);
void nx_bound_free(nx_bound *b);

/* The a-priori bound for one row. */
double nx_bound_apriori(nx_bound *b, const nx_program *p, nx_fmt a_fmt, const double *a,
                        nx_fmt b_fmt, const double *bv);
/* The same for a program built with a start value, from the row's c (it
 * enters exactly, with magnitude |c| and no error of its own). */
double nx_bound_apriori_c(nx_bound *b, const nx_program *p, nx_fmt a_fmt, const double *a,
                          nx_fmt b_fmt, const double *bv, double c);

/* The same, and *sum_abs (may be NULL) receives sum |t_i| of the terms as
 * given, rounded up: a bound on the magnitude of the exact value.  A tree
 * that uses `atomic` gets a bound that holds in every order of its
 * additions (every add counted at the largest magnitude any partial sum
 * can reach), not only in the seq order the engines evaluate. */
double nx_bound_apriori_sum(nx_bound *b, const nx_program *p, nx_fmt a_fmt, const double *a, nx_fmt b_fmt,
                            const double *bv, double *sum_abs);

/* For a program whose tree uses `atomic` only as a combinator (the last
 * argument of split, tile or stride, whose parts are computed values): the
 * order-free bound then widens only the adds of two computed values, not
 * the adds of terms inside the parts, which keep their declared order.
 * Off by default (every add widened: valid for `atomic` anywhere). */
void nx_bound_atomic_combinator(nx_bound *b, int on);

/* The error of one rounding to f in mode m of a value of magnitude at most
 * S: u·S + eta (0 for S = 0; +inf where it may overflow, and for e8m0). */
double nx_bound_rounding(nx_fmt f, nx_mode m, double S);

/* Everything for one row whose result is y.  exact (may be NULL) receives
 * the exact value as an MPFR number (its precision is set to hold it). */
void nx_bound_eval(nx_bound *b, const nx_program *p, nx_fmt a_fmt, const double *a,
                   nx_fmt b_fmt, const double *bv, double y, nx_bound_row *out, mpfr_ptr exact);
/* The same from the row's start value c: with a program built with start = 1
 * the exact value is the terms' sum + c (D = A·B + C) and the bound
 * includes c; otherwise c is ignored. */
void nx_bound_eval_c(nx_bound *b, const nx_program *p, nx_fmt a_fmt, const double *a,
                     nx_fmt b_fmt, const double *bv, double c, double y, nx_bound_row *out,
                     mpfr_ptr exact);

/* Every row, in parallel (threads <= 0: OpenMP's default); y: the results. */
nx_status nx_bound_rows(const nx_program *p, const nx_rows *in, const double *y,
                        nx_bound_row *out, int threads, nx_err *err);

#endif
