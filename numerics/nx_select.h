/* nx_select.h: the selector of a row class (docs/numerics.md §4.3): an
 * integer expression over r, R, n (the reduction length; fourth edition)
 * and, with a grid, i = r / N, j = r % N, M, N, with + - * / % == != < <= > >= && || ! and parentheses. */
#ifndef NX_SELECT_H
#define NX_SELECT_H

#include "nx_error.h"

typedef struct nx_select nx_select;

/* Parses text; errors name `name` and the column. */
nx_status nx_select_parse(const char *text, const char *name, nx_select **out, nx_err *err);
void nx_select_free(nx_select *s);

/* 1 if the selector names i, j, M or N (it needs a grid). */
int nx_select_uses_grid(const nx_select *s);

/* *out = whether row r of R (grid M x N, or 0 x 0), a reduction of n
 * terms, is selected.  A division by zero is NX_EINVAL naming the row. */
nx_status nx_select_eval(const nx_select *s, long long r, long long R, long long M, long long N, long long n,
                         int *out, nx_err *err);

#endif
