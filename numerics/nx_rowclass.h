/* nx_rowclass.h: evaluating and hashing a point that has row classes
 * (docs/numerics.md §4.3).  A point without classes works here too. */
#ifndef NX_ROWCLASS_H
#define NX_ROWCLASS_H

#include "nx_engine.h"

/* y[r] = row r of `in` reduced by the point its class selects (n terms,
 * products when dot).  Errors: a selector that divides by zero, a grid
 * that does not lay out in->rows rows, a class that does not expand. */
nx_status nx_point_reduce(const nx_point *pt, const nx_rows *in, size_t n, int dot, nx_engine_kind engine,
                          int threads, double *y, nx_err *err);

/* The hash of the point at (n, dot, start): its own program's and each
 * class's, with the selectors.  Equal hashes: equal bits on every row. */
nx_status nx_point_hash(const nx_point *pt, size_t n, int dot, int start, char hex[65], nx_err *err);

#endif
