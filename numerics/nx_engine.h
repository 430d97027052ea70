/* nx_engine.h: evaluation of an expanded numerics point over rows.
 *
 * Inputs are rows of exact values (decoded from their formats); outputs are
 * the exact values of the results in the point's `out` format.  Engines:
 * MPFR (the truth).  All engines run the same nx_program, in its order. */
#ifndef NX_ENGINE_H
#define NX_ENGINE_H

#include <stddef.h>

#include "nx_program.h"

/* The engines, the one enum every command and library uses: MPFR (the
 * truth), the fast engine (the same bits), and auto (the fast engine with
 * rows re-checked by MPFR: `parity reduce`'s default; not a reduce of its
 * own, callers that take it say so). */
typedef enum nx_engine_kind { NX_ENGINE_MPFR, NX_ENGINE_FAST, NX_ENGINE_AUTO } nx_engine_kind;

/* "mpfr", "fast", "auto". */
const char *nx_engine_name(nx_engine_kind e);
/* The engine a name gives, or -1 when the name is none of them (or is
 * "auto" and allow_auto is 0). */
int nx_engine_from_name(const char *name, int allow_auto);

typedef struct nx_rows {
    size_t rows;
    nx_fmt a_fmt;
    const double *a;  /* rows * n values, row-major, members of a_fmt */
    nx_fmt b_fmt;
    const double *b;  /* NULL for a value sum */
    nx_fmt c_fmt;
    const double *c;  /* the rows' start values (the accumulator input c, docs/numerics.md
                       * §6), members of c_fmt; NULL: none.  Read only when
                       * the program was built with start = 1, which needs it */
} nx_rows;

/* Row r's start value (+0 when the rows have none). */
static inline double nx_rows_start(const nx_rows *in, size_t r)
{
    return in->c ? in->c[r] : 0.0;
}

/* Evaluates p over every row into y[rows].  threads <= 0: OpenMP's default.
 * Thread-safe: no global state is touched. */
nx_status nx_mpfr_reduce(const nx_program *p, const nx_rows *in, double *y, int threads,
                         nx_err *err);

/* One row, with caller-owned scratch (for tests and the sampling checker). */
typedef struct nx_mpfr_row nx_mpfr_row;
nx_mpfr_row *nx_mpfr_row_new(const nx_program *p);
void nx_mpfr_row_free(nx_mpfr_row *r);
double nx_mpfr_row_eval(nx_mpfr_row *r, const nx_program *p, nx_fmt a_fmt, const double *a,
                        nx_fmt b_fmt, const double *b);
/* The same from the start value c (a program built with start = 1; the
 * plain call passes +0). */
double nx_mpfr_row_eval_c(nx_mpfr_row *r, const nx_program *p, nx_fmt a_fmt, const double *a,
                          nx_fmt b_fmt, const double *b, double c);

/* The fast engine (nx_engine_fast.c): the same bits as nx_mpfr_reduce, by
 * hardware arithmetic where it is exactly the declared operation (fp32 and
 * fp64 rne: fmaf/fma and float/double adds), error-free transformations and
 * integer rounding (nx_round_fast.h) elsewhere, and int64 fixed point for
 * atoms.  A row it cannot do exactly (fp64 products that underflow, atoms
 * wider than 64 bits, ...) is handed to nx_mpfr_row_eval, never
 * approximated.  Same signature and threading as nx_mpfr_reduce. */
nx_status nx_fast_reduce(const nx_program *p, const nx_rows *in, double *y, int threads,
                         nx_err *err);

/* The same; *mpfr_rows (if not NULL) receives how many rows went to MPFR. */
nx_status nx_fast_reduce_ex(const nx_program *p, const nx_rows *in, double *y, int threads,
                            size_t *mpfr_rows, nx_err *err);

/* The fast engine planned once for a program and the inputs' formats
 * (has_c: rows with start values), then run on any number of batches of
 * rows (nx_fast_run: as nx_fast_reduce_ex, without the vector path).  A
 * plan is read-only while it runs: threads may share it. */
typedef struct nx_fast nx_fast;
nx_fast *nx_fast_new(const nx_program *p, nx_fmt a_fmt, nx_fmt b_fmt, int has_c, nx_fmt c_fmt, nx_err *err);
nx_status nx_fast_run(const nx_fast *f, const nx_rows *in, double *y, int threads, size_t *mpfr_rows,
                      nx_err *err);
/* The same with row r's a at a_rows[r] (in->a unused; n values each, not
 * copied): rows whose a lies in a larger array already, such as the
 * activation row that every output of a GEMV reads. */
nx_status nx_fast_run_rows(const nx_fast *f, const nx_rows *in, const double *const *a_rows, double *y, int threads,
                           size_t *mpfr_rows, nx_err *err);
void nx_fast_free(nx_fast *f);

/* The same on rows as stored (fp32, bf16, fp16 or fp64 elements, no
 * decoding, nx_simd.h) where the point takes the vector path: *done = 1
 * and y as nx_fast_reduce gives it; otherwise *done = 0 and nothing is
 * computed (decode the rows and call nx_fast_reduce). */
struct nx_simd_rows;
nx_status nx_fast_reduce_raw(const nx_program *p, const struct nx_simd_rows *in, double *y, int threads,
                             int *done, nx_err *err);

#endif
